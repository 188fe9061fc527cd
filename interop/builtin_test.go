package interop

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	goa2a "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/internal/builtin"
)

// The built-in echo agent, served by our handler as `novaos serve` does,
// driven by a2a-go's client. Its streamed answer is one artifact sent word
// by word with append and lastChunk, which the peer must deliver intact.

func startBuiltinEcho(t *testing.T) *a2aclient.Client {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	agent := builtin.Echo()
	card := agent.Card()
	card.SupportedInterfaces = []a2a.AgentInterface{{URL: "http://" + l.Addr().String(), ProtocolBinding: a2a.BindingJSONRPC, ProtocolVersion: a2a.ProtocolVersion}}
	h := a2asrv.NewHandler(card, agent, nil)
	srv := &httptest.Server{Listener: l, Config: &http.Server{Handler: h}}
	srv.Start()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		h.Shutdown(ctx)
		srv.Close()
	})
	ctx := testCtx(t)
	resolved, err := agentcard.DefaultResolver.Resolve(ctx, srv.URL)
	if err != nil {
		t.Fatalf("resolve card: %v", err)
	}
	c, err := a2aclient.NewFromCard(ctx, resolved)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Destroy() })
	return c
}

// artifactText concatenates the text of every artifact of the task.
func artifactText(task *goa2a.Task) string {
	s := ""
	for _, a := range task.Artifacts {
		s += goText(a.Parts)
	}
	return s
}

func TestBuiltinEcho_GoClient(t *testing.T) {
	c := startBuiltinEcho(t)

	t.Run("SendMessage", func(t *testing.T) {
		task := goSendTask(t, c, &goa2a.SendMessageRequest{Message: goUserMessage("hello world")})
		if task.Status.State != goa2a.TaskStateCompleted || artifactText(task) != "hello world" {
			t.Errorf("state %s, artifact text %q", task.Status.State, artifactText(task))
		}
	})

	t.Run("SendStreamingMessage", func(t *testing.T) {
		evs, err := collectEvents(c.SendStreamingMessage(testCtx(t), &goa2a.SendMessageRequest{Message: goUserMessage("hello big world")}))
		if err != nil {
			t.Fatalf("stream: %v", err)
		}
		var chunks []string
		var artifactID goa2a.ArtifactID
		var taskID goa2a.TaskID
		for i, ev := range evs {
			switch e := ev.(type) {
			case *goa2a.Task:
				if i != 0 {
					t.Errorf("task at position %d", i)
				}
				taskID = e.ID
			case *goa2a.TaskArtifactUpdateEvent:
				if len(chunks) == 0 {
					artifactID = e.Artifact.ID
				} else if !e.Append || e.Artifact.ID != artifactID {
					t.Errorf("chunk %d: append %v, artifact %q, want append to %q", len(chunks), e.Append, e.Artifact.ID, artifactID)
				}
				chunks = append(chunks, goText(e.Artifact.Parts))
				if last := len(chunks) == 3; e.LastChunk != last {
					t.Errorf("chunk %d: lastChunk %v", len(chunks), e.LastChunk)
				}
			}
		}
		want := []string{"hello ", "big ", "world"}
		if len(chunks) != len(want) || chunks[0] != want[0] || chunks[1] != want[1] || chunks[2] != want[2] {
			t.Errorf("chunks %q, want %q", chunks, want)
		}
		if last := goKind(evs[len(evs)-1]); last != "status:TASK_STATE_COMPLETED" {
			t.Errorf("last event %s", last)
		}
		// The stored task holds the appended artifact whole.
		got, err := c.GetTask(testCtx(t), &goa2a.GetTaskRequest{ID: taskID})
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Artifacts) != 1 || goText(got.Artifacts[0].Parts) != "hello big world" {
			t.Errorf("stored artifacts = %+v", got.Artifacts)
		}
	})
}
