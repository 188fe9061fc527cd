package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const (
	testToken  = "adm-5e0b7c2d9f14a638"
	otherToken = "adm-5e0b7c2d9f14a639"
)

// serveFor runs novaos serve with args until the test ends and returns its
// base URL and its output so far.
func serveFor(t *testing.T, vars map[string]string, args ...string) (base string, out, errOut *syncBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	e, out, errOut := testEnv(vars)
	done := make(chan int, 1)
	args = append([]string{"serve", "--addr", "127.0.0.1:0", "--data", t.TempDir()}, args...)
	go func() { done <- run(ctx, args, e) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			t.Error("serve did not stop")
		}
	})
	return strings.TrimSuffix(waitForURL(t, out, done), "/healthz"), out, errOut
}

// noToken fails the test when any output shows either token; it never
// prints the output itself.
func noToken(t *testing.T, what string, outputs ...string) {
	t.Helper()
	for _, s := range outputs {
		if strings.Contains(s, testToken[4:]) || strings.Contains(s, otherToken[4:]) {
			t.Errorf("%s: the output shows an admin token", what)
		}
	}
}

// redact masks the test's tokens in s, for failure messages.
func redact(s string, tokens ...string) string {
	for _, tok := range append(tokens, testToken[4:], otherToken[4:]) {
		if tok != "" {
			s = strings.ReplaceAll(s, tok, "<token>")
		}
	}
	return s
}

// The serve flags reach the registry: the admin token guards writes,
// reads stay open, and --registry-allow-host restricts agent URLs.
func TestServeRegistryFlags(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "admin-token")
	if err := os.WriteFile(tokenFile, []byte(testToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base, serveOut, serveErr := serveFor(t, nil, "--admin-token-file", tokenFile,
		"--registry-allow-host", ".agents.example.com", "--registry-allow-host", "localhost")
	if !strings.Contains(serveOut.String(), "registry     "+base+"/api/v1/agents (writes need the admin token)") {
		t.Errorf("serve does not print the registry and its write rule:\n%s", serveOut)
	}
	register := func(name, url string) []string {
		return []string{"agents", "register", "--server", base, "--name", name, "--url", url}
	}
	fileArgs := func(args []string, file string) []string { return append(args, "--admin-token-file", file) }
	wrongFile := filepath.Join(dir, "wrong")
	os.WriteFile(wrongFile, []byte(otherToken), 0o600)
	tests := []struct {
		name       string
		vars       map[string]string
		args       []string
		code       int
		wantOut    string
		wantStderr string
	}{
		{"register without a token", nil, register("a", "https://a.agents.example.com/"), exitFail, "",
			"401 Unauthorized: changing the registry needs the server's admin token"},
		{"the hint without a token", nil, register("a", "https://a.agents.example.com/"), exitFail, "",
			"the server needs its admin token: set $NOVAOS_ADMIN_TOKEN or pass --admin-token-file FILE"},
		{"register with a wrong token", map[string]string{EnvAdminToken: otherToken}, register("a", "https://a.agents.example.com/"), exitFail, "",
			"the server refused the admin token sent"},
		{"register with the env token", map[string]string{EnvAdminToken: testToken}, register("a", "https://a.agents.example.com/"), exitOK,
			"registered a (id ", ""},
		{"the token file wins over the env", map[string]string{EnvAdminToken: otherToken}, fileArgs(register("b", "https://b.agents.example.com/"), tokenFile), exitOK,
			"registered b (id ", ""},
		{"a wrong token file", map[string]string{EnvAdminToken: testToken}, fileArgs(register("c", "https://c.agents.example.com/"), wrongFile), exitFail, "",
			"401 Unauthorized"},
		{"a missing token file", nil, fileArgs(register("c", "https://c.agents.example.com/"), filepath.Join(dir, "nope")), exitFail, "",
			"admin token: open "},
		{"outside the allowed hosts", map[string]string{EnvAdminToken: testToken}, register("d", "https://d.example.net/"), exitFail, "",
			"422 Agent URL Not Allowed"},
		{"loopback under an allowed suffix", map[string]string{EnvAdminToken: testToken}, register("e", "http://localhost:9/"), exitOK,
			"registered e (id ", ""},
		{"loopback outside the suffixes", map[string]string{EnvAdminToken: testToken}, register("f", "http://127.0.0.1:9/"), exitFail, "",
			"outside the allowed host suffixes"},
		{"reads need no token", nil, []string{"agents", "list", "--server", base}, exitOK, "\na ", ""},
		{"find needs no token", nil, []string{"agents", "find", "--server", base, "echo"}, exitOK, "\necho ", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, out, errOut := testEnv(tc.vars)
			if code := run(t.Context(), tc.args, e); code != tc.code {
				t.Errorf("exit code %d, want %d", code, tc.code)
			}
			if !strings.Contains(out.String(), tc.wantOut) || !strings.Contains(errOut.String(), tc.wantStderr) {
				t.Errorf("stdout %q, stderr %q; want them to hold %q and %q", redact(out.String()), redact(errOut.String()), tc.wantOut, tc.wantStderr)
			}
			noToken(t, tc.name, out.String(), errOut.String())
		})
	}
	noToken(t, "serve", serveOut.String(), serveErr.String())
	if !strings.Contains(serveErr.String(), `"writes":"admin-token"`) {
		t.Errorf("serve's log does not say writes need the admin token")
	}
}

func TestServeRegistryLoopbackFlag(t *testing.T) {
	tests := []struct {
		args   []string
		url    string
		code   int
		stdout string
	}{
		{nil, "http://127.0.0.1:9/", exitOK, "registry     http://"},
		{[]string{"--registry-allow-loopback=false"}, "http://127.0.0.1:9/", exitFail, "(writes from this machine only; set --admin-token-file to allow others)"},
		{[]string{"--registry-allow-loopback=false"}, "https://public.example.com/", exitOK, ""},
		{[]string{"--registry-allow-private"}, "http://10.1.2.3/", exitOK, ""},
		{nil, "http://10.1.2.3/", exitFail, ""},
	}
	for _, tc := range tests {
		base, serveOut, _ := serveFor(t, nil, tc.args...)
		code, _, stderr := runCmd(t, "agents", "register", "--server", base, "--name", "x", "--url", tc.url)
		if code != tc.code {
			t.Errorf("serve %v, register %s: exit code %d, want %d; stderr %q", tc.args, tc.url, code, tc.code, stderr)
		}
		if !strings.Contains(serveOut.String(), tc.stdout) {
			t.Errorf("serve %v: stdout %q, want it to contain %q", tc.args, serveOut, tc.stdout)
		}
	}
}

func TestServeRegistryFlagErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(content), 0o600)
		return p
	}
	tests := []struct {
		name string
		vars map[string]string
		args []string
		code int
		want string
	}{
		{"empty suffix", nil, []string{"--registry-allow-host", ""}, exitUsage, "--registry-allow-host: want a host name suffix"},
		{"a URL for a suffix", nil, []string{"--registry-allow-host", "https://example.com/"}, exitUsage, "--registry-allow-host: want a host name suffix"},
		{"a bad bool", nil, []string{"--registry-allow-loopback=maybe"}, exitUsage, "want true or false"},
		{"empty token file", nil, []string{"--admin-token-file", write("empty", "\n")}, exitFail, "is empty"},
		{"missing token file", nil, []string{"--admin-token-file", filepath.Join(dir, "nope")}, exitFail, "admin token: open"},
		{"short token", nil, []string{"--admin-token-file", write("short", "adm-123\n")}, exitFail, "want at least 16 characters"},
		{"short env token", map[string]string{EnvAdminToken: "adm-123"}, nil, exitFail, "want at least 16 characters"},
		{"token with a space", map[string]string{EnvAdminToken: "adm-5e0b7c2d 9f14a638"}, nil, exitFail, "visible ASCII characters only"},
		{"huge token file", nil, []string{"--admin-token-file", write("huge", strings.Repeat("a", 5000))}, exitFail, "larger than 4096 bytes"},
	}
	for _, tc := range tests {
		e, _, errOut := testEnv(tc.vars)
		args := append([]string{"serve", "--addr", "127.0.0.1:0", "--data", dir}, tc.args...)
		if code := run(t.Context(), args, e); code != tc.code || !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("%s: exit code %d, stderr %q; want %d and %q", tc.name, code, redact(errOut.String(), tc.vars[EnvAdminToken]), tc.code, tc.want)
		}
		if tok := tc.vars[EnvAdminToken]; tok != "" && strings.Contains(errOut.String(), tok) {
			t.Errorf("%s: stderr shows the token", tc.name)
		}
	}
}
