package main_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"novaos.dev/novaos/a2a"
)

// A task the server answered must survive the process being killed
// outright (SIGKILL, no shutdown), on the default SQLite store.
func TestAnsweredTasksSurviveKill(t *testing.T) {
	bin := buildBinary(t)
	data := t.TempDir()

	url, stop := serve(t, bin, data)
	var ids []string
	for i := range 20 {
		ids = append(ids, send(t, url, fmt.Sprintf("remember %d", i)))
	}
	stop(syscall.SIGKILL)

	url, stop = serve(t, bin, data)
	defer stop(syscall.SIGTERM)
	for i, id := range ids {
		var task a2a.Task
		call(t, url, a2a.MethodGetTask, a2a.GetTaskRequest{ID: id}, &task)
		if task.Status.State != a2a.TaskStateCompleted || !strings.Contains(a2a.PartsText(task.Artifacts[0].Parts), fmt.Sprint("remember ", i)) {
			t.Errorf("task %d after kill: %s %+v", i, task.Status.State, task.Artifacts)
		}
	}
}

// buildBinary builds novaos into a temporary directory.
func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "novaos")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// serve starts the binary on a free port, with any extra flags, and returns
// the echo agent's URL and a function that stops the process with a signal.
func serve(t *testing.T, bin, data string, flags ...string) (string, func(os.Signal)) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"serve", "--addr", "127.0.0.1:0", "--data", data}, flags...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop := func(sig os.Signal) {
		if stopped {
			return
		}
		stopped = true
		_ = cmd.Process.Signal(sig)
		_ = cmd.Wait()
	}
	t.Cleanup(func() { stop(syscall.SIGKILL) })
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatal("serve exited before printing its URL")
			}
			if base, found := strings.CutPrefix(line, "NovaOS is serving on "); found {
				go func() {
					for range lines { // keep the pipe drained
					}
				}()
				return strings.TrimSpace(base) + "/agents/echo", stop
			}
		case <-deadline:
			t.Fatal("serve did not print its URL within 30s")
		}
	}
}

func call(t *testing.T, url, method string, params, out any) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(a2a.HeaderVersion, a2a.ProtocolVersion)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	r, err := a2a.DecodeResponse(raw)
	if err != nil || r.Error != nil {
		t.Fatalf("%s: %v %v", method, err, r)
	}
	if err := a2a.Unmarshal(r.Result, out); err != nil {
		t.Fatal(err)
	}
}

func send(t *testing.T, url, text string) string {
	t.Helper()
	var resp a2a.SendMessageResponse
	call(t, url, a2a.MethodSendMessage, a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.RoleUser, a2a.TextPart(text))}, &resp)
	if resp.Task == nil || resp.Task.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("send %q: %+v", text, resp)
	}
	return resp.Task.ID
}
