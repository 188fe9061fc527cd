package agent_test

import (
	"regexp"
	"testing"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/agent"
)

// As the NovaOS Python SDK's AgentBuilder does, a new task's id is the
// platform's run_id when the caller supplied none, so the two match for
// platform runs.
func TestTaskIDFromRunID(t *testing.T) {
	a := agent.New("runner", "1.0.0", nil)
	a.MustRegister(agent.Skill{ID: "ids", Handler: func(c *agent.Context) (agent.Result, error) {
		return agent.Result{Output: c.TaskID() + " " + c.RunID()}, nil
	}})
	url := endpoint(t, a)
	uuid := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	ctxMD := func(run string) map[string]any {
		return map[string]any{agent.ContextMetadataKey: map[string]any{"run_id": run, "tenant_id": "t-1"}}
	}
	tests := []struct {
		name string
		req  a2a.SendMessageRequest
		want string // "" means a fresh UUID
	}{
		{"request metadata", a2a.SendMessageRequest{Message: userMsg("go", nil), Metadata: ctxMD("run-42")}, "run-42"},
		{"message metadata", a2a.SendMessageRequest{Message: userMsg("go", ctxMD("run-43"))}, "run-43"},
		{"request wins", a2a.SendMessageRequest{Message: userMsg("go", ctxMD("run-x")), Metadata: ctxMD("run-44")}, "run-44"},
		{"retry of a run gets its own task", a2a.SendMessageRequest{Message: userMsg("go", nil), Metadata: ctxMD("run-42")}, ""},
		{"no platform context", a2a.SendMessageRequest{Message: userMsg("go", nil)}, ""},
		{"run id that cannot be a task id", a2a.SendMessageRequest{Message: userMsg("go", nil), Metadata: ctxMD("run 45/../")}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			task := sendTask(t, url, tc.req, nil)
			if tc.want != "" && task.ID != tc.want || tc.want == "" && !uuid.MatchString(task.ID) {
				t.Errorf("task id %q, want %q (\"\": a fresh UUID)", task.ID, tc.want)
			}
			got := a2a.PartsText(task.Artifacts[0].Parts)
			pc, _ := agent.ParsePlatformContext(tc.req.Metadata, tc.req.Message.Metadata)
			if want := task.ID + " " + pc.RunID; got != want {
				t.Errorf("skill saw %q, want %q", got, want)
			}
		})
	}
}
