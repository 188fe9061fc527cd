package usercontext_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2aclient"
	"novaos.dev/novaos/agent"
	"novaos.dev/novaos/ext/usercontext"
)

const attachValue = "attach-test-value-5b1e"

// secretAgent serves an agent whose skill opens the secret NAME and
// answers with its SHA-256 and the run it saw, or with the error.
func secretAgent(t testing.TB, ring *usercontext.KeyRing, logs *bytes.Buffer) *a2aclient.Client {
	t.Helper()
	a := agent.New("vault", "1", &agent.Options{KeyRing: ring, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	a.MustRegister(agent.Skill{ID: "read", Handler: func(c *agent.Context) (agent.Result, error) {
		s, err := c.GetSecret("NAME")
		if err != nil {
			return agent.Result{Output: fmt.Sprintf("error %v; delivered %q", err, c.SecretNames())}, nil
		}
		sum := sha256.Sum256([]byte(s.Reveal()))
		pc := c.Platform()
		return agent.Result{Output: fmt.Sprintf("sha256 %x tenant %s instance %s run %s user %s", sum, c.Tenant(), pc.InstanceID, pc.RunID, c.User())}, nil
	}})
	srv := httptest.NewServer(nil)
	t.Cleanup(srv.Close)
	srv.Config.Handler = a.Handler(srv.URL, nil)
	c, err := a2aclient.NewFromURL(t.Context(), srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func answer(t testing.TB, c *a2aclient.Client, req *a2a.SendMessageRequest, opts ...a2aclient.CallOption) string {
	t.Helper()
	res, err := c.SendMessage(t.Context(), req, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if res.Task == nil || res.Task.Status.Message == nil {
		t.Fatalf("no task status message: %+v", res)
	}
	return res.Task.Status.Message.Text()
}

func TestSealRequestReachesTheAgent(t *testing.T) {
	key, err := usercontext.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	c := secretAgent(t, usercontext.StaticKeyRing(key), &logs)
	sum := sha256.Sum256([]byte(attachValue))
	run := usercontext.Run{TenantID: "acme", InstanceID: "vault-1", RunID: "run-7"}
	opened := "sha256 " + hex.EncodeToString(sum[:]) + " tenant acme instance vault-1 run run-7"
	for _, tc := range []struct {
		name     string
		existing any // a platform context already in request metadata
		want     string
	}{
		{"no platform context yet", nil, opened + " user "},
		{"a map: other members kept", map[string]any{"user_id": "bob", "run_id": "stale"}, opened + " user bob"},
		{"a JSON string", `{"user_id":"carol"}`, opened + " user carol"},
		{"an agent.PlatformContext", agent.PlatformContext{UserID: "dave", TenantID: "other"}, opened + " user dave"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := a2aclient.TextRequest("read", "", "")
			if tc.existing != nil {
				req.Metadata = map[string]any{usercontext.PlatformContextKey: tc.existing}
			}
			act, err := usercontext.SealRequest(req, key.Recipient(), run, map[string]usercontext.Secret{"NAME": usercontext.NewSecret(attachValue)})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{usercontext.URI}, act.Extensions); diff != "" {
				t.Errorf("activated extensions (-want +got):\n%s", diff)
			}
			if got := answer(t, c, req, a2aclient.WithExtensions(act.Extensions...)); got != tc.want {
				t.Errorf("agent answered %q, want %q", got, tc.want)
			}
		})
	}
	// The caller's platform context map is copied, not changed.
	m := map[string]any{"user_id": "bob"}
	req := &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.RoleUser, a2a.TextPart("read")), Metadata: map[string]any{usercontext.PlatformContextKey: m}}
	if _, err := usercontext.Attach(req, run, nil); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]any{"user_id": "bob"}, m); diff != "" {
		t.Errorf("caller's platform context changed (-want +got):\n%s", diff)
	}
	if strings.Contains(logs.String(), attachValue) {
		t.Error("the agent logged the value")
	}
}

func TestAttachWithoutSecretsOrActivation(t *testing.T) {
	key, err := usercontext.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	other, err := usercontext.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	c := secretAgent(t, usercontext.StaticKeyRing(key), &logs)
	run := usercontext.Run{TenantID: "acme", InstanceID: "vault-1", RunID: "run-7"}
	seal := func(to usercontext.Recipient, sealedFor usercontext.Run) *usercontext.Payload {
		p, err := usercontext.SealPayload(to, sealedFor, map[string]usercontext.Secret{"NAME": usercontext.NewSecret(attachValue)})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name     string
		payload  *usercontext.Payload
		activate bool
		want     string
	}{
		{"nil payload: active, nothing sent", nil, true, `error usercontext: secret not delivered: "NAME" (delivered: ); delivered []`},
		{"not activated", seal(key.Recipient(), run), false, "error usercontext: secret not delivered: extension " + usercontext.URI + " not active for this request; delivered []"},
		{"sealed to another key", seal(other.Recipient(), run), true, "no recipient key for the envelope's kid"},
		{"sealed for another run", seal(key.Recipient(), usercontext.Run{TenantID: "acme", InstanceID: "vault-1", RunID: "run-8"}), true,
			`error usercontext: open "NAME": usercontext: sealed envelope did not open; delivered ["NAME"]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := a2aclient.TextRequest("read", "", "")
			act, err := usercontext.Attach(req, run, tc.payload)
			if err != nil {
				t.Fatal(err)
			}
			var opts []a2aclient.CallOption
			if tc.activate {
				opts = append(opts, a2aclient.WithExtensions(act.Extensions...))
			}
			if got := answer(t, c, req, opts...); !strings.Contains(got, tc.want) {
				t.Errorf("agent answered %q, want it to contain %q", got, tc.want)
			}
		})
	}
	if strings.Contains(logs.String(), attachValue) {
		t.Error("the agent logged the value")
	}
}

func TestAttachRefuses(t *testing.T) {
	key, err := usercontext.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	run := usercontext.Run{TenantID: "acme", InstanceID: "vault-1", RunID: "run-7"}
	values := map[string]usercontext.Secret{"NAME": usercontext.NewSecret(attachValue)}
	for _, tc := range []struct {
		name    string
		req     *a2a.SendMessageRequest
		run     usercontext.Run
		values  map[string]usercontext.Secret
		wantErr error
		want    string
	}{
		{"no request", nil, run, values, nil, "no request"},
		{"no tenant", a2aclient.TextRequest("x", "", ""), usercontext.Run{InstanceID: "i", RunID: "r"}, values, usercontext.ErrDelivery, "empty tenant id"},
		{"no instance", a2aclient.TextRequest("x", "", ""), usercontext.Run{TenantID: "t", RunID: "r"}, values, usercontext.ErrDelivery, "empty instance id"},
		{"no run", a2aclient.TextRequest("x", "", ""), usercontext.Run{TenantID: "t", InstanceID: "i"}, values, usercontext.ErrDelivery, "empty run id"},
		{"request names another tenant", &a2a.SendMessageRequest{Tenant: "globex", Message: a2a.NewMessage(a2a.RoleUser)}, run, values, usercontext.ErrDelivery, `tenant "globex"`},
		{"platform context not an object", &a2a.SendMessageRequest{Metadata: map[string]any{usercontext.PlatformContextKey: []any{1}}}, run, values, nil, "is not a JSON object"},
		{"value not sealable", a2aclient.TextRequest("x", "", ""), run, map[string]usercontext.Secret{"BAD": usercontext.NewSecret(attachValue + "\xff")}, usercontext.ErrPlaintext, `seal "BAD"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before map[string]any
			if tc.req != nil {
				before = tc.req.Metadata
			}
			act, err := usercontext.SealRequest(tc.req, key.Recipient(), tc.run, tc.values)
			if err == nil || act.Extensions != nil {
				t.Fatalf("SealRequest = %v, %v; want an error", act, err)
			}
			if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Errorf("error %v, want %v", err, tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), attachValue) {
				t.Errorf("error %q: want it to contain %q and no value", err, tc.want)
			}
			if tc.req != nil && fmt.Sprint(tc.req.Metadata) != fmt.Sprint(before) {
				t.Errorf("a refused request was changed: %v", tc.req.Metadata)
			}
		})
	}
}

func TestPlatformContextKeyIsTheAgents(t *testing.T) {
	if usercontext.PlatformContextKey != agent.ContextMetadataKey {
		t.Errorf("PlatformContextKey %q, agent.ContextMetadataKey %q", usercontext.PlatformContextKey, agent.ContextMetadataKey)
	}
}

// A caller without a2aclient's extension option activates with the
// Activation's header.
func TestActivationHeader(t *testing.T) {
	if got := (usercontext.Activation{}).Header(); len(got) != 0 {
		t.Errorf("no extensions: header %v, want none", got)
	}
	key, err := usercontext.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	c := secretAgent(t, usercontext.StaticKeyRing(key), &logs)
	run := usercontext.Run{TenantID: "acme", InstanceID: "vault-1", RunID: "run-7"}
	req := a2aclient.TextRequest("read", "", "")
	act, err := usercontext.SealRequest(req, key.Recipient(), run, map[string]usercontext.Secret{"NAME": usercontext.NewSecret(attachValue)})
	if err != nil {
		t.Fatal(err)
	}
	h := act.Header()
	if diff := cmp.Diff([]string{usercontext.URI}, h.Values(a2a.HeaderExtensions)); diff != "" {
		t.Errorf("header %s (-want +got):\n%s", a2a.HeaderExtensions, diff)
	}
	var opts []a2aclient.CallOption
	for name, values := range h {
		for _, v := range values {
			opts = append(opts, a2aclient.WithHeader(name, v))
		}
	}
	sum := sha256.Sum256([]byte(attachValue))
	want := "sha256 " + hex.EncodeToString(sum[:]) + " tenant acme instance vault-1 run run-7 user "
	if got := answer(t, c, req, opts...); got != want {
		t.Errorf("agent answered %q, want %q", got, want)
	}
}
