package authproxy_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// seedAgent starts testdata/agent.py, a seed-style agent in another
// process, and returns its base URL.
func seedAgent(t *testing.T) string {
	t.Helper()
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed: the seed-style agent behind the proxy is a Python standard-library server")
	}
	cmd := exec.Command(python, "testdata/agent.py")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	ready := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		ready <- line
		io.Copy(io.Discard, stdout)
	}()
	var line string
	select {
	case line = <-ready:
	case <-time.After(time.Minute): // a failure bound: the agent says when it is ready
		t.Fatalf("the agent did not start: %s", stderr.String())
	}
	var port int
	if _, err := fmt.Sscanf(line, "listening %d", &port); err != nil {
		t.Fatalf("the agent said %q (%v): %s", line, err, stderr.String())
	}
	return fmt.Sprintf("http://127.0.0.1:%d", port)
}

// agentCount asks the agent directly how many requests reached it.
func agentCount(t *testing.T, agent string) int {
	t.Helper()
	resp, err := http.Get(agent + "/__count")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var c struct{ Count int }
	if err := json.NewDecoder(resp.Body).Decode(&c); err != nil {
		t.Fatal(err)
	}
	return c.Count
}

// seedView is what the seed-style agent answers: the six headers the
// Python SDK's ExecutionContext reads, every X-NovaOS-* name it got, and
// the Authorization header.
type seedView struct {
	Method          string
	Path            string
	Context         map[string]*string
	PlatformHeaders []string `json:"platform_headers"`
	Authorization   string
	BodyBytes       int `json:"body_bytes"`
}

// A seed-style agent in another process, behind the proxy, reads the
// seed's X-NovaOS-* headers from the verified token, never the ones the
// caller forged, and a request with a bad token or none never reaches it.
func TestSeedAgentBehindProxy(t *testing.T) {
	agent := seedAgent(t)
	f := newFixture(t)
	proxy := newProxy(t, agent, f.v, nil)
	tok := f.mint(t, claims)

	r, _ := http.NewRequest(http.MethodPost, proxy.URL+"/runs", strings.NewReader(`{"input":"hello"}`))
	r.Header.Set("Authorization", "Bearer "+tok)
	forge(r.Header)
	resp, body := do(t, r)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	var got seedView
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("the agent answered %s: %v", body, err)
	}
	s := func(v string) *string { return &v }
	want := seedView{
		Method: http.MethodPost, Path: "/runs",
		Context: map[string]*string{
			"X-NovaOS-User-Id": s("user-7"), "X-NovaOS-Tenant-Id": s("acme"), "X-NovaOS-Run-Id": s("run-42"),
			"X-NovaOS-Agent-Id": s("agent-1"), "X-NovaOS-Instance-Id": s("inst-3"), "X-NovaOS-Execution-Token": s(tok),
		},
		PlatformHeaders: []string{"x-novaos-agent-id", "x-novaos-agent-name", "x-novaos-conversation-id", "x-novaos-execution-token",
			"x-novaos-instance-id", "x-novaos-run-id", "x-novaos-tenant-id", "x-novaos-user-id"},
		Authorization: "Bearer " + tok,
		BodyBytes:     len(`{"input":"hello"}`),
	}
	for i, h := range got.PlatformHeaders {
		got.PlatformHeaders[i] = strings.ToLower(h)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("the agent saw (-want +got):\n%s", diff)
	}
	if n := agentCount(t, agent); n != 1 {
		t.Fatalf("%d requests reached the agent, want 1", n)
	}

	// Refused requests: no token, and every kind of bad one.
	tokens := []string{""}
	for _, bt := range f.badTokens(t) {
		tokens = append(tokens, bt.token)
	}
	for _, bad := range tokens {
		r, _ := http.NewRequest(http.MethodPost, proxy.URL+"/runs", strings.NewReader("{}"))
		if bad != "" {
			r.Header.Set("Authorization", "Bearer "+bad)
		}
		forge(r.Header)
		if resp, body := do(t, r); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("a bad token: %d %s", resp.StatusCode, body)
		}
	}
	// The proxy's health check is its own.
	if resp, _ := do(t, mustRequest(t, proxy.URL+"/healthz")); resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz: %d", resp.StatusCode)
	}
	if n := agentCount(t, agent); n != 1 {
		t.Fatalf("%d requests reached the agent after the refused ones, want still 1", n)
	}
}

func mustRequest(t *testing.T, url string) *http.Request {
	t.Helper()
	r, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
