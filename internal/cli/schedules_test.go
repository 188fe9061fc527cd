package cli

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"novaos.dev/novaos/heartbeat"
	"novaos.dev/novaos/identity"
)

func TestSchedulesLifecycle(t *testing.T) {
	s := newGWServer(t)
	readOnly := s.token // runs:* and instances:* only
	tok, err := s.srv.Issuer().Mint(t.Context(), identity.Claims{TenantID: "acme", UserID: "alice", AgentID: "console",
		Scopes: []string{"runs:*", "instances:*", "schedules:*"}}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	s.token, s.secrets = tok, append(s.secrets, tok)
	s.must(t, "instances", "install", "--name", "helper", "--hosted", "echo")
	task := writeFile(t, t.TempDir(), "task.txt", "Check in on any pending tasks.\n")

	create := []string{"schedules", "create", "helper", "--cron", "0 9 * * MON-FRI", "--timezone", "Europe/Berlin",
		"--task-file", task, "--image", "registry.example.com/agents/echo", "--image-tag", "1.0.0",
		"--max-daily-runs", "24", "--max-daily-tokens", "100000", "--max-daily-cost", "5"}
	out := s.must(t, create...)
	if !strings.HasPrefix(out, "created heartbeat config ") || !strings.Contains(out, " for instance helper\nnext run ") ||
		!strings.Contains(out, " 09:00 CE") {
		t.Errorf("create printed %q", out)
	}
	var list heartbeat.ConfigList
	if err := json.Unmarshal([]byte(s.must(t, "schedules", "list", "helper", "--json")), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Configs) != 1 || list.Configs[0].Triggers[0].TaskContent != "Check in on any pending tasks." ||
		*list.Configs[0].Budget != (heartbeat.Budget{MaxDailyRuns: 24, MaxDailyTokens: 100_000, MaxDailyCostUSD: 5}) {
		t.Fatalf("list --json: %+v", list)
	}
	id := list.Configs[0].ConfigID
	table := s.must(t, "schedules", "list", "helper")
	for _, w := range []string{"CONFIG", id, "active", "0 9 * * MON-FRI", "Europe/Berlin"} {
		if !strings.Contains(table, w) {
			t.Errorf("list lacks %q:\n%s", w, table)
		}
	}

	for _, step := range []struct{ action, want string }{
		{"pause", "is paused"}, {"pause", "is paused"}, {"resume", "is active"}, {"resume", "is active"},
	} {
		if out := s.must(t, "schedules", step.action, "helper"); out != "heartbeat config "+id+" "+step.want+"\n" {
			t.Errorf("%s printed %q", step.action, out)
		}
	}
	if out := s.must(t, "schedules", "pause", "helper", id); !strings.Contains(out, "is paused") {
		t.Errorf("pause by config id printed %q", out)
	}

	code, _, errOut := s.cmd(t, create...)
	if code != exitFail || !strings.Contains(errOut, "409 Conflict") || !strings.Contains(errOut, id) {
		t.Errorf("a second create: exit %d, %s", code, errOut)
	}
	s.must(t, "instances", "install", "--name", "other", "--hosted", "echo")
	code, _, errOut = s.cmd(t, "schedules", "create", "other", "--cron", "0 25 * * *", "--timezone", "Mars/Base",
		"--task", "x", "--image", "i", "--image-tag", "t", "--max-daily-runs", "1")
	if code != exitFail || !strings.Contains(errOut, "cron_expression: hour") || !strings.Contains(errOut, "timezone: unknown time zone") {
		t.Errorf("a bad create: exit %d, %s", code, errOut)
	}

	for name, args := range map[string][]string{
		"no --cron":             {"schedules", "create", "helper", "--task", "x", "--image", "i", "--image-tag", "t", "--max-daily-runs", "1"},
		"two tasks":             {"schedules", "create", "helper", "--cron", "@daily", "--task", "x", "--task-file", task, "--image", "i", "--image-tag", "t", "--max-daily-runs", "1"},
		"no image":              {"schedules", "create", "helper", "--cron", "@daily", "--task", "x", "--max-daily-runs", "1"},
		"no run budget":         {"schedules", "create", "helper", "--cron", "@daily", "--task", "x", "--image", "i", "--image-tag", "t"},
		"no instance":           {"schedules", "list"},
		"one argument too many": {"schedules", "pause", "helper", id, "more"},
	} {
		if code, _, _ := s.cmd(t, args...); code != exitUsage {
			t.Errorf("%s: exit %d, want %d", name, code, exitUsage)
		}
	}

	s.token = readOnly
	code, _, errOut = s.cmd(t, "schedules", "list", "helper")
	if code != exitFail || !strings.Contains(errOut, "403") || !strings.Contains(errOut, "schedules:read") {
		t.Errorf("a token without schedules scopes: exit %d, %s", code, errOut)
	}
	s.token = tok

	if out := s.must(t, "schedules", "delete", "helper"); out != "deleted heartbeat config "+id+"\n" {
		t.Errorf("delete printed %q", out)
	}
	code, _, errOut = s.cmd(t, "schedules", "pause", "helper")
	if code != exitFail || !strings.Contains(errOut, "has no heartbeat config") {
		t.Errorf("pause without a config: exit %d, %s", code, errOut)
	}
}
