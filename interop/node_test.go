package interop

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"novaos.dev/novaos/a2a"
)

// The @a2a-js/sdk peers are Node scripts in js/: client.mjs drives a server
// through the SDK's client and prints a JSON report of every step;
// server.mjs serves an echo agent with the SDK's Express server.

// jsReport is what js/client.mjs prints.
type jsReport struct {
	SDK             string   `json:"sdk"`
	ProtocolVersion string   `json:"protocolVersion"`
	Steps           []jsStep `json:"steps"`
}

type jsStep struct {
	Name   string          `json:"name"`
	OK     bool            `json:"ok"`
	Result json.RawMessage `json:"result"`
	Error  *jsError        `json:"error"`
}

type jsError struct {
	Name    string `json:"name"`
	Code    *int   `json:"code"`
	Message string `json:"message"`
}

// jsPeer returns the node binary and the directory of the Node peer.
// Node and interop/js/node_modules are required: interop/run installs them,
// and CI runs that script, so a missing peer is a failure, not a skip.
func jsPeer(t *testing.T) (node, dir string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node not found (the interop suite needs Node 20+): %v", err)
	}
	dir, err = filepath.Abs("js")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@a2a-js", "sdk")); err != nil {
		t.Fatalf("@a2a-js/sdk is not installed; run `npm ci` in interop/js (interop/run does): %v", err)
	}
	return node, dir
}

// runJSClient runs the Node client against baseURL (with extra arguments
// for client.mjs) and returns its report.
func runJSClient(t *testing.T, baseURL string, args ...string) *jsReport {
	t.Helper()
	return runJSClientOver(t, "", baseURL, args...)
}

// runJSClientOver is runJSClient with the client preferring transport
// (a card binding name; "" lets the card's order decide).
func runJSClientOver(t *testing.T, transport, baseURL string, args ...string) *jsReport {
	t.Helper()
	return runNodeClientOver(t, "client.mjs", transport, baseURL, args...)
}

// runNodeClient runs a client script in js/ against baseURL and returns
// the report it prints.
func runNodeClient(t *testing.T, script, baseURL string, args ...string) *jsReport {
	t.Helper()
	return runNodeClientOver(t, script, "", baseURL, args...)
}

// runNodeClientOver is runNodeClient with A2A_TRANSPORT set to transport
// when it is not "".
func runNodeClientOver(t *testing.T, script, transport, baseURL string, args ...string) *jsReport {
	t.Helper()
	node, dir := jsPeer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{script, baseURL}, args...)...)
	cmd.Dir = dir
	if transport != "" {
		cmd.Env = append(os.Environ(), "A2A_TRANSPORT="+transport)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node %s: %v\nstderr:\n%s", script, err, stderr.String())
	}
	var rep jsReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("report: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	t.Logf("a2a-js report:\n%s", stdout.String())
	return &rep
}

// step returns the named step; a missing step fails the test.
func (r *jsReport) step(t *testing.T, name string) *jsStep {
	t.Helper()
	for i := range r.Steps {
		if r.Steps[i].Name == name {
			return &r.Steps[i]
		}
	}
	t.Fatalf("a2a-js report has no step %q", name)
	return nil
}

// result decodes a successful step's result with our wire model.
func jsResult[T any](t *testing.T, s *jsStep) *T {
	t.Helper()
	if !s.OK {
		t.Fatalf("step %s failed: %+v", s.Name, s.Error)
	}
	var v T
	if err := a2a.Unmarshal(s.Result, &v); err != nil {
		t.Fatalf("step %s: decode %T: %v; result %s", s.Name, v, err, s.Result)
	}
	return &v
}

// errCode returns the JSON-RPC code of a failed step.
func (s *jsStep) errCode(t *testing.T) int {
	t.Helper()
	if s.OK {
		t.Fatalf("step %s succeeded with %s, want an error", s.Name, s.Result)
	}
	if s.Error.Code == nil {
		t.Fatalf("step %s failed without a JSON-RPC code: %+v", s.Name, s.Error)
	}
	return *s.Error.Code
}

// startJSPeer starts js/server.mjs and returns its base URL; the process is
// stopped when the test ends.
func startJSPeer(t *testing.T) string {
	t.Helper()
	return startJSServer(t)
}

// startJSServer runs server.mjs with args and returns the URL it serves.
func startJSServer(t *testing.T, args ...string) string {
	t.Helper()
	return startNodeServer(t, "server.mjs", args...)
}

// startNodeServer starts a server script in js/ that prints {"url": …}
// when listening, and returns that URL; the process is stopped when the
// test ends.
func startNodeServer(t *testing.T, script string, args ...string) string {
	t.Helper()
	node, dir := jsPeer(t)
	cmd := exec.Command(node, append([]string{script}, args...)...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start node %s: %v", script, err)
	}
	exited := stopAtCleanup(t, cmd)
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		io.Copy(io.Discard, stdout)
		cmd.Wait()
		close(exited)
	}()
	select {
	case line, ok := <-lines:
		var ready struct{ URL string }
		if !ok || json.Unmarshal([]byte(line), &ready) != nil || ready.URL == "" {
			t.Fatalf("%s did not report its URL (got %q); stderr:\n%s", script, line, stderr.String())
		}
		return ready.URL
	case <-time.After(testTimeout):
		t.Fatalf("%s did not start in %v; stderr:\n%s", script, testTimeout, stderr.String())
	}
	return ""
}

// startUntilReady starts cmd, whose output out (its stdout or stderr
// pipe) says it listens with a line containing ready, and returns once it
// has said so; the process is stopped when the test ends. name is for
// failure messages, which carry the output.
func startUntilReady(t *testing.T, name string, cmd *exec.Cmd, out io.Reader, ready string) {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	exited := stopAtCleanup(t, cmd)
	var (
		mu  sync.Mutex
		log strings.Builder
	)
	said := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		done := false
		for sc.Scan() {
			mu.Lock()
			log.WriteString(sc.Text() + "\n")
			mu.Unlock()
			if !done && strings.Contains(sc.Text(), ready) {
				done = true
				close(said)
			}
		}
		cmd.Wait()
		close(exited)
	}()
	select {
	case <-said:
	case <-exited:
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("%s exited before listening; output:\n%s", name, log.String())
	case <-time.After(testTimeout):
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("%s did not listen within %v; output:\n%s", name, testTimeout, log.String())
	}
}

// stopAtCleanup stops the started cmd when the test ends: SIGTERM, then
// SIGKILL after 5s. The caller closes the returned channel once cmd.Wait
// has returned.
func stopAtCleanup(t *testing.T, cmd *exec.Cmd) chan struct{} {
	exited := make(chan struct{})
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	})
	return exited
}
