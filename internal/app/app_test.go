package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	grpcstatus "google.golang.org/grpc/status"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2agrpc"
	"novaos.dev/novaos/a2a/a2apb"
	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/internal/app"
	"novaos.dev/novaos/store"
)

// start runs a server for the test and shuts it down at the end.
// tasksOnly are stores of the caller's: tasks, and nothing else.
func tasksOnly(tasks a2asrv.TaskStore) *store.Stores { return &store.Stores{Tasks: tasks} }

// recoverable are stores of the caller's whose task store also finds and
// settles the tasks of dead processes.
func recoverable[T interface {
	a2asrv.TaskStore
	a2asrv.Recoverer
}](tasks T) *store.Stores {
	return &store.Stores{Tasks: tasks, Recoverer: tasks}
}

func start(t *testing.T, opts *app.Options) *app.Server {
	t.Helper()
	if opts.Addr == "" {
		opts.Addr = "127.0.0.1:0"
	}
	srv, err := app.New(t.Context(), opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := srv.Start(t.Context()); err != nil {
		srv.Shutdown(context.Background())
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return srv
}

func get(t *testing.T, url string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// rpc makes one JSON-RPC call the way any A2A client does on the wire.
func rpc(t *testing.T, url, method string, params any) (json.RawMessage, *a2a.Error) {
	t.Helper()
	p, err := json.Marshal(params)
	if err != nil {
		t.Fatal(err)
	}
	body := `{"jsonrpc":"2.0","id":"t-1","method":"` + method + `","params":` + string(p) + `}`
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(a2a.HeaderVersion, "1.0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: status %d: %s", method, resp.StatusCode, b)
	}
	r, err := a2a.DecodeResponse(b)
	if err != nil {
		t.Fatalf("%s: %v in %s", method, err, b)
	}
	if string(r.ID) != `"t-1"` {
		t.Errorf("%s: response id %s, want \"t-1\"", method, r.ID)
	}
	return r.Result, r.Error
}

func sendText(t *testing.T, url, text string) *a2a.Task {
	t.Helper()
	msg := a2a.NewMessage(a2a.RoleUser, a2a.TextPart(text))
	res, rerr := rpc(t, url, a2a.MethodSendMessage, a2a.SendMessageRequest{Message: msg})
	if rerr != nil {
		t.Fatalf("SendMessage: %v", rerr)
	}
	var out a2a.SendMessageResponse
	if err := a2a.Unmarshal(res, &out); err != nil {
		t.Fatal(err)
	}
	if out.Task == nil {
		t.Fatalf("SendMessage answered without a task: %s", res)
	}
	return out.Task
}

func TestServeSQLite(t *testing.T) {
	dir := t.TempDir()
	srv := start(t, &app.Options{DataDir: filepath.Join(dir, "data")})

	if strings.HasSuffix(srv.Addr(), ":0") || srv.URL() != "http://"+srv.Addr() {
		t.Fatalf("Addr %q URL %q: want the real port", srv.Addr(), srv.URL())
	}
	if _, err := os.Stat(filepath.Join(dir, "data", app.DatabaseFile)); err != nil {
		t.Errorf("database file: %v", err)
	}

	t.Run("healthz", func(t *testing.T) {
		code, body := get(t, srv.URL()+"/healthz")
		if code != http.StatusOK {
			t.Fatalf("status %d: %s", code, body)
		}
		var h app.Health
		if err := json.Unmarshal(body, &h); err != nil {
			t.Fatal(err)
		}
		want := app.Health{Status: "ok", Database: app.DatabaseHealth{Kind: "sqlite", OK: true}}
		if diff := cmp.Diff(want, h); diff != "" {
			t.Errorf("(-want +got)\n%s", diff)
		}
	})

	for _, name := range []string{"echo", "tck"} {
		t.Run("card "+name, func(t *testing.T) {
			code, body := get(t, srv.URL()+"/agents/"+name+a2a.WellKnownCardPath)
			if code != http.StatusOK {
				t.Fatalf("status %d: %s", code, body)
			}
			var card a2a.AgentCard
			if err := a2a.Unmarshal(body, &card); err != nil {
				t.Fatal(err)
			}
			url := srv.URL() + "/agents/" + name
			want := []a2a.AgentInterface{{URL: url, ProtocolBinding: a2a.BindingJSONRPC, ProtocolVersion: "1.0"},
				{URL: url, ProtocolBinding: a2a.BindingHTTPJSON, ProtocolVersion: "1.0"}}
			if diff := cmp.Diff(want, card.SupportedInterfaces); diff != "" {
				t.Errorf("interfaces (-want +got)\n%s", diff)
			}
			if card.Name == "" || len(card.Skills) == 0 {
				t.Errorf("card without name or skills: %s", body)
			}
		})
	}

	t.Run("SendMessage to echo", func(t *testing.T) {
		task := sendText(t, srv.URL()+"/agents/echo", "hello, novaos")
		if task.Status.State != a2a.TaskStateCompleted {
			t.Fatalf("state %v, want completed", task.Status.State)
		}
		if b, _ := json.Marshal(task); !bytes.Contains(b, []byte("hello, novaos")) {
			t.Errorf("echo did not echo: %s", b)
		}
	})

	t.Run("HTTP+JSON to echo", func(t *testing.T) {
		base := srv.URL() + "/agents/echo"
		rest := func(method, path, body string) (int, []byte) {
			t.Helper()
			req, err := http.NewRequestWithContext(t.Context(), method, base+path, strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/a2a+json")
			req.Header.Set(a2a.HeaderVersion, a2a.ProtocolVersion)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, b
		}
		code, body := rest("POST", "/message:send", `{"message":{"messageId":"r1","role":"ROLE_USER","parts":[{"text":"over rest"}]}}`)
		var sent a2a.SendMessageResponse
		if err := a2a.Unmarshal(body, &sent); code != http.StatusOK || err != nil || sent.Task == nil || sent.Task.Status.State != a2a.TaskStateCompleted {
			t.Fatalf("POST /message:send: %d %v %s", code, err, body)
		}
		// The task is the same whichever binding reads it.
		code, body = rest("GET", "/tasks/"+sent.Task.ID, "")
		var got a2a.Task
		if err := a2a.Unmarshal(body, &got); code != http.StatusOK || err != nil || got.ID != sent.Task.ID {
			t.Fatalf("GET /tasks/{id}: %d %v %s", code, err, body)
		}
		res, rerr := rpc(t, base, a2a.MethodGetTask, a2a.GetTaskRequest{ID: sent.Task.ID})
		if rerr != nil || !bytes.Contains(res, []byte("over rest")) {
			t.Fatalf("JSON-RPC GetTask of the REST task: %v %s", rerr, res)
		}
		code, body = rest("GET", "/tasks/missing", "")
		if code != http.StatusNotFound || !bytes.Contains(body, []byte(`"reason":"TASK_NOT_FOUND"`)) {
			t.Fatalf("GET of a missing task: %d %s", code, body)
		}
	})

	t.Run("A2A 0.3 client", func(t *testing.T) {
		resp, err := http.Post(srv.URL()+"/agents/echo", "application/json", strings.NewReader(
			`{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m-03","role":"user","parts":[{"kind":"text","text":"from 0.3"}]}}}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if !bytes.Contains(b, []byte(`"kind":"task"`)) || !bytes.Contains(b, []byte(`"state":"completed"`)) || !bytes.Contains(b, []byte("from 0.3")) {
			t.Fatalf("message/send without A2A-Version: %s", b)
		}
		// Its card, fetched without A2A-Version, names the JSON-RPC URL as
		// 0.3 does.
		code, card := get(t, srv.URL()+"/agents/echo"+a2a.WellKnownCardPath)
		if code != http.StatusOK || !bytes.Contains(card, []byte(`"url":"`+srv.URL()+`/agents/echo"`)) || !bytes.Contains(card, []byte(`"protocolVersion":"0.3.0"`)) {
			t.Fatalf("card for 0.3: %d %s", code, card)
		}
	})

	t.Run("missing A2A-Version is 0.3", func(t *testing.T) {
		resp, err := http.Post(srv.URL()+"/agents/echo", "application/json",
			strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"}}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		r, err := a2a.DecodeResponse(b)
		if err != nil {
			t.Fatal(err)
		}
		if !errors.Is(r.Error, a2a.ErrVersionNotSupported) {
			t.Errorf("error %v, want VersionNotSupported", r.Error)
		}
	})

	t.Run("index", func(t *testing.T) {
		code, body := get(t, srv.URL()+"/")
		if code != http.StatusOK {
			t.Fatalf("status %d", code)
		}
		var idx struct {
			Agents []app.Endpoint `json:"agents"`
		}
		if err := json.Unmarshal(body, &idx); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(srv.Endpoints(), idx.Agents); diff != "" || len(idx.Agents) != 3 {
			t.Errorf("(-want +got)\n%s", diff)
		}
	})

	t.Run("unknown paths", func(t *testing.T) {
		for _, p := range []string{"/agents/nope", "/agents/echo/extra", "/agents/", "/nope"} {
			if code, _ := get(t, srv.URL()+p); code != http.StatusNotFound {
				t.Errorf("GET %s: status %d, want 404", p, code)
			}
		}
	})
}

func TestPublicURL(t *testing.T) {
	srv := start(t, &app.Options{
		PublicURL: "https://agents.example.com/",
		Stores:    tasksOnly(a2asrv.NewMemoryTaskStore(nil)),
	})
	if srv.URL() != "https://agents.example.com" {
		t.Errorf("URL %q", srv.URL())
	}
	_, body := get(t, "http://"+srv.Addr()+"/agents/echo"+a2a.WellKnownCardPath)
	var card a2a.AgentCard
	if err := a2a.Unmarshal(body, &card); err != nil {
		t.Fatal(err)
	}
	if len(card.SupportedInterfaces) == 0 || card.SupportedInterfaces[0].URL != "https://agents.example.com/agents/echo" {
		t.Errorf("interfaces %+v", card.SupportedInterfaces)
	}
}

func TestUnspecifiedAddressAdvertisesLoopback(t *testing.T) {
	srv := start(t, &app.Options{Addr: "0.0.0.0:0", Stores: tasksOnly(a2asrv.NewMemoryTaskStore(nil)), HTTP: app.HTTPOptions{InsecureListen: true}})
	if !strings.HasPrefix(srv.URL(), "http://127.0.0.1:") {
		t.Fatalf("URL %q, want loopback", srv.URL())
	}
	if code, _ := get(t, srv.URL()+"/healthz"); code != http.StatusOK {
		t.Errorf("healthz through the advertised URL: %d", code)
	}
}

func TestCustomTaskStore(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "unused")
	store := a2asrv.NewMemoryTaskStore(nil)
	srv := start(t, &app.Options{DataDir: dir, Stores: tasksOnly(store)})
	code, body := get(t, srv.URL()+"/healthz")
	if code != http.StatusOK || !strings.Contains(string(body), `"kind":"custom"`) {
		t.Errorf("healthz %d %s", code, body)
	}
	sendText(t, srv.URL()+"/agents/echo", "into memory")
	if store.Len() != 1 {
		t.Errorf("store holds %d tasks, want 1", store.Len())
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("data directory created with a custom store: %v", err)
	}
}

func TestNewErrors(t *testing.T) {
	tests := []struct {
		name    string
		opts    app.Options
		wantErr string
	}{
		{"unknown database scheme", app.Options{Database: app.DatabaseOptions{URL: "mysql://root:hunter2@db/x"}}, "postgres://"},
		{"relative public URL", app.Options{PublicURL: "agents.example.com"}, "public URL"},
		{"data dir is a file", app.Options{DataDir: "/dev/null/x"}, "data directory"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv, err := app.New(t.Context(), &tc.opts)
			if err == nil {
				srv.Shutdown(context.Background())
				t.Fatal("New succeeded")
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %q, want it to mention %q", err, tc.wantErr)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error leaks the password: %q", err)
			}
		})
	}
}

func TestStartAndShutdown(t *testing.T) {
	srv, err := app.New(t.Context(), &app.Options{Addr: "127.0.0.1:0", Stores: tasksOnly(a2asrv.NewMemoryTaskStore(nil))})
	if err != nil {
		t.Fatal(err)
	}
	if srv.URL() != "" || srv.Endpoints() != nil {
		t.Errorf("URL %q before Start", srv.URL())
	}
	if err := srv.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(t.Context()); !errors.Is(err, app.ErrStarted) {
		t.Errorf("second Start: %v, want ErrStarted", err)
	}
	url := srv.URL()
	if err := srv.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-srv.Done():
	default:
		t.Error("Done not closed after Shutdown")
	}
	if srv.Err() != nil {
		t.Errorf("Err after Shutdown: %v", srv.Err())
	}
	if _, err := http.Get(url + "/healthz"); err == nil {
		t.Error("server still answers after Shutdown")
	}
	if err := srv.Shutdown(t.Context()); err != nil {
		t.Errorf("second Shutdown: %v", err)
	}
}

func TestAddressInUse(t *testing.T) {
	first := start(t, &app.Options{Stores: tasksOnly(a2asrv.NewMemoryTaskStore(nil))})
	srv, err := app.New(t.Context(), &app.Options{Addr: first.Addr(), Stores: tasksOnly(a2asrv.NewMemoryTaskStore(nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown(context.Background())
	if err := srv.Start(t.Context()); err == nil || !strings.Contains(err.Error(), "listen") {
		t.Errorf("Start on a used port: %v", err)
	}
}

func TestIPv6UnspecifiedAdvertisesIPv6Loopback(t *testing.T) {
	srv, err := app.New(t.Context(), &app.Options{Addr: "[::]:0", Stores: tasksOnly(a2asrv.NewMemoryTaskStore(nil)), HTTP: app.HTTPOptions{InsecureListen: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown(context.Background())
	if err := srv.Start(t.Context()); err != nil {
		t.Skipf("no IPv6 here: %v", err)
	}
	if !strings.HasPrefix(srv.URL(), "http://[::1]:") {
		t.Fatalf("URL %q, want IPv6 loopback", srv.URL())
	}
}

// failingStore is a task store whose backend is down.
type failingStore struct{ a2asrv.TaskStore }

func (failingStore) Get(context.Context, a2asrv.Scope, string) (*a2a.Task, a2asrv.Version, error) {
	return nil, 0, errors.New("connection refused")
}

func TestHealthzReportsDeadStore(t *testing.T) {
	srv := start(t, &app.Options{Stores: tasksOnly(failingStore{a2asrv.NewMemoryTaskStore(nil)})})
	code, body := get(t, srv.URL()+"/healthz")
	if code != http.StatusServiceUnavailable {
		t.Fatalf("status %d, want 503", code)
	}
	var h app.Health
	if err := json.Unmarshal(body, &h); err != nil {
		t.Fatal(err)
	}
	want := app.Health{Status: "unavailable", Database: app.DatabaseHealth{Kind: "custom", OK: false, Error: "ping failed"}}
	if diff := cmp.Diff(want, h); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
}

// openStream starts a SendStreamingMessage and returns its reader after
// the first frame, so the execution is known to be running.
func openStream(t *testing.T, url, messageID string) (*a2a.EventReader, func()) {
	t.Helper()
	msg := &a2a.Message{MessageID: messageID, Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart("go")}}
	p, _ := json.Marshal(a2a.SendMessageRequest{Message: msg})
	body := `{"jsonrpc":"2.0","id":1,"method":"SendStreamingMessage","params":` + string(p) + `}`
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set(a2a.HeaderVersion, "1.0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	er := a2a.NewEventReader(resp.Body, 0)
	if _, err := er.Next(); err != nil {
		resp.Body.Close()
		t.Fatalf("first frame: %v", err)
	}
	return er, func() { resp.Body.Close() }
}

// lastState reads the stream to its end and returns the last state it
// reported (unspecified if none).
func lastState(er *a2a.EventReader) a2a.TaskState {
	state := a2a.TaskStateUnspecified
	for {
		ev, err := er.Next()
		if err != nil {
			return state
		}
		r, err := a2a.DecodeResponse(ev.Data)
		if err != nil || r.Error != nil {
			return state
		}
		var f a2a.StreamResponse
		if a2a.Unmarshal(r.Result, &f) != nil {
			return state
		}
		switch {
		case f.StatusUpdate != nil:
			state = f.StatusUpdate.Status.State
		case f.Task != nil:
			state = f.Task.Status.State
		}
	}
}

func TestShutdownLetsRunningStreamsFinish(t *testing.T) {
	srv, err := app.New(t.Context(), &app.Options{Addr: "127.0.0.1:0", DataDir: t.TempDir(), Agents: app.AgentOptions{TCKStreamingTimeout: 300 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	// tck-delayed-complete works for one timeout, then completes.
	er, closeStream := openStream(t, srv.URL()+"/agents/tck", "tck-delayed-complete-"+a2a.NewID())
	defer closeStream()

	shut := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		shut <- srv.Shutdown(ctx)
	}()
	if got := lastState(er); got != a2a.TaskStateCompleted {
		t.Errorf("stream ended in %v, want completed", got)
	}
	if err := <-shut; err != nil {
		t.Errorf("Shutdown: %v", err)
	}
}

func TestShutdownCutsOffAtItsDeadline(t *testing.T) {
	srv, err := app.New(t.Context(), &app.Options{Addr: "127.0.0.1:0", DataDir: t.TempDir(), Agents: app.AgentOptions{TCKStreamingTimeout: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	// test-resubscribe-message-id works for two timeouts: two minutes here.
	er, closeStream := openStream(t, srv.URL()+"/agents/tck", "test-resubscribe-message-id-"+a2a.NewID())
	defer closeStream()

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := srv.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Shutdown: %v, want the deadline exceeded", err)
	}
	// The stream runs two minutes: a minute only bounds a Shutdown that
	// waited for it.
	if d := time.Since(start); d > time.Minute {
		t.Errorf("Shutdown took %v past a 300ms deadline", d)
	}
	if got := lastState(er); got.Terminal() {
		t.Errorf("cut-off stream reported %v", got)
	}
}

// Documented in the package doc: the hosted agents have no tenant of their
// own, so a task is found through any agent's endpoint.
func TestAgentsSeeOnlyTheirOwnTasks(t *testing.T) {
	srv := start(t, &app.Options{Stores: tasksOnly(a2asrv.NewMemoryTaskStore(nil))})
	task := sendText(t, srv.URL()+"/agents/echo", "mine")
	if _, rerr := rpc(t, srv.URL()+"/agents/echo", a2a.MethodGetTask, a2a.GetTaskRequest{ID: task.ID}); rerr != nil {
		t.Fatalf("GetTask through echo: %v", rerr)
	}
	for _, method := range []string{a2a.MethodGetTask, a2a.MethodCancelTask} {
		_, rerr := rpc(t, srv.URL()+"/agents/tck", method, a2a.GetTaskRequest{ID: task.ID})
		if rerr == nil || rerr.Code != a2a.CodeTaskNotFound {
			t.Errorf("%s through tck: %v, want TaskNotFound", method, rerr)
		}
	}
	res, rerr := rpc(t, srv.URL()+"/agents/tck", a2a.MethodListTasks, a2a.ListTasksRequest{})
	if rerr != nil {
		t.Fatal(rerr)
	}
	var list a2a.ListTasksResponse
	if err := a2a.Unmarshal(res, &list); err != nil {
		t.Fatal(err)
	}
	if list.TotalSize != 0 {
		t.Errorf("tck lists %d tasks, want echo's task to stay invisible", list.TotalSize)
	}
}

// With a gRPC address the agents are served over gRPC too, addressed by
// name as the tenant, and their cards list that interface.
func TestServeGRPC(t *testing.T) {
	srv := start(t, &app.Options{DataDir: t.TempDir(), Agents: app.AgentOptions{GRPCAddr: "127.0.0.1:0"}})
	code, body := get(t, srv.URL()+"/agents/echo"+a2a.WellKnownCardPath)
	var card a2a.AgentCard
	if err := a2a.Unmarshal(body, &card); code != http.StatusOK || err != nil {
		t.Fatalf("card: %d %v", code, err)
	}
	want := []a2a.AgentInterface{
		{URL: srv.URL() + "/agents/echo", ProtocolBinding: a2a.BindingJSONRPC, ProtocolVersion: "1.0"},
		{URL: srv.URL() + "/agents/echo", ProtocolBinding: a2a.BindingHTTPJSON, ProtocolVersion: "1.0"},
		{URL: srv.GRPCAddr(), ProtocolBinding: a2a.BindingGRPC, ProtocolVersion: "1.0", Tenant: "echo"},
	}
	if diff := cmp.Diff(want, card.SupportedInterfaces); diff != "" {
		t.Fatalf("interfaces (-want +got)\n%s", diff)
	}

	conn, err := grpc.NewClient(srv.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := a2apb.NewA2AServiceClient(conn)
	ctx := metadata.AppendToOutgoingContext(t.Context(), "a2a-version", a2a.ProtocolVersion)
	req, err := a2agrpc.SendMessageRequestToPB(&a2a.SendMessageRequest{Tenant: "echo", Message: a2a.NewMessage(a2a.RoleUser, a2a.TextPart("over grpc"))})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.SendMessage(ctx, req)
	if err != nil {
		t.Fatalf("SendMessage over gRPC: %v", err)
	}
	id := resp.GetTask().GetId()
	// The same task over JSON-RPC: one store behind every binding.
	if res, rerr := rpc(t, srv.URL()+"/agents/echo", a2a.MethodGetTask, a2a.GetTaskRequest{ID: id}); rerr != nil || !bytes.Contains(res, []byte("over grpc")) {
		t.Fatalf("JSON-RPC GetTask of the gRPC task: %v %s", rerr, res)
	}
	// Agents keep their own tasks apart on gRPC as on HTTP.
	if _, err := c.GetTask(ctx, &a2apb.GetTaskRequest{Tenant: "tck", Id: id}); grpcstatus.Code(err) != codes.NotFound {
		t.Fatalf("the tck agent reading echo's task: %v", err)
	}
	// A message over the limit is refused by gRPC itself.
	big, _ := a2agrpc.SendMessageRequestToPB(&a2a.SendMessageRequest{Tenant: "echo",
		Message: a2a.NewMessage(a2a.RoleUser, a2a.TextPart(strings.Repeat("x", a2asrv.DefaultMaxBodyBytes+1)))})
	if _, err := c.SendMessage(ctx, big); grpcstatus.Code(err) != codes.ResourceExhausted {
		t.Fatalf("oversize message: %v", err)
	}
}
