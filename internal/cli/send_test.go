package cli

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/a2a/hitl"
	"novaos.dev/novaos/agent"
	"novaos.dev/novaos/ext/usercontext"
	"novaos.dev/novaos/internal/app"
	"novaos.dev/novaos/internal/registrysvc"
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
	reg := registrysvc.New(registrysvc.NewMemoryStore(), &registrysvc.Options{Policy: &registry.Policy{AllowLoopback: true}})
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

// vaultServer hosts an agent whose key ring reads keyDir. Its skill opens
// every delivered secret and answers with each one's SHA-256 (or the
// class of the error that kept it shut) and the run it saw, never a
// value. calls counts the requests that reached it.
func vaultServer(t *testing.T, keyDir string, logs *syncBuffer) (url string, calls *atomic.Int64) {
	t.Helper()
	a := agent.New("vault", "1", &agent.Options{
		KeyRing: usercontext.NewKeyRing(keyDir),
		Logger:  slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	a.MustRegister(agent.Skill{ID: "read", Handler: func(c *agent.Context) (agent.Result, error) {
		var b strings.Builder
		fmt.Fprintf(&b, "tenant %s instance %s run %s:", c.Tenant(), c.Platform().InstanceID, c.RunID())
		for _, name := range c.SecretNames() {
			s, err := c.GetSecret(name)
			switch {
			case errors.Is(err, usercontext.ErrKeyUnavailable):
				fmt.Fprintf(&b, " %s=key_unavailable", name)
			case errors.Is(err, usercontext.ErrOpen):
				fmt.Fprintf(&b, " %s=open", name)
			case err != nil:
				fmt.Fprintf(&b, " %s=%v", name, err)
			default:
				fmt.Fprintf(&b, " %s=sha256:%x", name, sha256.Sum256([]byte(s.Reveal())))
			}
		}
		return agent.Result{Output: b.String()}, nil
	}})
	calls = new(atomic.Int64)
	srv := httptest.NewServer(nil)
	t.Cleanup(srv.Close)
	h := a.Handler(srv.URL, nil)
	t.Cleanup(func() { _ = h.Shutdown(context.Background()) })
	srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			calls.Add(1)
		}
		h.ServeHTTP(w, r)
	})
	return srv.URL, calls
}

func sha256Hex(s string) string { return fmt.Sprintf("%x", sha256.Sum256([]byte(s))) }

// The sealed-secrets walk-through: keys generate, an agent over the key
// directory, novaos send --secret through Main with the value in the
// environment.
func TestSendSecretThroughMain(t *testing.T) {
	const value = "main-test-secret-3f9a"
	dir := t.TempDir()
	keyDir := filepath.Join(dir, "agent-keys")
	pubFile := filepath.Join(dir, "vault.pub.jwk")
	if code, _, errOut := runCmd(t, "keys", "generate", "--dir", keyDir, "--public", pubFile); code != exitOK {
		t.Fatalf("keys generate: %s", errOut)
	}
	var logs syncBuffer
	url, _ := vaultServer(t, keyDir, &logs)
	t.Setenv("SMTP_PASSWORD", value)
	var out, errOut syncBuffer
	code := Main([]string{"send", url, "read", "--secret", "SMTP_PASSWORD", "--recipient-key", pubFile, "--instance", "vault-1"}, &out, &errOut)
	if code != exitOK {
		t.Fatalf("exit %d; stderr: %s", code, errOut.String())
	}
	m := regexp.MustCompile(`novaos send: sealed SMTP_PASSWORD to kid \S+ for tenant default, instance vault-1, run ([0-9a-f-]{36})\n`).FindStringSubmatch(errOut.String())
	if m == nil {
		t.Fatalf("stderr %q does not name the run", errOut.String())
	}
	want := "tenant default instance vault-1 run " + m[1] + ": SMTP_PASSWORD=sha256:" + sha256Hex(value)
	if !strings.Contains(out.String(), want) {
		t.Errorf("stdout %q, want the agent to have opened the value: %q", out.String(), want)
	}
	for name, s := range map[string]string{"stdout": out.String(), "stderr": errOut.String(), "agent log": logs.String()} {
		if strings.Contains(s, value) {
			t.Errorf("%s shows the value", name)
		}
	}
}

func TestSendSecrets(t *testing.T) {
	const value, fileValue = "env-test-secret-81c2", "file secret\nsecond line"
	dir := t.TempDir()
	keyDir := filepath.Join(dir, "agent-keys")
	kid, public := generateKey(t, keyDir)
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	pubFile := write("vault.pub.jwk", public)
	secretFile := write("secret.txt", fileValue+"\r\n")
	// Another agent's key, and a forgery: this agent's kid on another key.
	otherPub := write("other.pub.jwk", func() string { _, p := generateKey(t, filepath.Join(dir, "other-keys")); return p }())
	var forged map[string]any
	if err := json.Unmarshal([]byte(mustRead(t, otherPub)), &forged); err != nil {
		t.Fatal(err)
	}
	forged["kid"] = kid
	forgedJSON, _ := json.Marshal(forged)
	forgedPub := write("forged.pub.jwk", string(forgedJSON))

	var logs syncBuffer
	url, _ := vaultServer(t, keyDir, &logs)
	vars := map[string]string{"API_KEY": value, "SMTP_PASSWORD": value + "-smtp"}
	base := []string{"send", url, "read", "--instance", "vault-1", "--run", "run-7"}
	opened := "tenant default instance vault-1 run run-7: API_KEY=sha256:" + sha256Hex(value)
	for _, tc := range []struct {
		name string
		args []string
		want string // in stdout
	}{
		{"from the environment", []string{"--secret", "API_KEY", "--recipient-key", pubFile}, opened},
		{"tenant given", []string{"--secret", "API_KEY", "--recipient-key", pubFile, "--tenant", "acme"},
			"tenant acme instance vault-1 run run-7: API_KEY=sha256:" + sha256Hex(value)},
		{"from a file, one newline trimmed", []string{"--secret", "CERT=@" + secretFile, "--recipient-key", pubFile},
			"run-7: CERT=sha256:" + sha256Hex(fileValue)},
		{"several, streamed", []string{"--stream", "--secret", "SMTP_PASSWORD", "--secret", "API_KEY", "--secret", "CERT=@" + secretFile, "--recipient-key", pubFile},
			"run-7: API_KEY=sha256:" + sha256Hex(value) + " CERT=sha256:" + sha256Hex(fileValue) + " SMTP_PASSWORD=sha256:" + sha256Hex(value+"-smtp")},
		{"the private key file as recipient", []string{"--secret", "API_KEY", "--recipient-key", filepath.Join(keyDir, kid+".jwk")}, opened},
		{"another agent's key", []string{"--secret", "API_KEY", "--recipient-key", otherPub}, "run-7: API_KEY=key_unavailable"},
		{"this agent's kid on another key", []string{"--secret", "API_KEY", "--recipient-key", forgedPub}, "run-7: API_KEY=open"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, out, errOut := testEnv(vars)
			if code := run(t.Context(), append(slices.Clone(base), tc.args...), e); code != exitOK {
				t.Fatalf("exit %d; stderr: %s", code, errOut)
			}
			if !strings.Contains(out.String(), tc.want) {
				t.Errorf("stdout %q, want %q", out, tc.want)
			}
			if !strings.Contains(errOut.String(), "novaos send: sealed ") || strings.Contains(errOut.String(), "warning") {
				t.Errorf("stderr %q: want what was sealed, and no warning", errOut)
			}
			for _, v := range []string{value, fileValue, "file secret"} {
				if strings.Contains(out.String()+errOut.String(), v) {
					t.Errorf("output shows a value: stdout %q stderr %q", out, errOut)
				}
			}
		})
	}
	for _, v := range []string{value, "file secret"} {
		if strings.Contains(logs.String(), v) {
			t.Errorf("the agent logged a value")
		}
	}
	if !strings.Contains(logs.String(), "delivered secret did not open") {
		t.Errorf("the agent did not log the failed opens: %s", logs.String())
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestSendSecretErrors(t *testing.T) {
	const value = "error-test-secret-c04d"
	dir := t.TempDir()
	_, public := generateKey(t, filepath.Join(dir, "keys"))
	pubFile := filepath.Join(dir, "vault.pub.jwk")
	empty := filepath.Join(dir, "empty.txt")
	for p, c := range map[string]string{pubFile: public, empty: "\n", filepath.Join(dir, "junk.jwk"): "{}"} {
		if err := os.WriteFile(p, []byte(c), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var logs syncBuffer
	url, calls := vaultServer(t, filepath.Join(dir, "keys"), &logs)
	vars := map[string]string{"API_KEY": value}
	key := []string{"--recipient-key", pubFile, "--instance", "vault-1"}
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"variable not set", append([]string{"--secret", "MISSING"}, key...), exitFail,
			"novaos send: --secret MISSING: the environment variable MISSING is not set or empty"},
		{"value inline", append([]string{"--secret", "API_KEY=" + value}, key...), exitUsage,
			"--secret API_KEY=…: a value on the command line is refused"},
		{"inline after a good one", append([]string{"--secret", "API_KEY", "--secret", "X=" + value}, key...), exitUsage, "--secret X=…"},
		{"no name", append([]string{"--secret", "=@" + empty}, key...), exitUsage, "--secret needs a NAME"},
		{"no file after @", append([]string{"--secret", "CERT=@"}, key...), exitUsage, "--secret CERT=@ needs a file"},
		{"twice", append([]string{"--secret", "API_KEY", "--secret", "API_KEY"}, key...), exitUsage, "--secret API_KEY is given twice"},
		{"no recipient key", []string{"--secret", "API_KEY", "--instance", "vault-1"}, exitUsage, "--secret needs --recipient-key"},
		{"no instance", []string{"--secret", "API_KEY", "--recipient-key", pubFile}, exitUsage, "--secret needs --instance"},
		{"binding flags without --secret", []string{"--run", "r"}, exitUsage, "go with --secret"},
		{"missing file", append([]string{"--secret", "CERT=@" + filepath.Join(dir, "nope")}, key...), exitFail, "--secret CERT: open "},
		{"empty file", append([]string{"--secret", "CERT=@" + empty}, key...), exitFail, "empty.txt is empty"},
		{"recipient key not a key", []string{"--secret", "API_KEY", "--recipient-key", filepath.Join(dir, "junk.jwk"), "--instance", "i"}, exitFail,
			"--recipient-key " + filepath.Join(dir, "junk.jwk") + ": usercontext: invalid key"},
		{"recipient key missing", []string{"--secret", "API_KEY", "--recipient-key", filepath.Join(dir, "nope.jwk"), "--instance", "i"}, exitFail, "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := calls.Load()
			e, out, errOut := testEnv(vars)
			if code := run(t.Context(), append([]string{"send", url, "read"}, tc.args...), e); code != tc.code {
				t.Fatalf("exit %d, want %d; stderr: %s", code, tc.code, errOut)
			}
			if !strings.Contains(errOut.String(), tc.want) {
				t.Errorf("stderr %q does not contain %q", errOut, tc.want)
			}
			if strings.Contains(out.String()+errOut.String(), value) {
				t.Errorf("output shows the value: stdout %q stderr %q", out, errOut)
			}
			if n := calls.Load() - before; n != 0 {
				t.Errorf("%d requests reached the agent", n)
			}
		})
	}
}

func TestSendSecretToAnAgentWithoutTheExtension(t *testing.T) {
	base := sendServer(t)
	dir := t.TempDir()
	_, public := generateKey(t, filepath.Join(dir, "keys"))
	pubFile := filepath.Join(dir, "pub.jwk")
	if err := os.WriteFile(pubFile, []byte(public), 0o600); err != nil {
		t.Fatal(err)
	}
	e, out, errOut := testEnv(map[string]string{"API_KEY": "unused-secret-value"})
	code := run(t.Context(), []string{"send", "shout", "hi", "--server", base, "--secret", "API_KEY", "--recipient-key", pubFile, "--instance", "i"}, e)
	if code != exitOK || !strings.Contains(out.String(), "HI") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if want := "warning: the agent's card does not declare " + usercontext.URI; !strings.Contains(errOut.String(), want) {
		t.Errorf("stderr %q, want %q", errOut, want)
	}
}

// send <name> --secret seals to a key of the agent's registry record: the
// first one, or the one --recipient-kid names.
func TestSendSecretRecipientKID(t *testing.T) {
	const value = "kid-test-secret-9b37"
	dir := t.TempDir()
	keyDir := filepath.Join(dir, "agent-keys")
	kid1, _ := generateKey(t, keyDir)
	kid2, _ := generateKey(t, keyDir)
	var logs syncBuffer
	url, calls := vaultServer(t, keyDir, &logs)
	base := agentsServer(t)
	e, _, errOut := testEnv(nil)
	if code := run(t.Context(), []string{"agents", "register", "--server", base, "--name", "vault", "--url", url,
		"--recipient-key", filepath.Join(keyDir, kid1+".jwk"), "--recipient-key", filepath.Join(keyDir, kid2+".jwk")}, e); code != exitOK {
		t.Fatalf("agents register: %s", errOut)
	}
	pubFile := filepath.Join(dir, "pub.jwk")
	if err := os.WriteFile(pubFile, []byte(mustRead(t, filepath.Join(keyDir, kid1+".jwk"))), 0o600); err != nil {
		t.Fatal(err)
	}
	opened := "run-3: API_KEY=sha256:" + sha256Hex(value)
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"the first key", []string{"vault"}, exitOK, opened, "sealed API_KEY to kid " + kid1 + " "},
		{"the key named", []string{"vault", "--recipient-kid", kid2}, exitOK, opened, "sealed API_KEY to kid " + kid2 + " "},
		{"a kid the record lacks", []string{"vault", "--recipient-kid", "nope"}, exitFail, "",
			`--recipient-kid: registry: no recipient key: agent vault has none with kid "nope" (it has ` + kid1 + ", " + kid2 + ")"},
		{"a kid with a URL", []string{url, "--recipient-kid", kid1}, exitUsage, "", "name the agent instead of giving its URL"},
		{"a kid with a key file", []string{"vault", "--recipient-kid", kid1, "--recipient-key", pubFile}, exitUsage, "", "it does not go with --recipient-key"},
		{"an unknown agent", []string{"nobody"}, exitFail, "", `agent "nobody" on ` + base},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := calls.Load()
			args := append([]string{"send", tc.args[0], "read", "--server", base, "--secret", "API_KEY", "--instance", "vault-1", "--run", "run-3"}, tc.args[1:]...)
			e, out, errOut := testEnv(map[string]string{"API_KEY": value})
			if code := run(t.Context(), args, e); code != tc.code {
				t.Fatalf("exit %d, want %d; stderr: %s", code, tc.code, errOut)
			}
			if !strings.Contains(out.String(), tc.stdout) || !strings.Contains(errOut.String(), tc.stderr) {
				t.Errorf("stdout %q, stderr %q; want %q and %q", out, errOut, tc.stdout, tc.stderr)
			}
			if tc.code != exitOK && calls.Load() != before {
				t.Error("a refused send reached the agent")
			}
			if strings.Contains(out.String()+errOut.String(), value) {
				t.Error("the output shows the value")
			}
		})
	}
}

// restAgentServer serves a card offering JSON-RPC first and HTTP+JSON
// second, and a REST interface at /rest that answers message:send with a
// completed task and message:stream with a task and its completion. The
// JSON-RPC interface answers nothing: a call that reaches it fails.
func restAgentServer(t *testing.T) string {
	t.Helper()
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	card := &a2a.AgentCard{Name: "rest", Version: "1", Capabilities: a2a.AgentCapabilities{Streaming: a2a.Bool(true)},
		SupportedInterfaces: []a2a.AgentInterface{
			{URL: srv.URL + "/rpc", ProtocolBinding: a2a.BindingJSONRPC, ProtocolVersion: a2a.ProtocolVersion},
			{URL: srv.URL + "/rest", ProtocolBinding: a2a.BindingHTTPJSON, ProtocolVersion: a2a.ProtocolVersion},
		}}
	mux.HandleFunc("GET /.well-known/agent-card.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(card)
	})
	mux.HandleFunc("POST /rpc", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "not here", http.StatusTeapot) })
	const task = `{"id":"t-1","contextId":"c-1","status":{"state":"TASK_STATE_COMPLETED"},"artifacts":[{"artifactId":"a","parts":[{"text":"VIA REST"}]}]}`
	mux.HandleFunc("POST /rest/message:send", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/a2a+json")
		io.WriteString(w, `{"task":`+task+`}`)
	})
	mux.HandleFunc("POST /rest/message:stream", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"task\":{\"id\":\"t-1\",\"contextId\":\"c-1\",\"status\":{\"state\":\"TASK_STATE_WORKING\"}}}\n\n"+
			"data: {\"statusUpdate\":{\"taskId\":\"t-1\",\"contextId\":\"c-1\",\"status\":{\"state\":\"TASK_STATE_COMPLETED\"}}}\n\n")
	})
	return srv.URL
}

// grpcAgentServer serves the platform with its gRPC binding on, and
// returns the echo agent's URL, whose card lists the gRPC interface.
func grpcAgentServer(t *testing.T) string {
	t.Helper()
	srv, err := app.New(t.Context(), &app.Options{Addr: "127.0.0.1:0", DataDir: t.TempDir(),
		Logger: slog.New(slog.DiscardHandler),
		Agents: app.AgentOptions{GRPCAddr: "127.0.0.1:0"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Shutdown(context.Background()) })
	return srv.URL() + "/agents/echo"
}

func TestSendTransport(t *testing.T) {
	rest := restAgentServer(t)
	rpcOnly := sendServer(t) + "/agents/shout"
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stdout string // regexp of the whole stdout
		stderr string // substring
	}{
		{"rest", []string{rest, "hi", "--transport", "rest"}, exitOK, `^task t-1 completed \(context c-1\) \| artifact a: VIA REST\n$`, ""},
		{"rest, streamed", []string{rest, "hi", "--transport", "REST", "--stream"}, exitOK, `^task t-1 working \(context c-1\)\nstatus t-1 completed\n$`, ""},
		{"the card's first interface by default", []string{rest, "hi"}, exitFail, `^$`, "HTTP 418"},
		{"jsonrpc", []string{rpcOnly, "hi", "--transport", "jsonrpc"}, exitOK, `^task .* completed .*HI\n$`, ""},
		{"a binding the card does not offer", []string{rpcOnly, "hi", "--transport", "rest"}, exitFail, `^$`, "the card offers JSONRPC 1.0; want HTTP+JSON"},
		{"grpc", []string{grpcAgentServer(t), "hi", "--transport", "grpc"}, exitOK, `^task .* completed .*: hi \| echoed 2 bytes\n$`, ""},
		{"grpc, streamed", []string{grpcAgentServer(t), "hi", "--transport", "grpc", "--stream"}, exitOK, `completed`, ""},
		{"grpc not offered", []string{rest, "hi", "--transport", "grpc"}, exitFail, `^$`, "want GRPC"},
		{"unknown binding", []string{rest, "hi", "--transport", "pigeon"}, exitUsage, `^$`, `--transport "pigeon": want jsonrpc, rest or grpc`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, out, errOut := testEnv(nil)
			if code := run(t.Context(), append([]string{"send"}, tc.args...), e); code != tc.code {
				t.Fatalf("exit %d, want %d; stderr: %s", code, tc.code, errOut)
			}
			if !regexp.MustCompile(tc.stdout).MatchString(out.String()) {
				t.Errorf("stdout:\n%s\nwant match of %s", out, tc.stdout)
			}
			if !strings.Contains(errOut.String(), tc.stderr) {
				t.Errorf("stderr %q does not contain %q", errOut, tc.stderr)
			}
		})
	}
}

// $NOVAOS_SERVER is the server a client command talks to without
// --server; the flag wins over it.
func TestServerFromEnvironment(t *testing.T) {
	base := sendServer(t)
	unreachable := "http://127.0.0.1:1"
	tests := []struct {
		name string
		args []string
		env  string
		code int
		want string // in stdout on success, in stderr otherwise
	}{
		{"send by name", []string{"send", "shout", "hello"}, base, 0, "artifact a: HELLO"},
		{"agents list", []string{"agents", "list"}, base, 0, "shout"},
		{"flag wins", []string{"send", "shout", "hello", "--server", base}, unreachable, 0, "artifact a: HELLO"},
		{"environment used", []string{"send", "shout", "hello"}, unreachable, exitFail, "127.0.0.1:1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, out, errOut := testEnv(map[string]string{EnvServer: tc.env})
			if code := run(t.Context(), tc.args, e); code != tc.code {
				t.Fatalf("exit %d, want %d; stderr: %s", code, tc.code, errOut)
			}
			got := out.String()
			if tc.code != 0 {
				got = errOut.String()
			}
			if !strings.Contains(got, tc.want) {
				t.Errorf("output %q, want it to contain %q", got, tc.want)
			}
		})
	}
}

// seed 000, novaos_client_sdk.client.Client.send_message: "skill_id — Which
// of the agent's skills should run … it travels as
// message.metadata["skillId"] … a multi-skill agent rejects a request that
// names no skill rather than guessing." novaos send --skill sets it.
func TestSendSkill(t *testing.T) {
	ag := agent.New("cases", "1.0.0", nil)
	for _, id := range []string{"upper", "lower"} {
		ag.MustRegister(agent.Skill{ID: id, Description: "Changes case.", Handler: func(c *agent.Context) (agent.Result, error) {
			if id == "upper" {
				return agent.Result{Output: strings.ToUpper(c.Input())}, nil
			}
			return agent.Result{Output: strings.ToLower(c.Input())}, nil
		}})
	}
	var h http.Handler
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
	t.Cleanup(srv.Close)
	h = ag.Handler(srv.URL, nil)
	for _, tc := range []struct {
		name string
		args []string
		want string // regexp of stdout
	}{
		{"upper", []string{srv.URL, "Mixed", "--skill", "upper"}, `completed .*artifact .*: MIXED`},
		{"lower, streamed", []string{srv.URL, "Mixed", "--stream", "--skill", "lower"}, `(?s)artifact .*: mixed\n.*completed: mixed\n$`},
		{"none: the agent refuses", []string{srv.URL, "Mixed"}, `rejected .*name one in message metadata "skillId"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, out, errOut := testEnv(nil)
			if code := run(t.Context(), append([]string{"send"}, tc.args...), e); code != exitOK {
				t.Fatalf("exit %d; stderr: %s", code, errOut)
			}
			if !regexp.MustCompile(tc.want).MatchString(out.String()) {
				t.Errorf("stdout:\n%s\nwant match of %s", out, tc.want)
			}
		})
	}
}

// seed 000, novaos_client_sdk.auth.get_api_key_from_env: "env_var — Name
// of the environment variable containing the API key (default:
// "ACP_API_KEY") … header_name (default: "X-API-Key") … Raises ValueError
// if the environment variable is not set or is empty"; and
// novaos_client_sdk.config.validate_host_allowed: "Reject url if its
// hostname isn't covered by an outbound-host allowlist … No-ops when no
// allowlist is configured". novaos send reads both through envconfig.
func TestSendAPIKeyAndAllowedHosts(t *testing.T) {
	const key = "api-key-value-never-shown"
	ag := agent.New("keyed", "1.0.0", nil)
	ag.MustRegister(agent.Skill{ID: "echo", Description: "Echoes.", Handler: func(c *agent.Context) (agent.Result, error) {
		return agent.Result{Output: c.Input()}, nil
	}})
	var calls, keyed atomic.Int32
	var h http.Handler
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			calls.Add(1)
			if r.Header.Get("X-API-Key") == key {
				keyed.Add(1)
			}
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	h = ag.Handler(srv.URL, nil)
	for _, tc := range []struct {
		name      string
		vars      map[string]string
		args      []string
		wantCode  int
		wantCalls int32
		wantKeyed int32
		wantErr   string
	}{
		{name: "no key asked for: none sent", args: nil, wantCode: exitOK, wantCalls: 1},
		{name: "the key the variable holds", vars: map[string]string{"ACP_API_KEY": key},
			args: []string{"--api-key-env", "ACP_API_KEY"}, wantCode: exitOK, wantCalls: 1, wantKeyed: 1},
		{name: "a variable of the caller's naming", vars: map[string]string{"MY_KEY": key},
			args: []string{"--api-key-env", "MY_KEY"}, wantCode: exitOK, wantCalls: 1, wantKeyed: 1},
		{name: "set but not asked for: not sent", vars: map[string]string{"ACP_API_KEY": key}, wantCode: exitOK, wantCalls: 1},
		{name: "asked for, unset", args: []string{"--api-key-env", "ACP_API_KEY"}, wantCode: exitFail,
			wantErr: "--api-key-env: envconfig: ACP_API_KEY: not set"},
		{name: "allowed host", vars: map[string]string{"NOVAOS_ALLOWED_HOSTS": "127.0.0.1"}, wantCode: exitOK, wantCalls: 1},
		{name: "host not allowed: nothing sent", vars: map[string]string{"NOVAOS_ALLOWED_HOSTS": "partner.example", "ACP_API_KEY": key},
			args: []string{"--api-key-env", "ACP_API_KEY"}, wantCode: exitFail, wantErr: "is not covered by NOVAOS_ALLOWED_HOSTS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls.Store(0)
			keyed.Store(0)
			e, _, errOut := testEnv(tc.vars)
			code := run(t.Context(), append([]string{"send", srv.URL, "hi"}, tc.args...), e)
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d; stderr: %s", code, tc.wantCode, errOut)
			}
			if !strings.Contains(errOut.String(), tc.wantErr) {
				t.Errorf("stderr %q lacks %q", errOut, tc.wantErr)
			}
			if strings.Contains(errOut.String(), key) {
				t.Error("stderr shows the API key")
			}
			if calls.Load() != tc.wantCalls || keyed.Load() != tc.wantKeyed {
				t.Errorf("the agent saw %d calls, %d with the key; want %d, %d", calls.Load(), keyed.Load(), tc.wantCalls, tc.wantKeyed)
			}
		})
	}
}
