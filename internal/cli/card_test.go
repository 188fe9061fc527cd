package cli

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/internal/auth/authtest"
	"novaos.dev/novaos/jwk"
)

// runCmd runs the novaos command line and returns its exit code and
// output.
func runCmd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	e, out, errOut := testEnv(nil)
	code = run(t.Context(), args, e)
	return code, out.String(), errOut.String()
}

// TestCardAgainstServe is the README's walk-through: keygen, serve with
// --card-key, card get and card verify against the served JWKS.
func TestCardAgainstServe(t *testing.T) {
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "card.jwk")
	code, pub, stderr := runCmd(t, "card", "keygen", "--alg", "ES256", "--out", keyFile)
	if code != exitOK {
		t.Fatalf("keygen: %d %s", code, stderr)
	}
	if strings.Contains(pub, `"d"`) {
		t.Fatal("keygen printed private material")
	}

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	e, out, errOut := testEnv(nil)
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--data", filepath.Join(dir, "data"), "--card-key", keyFile}, e)
	}()
	defer func() {
		cancel()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			t.Error("serve did not stop")
		}
	}()
	base := strings.TrimSuffix(waitForURL(t, out, done), "/healthz")
	jwksURL := base + "/.well-known/agent-card-jwks.json"
	if !strings.Contains(out.String(), "its JWKS is "+jwksURL) {
		t.Errorf("serve does not name the card key set %s:\n%s", jwksURL, out)
	}

	code, cardJSON, stderr := runCmd(t, "card", "get", "echo", "--server", base)
	if code != exitOK {
		t.Fatalf("card get: %d %s", code, stderr)
	}
	var card a2a.AgentCard
	if err := json.Unmarshal([]byte(cardJSON), &card); err != nil || card.Name != "echo" || len(card.Signatures) != 1 {
		t.Fatalf("card get printed %q (%v)", cardJSON, err)
	}
	for _, target := range []string{"echo", "tck"} {
		code, stdout, stderr := runCmd(t, "card", "verify", target, "--server", base, "--jwks", jwksURL)
		if code != exitOK || !strings.Contains(stdout, "verified") {
			t.Errorf("card verify %s: %d %q %q; serve stderr %s", target, code, stdout, stderr, errOut)
		}
	}
	// A URL works as well as a name; a key set without the server's key
	// does not verify.
	other, _ := jwk.GenerateKey(jwk.EdDSA)
	otherFile := filepath.Join(dir, "other.json")
	otherJWKS, _ := json.Marshal(jwk.NewKeySet(other))
	os.WriteFile(otherFile, otherJWKS, 0o600)
	code, _, stderr = runCmd(t, "card", "verify", base+"/agents/echo", "--jwks", otherFile)
	if code != exitFail || !strings.Contains(stderr, "outside the key set") {
		t.Errorf("verify with another key: %d %q", code, stderr)
	}

	// The token keys are a key set of their own: the card does not verify
	// with it, and a token the card key signed does not verify against it.
	tokenJWKS := base + "/.well-known/jwks.json"
	if code, _, stderr := runCmd(t, "card", "verify", "echo", "--server", base, "--jwks", tokenJWKS); code != exitFail {
		t.Errorf("card verify against the token keys: %d %q", code, stderr)
	}
	keyJSON, err := os.ReadFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	cardKey, err := jwk.ParseKey(keyJSON)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	forged := authtest.SignJWT(t, cardKey, map[string]any{"iss": base, "aud": "acp-agent", "tenant_id": "victim",
		"scopes": []string{"memory:*", "gate:admin"}, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()})
	code, stdout, stderr := runCmd(t, "token", "verify", "--jwks", tokenJWKS, "--issuer", base, forged)
	if code != exitFail || stdout != "" || !strings.Contains(stderr, "no key with kid") {
		t.Errorf("token verify --jwks of a token the card key signed: %d %q %q", code, stdout, stderr)
	}
	// A token of the server's own key verifies there.
	tok := mintToken(t, filepath.Join(dir, "data"))
	if code, _, stderr := runCmd(t, "token", "verify", "--data", filepath.Join(dir, "data"), "--jwks", tokenJWKS, tok); code != exitOK {
		t.Errorf("token verify --jwks of the server's token: %d %q", code, stderr)
	}
}

func TestCardSignAndVerifyFiles(t *testing.T) {
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "k.jwk")
	code, pubJSON, stderr := runCmd(t, "card", "keygen", "--out", keyFile, "--kid", "card-2026")
	if code != exitOK {
		t.Fatalf("keygen: %s", stderr)
	}
	if fi, err := os.Stat(keyFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v, %v; want 0600", fi.Mode(), err)
	}
	if code, _, stderr := runCmd(t, "card", "keygen", "--out", keyFile); code != exitFail || !strings.Contains(stderr, "exists") {
		t.Errorf("keygen over an existing file: %d %q", code, stderr)
	}
	jwksFile := filepath.Join(dir, "jwks.json")
	os.WriteFile(jwksFile, []byte(pubJSON), 0o644) // a single JWK is a key set too

	unsigned := `{"name":"pal","description":"Für dich","version":"1","capabilities":{"streaming":false},"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],"skills":[]}`
	cardFile := filepath.Join(dir, "card.json")
	os.WriteFile(cardFile, []byte(unsigned), 0o644)
	code, signed, stderr := runCmd(t, "card", "sign", "--key", keyFile, "--in", cardFile)
	if code != exitOK {
		t.Fatalf("sign: %s", stderr)
	}
	tampered := strings.Replace(signed, "Für dich", "Für mich", 1)

	cards := map[string]string{"/signed": signed, "/tampered": tampered, "/unsigned": unsigned}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(cards[strings.TrimSuffix(r.URL.Path, a2a.WellKnownCardPath)]))
	}))
	defer srv.Close()
	tests := []struct {
		path      string
		args      []string
		wantCode  int
		wantInOut string
	}{
		{"/signed", nil, exitOK, `key "card-2026" (EdDSA)`},
		{"/tampered", nil, exitFail, "no valid card signature"},
		{"/unsigned", nil, exitFail, "not signed"},
		{"/signed", []string{"--alg", "ES256"}, exitFail, "no valid card signature"},
	}
	for _, tc := range tests {
		args := append([]string{"card", "verify", srv.URL + tc.path, "--jwks", jwksFile}, tc.args...)
		code, stdout, stderr := runCmd(t, args...)
		if code != tc.wantCode || !strings.Contains(stdout+stderr, tc.wantInOut) {
			t.Errorf("%v: %d %q %q; want %d and %q", args, code, stdout, stderr, tc.wantCode, tc.wantInOut)
		}
	}
}

func TestCardUsageErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"card"}, "Usage: novaos card"},
		{[]string{"card", "frob"}, `unknown subcommand "frob"`},
		{[]string{"card", "get"}, "name an agent card URL"},
		{[]string{"card", "verify", "echo"}, "--jwks is required"},
		{[]string{"card", "sign"}, "--key is required"},
		{[]string{"card", "keygen", "--out", "x", "--alg", "HS256"}, "want EdDSA, ES256 or RS256"},
		{[]string{"card", "get", "a", "b"}, `unexpected argument "b"`},
	}
	for _, tc := range tests {
		code, _, stderr := runCmd(t, tc.args...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: %d %q; want usage error %q", tc.args, code, stderr, tc.want)
		}
	}
}

func TestServeRejectsBadCardKey(t *testing.T) {
	dir := t.TempDir()
	key, _ := jwk.GenerateKey(jwk.EdDSA)
	pub, _ := json.Marshal(key)
	pubFile := filepath.Join(dir, "pub.jwk")
	os.WriteFile(pubFile, pub, 0o600)
	for _, file := range []string{pubFile, filepath.Join(dir, "missing.jwk")} {
		code, _, stderr := runCmd(t, "serve", "--addr", "127.0.0.1:0", "--data", dir, "--card-key", file)
		if code != exitFail || !strings.Contains(stderr, "card key") {
			t.Errorf("--card-key %s: %d %q", file, code, stderr)
		}
	}
}
