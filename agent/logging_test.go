package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// seed 000, novaos_client_sdk.logging: "Each log line written to stdout has
// the form: {"timestamp": "2026-07-25T14:00:00.123456Z", "level": "info",
// "message": "Tool call completed", "run_id": "run-abc...", "agent_id":
// "agent-xyz...", "tenant_id": "t-...", "tool": "search"}"; get_agent_logger:
// "Each line includes run_id, agent_id, and tenant_id (when non-empty)".
func TestLogHandlerNDJSON(t *testing.T) {
	tests := []struct {
		name  string
		pc    map[string]any // platform context; nil sends none
		log   func(l *slog.Logger)
		want  []map[string]any // every line, without its timestamp
		level slog.Level
	}{
		{
			name: "the seed's line",
			pc:   map[string]any{"run_id": "run-abc", "agent_id": "agent-xyz", "tenant_id": "t-1"},
			log:  func(l *slog.Logger) { l.Info("Tool call completed", "tool", "search") },
			want: []map[string]any{{"level": "info", "message": "Tool call completed", "run_id": "run-abc",
				"agent_id": "agent-xyz", "tenant_id": "t-1", "task_id": "task-1", "skill": "s", "tool": "search"}},
		},
		{
			name: "empty ids left out, agent name stands in",
			log:  func(l *slog.Logger) { l.Warn("slow") },
			want: []map[string]any{{"level": "warning", "message": "slow", "agent_id": "log-agent", "task_id": "task-1", "skill": "s"}},
		},
		{
			name:  "levels spelled lower-case",
			level: slog.LevelDebug,
			pc:    map[string]any{"run_id": "r"},
			log:   func(l *slog.Logger) { l.Debug("d"); l.Error("e") },
			want: []map[string]any{
				{"level": "debug", "message": "d", "run_id": "r", "agent_id": "log-agent", "task_id": "task-1", "skill": "s"},
				{"level": "error", "message": "e", "run_id": "r", "agent_id": "log-agent", "task_id": "task-1", "skill": "s"},
			},
		},
		{
			name: "PII still masked",
			pc:   map[string]any{"run_id": "r"},
			log:  func(l *slog.Logger) { l.Info("mail jane@example.com", "customer", "jane@example.com") },
			want: []map[string]any{{"level": "info", "message": "mail [EMAIL]", "customer": "[EMAIL]",
				"run_id": "r", "agent_id": "log-agent", "task_id": "task-1", "skill": "s"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			a := New("log-agent", "1", &Options{Logger: slog.New(NewLogHandler(&buf, &slog.HandlerOptions{Level: tt.level}))})
			a.MustRegister(Skill{ID: "s", Handler: func(c *Context) (Result, error) {
				tt.log(c.Logger())
				return Result{}, nil
			}})
			req := request("x")
			if tt.pc != nil {
				req.Metadata = map[string]any{ContextMetadataKey: tt.pc}
			}
			if err := a.Execute(context.Background(), req, &fakeUpdater{}); err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
			var got []map[string]any
			for _, line := range lines {
				var rec map[string]any
				if err := json.Unmarshal([]byte(line), &rec); err != nil {
					t.Fatalf("line %q: %v", line, err)
				}
				ts, _ := rec["timestamp"].(string)
				if _, err := time.Parse(LogTimeLayout, ts); err != nil || len(ts) != len("2026-07-25T14:00:00.123456Z") {
					t.Errorf("timestamp %q not in the seed's form: %v", ts, err)
				}
				delete(rec, "timestamp")
				got = append(got, rec)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("lines (-want +got):\n%s", diff)
			}
		})
	}
}

// A ReplaceAttr of the caller's own runs after the renaming.
func TestLogHandlerUserReplaceAttr(t *testing.T) {
	var buf bytes.Buffer
	h := NewLogHandler(&buf, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == "timestamp" {
			return slog.Attr{}
		}
		return a
	}})
	slog.New(h).Info("hi", "n", 1)
	if got, want := buf.String(), `{"level":"info","message":"hi","n":1}`+"\n"; got != want {
		t.Errorf("line = %q, want %q", got, want)
	}
}
