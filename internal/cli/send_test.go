package cli

import (
	"context"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/a2a/hitl"
	registryservice "novaos.dev/novaos/internal/registry"
	"novaos.dev/novaos/registry"
)

// sendServer hosts an agent at /agents/shout that works, streams its
// answer as an artifact and completes; "ask" stops in INPUT_REQUIRED.
func sendServer(t *testing.T) string {
	t.Helper()
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	card := &a2a.AgentCard{Name: "shout", Version: "1", Capabilities: a2a.AgentCapabilities{Streaming: a2a.Bool(true)},
		SupportedInterfaces: []a2a.AgentInterface{{URL: srv.URL + "/agents/shout", ProtocolBinding: a2a.BindingJSONRPC, ProtocolVersion: a2a.ProtocolVersion}}}
	h := a2asrv.NewHandler(card, a2asrv.ExecutorFunc(func(ctx context.Context, req *a2asrv.RequestContext, u a2asrv.Updater) error {
		if req.Message.Text() == "confirm" {
			return u.UpdateStatus(ctx, a2a.TaskStateInputRequired, hitl.NewMessage("Send the email?", &hitl.WriteConfirmation{CallID: "call-1", ToolName: "send_email"},
				hitl.PlanConfirmation("Send the email?", map[string]any{"to": "bob"}, []hitl.Action{{ID: "yes", Label: "Yes"}, {ID: "no", Label: "No"}})), nil)
		}
		if req.Message.Text() == "ask" {
			return u.UpdateStatus(ctx, a2a.TaskStateInputRequired, a2a.NewMessage(a2a.RoleAgent, a2a.TextPart("which\none?")), nil)
		}
		if err := u.UpdateStatus(ctx, a2a.TaskStateWorking, nil, nil); err != nil {
			return err
		}
		if err := u.AddArtifact(ctx, a2a.Artifact{ArtifactID: "a", Parts: []a2a.Part{a2a.TextPart(strings.ToUpper(req.Message.Text()))}}, false, true, nil); err != nil {
			return err
		}
		return u.UpdateStatus(ctx, a2a.TaskStateCompleted, nil, nil)
	}), nil)
	mux.Handle("/agents/shout/", http.StripPrefix("/agents/shout", h))
	mux.Handle("/agents/shout", http.StripPrefix("/agents/shout", h))
	t.Cleanup(func() { _ = h.Shutdown(context.Background()) })
	// The registry is where a bare agent name is resolved.
	reg := registryservice.New(registryservice.NewMemoryStore(), &registryservice.Options{Policy: &registry.Policy{AllowLoopback: true}})
	if _, err := reg.Register(context.Background(), &registry.Agent{Name: "shout", URL: srv.URL + "/agents/shout"}); err != nil {
		t.Fatal(err)
	}
	mux.Handle(registry.APIPath, reg.Handler())
	mux.Handle(registry.APIPath+"/", reg.Handler())
	return srv.URL
}

func TestSend(t *testing.T) {
	base := sendServer(t)
	id := `[0-9a-f-]{36}`
	tests := []struct {
		name string
		args []string
		code int
		want string // regexp of the whole stdout
	}{
		{"by name", []string{"shout", "hello", "--server", base}, 0,
			`^task ` + id + ` completed \(context ` + id + `\) \| artifact a: HELLO\n$`},
		{"by URL, streamed", []string{"--stream", base + "/agents/shout", "hi there"}, 0,
			`^task ` + id + ` working \(context ` + id + `\)\nartifact ` + id + ` a \(last\): HI THERE\nstatus ` + id + ` completed\n$`},
		{"interrupted, multi-line message on one line", []string{"shout", "ask", "--server", base, "--stream"}, 0,
			`^task ` + id + ` input_required \(context ` + id + `\) \| which\\none\?\n$`},
		{"conventions", []string{"shout", "confirm", "--server", base}, 0,
			`^task ` + id + ` input_required \(context ` + id + `\) \| Send the email\? \[plan_confirmation: yes\|no\] \[confirm send_email \(call call-1\)\]\n$`},
		{"json", []string{"shout", "hello", "--server", base, "--json", "--stream"}, 0,
			`^\{"task":\{"id":.*\n\{"artifactUpdate":.*\n\{"statusUpdate":.*"TASK_STATE_COMPLETED".*\n$`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, out, errOut := testEnv(nil)
			if code := run(t.Context(), append([]string{"send"}, tc.args...), e); code != tc.code {
				t.Fatalf("exit %d, want %d; stderr: %s", code, tc.code, errOut)
			}
			if !regexp.MustCompile(tc.want).MatchString(out.String()) {
				t.Errorf("stdout:\n%s\nwant match of %s", out, tc.want)
			}
		})
	}
}

func TestSendErrors(t *testing.T) {
	base := sendServer(t)
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no text", []string{"shout"}, exitUsage, "want an agent URL or name and the message text"},
		{"unknown agent", []string{"nope", "hi", "--server", base}, exitFail, `agent "nope"`},
		{"unknown task", []string{"shout", "hi", "--server", base, "--task", "missing"}, exitFail, "-32001"},
		{"unknown task, streamed", []string{"shout", "hi", "--server", base, "--task", "missing", "--stream"}, exitFail, "-32001"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, _, errOut := testEnv(nil)
			if code := run(t.Context(), append([]string{"send"}, tc.args...), e); code != tc.code {
				t.Fatalf("exit %d, want %d; stderr: %s", code, tc.code, errOut)
			}
			if !strings.Contains(errOut.String(), tc.want) {
				t.Errorf("stderr %q does not contain %q", errOut, tc.want)
			}
		})
	}
}
