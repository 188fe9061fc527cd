package interop

import (
	"testing"

	goa2a "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"

	"novaos.dev/novaos/a2a"
)

// Multi-turn through INPUT_REQUIRED: the agent asks a question ("ask"), a
// blocking send returns at the interrupted state, a stream closes there,
// and the next message on the same task completes it.

func TestInputRequired_GoClient(t *testing.T) {
	eachGoBinding(t, func(t *testing.T, c *a2aclient.Client) {
		task := goSendTask(t, c, &goa2a.SendMessageRequest{Message: goUserMessage("ask")})
		if task.Status.State != goa2a.TaskStateInputRequired || task.Status.Message == nil || goText(task.Status.Message.Parts) != "what number?" {
			t.Fatalf("blocking send returned state %s, status message %+v", task.Status.State, task.Status.Message)
		}
		answer := goUserMessage("42")
		answer.TaskID, answer.ContextID = task.ID, task.ContextID
		done := goSendTask(t, c, &goa2a.SendMessageRequest{Message: answer})
		if done.ID != task.ID || done.Status.State != goa2a.TaskStateCompleted || artifactText(done) != "answer: 42" {
			t.Errorf("follow-up = task %s state %s artifacts %q", done.ID, done.Status.State, artifactText(done))
		}

		evs, err := collectEvents(c.SendStreamingMessage(testCtx(t), &goa2a.SendMessageRequest{Message: goUserMessage("ask")}))
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) == 0 || goKind(evs[len(evs)-1]) != "status:TASK_STATE_INPUT_REQUIRED" && goKind(evs[len(evs)-1]) != "task:TASK_STATE_INPUT_REQUIRED" {
			t.Errorf("stream did not end at INPUT_REQUIRED: %v", evs)
		}
	})
}

// The same exchange on the wire against all three servers.
func TestInputRequired_Raw(t *testing.T) {
	servers := []struct {
		name  string
		start func(*testing.T) string
	}{
		{"novaos", func(t *testing.T) string { return startOurServer(t).URL }},
		{"a2a-go", func(t *testing.T) string { return startGoPeer(t).URL }},
		{"a2a-js", startJSPeer},
	}
	for _, srv := range servers {
		t.Run(srv.name, func(t *testing.T) {
			c := newRawClient(srv.start(t))
			res := decodeResult[a2a.SendMessageResponse](t, c.call(t, a2a.MethodSendMessage, a2a.SendMessageRequest{Message: userMessage("ask")}))
			task := res.Task
			if task == nil || task.Status.State != a2a.TaskStateInputRequired || task.Status.Message.Text() != "what number?" {
				t.Fatalf("blocking send = %+v, want INPUT_REQUIRED with the question", res)
			}

			evs := c.open(t, a2a.MethodSendStreamingMessage, a2a.SendMessageRequest{Message: userMessage("ask")}).rest()
			if len(evs) == 0 || !evs[len(evs)-1].Final() || evs[len(evs)-1].StatusUpdate == nil && evs[len(evs)-1].Task == nil {
				t.Fatalf("stream frames %v, want it to end at INPUT_REQUIRED", kinds(evs))
			}
			if k := kind(evs[len(evs)-1]); k != "status:TASK_STATE_INPUT_REQUIRED" && k != "task:TASK_STATE_INPUT_REQUIRED" {
				t.Errorf("last frame %s", k)
			}

			answer := userMessage("42")
			answer.TaskID, answer.ContextID = task.ID, task.ContextID
			done := decodeResult[a2a.SendMessageResponse](t, c.call(t, a2a.MethodSendMessage, a2a.SendMessageRequest{Message: answer})).Task
			if done == nil || done.ID != task.ID || done.Status.State != a2a.TaskStateCompleted {
				t.Fatalf("follow-up = %+v", done)
			}
			if len(done.Artifacts) == 0 || a2a.PartsText(done.Artifacts[len(done.Artifacts)-1].Parts) != "answer: 42" {
				t.Errorf("follow-up artifacts %+v", done.Artifacts)
			}

			// A message naming the task without its contextId continues it
			// too: the server infers the context.
			res = decodeResult[a2a.SendMessageResponse](t, c.call(t, a2a.MethodSendMessage, a2a.SendMessageRequest{Message: userMessage("ask")}))
			bare := userMessage("7")
			bare.TaskID = res.Task.ID
			cont := decodeResult[a2a.SendMessageResponse](t, c.call(t, a2a.MethodSendMessage, a2a.SendMessageRequest{Message: bare})).Task
			if cont == nil || cont.ContextID != res.Task.ContextID || cont.Status.State != a2a.TaskStateCompleted {
				t.Errorf("follow-up without contextId = %+v", cont)
			}

			// A taskId with another task's contextId MUST be rejected; all
			// three servers say invalid params.
			res = decodeResult[a2a.SendMessageResponse](t, c.call(t, a2a.MethodSendMessage, a2a.SendMessageRequest{Message: userMessage("ask")}))
			mismatch := userMessage("7")
			mismatch.TaskID, mismatch.ContextID = res.Task.ID, a2a.NewID()
			wantError(t, c.call(t, a2a.MethodSendMessage, a2a.SendMessageRequest{Message: mismatch}), a2a.CodeInvalidParams)
		})
	}
}
