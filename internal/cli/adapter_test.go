package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"novaos.dev/novaos/adapter"
	"novaos.dev/novaos/adapter/bridge"
	"novaos.dev/novaos/delivery"
	"novaos.dev/novaos/dpop"
	"novaos.dev/novaos/gateway"
)

// TestMain runs the test binary as the agent program of the adapter
// tests when adapter run starts it so (os.Args[1] is agentProgramArg),
// and the tests otherwise.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == agentProgramArg {
		os.Exit(agentProgram(len(os.Args) > 2 && os.Args[2] == "hold"))
	}
	os.Exit(m.Run())
}

const agentProgramArg = "adapter-test-agent"

// agentProgram is an agent in the bridge's stdio protocol: each run is
// answered with a status line, a message and a finish, all saying
// "echo: " and the triggering text; with hold, only with the status
// line, so that the run stays running. It exits when its input ends.
func agentProgram(hold bool) int {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 64<<10), bridge.MaxLineBytes)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var req bridge.Request
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			fmt.Fprintln(os.Stderr, "test agent: a line that is not a request:", err)
			return 1
		}
		if req.Type != "run" {
			continue // a cancel: the run is answered already
		}
		replies := echoReplies(req)
		if hold {
			replies = replies[:1]
		}
		for _, r := range replies {
			if err := out.Encode(r); err != nil {
				return 1
			}
		}
	}
	return 0
}

// echoReplies are the test agent's answer to a run.
func echoReplies(req bridge.Request) []bridge.Reply {
	text := ""
	if req.Context != nil && req.Context.Trigger != nil {
		text = req.Context.Trigger.ContentMD
	}
	return []bridge.Reply{
		{RunID: req.RunID, Type: "status", Text: "thinking"},
		{RunID: req.RunID, Type: "message", ContentMD: "echo: " + text},
		{RunID: req.RunID, Type: "finish", State: "completed", Summary: "echo: " + text},
	}
}

// agentProgramArgv is the command line of the test agent program.
func agentProgramArgv(t *testing.T) []string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return []string{exe, agentProgramArg}
}

// pullAgent is a pull instance of the test server with a key and a
// token for its adapter.
type pullAgent struct {
	id, keyFile, tokenFile string
}

// newPullAgent installs a pull instance named name and creates its
// token with novaos adapter token, as the server's admin.
func newPullAgent(t *testing.T, s *gwServer, name string) pullAgent {
	t.Helper()
	dir := t.TempDir()
	var inst gateway.Instance
	if err := json.Unmarshal([]byte(s.must(t, "instances", "install", "--name", name, "--pull", "--json")), &inst); err != nil {
		t.Fatal(err)
	}
	a := pullAgent{id: inst.ID, keyFile: filepath.Join(dir, "agent.key"), tokenFile: filepath.Join(dir, "agent.token")}
	admin := writeFile(t, dir, "admin", gwTestAdminToken)
	code, out, errOut := s.cmd(t, "adapter", "token", "--agent", name, "--dpop-key", a.keyFile, "--out", a.tokenFile,
		"--admin-token-file", admin, "--tenant", "acme")
	if code != exitOK || out != "" {
		t.Fatalf("adapter token: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if !strings.Contains(errOut, "created API token ") || !strings.Contains(errOut, "for agent "+inst.ID) {
		t.Errorf("adapter token said %q", errOut)
	}
	tok, err := os.ReadFile(a.tokenFile)
	if err != nil {
		t.Fatal(err)
	}
	s.secrets = append(s.secrets, strings.TrimSpace(string(tok)))
	for _, f := range []string{a.keyFile, a.tokenFile} {
		if fi, err := os.Stat(f); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, mode %v; want 0600", filepath.Base(f), err, fi.Mode().Perm())
		}
	}
	return a
}

// client is a delivery client with the agent's credentials.
func (a pullAgent) client(t *testing.T, s *gwServer) *adapter.Client {
	t.Helper()
	tok, err := adapter.SecretFromFile(a.tokenFile)
	if err != nil {
		t.Fatal(err)
	}
	key, err := adapter.LoadOrCreateDPoPKey(a.keyFile)
	if err != nil {
		t.Fatal(err)
	}
	c, err := adapter.NewClient(s.url, adapter.Credentials{APIToken: tok, DPoP: key}, &adapter.ClientOptions{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// adapterProc is a novaos adapter run in a goroutine.
type adapterProc struct {
	stderr *syncBuffer
	stop   context.CancelFunc
	done   chan int
}

// startAdapter runs novaos adapter run with args; it is stopped when the
// test ends, if it did not end before.
func startAdapter(t *testing.T, s *gwServer, args ...string) *adapterProc {
	t.Helper()
	e, out, errOut := testEnv(nil)
	ctx, cancel := context.WithCancel(t.Context())
	p := &adapterProc{stderr: errOut, stop: cancel, done: make(chan int, 1)}
	go func() { p.done <- run(ctx, append([]string{"adapter", "run", "--platform", s.url}, args...), e) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-p.done:
		case <-time.After(time.Minute):
			t.Errorf("adapter run did not stop within a minute of its cancel")
		}
		s.noSecrets(t, out.String(), errOut.String())
	})
	return p
}

// wait returns the adapter's exit code (the deadline only bounds a
// failure).
func (p *adapterProc) wait(t *testing.T) int {
	t.Helper()
	select {
	case code := <-p.done:
		p.done <- code // for the cleanup
		return code
	case <-time.After(time.Minute):
		t.Fatalf("adapter run did not end; stderr:\n%s", p.stderr)
		return 0
	}
}

// waitConnected waits until the adapter's consumer exists on the
// platform: a consumer starts at the agent's newest event, so a run
// started before would not come to it.
func waitConnected(t *testing.T, s *gwServer, a pullAgent, p *adapterProc, consumer string) {
	t.Helper()
	c := a.client(t, s)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := c.ConsumerState(t.Context(), a.id, consumer); err == nil {
			return
		}
		select {
		case code := <-p.done:
			t.Fatalf("adapter run ended (exit %d) before it connected:\n%s", code, p.stderr)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the adapter did not connect:\n%s", p.stderr)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// execute starts a run of the agent as alice and waits until it ends.
func execute(t *testing.T, s *gwServer, a pullAgent, input string) *gateway.Run {
	t.Helper()
	c := s.client(t)
	res, err := c.Execute(t.Context(), gateway.ExecuteRequest{InstanceID: a.id, Input: input})
	if err != nil {
		t.Fatal(err)
	}
	return s.waitRun(t, res.RunID, "an end", func(r *gateway.Run) bool { return r.Status.Terminal() })
}

// checkEcho checks that run completed with the echo agent's answer: its
// output and final message are the finish line's summary.
func checkEcho(t *testing.T, s *gwServer, run *gateway.Run, input string) {
	t.Helper()
	want := "echo: " + input
	if run.Status != gateway.StatusCompleted || run.Output != want {
		t.Fatalf("run %s ended %s (%s) with output %q, want COMPLETED with %q", run.ID, run.Status, run.Reason, run.Output, want)
	}
	page, err := s.client(t).RunEvents(t.Context(), run.ID, gateway.RunEventsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	found := false
	for _, ev := range page.Events {
		types = append(types, ev.Type)
		if ev.Type == gateway.EventMessageFinal && strings.Contains(string(ev.Data), `"content":"`+want+`"`) {
			found = true
		}
	}
	if !found {
		t.Errorf("no %s %q among the run's events %v", gateway.EventMessageFinal, want, types)
	}
}

func TestAdapterRunProcess(t *testing.T) {
	for _, mode := range []struct {
		name string
		args []string
	}{
		{"gateway", nil},
		{"polling", []string{"--poll"}},
	} {
		t.Run(mode.name, func(t *testing.T) {
			s := newGWServer(t)
			a := newPullAgent(t, s, "laptop")
			state := t.TempDir()
			args := slices.Concat([]string{"--agent", a.id, "--token-file", a.tokenFile, "--dpop-key", a.keyFile, "--state-dir", state}, mode.args)
			p := startAdapter(t, s, slices.Concat(args, []string{"--"}, agentProgramArgv(t))...)
			waitConnected(t, s, a, p, "default")
			checkEcho(t, s, execute(t, s, a, "hello from the platform"), "hello from the platform")

			// SIGINT or SIGTERM (the context's cancel) stops it cleanly.
			p.stop()
			if code := p.wait(t); code != exitOK {
				t.Fatalf("adapter run exit %d after its cancel:\n%s", code, p.stderr)
			}
			if !strings.Contains(p.stderr.String(), `"msg":"adapter: stopped"`) {
				t.Errorf("no stop logged:\n%s", p.stderr)
			}
			// Started again on the same state and key (the program named
			// without "--" this time), it works the next run.
			p2 := startAdapter(t, s, slices.Concat(args, agentProgramArgv(t))...)
			if !strings.Contains(p2.stderr.String(), `"created":false`) && !waitLog(p2, `"created":false`) {
				t.Errorf("the proof key was made again:\n%s", p2.stderr)
			}
			checkEcho(t, s, execute(t, s, a, "and again"), "and again")
		})
	}
}

// A run the adapter had started when it stopped is not started again by
// the next adapter on the same state: its agent never sees it twice.
func TestAdapterRunRestartStartsNoRunTwice(t *testing.T) {
	s := newGWServer(t)
	a := newPullAgent(t, s, "laptop")
	args := []string{"--agent", a.id, "--token-file", a.tokenFile, "--dpop-key", a.keyFile, "--state-dir", t.TempDir(), "--"}
	p := startAdapter(t, s, slices.Concat(args, agentProgramArgv(t), []string{"hold"})...)
	waitConnected(t, s, a, p, "default")
	c := s.client(t)
	held, err := c.Execute(t.Context(), gateway.ExecuteRequest{InstanceID: a.id, Input: "hold this"})
	if err != nil {
		t.Fatal(err)
	}
	// The platform shows the run RUNNING once the adapter started it,
	// which comes before the adapter records the start and hands the run
	// to its program: a stop in between leaves a run the next adapter
	// rightly executes (once). The program's status line on the run is
	// what says the program has it.
	s.waitRun(t, held.RunID, "worked by the program", func(r *gateway.Run) bool {
		return r.Status == gateway.StatusRunning && r.Pull != nil && r.Pull.Progress.StatusLine == "thinking"
	})
	p.stop()
	if code := p.wait(t); code != exitOK {
		t.Fatalf("adapter run exit %d after its cancel:\n%s", code, p.stderr)
	}

	// The next adapter answers every run it gets; the held run is not
	// among them: it ends it as interrupted. A later run is delivered
	// after it, so once that one completed, the held one would have come
	// before.
	p2 := startAdapter(t, s, slices.Concat(args, agentProgramArgv(t))...)
	if !waitLog(p2, "it is not retried") {
		t.Errorf("the restarted adapter did not say it closed the interrupted run:\n%s", p2.stderr)
	}
	checkEcho(t, s, execute(t, s, a, "next"), "next")
	s.waitStatus(t, held.RunID, gateway.StatusFailed)
	r, err := c.GetRun(t.Context(), held.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if r.Reason != delivery.ReasonInterrupted || r.Output != "" {
		t.Errorf("the held run is %s (%q) with output %q: it was started again", r.Status, r.Reason, r.Output)
	}
}

// waitLog waits until the adapter logged s, or ended.
func waitLog(p *adapterProc, s string) bool {
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(p.stderr.String(), s) {
		if time.Now().After(deadline) {
			return false
		}
		select {
		case code := <-p.done:
			p.done <- code
			return strings.Contains(p.stderr.String(), s)
		default:
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}

func TestAdapterRunHTTP(t *testing.T) {
	s := newGWServer(t)
	a := newPullAgent(t, s, "web")
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req bridge.Request
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Type != "run" {
			http.Error(w, "want a run request", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/x-ndjson")
		enc := json.NewEncoder(w)
		for _, rep := range echoReplies(req) {
			rep.RunID = "" // optional over HTTP: the request names the run
			_ = enc.Encode(rep)
		}
	}))
	defer agent.Close()
	p := startAdapter(t, s, "--agent", a.id, "--token-file", a.tokenFile, "--dpop-key", a.keyFile,
		"--state-dir", t.TempDir(), "--http", agent.URL+"/run")
	waitConnected(t, s, a, p, "default")
	checkEcho(t, s, execute(t, s, a, "hello over http"), "hello over http")
}

// A second adapter on the same consumer takes it over: the first stops
// for good and says why.
func TestAdapterRunTakenOver(t *testing.T) {
	s := newGWServer(t)
	a := newPullAgent(t, s, "laptop")
	args := []string{"--agent", a.id, "--token-file", a.tokenFile, "--dpop-key", a.keyFile}
	first := startAdapter(t, s, slices.Concat(args, []string{"--state-dir", t.TempDir(), "--http", "http://127.0.0.1:1/run"})...)
	waitConnected(t, s, a, first, "default")
	if !waitLog(first, "gateway session ready") {
		t.Fatalf("the first adapter did not connect:\n%s", first.stderr)
	}
	second := startAdapter(t, s, slices.Concat(args, []string{"--state-dir", t.TempDir(), "--http", "http://127.0.0.1:1/run"})...)
	if code := first.wait(t); code != exitFail {
		t.Fatalf("the first adapter exited %d, want %d:\n%s", code, exitFail, first.stderr)
	}
	if want := "the platform closed the connection for good: 4015 consumer_taken_over"; !strings.Contains(first.stderr.String(), want) {
		t.Errorf("the first adapter's stderr lacks %q:\n%s", want, first.stderr)
	}
	select {
	case code := <-second.done:
		t.Fatalf("the second adapter ended too (exit %d):\n%s", code, second.stderr)
	default:
	}
}

func TestAdapterRunUsage(t *testing.T) {
	dir := t.TempDir()
	const tokenValue = "agent-api-token-value-never-shown"
	tok := writeFile(t, dir, "token", tokenValue+"\n")
	open := writeFile(t, dir, "open-token", tokenValue)
	if err := os.Chmod(open, 0o644); err != nil {
		t.Fatal(err)
	}
	openKey := writeFile(t, dir, "open.key", "not even a key")
	if err := os.Chmod(openKey, 0o644); err != nil {
		t.Fatal(err)
	}
	badKey := writeFile(t, dir, "bad.key", "-----BEGIN PRIVATE KEY-----\nnope\n-----END PRIVATE KEY-----\n")
	with := func(args ...string) []string {
		return slices.Concat([]string{"--state-dir", dir, "--token-file", tok}, args)
	}
	tests := []struct {
		name string
		args []string
		vars map[string]string
		code int
		want string
	}{
		{"no agent", with("--", "prog"), nil, exitUsage, "--agent is required"},
		{"agent that walks a path", with("--agent", "../up", "--", "prog"), nil, exitUsage, "--agent: want an instance id"},
		{"no agent program", with("--agent", "a1"), nil, exitUsage, "give the agent: --http URL, or a program"},
		{"both http and a program", with("--agent", "a1", "--http", "http://127.0.0.1:9000/run", "--", "prog"), nil, exitUsage, "give --http or a program, not both"},
		{"http agent elsewhere", with("--agent", "a1", "--http", "http://agent.example.com/run"), nil, exitUsage, "--http: bridge: clear-text http"},
		{"bad consumer", with("--agent", "a1", "--consumer", "Main", "--", "prog"), nil, exitUsage, "--consumer: 1 to 64"},
		{"bad billing mode", with("--agent", "a1", "--billing-mode", "free", "--", "prog"), nil, exitUsage, "--billing-mode: want platform or agent"},
		{"bad tool class", with("--agent", "a1", "--tool-class", "root", "--", "prog"), nil, exitUsage, "--tool-class: want chat, scoped or host"},
		{"bad log level", with("--agent", "a1", "--log-level", "loud", "--", "prog"), nil, exitUsage, "--log-level"},
		{"platform in clear text", with("--agent", "a1", "--platform", "http://platform.example.com", "--", "prog"), nil, exitUsage, "clear-text http is for a platform on this machine only"},
		{"platform with credentials", with("--agent", "a1", "--platform", "https://u:p@platform.example.com", "--", "prog"), nil, exitUsage, "without user information"},
		{"no token", []string{"--state-dir", dir, "--agent", "a1", "--", "prog"}, nil, exitUsage, "give --token-file or set $NOVAOS_AGENT_TOKEN"},
		{"no state dir and no home", []string{"--agent", "a1", "--token-file", tok, "--", "prog"}, nil, exitUsage, "give --state-dir"},
		{"missing token file", []string{"--state-dir", dir, "--agent", "a1", "--token-file", filepath.Join(dir, "nope"), "--", "prog"}, nil, exitFail, "no such file"},
		{"token file others may read", []string{"--state-dir", dir, "--agent", "a1", "--token-file", open, "--", "prog"}, nil, exitFail, "open to its group or others"},
		{"key file others may read", with("--agent", "a1", "--dpop-key", openKey, "--", "prog"), nil, exitFail, "open to its group or others"},
		{"unreadable key", with("--agent", "a1", "--dpop-key", badKey, "--", "prog"), nil, exitFail, "dpop key"},
		{"key in a missing directory", with("--agent", "a1", "--dpop-key", filepath.Join(dir, "no", "such", "k"), "--", "prog"), nil, exitFail, "dpop key"},
		{"platform down", []string{"--state-dir", dir, "--agent", "a1", "--platform", "http://127.0.0.1:1", "--", "prog"}, map[string]string{EnvAgentToken: tokenValue}, exitFail, "discovery"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, out, errOut := testEnv(tc.vars)
			code := run(t.Context(), append([]string{"adapter", "run"}, tc.args...), e)
			if code != tc.code {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, tc.code, errOut)
			}
			if !strings.Contains(errOut.String(), tc.want) {
				t.Errorf("stderr lacks %q:\n%s", tc.want, errOut)
			}
			if tc.code == exitUsage && !strings.Contains(errOut.String(), "Usage: novaos adapter run") {
				t.Errorf("no usage on stderr:\n%s", errOut)
			}
			if strings.Contains(out.String()+errOut.String(), tokenValue) {
				t.Error("the token shows in the output")
			}
		})
	}
}

func TestAdapterStateDirDefault(t *testing.T) {
	tests := []struct {
		name string
		vars map[string]string
		want string
	}{
		{"XDG_STATE_HOME", map[string]string{"XDG_STATE_HOME": "/xdg/state", "HOME": "/home/u"}, "/xdg/state"},
		{"relative XDG_STATE_HOME is ignored", map[string]string{"XDG_STATE_HOME": "state", "HOME": "/home/u"}, "/home/u/.local/state"},
		{"HOME", map[string]string{"HOME": "/home/u"}, "/home/u/.local/state"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, _, _ := testEnv(tc.vars)
			got, err := userStateDir(e)
			if err != nil || got != filepath.FromSlash(tc.want) {
				t.Errorf("userStateDir = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestAdapterKey(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "agent.key")
	keyCmd := func() (int, string, string) {
		e, out, errOut := testEnv(nil)
		code := run(t.Context(), []string{"adapter", "key", "--dpop-key", path}, e)
		return code, out.String(), errOut.String()
	}
	code, out, errOut := keyCmd()
	if code != exitOK || !strings.Contains(errOut, "created the DPoP key") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v, mode %v; want 0600", err, fi.Mode().Perm())
	}
	pemBytes, _ := os.ReadFile(path)
	key, err := dpop.ParseKey(pemBytes)
	if err != nil {
		t.Fatal(err)
	}
	if want := key.Thumbprint() + "\n"; out != want || !jktForm.MatchString(key.Thumbprint()) {
		t.Errorf("printed %q, want the thumbprint %q", out, want)
	}
	// A second run reads the same key.
	code, out2, errOut := keyCmd()
	if code != exitOK || out2 != out || errOut != "" {
		t.Errorf("second run: exit %d, stdout %q (first %q), stderr %q", code, out2, out, errOut)
	}
	// A key others may read is refused.
	if err := os.Chmod(path, 0o640); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := keyCmd(); code != exitFail || !strings.Contains(errOut, "open to its group or others") {
		t.Errorf("a key others may read: exit %d, stderr %q", code, errOut)
	}
}

func TestAdapterToken(t *testing.T) {
	s := newGWServer(t)
	var inst gateway.Instance
	if err := json.Unmarshal([]byte(s.must(t, "instances", "install", "--name", "laptop", "--pull", "--json")), &inst); err != nil {
		t.Fatal(err)
	}
	s.must(t, "instances", "install", "--name", "pushed", "--hosted", "echo")
	// Without --json, installing a pull agent says how to connect it.
	code, stdout, stderr := s.cmd(t, "instances", "install", "--name", "plain", "--pull")
	if code != exitOK || !strings.HasSuffix(stdout, "running a pull agent (it connects out)\n") ||
		!strings.Contains(stderr, "novaos adapter token --agent ") || !strings.Contains(stderr, "novaos adapter run --agent ") {
		t.Errorf("install --pull: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	dir := t.TempDir()
	key := filepath.Join(dir, "agent.key")
	e, out, _ := testEnv(nil)
	if code := run(t.Context(), []string{"adapter", "key", "--dpop-key", key}, e); code != exitOK {
		t.Fatal(code)
	}
	jkt := strings.TrimSpace(out.String())
	existing := writeFile(t, dir, "existing", "")

	// Usage errors, and refusals before any token is made.
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no agent", []string{"--dpop-jkt", jkt}, exitUsage, "--agent is required"},
		{"no key", []string{"--agent", "laptop"}, exitUsage, "give --dpop-key or --dpop-jkt"},
		{"both keys", []string{"--agent", "laptop", "--dpop-key", key, "--dpop-jkt", jkt}, exitUsage, "give --dpop-key or --dpop-jkt"},
		{"not a thumbprint", []string{"--agent", "laptop", "--dpop-jkt", "abc"}, exitUsage, "--dpop-jkt: want an RFC 7638"},
		{"out exists", []string{"--agent", "laptop", "--dpop-jkt", jkt, "--out", existing}, exitFail, "file exists"},
		{"unknown agent", []string{"--agent", "nobody", "--dpop-jkt", jkt}, exitFail, `no instance "nobody"`},
		{"push instance", []string{"--agent", "pushed", "--dpop-jkt", jkt}, exitFail, "no pull instance"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := s.cmd(t, append([]string{"adapter", "token"}, tc.args...)...)
			if code != tc.code || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d (want %d), stderr lacks %q:\n%s", code, tc.code, tc.want, stderr)
			}
			if stdout != "" {
				t.Errorf("stdout %q", stdout)
			}
		})
	}

	// As alice (a platform token with instances:*), by thumbprint, to
	// stdout: the token only, which the agent's key makes work.
	code, stdout, stderr = s.cmd(t, "adapter", "token", "--agent", "laptop", "--dpop-jkt", jkt, "--name", "laptop adapter")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	tok := strings.TrimSpace(stdout)
	s.secrets = append(s.secrets, tok)
	if tok == "" || strings.Count(stdout, "\n") != 1 || !strings.Contains(stderr, "bound to the DPoP key "+jkt+"; written to stdout") {
		t.Errorf("stdout holds %d lines; stderr %q", strings.Count(stdout, "\n"), stderr)
	}
	// --json with --out shows the grant without the token.
	outFile := filepath.Join(dir, "agent.token")
	code, stdout, stderr = s.cmd(t, "adapter", "token", "--agent", inst.ID, "--dpop-key", key, "--out", outFile, "--json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	written, err := os.ReadFile(outFile)
	if err != nil {
		t.Fatal(err)
	}
	s.secrets = append(s.secrets, strings.TrimSpace(string(written)))
	var g tokenJSON
	if err := json.Unmarshal([]byte(stdout), &g); err != nil || g.ID == "" || g.AgentID != inst.ID || g.DPoPJKT != jkt || g.Token != "" {
		t.Errorf("--json printed %q (%v)", stdout, err)
	}
	if fi, err := os.Stat(outFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("token file: %v, mode %v", err, fi.Mode().Perm())
	}
}
