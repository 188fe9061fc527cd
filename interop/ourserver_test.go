package interop

import (
	"context"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2agrpc/grpcsrv"
	"novaos.dev/novaos/a2a/a2asrv"
)

// echoExecutor is the agent behind our server in these tests, with the same
// behaviours as goPeerExecutor and js/server.mjs so one scenario runs
// against every server: "message" replies with a message, "slow" works
// until cancelled, "ask" stops in INPUT_REQUIRED and the next message on
// that task completes it with "answer: <text>", a message whose first part
// is the text "parts" gets its other parts back verbatim as an artifact,
// anything else is echoed as an artifact and completes with a "done"
// message.
type echoExecutor struct{}

func (echoExecutor) Execute(ctx context.Context, req *a2asrv.RequestContext, u a2asrv.Updater) error {
	if parts := req.Message.Parts; len(parts) > 1 && parts[0].Kind == a2a.PartText && parts[0].Text == partsCommand {
		art := a2a.Artifact{ArtifactID: a2a.NewID(), Parts: parts[1:]}
		if err := u.AddArtifact(ctx, art, false, true, nil); err != nil {
			return err
		}
		return u.UpdateStatus(ctx, a2a.TaskStateCompleted, nil, nil)
	}
	text := req.Message.Text()
	if req.Task != nil && req.Task.Status.State == a2a.TaskStateInputRequired {
		art := a2a.Artifact{ArtifactID: a2a.NewID(), Parts: []a2a.Part{a2a.TextPart("answer: " + text)}}
		if err := u.AddArtifact(ctx, art, false, true, nil); err != nil {
			return err
		}
		return u.UpdateStatus(ctx, a2a.TaskStateCompleted, nil, nil)
	}
	if text == "ask" {
		return u.UpdateStatus(ctx, a2a.TaskStateInputRequired, a2a.NewMessage(a2a.RoleAgent, a2a.TextPart("what number?")), nil)
	}
	if text == "message" {
		return u.Reply(ctx, a2a.NewMessage(a2a.RoleAgent, a2a.TextPart("echo: message")))
	}
	if err := u.UpdateStatus(ctx, a2a.TaskStateWorking, nil, nil); err != nil {
		return err
	}
	if text == "slow" {
		<-ctx.Done()
		return context.Cause(ctx)
	}
	art := a2a.Artifact{ArtifactID: a2a.NewID(), Parts: []a2a.Part{a2a.TextPart("echo: " + text)}}
	if err := u.AddArtifact(ctx, art, false, true, nil); err != nil {
		return err
	}
	return u.UpdateStatus(ctx, a2a.TaskStateCompleted, a2a.NewMessage(a2a.RoleAgent, a2a.TextPart("done")), nil)
}

// keepAlive is our server's SSE keep-alive interval in these tests.
const keepAlive = 50 * time.Millisecond

// servedBindings maps the URL of each server startOurServer started to the
// bindings its calls came over, so a test can tell which binding a peer's
// client really used.
var servedBindings sync.Map // string -> *bindingsSeen

// bindingsSeen is an interceptor recording every call's binding.
type bindingsSeen struct {
	mu  sync.Mutex
	set map[string]int
}

func (b *bindingsSeen) Before(ctx context.Context, c *a2asrv.Call, _ any) (context.Context, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.set == nil {
		b.set = map[string]int{}
	}
	b.set[c.Binding]++
	return ctx, nil
}

func (*bindingsSeen) After(context.Context, *a2asrv.Call, any, error) {}

// only reports whether every call came over binding, and how many came.
func (b *bindingsSeen) only(binding string) (bool, map[string]int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.set) == 1 && b.set[binding] > 0, maps.Clone(b.set)
}

// startOurServer serves a2asrv.Handler with echoExecutor and in-memory
// stores, its card naming the test server's URL as the JSON-RPC endpoint.
func startOurServer(t *testing.T) *httptest.Server {
	t.Helper()
	// The card names the server's own URL, so listen before building it.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + l.Addr().String()
	// The gRPC binding on a listener of its own, named by the card too.
	gl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	card := &a2a.AgentCard{
		Name:        "NovaOS interop echo",
		Description: "Echoes text as an artifact",
		Version:     "1.0.0",
		SupportedInterfaces: []a2a.AgentInterface{
			{URL: url, ProtocolBinding: a2a.BindingJSONRPC, ProtocolVersion: a2a.ProtocolVersion},
			{URL: url, ProtocolBinding: a2a.BindingHTTPJSON, ProtocolVersion: a2a.ProtocolVersion},
			{URL: gl.Addr().String(), ProtocolBinding: a2a.BindingGRPC, ProtocolVersion: a2a.ProtocolVersion},
		},
		Capabilities:       a2a.AgentCapabilities{Streaming: a2a.Bool(true), PushNotifications: a2a.Bool(true)},
		DefaultInputModes:  []string{"text/plain"},
		DefaultOutputModes: []string{"text/plain"},
		Skills:             []a2a.AgentSkill{{ID: "echo", Name: "Echo", Description: "Echoes text", Tags: []string{"echo"}}},
	}
	seen := &bindingsSeen{}
	servedBindings.Store(url, seen)
	h := a2asrv.NewHandler(card, echoExecutor{}, &a2asrv.Options{
		Interceptors:    []a2asrv.Interceptor{seen},
		PushConfigStore: a2asrv.NewMemoryPushConfigStore(nil),
		// Frequent keep-alive comments, so every stream in the suite shows
		// the peers some.
		KeepAlive: keepAlive,
	})
	srv := &httptest.Server{Listener: l, Config: &http.Server{Handler: h}}
	srv.Start()
	g := grpc.NewServer()
	grpcsrv.New(h).Register(g)
	go g.Serve(gl)
	t.Cleanup(g.Stop)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := h.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		srv.Close()
	})
	return srv
}
