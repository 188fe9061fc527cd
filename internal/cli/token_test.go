package cli

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

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
