package cli

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"novaos.dev/novaos/gate"
	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/auth"
)

func mintToken(t *testing.T, data string, extra ...string) string {
	t.Helper()
	args := append([]string{"token", "mint", "--data", data, "--tenant", "acme", "--agent", "agent-1",
		"--user", "user-7", "--run", "run-42", "--conversation", "conv-9", "--scopes", "memory:read:*, memory:write:agent"}, extra...)
	code, out, errOut := runCmd(t, args...)
	if code != exitOK {
		t.Fatalf("token mint: exit %d: %s", code, errOut)
	}
	if strings.Count(out, "\n") != 1 || !strings.HasSuffix(out, "\n") {
		t.Fatalf("token mint printed %q: want the token alone on one line", out)
	}
	return strings.TrimSpace(out)
}

// The token mint prints is verified by what a server on the same data
// directory verifies with, and by the published JWKS.
func TestTokenMintVerifies(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	tok := mintToken(t, data, "--ttl", "10m")

	// The server's view: the same key ring, the default issuer.
	iss, err := auth.Open(filepath.Join(data, auth.KeyFile), auth.Options{Issuer: defaultIssuer})
	if err != nil {
		t.Fatal(err)
	}
	c, err := iss.Verify(context.Background(), tok)
	if err != nil {
		t.Fatal(err)
	}
	if c.TenantID != "acme" || c.AgentID != "agent-1" || c.UserID != "user-7" || c.RunID != "run-42" ||
		c.ConversationID != "conv-9" || !c.HasScope("memory:read:tenant") || c.Expiry.Sub(c.IssuedAt).Minutes() != 10 {
		t.Fatalf("claims %+v", c)
	}

	// token verify, with the data directory's keys and with the JWKS.
	code, out, errOut := runCmd(t, "token", "verify", "--data", data, tok)
	if code != exitOK {
		t.Fatalf("token verify: %d %s", code, errOut)
	}
	var printed map[string]any
	if err := json.Unmarshal([]byte(out), &printed); err != nil || printed["tenant_id"] != "acme" {
		t.Fatalf("token verify printed %q: %v", out, err)
	}
	srv := httptest.NewServer(iss.JWKSHandler())
	defer srv.Close()
	if code, _, errOut := runCmd(t, "token", "verify", "--jwks", srv.URL+identity.JWKSPath, tok); code != exitOK {
		t.Fatalf("token verify --jwks: %d %s", code, errOut)
	}
	e, _, errBuf := testEnv(map[string]string{EnvToken: tok})
	if code := run(t.Context(), []string{"token", "verify", "--data", data}, e); code != exitOK {
		t.Fatalf("token verify from $%s: %d %s", EnvToken, code, errBuf)
	}

	// Another issuer is refused, and the error never shows the token.
	code, _, errOut = runCmd(t, "token", "verify", "--data", data, "--issuer", "https://other.example.com", tok)
	if code != exitFail || !strings.Contains(errOut, "wrong issuer") || strings.Contains(errOut, tok[:30]) {
		t.Fatalf("wrong issuer: %d %q", code, errOut)
	}
}

func TestTokenRotateKeepsOldTokens(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	old := mintToken(t, data)
	code, kid, errOut := runCmd(t, "token", "rotate", "--data", data)
	if code != exitOK || strings.TrimSpace(kid) == "" {
		t.Fatalf("token rotate: %d %q %s", code, kid, errOut)
	}
	fresh := mintToken(t, data)
	for _, tok := range []string{old, fresh} {
		if code, _, errOut := runCmd(t, "token", "verify", "--data", data, tok); code != exitOK {
			t.Fatalf("after rotation: %s", errOut)
		}
	}
	iss, _ := auth.Open(filepath.Join(data, auth.KeyFile), auth.Options{Issuer: defaultIssuer})
	if len(iss.PublicKeys()) != 2 || iss.KeyID() != strings.TrimSpace(kid) {
		t.Fatalf("ring after rotate: active %s, %d keys; rotate printed %s", iss.KeyID(), len(iss.PublicKeys()), kid)
	}
}

func TestTokenKeyFile(t *testing.T) {
	keyFile := filepath.Join(t.TempDir(), "keys", "ring.key")
	code, out, errOut := runCmd(t, "token", "mint", "--key-file", keyFile, "--tenant", "acme", "--agent", "a", "--scopes", "memory:write:agent")
	if code != exitOK {
		t.Fatalf("mint: %s", errOut)
	}
	iss, err := auth.Open(keyFile, auth.Options{Issuer: defaultIssuer})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := iss.Verify(context.Background(), strings.TrimSpace(out)); err != nil {
		t.Fatalf("a token minted with --key-file: %v", err)
	}
}

func TestTokenMintUsage(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no tenant", []string{"--agent", "a", "--scopes", "memory:read:*"}, "required"},
		{"no scopes", []string{"--tenant", "t", "--agent", "a"}, "required"},
		{"bad scope", []string{"--tenant", "t", "--agent", "a", "--scopes", "memory read"}, "scope grammar"},
		{"ttl beyond max", []string{"--tenant", "t", "--agent", "a", "--scopes", "x", "--ttl", "48h"}, "--ttl"},
		{"stray argument", []string{"--tenant", "t", "--agent", "a", "--scopes", "x", "extra"}, "unexpected argument"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCmd(t, append([]string{"token", "mint", "--data", data}, tc.args...)...)
			if code != exitUsage || out != "" || !strings.Contains(errOut, tc.want) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want usage error mentioning %q", code, out, errOut, tc.want)
			}
		})
	}
	if code, _, errOut := runCmd(t, "token", "verify", "--data", data); code != exitUsage || !strings.Contains(errOut, "no token") {
		t.Fatalf("verify without a token: %d %s", code, errOut)
	}
}

// serveIn runs novaos serve with args until the test ends and returns its
// base URL and the address it listens on.
func serveIn(t *testing.T, args ...string) (base, addr string) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	e, out, errOut := testEnv(nil)
	done := make(chan int, 1)
	go func() { done <- run(ctx, append([]string{"serve"}, args...), e) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			t.Errorf("serve did not stop; stderr %s", errOut)
		}
	})
	base = strings.TrimSuffix(waitForURL(t, out, done), "/healthz")
	// Logged before the URL is printed.
	for line := range strings.SplitSeq(errOut.String(), "\n") {
		var rec struct{ Msg, Addr string }
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "app: serving" {
			return base, rec.Addr
		}
	}
	t.Fatalf("serve logged no address: %s", errOut)
	return "", ""
}

// gateActions lists the gate's actions with tok at the server listening
// on addr and returns the status.
func gateActions(t *testing.T, addr, tok string) int {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+addr+gate.APIPath+"/actions", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// A token minted with the data directory of a server is accepted by that
// server, wherever it listens and whatever its public URL: serve records
// its issuer and audience in the data directory, and mint and verify use
// them unless told otherwise.
func TestTokenMintUsesTheServersIssuer(t *testing.T) {
	tests := []struct {
		name string
		args func(port string) []string
		iss  func(base, port string) string
	}{
		{"another port", func(string) []string { return nil }, func(base, _ string) string { return base }},
		{"public URL", func(port string) []string { return []string{"--public-url", "http://novaos.test:" + port + "/"} },
			func(_, port string) string { return "http://novaos.test:" + port }},
		{"token issuer and audience", func(string) []string {
			return []string{"--token-issuer", "https://id.example.com", "--token-audience", "novaos-prod"}
		}, func(string, string) string { return "https://id.example.com" }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data := filepath.Join(t.TempDir(), "data")
			// A free port, so the server listens neither on the default
			// address nor where its public URL says.
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			_, port, _ := net.SplitHostPort(ln.Addr().String())
			ln.Close()
			base, addr := serveIn(t, append([]string{"--addr", "127.0.0.1:0", "--data", data}, tc.args(port)...)...)

			tok := mintToken(t, data, "--scopes", gate.ScopeOperate)
			if code := gateActions(t, addr, tok); code != http.StatusOK {
				t.Fatalf("the server answered a token minted with its --data: %d, want 200", code)
			}
			if code, _, errOut := runCmd(t, "token", "verify", "--data", data, tok); code != exitOK {
				t.Fatalf("token verify --data: %d %s", code, errOut)
			}
			rec, err := auth.ReadRecord(data)
			if err != nil || rec.Issuer != tc.iss(base, port) {
				t.Fatalf("recorded %+v, %v; want issuer %s", rec, err, tc.iss(base, port))
			}
			if fi, err := os.Stat(filepath.Join(data, auth.RecordFile)); err != nil || fi.Mode().Perm() != 0o600 {
				t.Fatalf("record file: %v, %v", fi, err)
			}
			// The flag wins over the record.
			other := mintToken(t, data, "--scopes", gate.ScopeOperate, "--issuer", defaultIssuer+"/elsewhere")
			if code := gateActions(t, addr, other); code != http.StatusUnauthorized {
				t.Fatalf("a token minted with another --issuer: %d, want 401", code)
			}
			code, _, errOut := runCmd(t, "token", "verify", "--data", data, other)
			if code != exitFail || !strings.Contains(errOut, "issuer") {
				t.Fatalf("token verify --data of another issuer's token: %d %s", code, errOut)
			}
		})
	}
}

// Without a record, mint signs for a default serve; a record that is not
// one is an error saying how to go on.
func TestTokenRecordMissingOrBroken(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	tok := mintToken(t, data)
	parts := strings.Split(tok, ".")
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	var c struct {
		Iss string `json:"iss"`
		Aud any    `json:"aud"`
	}
	if err != nil || json.Unmarshal(payload, &c) != nil || c.Iss != defaultIssuer || fmt.Sprint(c.Aud) != identity.DefaultAudience {
		t.Fatalf("claims %s, %v", payload, err)
	}
	for name, content := range map[string]string{
		"not JSON":    "issuer=x",
		"no issuer":   `{"audience":"acp-agent"}`,
		"not a URL":   `{"issuer":"novaos","audience":"acp-agent"}`,
		"no audience": `{"issuer":"http://127.0.0.1:9"}`,
	} {
		if err := os.WriteFile(filepath.Join(data, auth.RecordFile), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		code, _, errOut := runCmd(t, "token", "mint", "--data", data, "--tenant", "t", "--agent", "a", "--scopes", "x")
		if code != exitFail || !strings.Contains(errOut, auth.RecordFile) || !strings.Contains(errOut, "--issuer") {
			t.Errorf("%s: %d %q", name, code, errOut)
		}
		// Both flags given: the record is not read.
		code, _, errOut = runCmd(t, "token", "mint", "--data", data, "--tenant", "t", "--agent", "a", "--scopes", "x",
			"--issuer", "https://a.example.com", "--audience", "aud")
		if code != exitOK {
			t.Errorf("%s, with both flags: %d %q", name, code, errOut)
		}
	}
}

func tokenAlg(t *testing.T, tok string) string {
	t.Helper()
	h, err := base64.RawURLEncoding.DecodeString(strings.Split(tok, ".")[0])
	var hdr struct{ Alg string }
	if err != nil || json.Unmarshal(h, &hdr) != nil {
		t.Fatalf("header of %d bytes does not decode", len(h))
	}
	return hdr.Alg
}

// mint signs RS256 unless told otherwise by --alg or by the algorithm the
// server on --data recorded, so a mint beside an EdDSA server does not
// rotate its key to RSA; rotate makes a key of the same algorithm.
func TestTokenAlgorithm(t *testing.T) {
	tests := []struct {
		name    string
		record  string // the server's record, "" for none
		args    []string
		wantAlg string
	}{
		{"default", "", nil, "RS256"},
		{"flag", "", []string{"--alg", "EdDSA"}, "EdDSA"},
		{"recorded", `{"issuer":"http://127.0.0.1:8080","audience":"acp-agent","algorithm":"EdDSA"}`, nil, "EdDSA"},
		{"recorded before algorithms were", `{"issuer":"http://127.0.0.1:8080","audience":"acp-agent"}`, nil, "RS256"},
		{"flag over record", `{"issuer":"http://127.0.0.1:8080","audience":"acp-agent","algorithm":"EdDSA"}`, []string{"--alg", "RS256"}, "RS256"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data := filepath.Join(t.TempDir(), "data")
			if tc.record != "" {
				os.MkdirAll(data, 0o700)
				if err := os.WriteFile(filepath.Join(data, auth.RecordFile), []byte(tc.record), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			tok := mintToken(t, data, tc.args...)
			if got := tokenAlg(t, tok); got != tc.wantAlg {
				t.Fatalf("alg %s, want %s", got, tc.wantAlg)
			}
			code, kid, errOut := runCmd(t, append([]string{"token", "rotate", "--data", data}, tc.args...)...)
			if code != exitOK {
				t.Fatalf("rotate: %d %s", code, errOut)
			}
			again := mintToken(t, data, tc.args...)
			if tokenAlg(t, again) != tc.wantAlg {
				t.Fatalf("after rotate: alg %s", tokenAlg(t, again))
			}
			iss, err := auth.Open(filepath.Join(data, auth.KeyFile), auth.Options{Issuer: defaultIssuer, Algorithm: tc.wantAlg})
			if err != nil {
				t.Fatal(err)
			}
			if iss.KeyID() != strings.TrimSpace(kid) || len(iss.PublicKeys()) != 2 {
				t.Fatalf("ring: active %s (rotate printed %s), %d keys", iss.KeyID(), kid, len(iss.PublicKeys()))
			}
		})
	}
	code, _, errOut := runCmd(t, "token", "mint", "--data", t.TempDir(), "--tenant", "t", "--agent", "a", "--scopes", "x", "--alg", "HS256")
	if code == exitOK || !strings.Contains(errOut, "RS256 or EdDSA") {
		t.Fatalf("--alg HS256: %d %q", code, errOut)
	}
}

// A resume token's call_id is minted with --call and shown by verify.
func TestTokenCallID(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	tok := mintToken(t, data, "--call", "call-5")
	code, out, errOut := runCmd(t, "token", "verify", "--data", data, tok)
	if code != exitOK {
		t.Fatalf("verify: %d %s", code, errOut)
	}
	var printed map[string]any
	if err := json.Unmarshal([]byte(out), &printed); err != nil || printed["call_id"] != "call-5" || printed["run_id"] != "run-42" {
		t.Fatalf("verify printed %s (%v): want call_id call-5", out, err)
	}
}
