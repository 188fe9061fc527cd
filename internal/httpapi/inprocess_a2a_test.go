package httpapi_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2aclient"
	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/internal/httpapi"
)

// stepAgent streams a task in steps: working, then (once the caller says
// it has seen the first frame) an artifact and completion.
func stepAgent(seen <-chan struct{}) http.Handler {
	card := &a2a.AgentCard{Name: "steps", Version: "1.0.0", Capabilities: a2a.AgentCapabilities{Streaming: a2a.Bool(true)},
		SupportedInterfaces: []a2a.AgentInterface{{URL: "http://agents.internal/agents/steps", ProtocolBinding: a2a.BindingJSONRPC, ProtocolVersion: a2a.ProtocolVersion}}}
	mux := http.NewServeMux()
	h := a2asrv.NewHandler(card, a2asrv.ExecutorFunc(func(ctx context.Context, req *a2asrv.RequestContext, u a2asrv.Updater) error {
		if err := u.UpdateStatus(ctx, a2a.TaskStateWorking, nil, nil); err != nil {
			return err
		}
		if seen != nil {
			select {
			case <-seen:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		art := a2a.Artifact{ArtifactID: "out", Parts: []a2a.Part{a2a.TextPart("echo: " + req.Message.Text())}}
		if err := u.AddArtifact(ctx, art, false, true, nil); err != nil {
			return err
		}
		return u.UpdateStatus(ctx, a2a.TaskStateCompleted, nil, nil)
	}), nil)
	// Mounted as the agent host mounts its agents.
	mux.Handle("/agents/steps", http.StripPrefix("/agents/steps", h))
	return mux
}

// An A2A client calls an a2asrv agent in process, through the transport:
// a streamed task arrives frame by frame (the agent goes on only once the
// client has the first), and a unary call answers.
func TestHandlerTransportA2A(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	seen := make(chan struct{})
	c, err := a2aclient.NewForURL("http://agents.internal/agents/steps", &a2aclient.Options{
		HTTPClient: &http.Client{Transport: httpapi.HandlerTransport(stepAgent(seen))},
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for frame, err := range c.SendStreamingMessage(ctx, a2aclient.TextRequest("hello", "", "")) {
		if err != nil {
			t.Fatalf("after %v: %v", got, err)
		}
		switch {
		case frame.Task != nil:
			got = append(got, "task "+frame.Task.Status.State.String())
		case frame.StatusUpdate != nil:
			got = append(got, "status "+frame.StatusUpdate.Status.State.String())
		case frame.ArtifactUpdate != nil:
			got = append(got, "artifact "+frame.ArtifactUpdate.Artifact.Parts[0].Text)
		default:
			got = append(got, "other")
		}
		if len(got) == 1 {
			close(seen)
		}
	}
	// The first frame is the task as the executor's first write made it;
	// nothing else happens until the client has it.
	want := []string{"task TASK_STATE_WORKING", "artifact echo: hello", "status TASK_STATE_COMPLETED"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("frames (-want +got):\n%s", diff)
	}

	res, err := c.SendText(ctx, "again", "", "")
	if err != nil {
		t.Fatal(err)
	}
	if res.Task == nil || res.Task.Status.State != a2a.TaskStateCompleted || len(res.Task.Artifacts) != 1 || res.Task.Artifacts[0].Parts[0].Text != "echo: again" {
		t.Errorf("SendText = %+v", res)
	}
}
