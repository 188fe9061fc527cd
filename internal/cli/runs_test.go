package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/a2a/hitl"
	"novaos.dev/novaos/agent"
	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/app"
	"novaos.dev/novaos/secret"
)

// gwTestAdminToken is the admin token of the test server.
const gwTestAdminToken = "admin-token-for-the-cli-tests-0123456789"

// gwServer is a platform in process with the gateway, the hosted echo
// agent and asker, an agent that pauses on its first turn, and a user
// token of tenant acme that may run and install.
type gwServer struct {
	url, token string
	srv        *app.Server
	// secrets are values that must never appear in any output.
	secrets []string
}

// asker pauses on its first turn: with a write confirmation when the
// input starts with "confirm", with a request offering actions for
// "choose", and with a plain question otherwise; "fail" fails the run.
// The turn after the answer completes with "got " and the answer.
func asker() *agent.Agent {
	a := agent.New("asker", "1.0.0", nil)
	a.MustRegister(agent.Skill{ID: "ask", Handler: func(c *agent.Context) (agent.Result, error) {
		if c.Request().Task != nil {
			return agent.Result{Output: "got " + c.Input()}, nil
		}
		u := c.Updater()
		switch in := c.Input(); {
		case strings.HasPrefix(in, "confirm"):
			return agent.Result{}, u.RequiresInput(c, hitl.NewMessage("Send the mail to bob?",
				&hitl.WriteConfirmation{CallID: "call-7", ToolName: "mail.send"}))
		case strings.HasPrefix(in, "choose"):
			return agent.Result{}, u.RequiresInput(c, hitl.NewMessage("Which plan?",
				hitl.PlanConfirmation("Which plan?", map[string]any{"steps": 2}, []hitl.Action{{ID: "fast", Label: "Fast"}, {ID: "safe", Label: "Safe"}})))
		case strings.HasPrefix(in, "fail"):
			return agent.Result{Status: agent.StatusFailed, Error: "the disk is on fire"}, nil
		}
		return agent.Result{Status: agent.StatusWaitingUser, Output: "which colour?"}, nil
	}})
	return a
}

func newGWServer(t *testing.T) *gwServer {
	t.Helper()
	srv, err := app.New(t.Context(), &app.Options{Addr: "127.0.0.1:0", DataDir: t.TempDir(),
		Logger:     slog.New(slog.DiscardHandler),
		AdminToken: secret.New(gwTestAdminToken),
		Agents:     app.AgentOptions{Hosted: map[string]app.Agent{"asker": asker()}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	tok, err := srv.Issuer().Mint(t.Context(), identity.Claims{TenantID: "acme", UserID: "alice", AgentID: "console",
		Scopes: []string{"runs:*", "instances:*"}}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return &gwServer{url: srv.URL(), token: tok, srv: srv, secrets: []string{tok, gwTestAdminToken}}
}

// vars is the environment of a command run as alice.
func (s *gwServer) vars() map[string]string {
	return map[string]string{EnvServer: s.url, EnvToken: s.token}
}

// cmd runs the novaos command line as alice and checks that no secret
// shows in its output.
func (s *gwServer) cmd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return s.cmdCtx(t, t.Context(), args...)
}

func (s *gwServer) cmdCtx(t *testing.T, ctx context.Context, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	e, out, errOut := testEnv(s.vars())
	code = run(ctx, args, e)
	s.noSecrets(t, out.String(), errOut.String())
	return code, out.String(), errOut.String()
}

func (s *gwServer) noSecrets(t *testing.T, outputs ...string) {
	t.Helper()
	for _, o := range outputs {
		for _, sec := range s.secrets {
			if strings.Contains(o, sec) {
				t.Fatalf("a secret shows in the output:\n%s", strings.ReplaceAll(o, sec, "<SECRET>"))
			}
		}
	}
}

// must runs a command that has to succeed and returns its stdout.
func (s *gwServer) must(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errOut := s.cmd(t, args...)
	if code != exitOK {
		t.Fatalf("novaos %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// client is a Go client of the gateway as alice.
func (s *gwServer) client(t *testing.T) *gateway.Client {
	t.Helper()
	c, err := gateway.NewClient(s.url, &gateway.ClientOptions{Token: secret.New(s.token)})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// waitStatus waits until the run has status want (the deadline only
// bounds a failure).
func (s *gwServer) waitStatus(t *testing.T, runID string, want gateway.Status) {
	t.Helper()
	s.waitRun(t, runID, "status "+string(want), func(r *gateway.Run) bool { return r.Status == want })
}

// waitRun waits until cond holds of the run (the deadline only bounds a
// failure) and returns it.
func (s *gwServer) waitRun(t *testing.T, runID, what string, cond func(*gateway.Run) bool) *gateway.Run {
	t.Helper()
	c := s.client(t)
	deadline := time.Now().Add(30 * time.Second)
	for {
		r, err := c.GetRun(t.Context(), runID)
		if err != nil {
			t.Fatal(err)
		}
		if cond(r) {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s is %s, want %s", runID, r.Status, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitOutput waits until buf holds a match of re and returns the match's
// first group.
func waitOutput(t *testing.T, buf *syncBuffer, re string, done <-chan int) string {
	t.Helper()
	rx := regexp.MustCompile(re)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if m := rx.FindStringSubmatch(buf.String()); m != nil {
			if len(m) > 1 {
				return m[1]
			}
			return m[0]
		}
		select {
		case code := <-done:
			t.Fatalf("the command ended (exit %d) before printing %s:\n%s", code, re, buf)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s in:\n%s", re, buf)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestRunEcho(t *testing.T) {
	s := newGWServer(t)
	s.must(t, "instances", "install", "--name", "echo", "--hosted", "echo")

	code, out, errOut := s.cmd(t, "run", "echo", "hello gateway world")
	if code != exitOK {
		t.Fatalf("exit %d\nstderr: %s", code, errOut)
	}
	if !strings.Contains(out, "hello") || !strings.Contains(out, "world") || !strings.HasSuffix(out, "\n") {
		t.Errorf("stdout %q is not the answer", out)
	}
	for _, want := range []string{"started on echo", "· RUNNING", "COMPLETED"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	runID := regexp.MustCompile(`run (\S+) started`).FindStringSubmatch(errOut)[1]

	t.Run("json", func(t *testing.T) {
		code, out, errOut := s.cmd(t, "run", "echo", "one two", "--json")
		if code != exitOK {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		var last jsonEvent
		var seqs []int64
		sc := bufio.NewScanner(strings.NewReader(out))
		for sc.Scan() {
			var ev jsonEvent
			if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
				t.Fatalf("line %q: %v", sc.Text(), err)
			}
			seqs = append(seqs, ev.Sequence)
			last = ev
		}
		for i := 1; i < len(seqs); i++ {
			if seqs[i] != seqs[i-1]+1 {
				t.Errorf("sequences %v are not consecutive", seqs)
			}
		}
		if last.Type != gateway.EventStatus || !strings.Contains(string(last.Payload), `"COMPLETED"`) || last.ID == "" {
			t.Errorf("last event %+v, want the COMPLETED status with an id", last)
		}
	})
	t.Run("detach, then events, show, list", func(t *testing.T) {
		id := strings.TrimSpace(s.must(t, "run", "echo", "later", "--detach"))
		if !isUUID(id) && id == "" {
			t.Fatalf("--detach printed %q", id)
		}
		code, out, errOut := s.cmd(t, "runs", "events", id)
		if code != exitOK || !strings.Contains(out, "later") {
			t.Fatalf("runs events: exit %d, stdout %q, stderr %s", code, out, errOut)
		}
		show := s.must(t, "runs", "show", id, "--events")
		for _, want := range []string{"run       " + id, "status    COMPLETED", "input     later", "event 1 status"} {
			if !strings.Contains(show, want) {
				t.Errorf("runs show lacks %q:\n%s", want, show)
			}
		}
		var r gateway.Run
		if err := json.Unmarshal([]byte(s.must(t, "runs", "show", id, "--json")), &r); err != nil || r.ID != id || r.Status != gateway.StatusCompleted {
			t.Errorf("runs show --json: %+v, %v", r, err)
		}
		list := s.must(t, "runs", "list", "--status", "completed", "--instance", "echo")
		if !strings.Contains(list, id) || !strings.Contains(list, runID) || !strings.HasPrefix(list, "RUN") {
			t.Errorf("runs list lacks %s and %s:\n%s", id, runID, list)
		}
		if !regexp.MustCompile(`(?m)^` + id + `\s+COMPLETED\s+echo\s`).MatchString(list) {
			t.Errorf("runs list does not name the instance:\n%s", list)
		}
		if list := s.must(t, "runs", "list", "--status", "FAILED"); strings.Contains(list, id) {
			t.Errorf("a completed run listed as failed:\n%s", list)
		}
		var page gateway.RunPage
		if err := json.Unmarshal([]byte(s.must(t, "runs", "list", "--limit", "1", "--json")), &page); err != nil || len(page.Runs) != 1 {
			t.Errorf("runs list --limit 1 --json: %+v, %v", page, err)
		}
		// Following an ended run again replays it to its ending.
		if code, _, errOut := s.cmd(t, "runs", "events", id, "--after", "1"); code != exitOK || strings.Contains(errOut, "started") {
			t.Errorf("runs events --after: exit %d: %s", code, errOut)
		}
	})
	t.Run("attachment", func(t *testing.T) {
		f := filepath.Join(t.TempDir(), "notes.txt")
		if err := os.WriteFile(f, []byte("some notes"), 0o600); err != nil {
			t.Fatal(err)
		}
		id := strings.TrimSpace(s.must(t, "run", "echo", "see attached", "--attach", f, "--detach"))
		r, err := s.client(t).GetRun(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Attachments) != 1 || r.Attachments[0].Name != "notes.txt" || !strings.HasPrefix(r.Attachments[0].Type, "text/plain") {
			t.Errorf("attachments %+v", r.Attachments)
		}
	})
}

// A token that may run but not read instances names the instance by
// its id, and sees instance ids in listings.
func TestRunWithRunsScopeOnly(t *testing.T) {
	s := newGWServer(t)
	out := s.must(t, "instances", "install", "--name", "echo", "--hosted", "echo", "--json")
	var inst gateway.Instance
	if err := json.Unmarshal([]byte(out), &inst); err != nil {
		t.Fatal(err)
	}
	tok, err := s.srv.Issuer().Mint(t.Context(), identity.Claims{TenantID: "acme", UserID: "bob", AgentID: "console",
		Scopes: []string{"runs:*"}}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	s.secrets = append(s.secrets, tok)
	vars := map[string]string{EnvServer: s.url, EnvToken: tok}
	e, stdout, stderr := testEnv(vars)
	if code := run(t.Context(), []string{"run", inst.ID, "by id"}, e); code != exitOK || !strings.Contains(stdout.String(), "by id") {
		t.Fatalf("run by id: exit %d\n%s%s", code, stdout, stderr)
	}
	e, stdout, stderr = testEnv(vars)
	if code := run(t.Context(), []string{"runs", "list"}, e); code != exitOK || !strings.Contains(stdout.String(), inst.ID) {
		t.Errorf("runs list: exit %d\n%s%s", code, stdout, stderr)
	}
	e, stdout, stderr = testEnv(vars)
	if code := run(t.Context(), []string{"run", "echo", "by name"}, e); code != exitFail || !strings.Contains(stderr.String(), "403") {
		t.Errorf("run by name without instances:read: exit %d\n%s%s", code, stdout, stderr)
	}
	s.noSecrets(t, stdout.String(), stderr.String())
}

// A paused run shows its question and the command that answers it, and
// run keeps following it through the reply to its end.
func TestRunPauseAndReply(t *testing.T) {
	s := newGWServer(t)
	s.must(t, "instances", "install", "--name", "asker", "--hosted", "asker")

	e, out, errOut := testEnv(s.vars())
	done := make(chan int, 1)
	go func() { done <- run(t.Context(), []string{"run", "asker", "paint the fence"}, e) }()
	runID := waitOutput(t, errOut, `answer with: novaos runs reply (\S+) --input 'your answer'`, done)
	if !strings.Contains(errOut.String(), "? which colour?") || !strings.Contains(errOut.String(), "· WAITING_USER") {
		t.Errorf("the pause does not show the question:\n%s", errOut)
	}
	if reply := s.must(t, "runs", "reply", runID, "--input", "blue"); !strings.Contains(reply, "replied to run "+runID) {
		t.Errorf("runs reply printed %q", reply)
	}
	select {
	case code := <-done:
		if code != exitOK {
			t.Fatalf("run: exit %d\n%s", code, errOut)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("run did not end after the reply")
	}
	if !strings.Contains(out.String(), "got blue") {
		t.Errorf("stdout %q lacks the answer after the reply", out)
	}
	s.noSecrets(t, out.String(), errOut.String())

	t.Run("a reply to a run that waits for nothing", func(t *testing.T) {
		code, _, errOut := s.cmd(t, "runs", "reply", runID, "--input", "again")
		if code != exitFail || !strings.Contains(errOut, "is not waiting for an answer") {
			t.Errorf("exit %d: %s", code, errOut)
		}
	})
	t.Run("write confirmation", func(t *testing.T) {
		id := strings.TrimSpace(s.must(t, "run", "asker", "confirm the mail", "--detach"))
		s.waitStatus(t, id, gateway.StatusWaitingUser)
		show := s.must(t, "runs", "show", id)
		if !strings.Contains(show, "? confirm the call call-7 of the tool mail.send") ||
			!strings.Contains(show, "answer with: novaos runs reply "+id+" --call call-7 --approve") {
			t.Errorf("runs show of a write confirmation:\n%s", show)
		}
		s.must(t, "runs", "reply", id, "--call", "call-7", "--approve")
		if code, _, errOut := s.cmd(t, "runs", "events", id); code != exitOK {
			t.Errorf("runs events after the approval: exit %d: %s", code, errOut)
		}
	})
	t.Run("actions", func(t *testing.T) {
		id := strings.TrimSpace(s.must(t, "run", "asker", "choose a plan", "--detach"))
		s.waitStatus(t, id, gateway.StatusWaitingUser)
		show := s.must(t, "runs", "show", id)
		for _, want := range []string{"? Which plan?", "action fast: Fast", "action safe: Safe", "--action ID [--value TEXT]"} {
			if !strings.Contains(show, want) {
				t.Errorf("runs show lacks %q:\n%s", want, show)
			}
		}
		s.must(t, "runs", "reply", id, "--action", "safe")
		if code, _, errOut := s.cmd(t, "runs", "events", id); code != exitOK {
			t.Errorf("runs events after the action: exit %d: %s", code, errOut)
		}
	})
	t.Run("the admin token answers for a tenant", func(t *testing.T) {
		id := strings.TrimSpace(s.must(t, "run", "asker", "paint", "--detach"))
		s.waitStatus(t, id, gateway.StatusWaitingUser)
		file := filepath.Join(t.TempDir(), "admin")
		if err := os.WriteFile(file, []byte(gwTestAdminToken+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		e, out, errOut := testEnv(map[string]string{EnvServer: s.url})
		code := run(t.Context(), []string{"runs", "show", id, "--admin-token-file", file, "--tenant", "acme"}, e)
		s.noSecrets(t, out.String(), errOut.String())
		if code != exitOK || !strings.Contains(out.String(), "--input 'your answer' --tenant acme") {
			t.Fatalf("exit %d\n%s%s", code, out, errOut)
		}
		e, out, errOut = testEnv(map[string]string{EnvServer: s.url, EnvAdminToken: gwTestAdminToken})
		if code := run(t.Context(), []string{"runs", "reply", id, "--input", "red", "--tenant", "acme"}, e); code != exitOK {
			t.Fatalf("reply as the admin: exit %d: %s", code, errOut)
		}
		s.noSecrets(t, out.String(), errOut.String())
		s.waitStatus(t, id, gateway.StatusCompleted)
	})
}

func TestRunEndings(t *testing.T) {
	s := newGWServer(t)
	s.must(t, "instances", "install", "--name", "asker", "--hosted", "asker")

	t.Run("failed", func(t *testing.T) {
		code, out, errOut := s.cmd(t, "run", "asker", "fail now")
		if code != exitFail || !regexp.MustCompile(`run \S+ FAILED: .*the disk is on fire`).MatchString(errOut) {
			t.Errorf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		id := strings.TrimSpace(s.must(t, "run", "asker", "paint", "--detach"))
		s.waitStatus(t, id, gateway.StatusWaitingUser)
		if out := s.must(t, "runs", "cancel", id); out != "cancelled run "+id+" (CANCELLED)\n" {
			t.Errorf("runs cancel printed %q", out)
		}
		code, _, errOut := s.cmd(t, "runs", "events", id)
		if code != exitFail || !strings.Contains(errOut, "run "+id+" CANCELLED: ") {
			t.Errorf("runs events of a cancelled run: exit %d: %s", code, errOut)
		}
		code, _, errOut = s.cmd(t, "runs", "cancel", id)
		if code != exitFail || !strings.Contains(errOut, "has ended already") {
			t.Errorf("a second cancel: exit %d: %s", code, errOut)
		}
	})
	t.Run("Ctrl-C stops following, not the run", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		e, _, errOut := testEnv(s.vars())
		done := make(chan int, 1)
		go func() { done <- run(ctx, []string{"run", "asker", "paint"}, e) }()
		id := waitOutput(t, errOut, `answer with: novaos runs reply (\S+) `, done)
		cancel()
		select {
		case code := <-done:
			if code != exitInterrupted {
				t.Errorf("exit %d, want %d", code, exitInterrupted)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("run did not stop following")
		}
		if !strings.Contains(errOut.String(), "stopped following run "+id+"; the run goes on") ||
			!strings.Contains(errOut.String(), "novaos runs events "+id+" --after ") {
			t.Errorf("stderr:\n%s", errOut)
		}
		r, err := s.client(t).GetRun(t.Context(), id)
		if err != nil || r.Status != gateway.StatusWaitingUser {
			t.Errorf("the run after Ctrl-C: %+v, %v", r, err)
		}
	})
}

func TestRunsBadInput(t *testing.T) {
	s := newGWServer(t)
	s.must(t, "instances", "install", "--name", "echo", "--hosted", "echo")
	missing := filepath.Join(t.TempDir(), "missing.txt")
	for _, tc := range []struct {
		name   string
		args   []string
		vars   map[string]string // nil: alice's
		code   int
		stderr string
	}{
		{"unknown instance", []string{"run", "nope", "hi"}, nil, exitFail, `no instance "nope" in the tenant`},
		{"unknown instance id", []string{"run", "00000000-0000-4000-8000-000000000000", "hi"}, nil, exitFail, "404"},
		{"no text", []string{"run", "echo"}, nil, exitUsage, `want the instance and the text`},
		{"blank text", []string{"run", "echo", "  "}, nil, exitUsage, "invalid input: is required"},
		{"too much text", []string{"run", "echo", strings.Repeat("x", gateway.MaxInputChars+1)}, nil, exitUsage, "more than 100000"},
		{"missing attachment", []string{"run", "echo", "hi", "--attach", missing}, nil, exitUsage, "--attach: open"},
		{"unknown run", []string{"runs", "show", "00000000-0000-4000-8000-000000000000"}, nil, exitFail, "404"},
		{"show without a run", []string{"runs", "show"}, nil, exitUsage, "want the run id"},
		{"reply without an answer", []string{"runs", "reply", "r1"}, nil, exitUsage, "nothing to reply"},
		{"approve without a call", []string{"runs", "reply", "r1", "--approve"}, nil, exitUsage, "need --call ID"},
		{"a call without a verdict", []string{"runs", "reply", "r1", "--call", "c1"}, nil, exitUsage, "--call needs --approve or --reject"},
		{"approve and reject", []string{"runs", "reply", "r1", "--call", "c1", "--approve", "--reject"}, nil, exitUsage, "not both"},
		{"bad status", []string{"runs", "list", "--status", "DONE"}, nil, exitUsage, `--status "DONE": want QUEUED`},
		{"negative limit", []string{"runs", "list", "--limit", "-1"}, nil, exitUsage, "must not be negative"},
		{"unknown subcommand", []string{"runs", "frob"}, nil, exitUsage, `unknown subcommand "frob"`},
		{"the admin without a tenant", []string{"runs", "list"}, map[string]string{EnvServer: s.url, EnvAdminToken: gwTestAdminToken}, exitUsage, "name one with --tenant"},
		{"a tenant with a platform token", []string{"runs", "list", "--tenant", "other"}, nil, exitUsage, "--tenant is for the admin token"},
		{"no token for a remote server", []string{"runs", "list", "--server", "http://example.invalid:1"}, map[string]string{}, exitUsage, "no token"},
		{"a refused token", []string{"runs", "list"}, map[string]string{EnvServer: s.url, EnvToken: "not-a-token"}, exitFail, "401"},
		{"a wrong admin token", []string{"runs", "list", "--tenant", "acme"}, map[string]string{EnvServer: s.url, EnvAdminToken: "wrong-admin-token-0123456789"}, exitFail, "401"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vars := tc.vars
			if vars == nil {
				vars = s.vars()
			}
			e, out, errOut := testEnv(vars)
			code := run(t.Context(), tc.args, e)
			s.noSecrets(t, out.String(), errOut.String())
			if code != tc.code || !strings.Contains(errOut.String(), tc.stderr) {
				t.Errorf("exit %d, want %d; stderr %q lacks %q", code, tc.code, clipLine(errOut.String(), 400), tc.stderr)
			}
		})
	}
}

func TestRunsHelp(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"runs", "-h"}, []string{"list", "show", "cancel", "reply", "events", "debug"}},
		{[]string{"help", "runs"}, []string{"list", "show", "cancel", "reply", "events"}},
		{[]string{"instances", "-h"}, []string{"install", "list", "show", "update", "remove"}},
		{[]string{"help"}, []string{"instances", "run ", "runs "}},
	} {
		code, out, errOut := runCmd(t, tc.args...)
		if code != exitOK {
			t.Errorf("%v: exit %d: %s", tc.args, code, errOut)
		}
		for _, w := range tc.want {
			if !strings.Contains(out, "  "+w) {
				t.Errorf("%v lacks %q:\n%s", tc.args, w, out)
			}
		}
	}
	code, _, errOut := runCmd(t, "run", "-h")
	if code != exitOK || !strings.Contains(errOut, "Ctrl-C stops following; the run goes on") || !strings.Contains(errOut, "-detach") {
		t.Errorf("run -h: exit %d:\n%s", code, errOut)
	}
}

func TestPauseDisplay(t *testing.T) {
	for _, tc := range []struct {
		name, typ, payload, flags string
		want                      string
	}{
		{"question", gateway.EventHITL, `{"content":"which colour?"}`, "",
			"? which colour?\n  answer with: novaos runs reply r1 --input 'your answer'\n"},
		{"request with actions", gateway.EventHITL,
			`{"hitl":{"hitl_type":"plan_confirmation","content":"Which plan?","actions":[{"id":"go","label":"Go"}]},"content":"x"}`, " --tenant acme",
			"? Which plan?\n  action go: Go\n  answer with: novaos runs reply r1 --action ID [--value TEXT] --tenant acme\n"},
		{"write confirmation", gateway.EventWriteConfirmationRequired, `{"call_id":"c 1","tool_name":"mail.send","content":"send?"}`, "",
			"? confirm the call c 1 of the tool mail.send: send?\n  answer with: novaos runs reply r1 --call 'c 1' --approve   (or --reject)\n"},
		{"oauth", gateway.EventOAuthRequired, `{"connector":"gmail","auth_url":"https://auth.example/x"}`, "",
			"? authorize the connector gmail at https://auth.example/x\n  then continue with: novaos runs reply r1 --input done\n"},
		{"a payload that is not an object", gateway.EventHITL, `"?"`, "",
			"? the agent waits for your answer\n  answer with: novaos runs reply r1 --input 'your answer'\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			describePause(&b, "r1", tc.typ, json.RawMessage(tc.payload), tc.flags)
			if b.String() != tc.want {
				t.Errorf("got:\n%s\nwant:\n%s", b.String(), tc.want)
			}
		})
	}
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"abc-1.2": "abc-1.2", "": "''", "a b": "'a b'", "it's": `'it'\''s'`, "http://h:1/x": "http://h:1/x", "$HOME": "'$HOME'",
	} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}

// unquote reads a word shellQuote wrote as a POSIX shell does.
func unquote(s string) (string, bool) {
	var b strings.Builder
	for len(s) > 0 {
		if s[0] != '\'' {
			i := strings.IndexAny(s, "'\\")
			if i < 0 {
				i = len(s)
			}
			if i < len(s) && s[i] == '\\' {
				if i+1 >= len(s) {
					return "", false
				}
				b.WriteString(s[:i])
				b.WriteByte(s[i+1])
				s = s[i+2:]
				continue
			}
			b.WriteString(s[:i])
			s = s[i:]
			continue
		}
		end := strings.IndexByte(s[1:], '\'')
		if end < 0 {
			return "", false
		}
		b.WriteString(s[1 : 1+end])
		s = s[2+end:]
	}
	return b.String(), true
}

func FuzzShellQuote(f *testing.F) {
	for _, s := range []string{"", "a b", "it's", "$(rm -rf /)", "`x`", "a\nb", "'", "\\"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q := shellQuote(s)
		got, ok := unquote(q)
		if !ok || got != s {
			t.Fatalf("shellQuote(%q) = %s, which a shell reads as %q", s, q, got)
		}
	})
}

// FuzzPauseDisplay feeds describePause and the progress display payloads
// of any shape: they print something for a person and never panic.
func FuzzPauseDisplay(f *testing.F) {
	for _, p := range []string{`{"content":"which colour?"}`, `{"hitl":{"hitl_type":"input_request","content":"x","actions":[{"id":"a","label":"A"}]}}`,
		`{"call_id":"c","tool_name":"t"}`, `{"connector":"gmail","auth_url":"https://x"}`, `null`, `"text"`, `{"hitl":7}`, `[`} {
		for _, typ := range []string{gateway.EventHITL, gateway.EventWriteConfirmationRequired, gateway.EventOAuthRequired, gateway.EventStatus, gateway.EventArtifact, "tool.call", "custom"} {
			f.Add(typ, p)
		}
	}
	f.Fuzz(func(t *testing.T, typ, payload string) {
		var b strings.Builder
		describePause(&b, "r1", typ, json.RawMessage(payload), "")
		if !strings.Contains(b.String(), "novaos runs reply r1 ") || !strings.HasSuffix(b.String(), "\n") {
			t.Fatalf("describePause(%q, %q) printed %q", typ, payload, b.String())
		}
		data, err := json.Marshal(map[string]any{"type": typ, "payload": json.RawMessage(payload), "run_id": "r1", "sequence": 1})
		if err != nil {
			return // not JSON: the client refuses such a frame before it is shown
		}
		ev, err := gateway.ParseSSE("message", string(data))
		if err != nil {
			return
		}
		var out, log strings.Builder
		p := &progress{out: &out, log: &log, runID: "r1"}
		p.show(ev)
		p.endLine()
		if out.Len() > 0 && !strings.HasSuffix(out.String(), "\n") {
			t.Fatalf("the answer does not end its line: %q", out.String())
		}
	})
}

func TestEventJSON(t *testing.T) {
	for _, tc := range []struct {
		name string
		ev   gateway.StreamEvent
		want string
	}{
		{"frame", gateway.StreamEvent{ID: "3", WireType: "status", Payload: json.RawMessage(`{"status":"RUNNING"}`), RunID: "r1", Sequence: 3, Timestamp: "1700000000000"},
			`{"id":"3","type":"status","payload":{"status":"RUNNING"},"run_id":"r1","sequence":3,"timestamp":1700000000000}`},
		{"a timestamp that is not a number", gateway.StreamEvent{ID: "4", WireType: "x", Timestamp: "2024-01-01T00:00:00Z"},
			`{"id":"4","type":"x","timestamp":"2024-01-01T00:00:00Z"}`},
		{"a payload that is not JSON", gateway.StreamEvent{WireType: "chunk", Payload: json.RawMessage(`{`)}, `{"type":"chunk"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, string(eventJSON(tc.ev))); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// BenchmarkProgressDelta measures the display of an answer's chunk, the
// event a run sends most of.
func BenchmarkProgressDelta(b *testing.B) {
	ev, err := gateway.ParseSSE("message", `{"type":"message.delta","payload":{"content":"a few words "},"run_id":"r1","sequence":7}`)
	if err != nil {
		b.Fatal(err)
	}
	p := &progress{out: io.Discard, log: io.Discard, runID: "r1"}
	b.ReportAllocs()
	for b.Loop() {
		p.show(ev)
	}
}

func TestProgressDisplay(t *testing.T) {
	frames := []string{
		`{"type":"status","payload":{"status":"RUNNING"}}`,
		`{"type":"status","payload":{"message":"looking things up"}}`,
		`{"type":"tool.call","payload":{"name":"search","args":{"q":"x"}}}`,
		`{"type":"message.delta","payload":{"content":"Hello, "}}`,
		`{"type":"message.delta","payload":{"content":"world"}}`,
		`{"type":"message.final","payload":{"content":"Hello, world"}}`,
		`{"type":"artifact","payload":{"artifact_id":"a1","name":"report"}}`,
		`{"type":"custom.thing","payload":{"x":1}}`,
		`{"type":"message.final","payload":{"content":"second turn"}}`,
		`{"type":"status","payload":{"status":"COMPLETED"}}`,
	}
	var out, log strings.Builder
	p := &progress{out: &out, log: &log, runID: "r1"}
	for _, f := range frames {
		ev, err := gateway.ParseSSE("message", f)
		if err != nil {
			t.Fatal(err)
		}
		p.show(ev)
	}
	if diff := cmp.Diff("Hello, world\nsecond turn\n", out.String()); diff != "" {
		t.Errorf("stdout (-want +got):\n%s", diff)
	}
	want := "· RUNNING\n· looking things up\n· tool.call {\"name\":\"search\",\"args\":{\"q\":\"x\"}}\n· artifact report\n· custom.thing {\"x\":1}\n"
	if diff := cmp.Diff(want, log.String()); diff != "" {
		t.Errorf("stderr (-want +got):\n%s", diff)
	}
}

// waitPaused follows the run's events until it pauses for its user.
func (s *gwServer) waitPaused(t *testing.T, runID string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // bounds a failure only
	defer cancel()
	for ev, err := range s.client(t).Events(ctx, runID, "") {
		if err != nil {
			t.Fatalf("following run %s: %v", runID, err)
		}
		if ev.WireType == gateway.EventHITL {
			return
		}
	}
	t.Fatalf("run %s ended without pausing", runID)
}

func TestRunsDebug(t *testing.T) {
	s := newGWServer(t)
	s.must(t, "instances", "install", "--name", "asker", "--hosted", "asker")
	id := strings.TrimSpace(s.must(t, "run", "asker", "paint", "--detach"))
	s.waitPaused(t, id)

	line := regexp.MustCompile(`^run ` + regexp.QuoteMeta(id) + `: paused after pause by \S+ \(session [0-9a-f-]{36}\)\n$`)
	first := s.must(t, "runs", "debug", id, "pause", "--metadata", `{"note": "look"}`)
	if !line.MatchString(first) {
		t.Fatalf("runs debug pause printed %q", first)
	}
	if again := s.must(t, "runs", "debug", id, "PAUSE"); again != first {
		t.Errorf("a second pause printed %q, want %q", again, first)
	}
	// Answered, the paused run is queued again, and no dispatcher takes
	// it until it is resumed.
	s.must(t, "runs", "reply", id, "--input", "red")
	if out := s.must(t, "runs", "show", id); !strings.Contains(out, "status    QUEUED\n") || !strings.Contains(out, "debugger  paused after pause") {
		t.Fatalf("runs show of the answered paused run:\n%s", out)
	}
	var d gateway.DebugSession
	if err := json.Unmarshal([]byte(s.must(t, "runs", "debug", id, "resume", "--json")), &d); err != nil ||
		d.BreakpointState != gateway.BreakpointRunning || d.Action != gateway.DebugResume || d.RunID != id {
		t.Fatalf("runs debug resume --json: %+v, %v", d, err)
	}
	if code, out, errOut := s.cmd(t, "runs", "events", id); code != exitOK || !strings.Contains(out, "got red") {
		t.Fatalf("the resumed run: exit %d\n%s%s", code, out, errOut)
	}
	code, _, errOut := s.cmd(t, "runs", "debug", id, "abort")
	if code != exitFail || !strings.Contains(errOut, "409") || !strings.Contains(errOut, "has ended") {
		t.Errorf("an abort of the ended run: exit %d: %s", code, errOut)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"runs", "debug", id}, "want the run id and the action"},
		{[]string{"runs", "debug", id, "halt"}, `action "halt": want pause, step, resume or abort`},
		{[]string{"runs", "debug", id, "pause", "--metadata", "[1]"}, "--metadata: want a JSON object"},
	} {
		if code, _, errOut := s.cmd(t, tc.args...); code != exitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d: %s", tc.args, code, errOut)
		}
	}
}
