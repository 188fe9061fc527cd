package agent_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/agent"
	"novaos.dev/novaos/ext/usercontext"
)

const smtpPassword = "Tr0ub4dor&3-smtp-pw"

// lockedBuffer is a log sink safe for the server's goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// secretAgent serves an agent whose skill opens SMTP_PASSWORD, logs it
// carelessly, and reports what it got. identify, when set, is the
// server's verified scope.
func secretAgent(t *testing.T, ring *usercontext.KeyRing, identify func(context.Context, *a2asrv.Call) (a2asrv.Scope, error)) (string, *lockedBuffer) {
	t.Helper()
	logs := &lockedBuffer{}
	a := agent.New("mailer", "1.0.0", &agent.Options{
		KeyRing: ring,
		Logger:  slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	a.MustRegister(agent.Skill{ID: "send", Handler: func(c *agent.Context) (agent.Result, error) {
		names := strings.Join(c.SecretNames(), ",")
		pw, err := c.GetSecret("SMTP_PASSWORD")
		c.Logger().Info("careless", "password", pw, "value", pw, "msg", "got "+pw.String())
		if err != nil {
			return agent.Result{}, err
		}
		if pw.Reveal() != smtpPassword {
			return agent.Result{Status: agent.StatusFailed, Error: "wrong value"}, nil
		}
		return agent.Result{Output: "opened; delivered " + names}, nil
	}})
	srv := httptest.NewServer(nil)
	srv.Config.Handler = a.Handler(srv.URL, &a2asrv.Options{Identify: identify})
	t.Cleanup(srv.Close)
	return srv.URL, logs
}

type secretCase struct {
	run       usercontext.Run // what the platform context claims
	sealedFor usercontext.Run
	activate  bool
	tenant    string // request tenant field
}

func sendSecrets(t *testing.T, url string, k *usercontext.PrivateKey, sc secretCase) *a2a.Task {
	t.Helper()
	payload, err := usercontext.SealPayload(k.Recipient(), sc.sealedFor, map[string]usercontext.Secret{
		"SMTP_PASSWORD": usercontext.NewSecret(smtpPassword), "SMTP_USER": usercontext.NewSecret("mailer@example.com"),
	})
	if err != nil {
		t.Fatal(err)
	}
	msg := userMsg("send it", nil)
	req := a2a.SendMessageRequest{Message: msg, Tenant: sc.tenant, Metadata: map[string]any{
		agent.ContextMetadataKey: map[string]any{
			"tenant_id": sc.run.TenantID, "instance_id": sc.run.InstanceID, "run_id": sc.run.RunID,
		},
		usercontext.URI: payload,
	}}
	h := http.Header{}
	if sc.activate {
		h.Set(a2a.HeaderExtensions, usercontext.URI)
	}
	return sendTask(t, url, req, h)
}

func TestGetSecret(t *testing.T) {
	dir := t.TempDir()
	k, err := usercontext.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	if err := usercontext.WriteKeyFile(dir, k); err != nil {
		t.Fatal(err)
	}
	ring := usercontext.NewKeyRing(dir)
	run := usercontext.Run{TenantID: "acme", InstanceID: "inst-7", RunID: "run-9"}
	verified := func(context.Context, *a2asrv.Call) (a2asrv.Scope, error) {
		return a2asrv.Scope{Tenant: "acme-verified"}, nil
	}
	verifiedRun := run
	verifiedRun.TenantID = "acme-verified"
	other := func(f func(r *usercontext.Run)) usercontext.Run { r := run; f(&r); return r }

	tests := []struct {
		name     string
		identify func(context.Context, *a2asrv.Call) (a2asrv.Scope, error)
		sc       secretCase
		state    a2a.TaskState
		text     string // in the final status message
	}{
		{"delivered", nil, secretCase{run: run, sealedFor: run, activate: true},
			a2a.TaskStateCompleted, "opened; delivered SMTP_PASSWORD,SMTP_USER"},
		{"bound to the verified tenant", verified, secretCase{run: run, sealedFor: verifiedRun, activate: true},
			a2a.TaskStateCompleted, "opened"},
		{"verified tenant wins over the claimed one", verified, secretCase{run: run, sealedFor: run, activate: true},
			a2a.TaskStateFailed, "did not open"},
		{"request tenant wins over the claimed one", nil, secretCase{run: run, sealedFor: run, activate: true, tenant: "evil"},
			a2a.TaskStateFailed, "did not open"},
		{"replayed into another run", nil, secretCase{run: other(func(r *usercontext.Run) { r.RunID = "run-10" }), sealedFor: run, activate: true},
			a2a.TaskStateFailed, "did not open"},
		{"replayed into another instance", nil, secretCase{run: other(func(r *usercontext.Run) { r.InstanceID = "inst-8" }), sealedFor: run, activate: true},
			a2a.TaskStateFailed, "did not open"},
		{"extension not activated", nil, secretCase{run: run, sealedFor: run},
			a2a.TaskStateFailed, "secret not delivered"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url, logs := secretAgent(t, ring, tt.identify)
			task := sendSecrets(t, url, k, tt.sc)
			if task.Status.State != tt.state {
				t.Fatalf("state = %v (%s), want %v", task.Status.State, task.Status.Message.Text(), tt.state)
			}
			if got := task.Status.Message.Text(); !strings.Contains(got, tt.text) {
				t.Errorf("status text = %q, want it to contain %q", got, tt.text)
			}
			out := logs.String()
			if !strings.Contains(out, "careless") {
				t.Fatalf("the skill's log line is missing: %s", out)
			}
			for _, s := range []string{out, task.Status.Message.Text()} {
				if strings.Contains(s, smtpPassword) {
					t.Error("the secret value reached the log or the task")
				}
			}
			if tt.state == a2a.TaskStateFailed && tt.text == "did not open" &&
				!strings.Contains(out, "delivered secret did not open") {
				t.Errorf("the failure was not logged: %s", out)
			}
		})
	}
}

func TestSecretsDeclaredAndRouted(t *testing.T) {
	ring := usercontext.StaticKeyRing()
	a := agent.New("mailer", "1.0.0", &agent.Options{KeyRing: ring})
	exts := a.Card().Capabilities.Extensions
	if !slices.ContainsFunc(exts, func(e a2a.AgentExtension) bool { return e.URI == usercontext.URI && !e.Required }) {
		t.Errorf("card extensions = %+v, want %s declared", exts, usercontext.URI)
	}
	// A declaration the caller made is kept, not duplicated.
	a = agent.New("mailer", "1.0.0", &agent.Options{KeyRing: ring, Extensions: []a2a.AgentExtension{usercontext.Declaration(true)}})
	if diff := cmp.Diff([]a2a.AgentExtension{usercontext.Declaration(true)}, a.Card().Capabilities.Extensions); diff != "" {
		t.Errorf("card extensions (-want +got):\n%s", diff)
	}
	// Without a key ring nothing is declared.
	if exts := agent.New("plain", "1.0.0", nil).Card().Capabilities.Extensions; len(exts) != 0 {
		t.Errorf("agent without a key ring declares %+v", exts)
	}
}

// An agent that declares the extension but holds no key for the envelope
// reports the key, and a request that activated the extension without a
// payload has no secrets.
func TestGetSecretWithoutKey(t *testing.T) {
	k, _ := usercontext.GenerateKey()
	run := usercontext.Run{TenantID: "acme", InstanceID: "inst-7", RunID: "run-9"}
	var gotErr, emptyErr error
	var names []string
	a := agent.New("mailer", "1.0.0", &agent.Options{KeyRing: usercontext.StaticKeyRing()})
	a.MustRegister(agent.Skill{ID: "send", Handler: func(c *agent.Context) (agent.Result, error) {
		if c.Input() == "empty" {
			names = c.SecretNames()
			_, emptyErr = c.GetSecret("SMTP_PASSWORD")
			return agent.Result{}, nil
		}
		_, gotErr = c.GetSecret("SMTP_PASSWORD")
		return agent.Result{}, nil
	}})
	url := endpoint(t, a)
	sendSecrets(t, url, k, secretCase{run: run, sealedFor: run, activate: true})
	if !errors.Is(gotErr, usercontext.ErrKeyUnavailable) {
		t.Errorf("err = %v, want ErrKeyUnavailable", gotErr)
	}
	h := http.Header{}
	h.Set(a2a.HeaderExtensions, usercontext.URI)
	sendTask(t, url, a2a.SendMessageRequest{Message: userMsg("empty", nil)}, h)
	if !errors.Is(emptyErr, usercontext.ErrNotDelivered) || errors.Is(emptyErr, usercontext.ErrOpen) || len(names) != 0 {
		t.Errorf("activated without payload: names %v, err %v; want none and ErrNotDelivered", names, emptyErr)
	}
}
