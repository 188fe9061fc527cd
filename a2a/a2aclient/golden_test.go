package a2aclient_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/txtar"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2aclient"
	"novaos.dev/novaos/internal/schematest"
	"novaos.dev/novaos/secret"
)

var update = flag.Bool("update", false, "rewrite the golden exchanges in testdata/golden")

// recorder is a RoundTripper that records every exchange as golden text:
// the request the client sent (method, path, A2A headers, body) and the
// response (status, content type, body).
type recorder struct {
	base  http.RoundTripper
	mu    sync.Mutex
	files []txtar.File
	host  string
}

var recordedHeaders = []string{"Accept", "A2A-Extensions", "A2A-Version", "Authorization", "Content-Type", "If-None-Match", "X-Api-Key"}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		body, _ = io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	var b strings.Builder
	path := req.URL.Path
	if path == "" {
		path = "/"
	}
	fmt.Fprintf(&b, "%s %s\n", req.Method, path)
	for _, h := range recordedHeaders {
		if v := req.Header.Get(h); v != "" {
			fmt.Fprintf(&b, "%s: %s\n", h, v)
		}
	}
	b.WriteString("\n")
	b.Write(body)
	r.mu.Lock()
	n := len(r.files)/2 + 1
	r.files = append(r.files, txtar.File{Name: fmt.Sprintf("%d.request", n), Data: []byte(strings.TrimRight(b.String(), "\n") + "\n")})
	r.mu.Unlock()
	resp, err := r.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	rb, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(rb))
	var o strings.Builder
	fmt.Fprintf(&o, "%d\n", resp.StatusCode)
	for _, h := range []string{"Content-Type", "Cache-Control", "ETag"} {
		if v := resp.Header.Get(h); v != "" {
			if h == "ETag" {
				v = `"<hash of the card, whose URLs vary>"`
			}
			fmt.Fprintf(&o, "%s: %s\n", h, v)
		}
	}
	o.WriteString("\n")
	o.Write(bytes.ReplaceAll(rb, []byte(r.host), []byte("http://agent.test")))
	r.mu.Lock()
	r.files = append(r.files, txtar.File{Name: fmt.Sprintf("%d.response", n), Data: []byte(strings.TrimRight(o.String(), "\n") + "\n")})
	r.mu.Unlock()
	return resp, err
}

// goldenScenarios are client conversations with the scripted agent; each
// writes testdata/golden/<name>.txtar.
var goldenScenarios = map[string]func(ctx context.Context, t *testing.T, c *a2aclient.Client){
	"send_get_list": func(ctx context.Context, t *testing.T, c *a2aclient.Client) {
		r, err := c.SendMessage(ctx, msgReq("m-1", "hello"))
		must(t, err)
		_, err = c.GetTask(ctx, &a2a.GetTaskRequest{ID: r.Task.ID, HistoryLength: ptr(int32(1))})
		must(t, err)
		_, err = c.ListTasks(ctx, &a2a.ListTasksRequest{ContextID: r.Task.ContextID})
		must(t, err)
		_, err = c.SendMessage(ctx, msgReq("m-2", "reply hi"))
		must(t, err)
	},
	"stream_and_errors": func(ctx context.Context, t *testing.T, c *a2aclient.Client) {
		var id string
		for f, err := range c.SendStreamingMessage(ctx, msgReq("m-1", "steps 2")) {
			must(t, err)
			id = f.TaskID()
		}
		if err := onlyError(c.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: id})); !errors.Is(err, a2a.ErrUnsupportedOperation) {
			t.Fatalf("subscribe to a completed task: %v, want ErrUnsupportedOperation", err)
		}
		if _, err := c.CancelTask(ctx, &a2a.CancelTaskRequest{ID: id}); err == nil {
			t.Fatal("cancel of a completed task succeeded")
		}
		if _, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: "nope"}); err == nil {
			t.Fatal("get of an unknown task succeeded")
		}
	},
	"push_configs": func(ctx context.Context, t *testing.T, c *a2aclient.Client) {
		r, err := c.SendMessage(ctx, msgReq("m-1", "ask"))
		must(t, err)
		cfg, err := c.CreateTaskPushNotificationConfig(ctx, &a2a.TaskPushNotificationConfig{TaskID: r.Task.ID, URL: "https://hooks.example.com/a2a"})
		must(t, err)
		_, err = c.GetTaskPushNotificationConfig(ctx, &a2a.GetTaskPushNotificationConfigRequest{TaskID: r.Task.ID, ID: cfg.ID})
		must(t, err)
		_, err = c.ListTaskPushNotificationConfigs(ctx, &a2a.ListTaskPushNotificationConfigsRequest{TaskID: r.Task.ID})
		must(t, err)
		must(t, c.DeleteTaskPushNotificationConfig(ctx, &a2a.DeleteTaskPushNotificationConfigRequest{TaskID: r.Task.ID, ID: cfg.ID}))
		_, err = c.GetExtendedAgentCard(ctx)
		must(t, err)
	},
}

func TestGolden(t *testing.T) {
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range goldenScenarios {
			if !yield(k) {
				return
			}
		}
	}) {
		t.Run(name, func(t *testing.T) {
			a := newAgent(t, &agentOptions{tenant: "acme", push: true, extended: true})
			rec := &recorder{base: http.DefaultTransport, host: a.srv.URL}
			c, err := a2aclient.NewFromURL(t.Context(), a.srv.URL, &a2aclient.Options{
				HTTPClient: &http.Client{Transport: rec},
				Auth:       a2aclient.Bearer(secret.New("t0ken")),
				Extensions: []string{"https://example.com/ext/trace/v1"},
			})
			must(t, err)
			goldenScenarios[name](t.Context(), t, c)
			got := txtar.Format(&txtar.Archive{
				Comment: []byte("Client exchanges with the scripted agent (tenant acme), recorded by golden_test.go.\nRun go test -run TestGolden -update to rewrite.\n"),
				Files:   rec.files,
			})
			file := filepath.Join("testdata", "golden", name+".txtar")
			if *update {
				must(t, os.MkdirAll(filepath.Dir(file), 0o755))
				must(t, os.WriteFile(file, got, 0o644))
				return
			}
			want, err := os.ReadFile(file)
			must(t, err)
			if d := cmp.Diff(string(want), string(got)); d != "" {
				t.Errorf("exchange differs from %s (-want +got):\n%s", file, d)
			}
		})
	}
}

// TestGoldenMatchesSchema validates every exchange in testdata/golden
// against the A2A JSON Schema: the client's requests (params against the
// method's request definition) as well as the recorded answers, so a
// golden file rewritten with -update cannot enshrine an invalid payload.
func TestGoldenMatchesSchema(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "golden", "*.txtar"))
	must(t, err)
	if len(files) != len(goldenScenarios) {
		t.Fatalf("%d golden files for %d scenarios: %v", len(files), len(goldenScenarios), files)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			ar, err := txtar.ParseFile(file)
			must(t, err)
			if len(ar.Files) == 0 || len(ar.Files)%2 != 0 {
				t.Fatalf("%d sections, want request/response pairs", len(ar.Files))
			}
			for i := 0; i < len(ar.Files); i += 2 {
				req, resp := ar.Files[i], ar.Files[i+1]
				if n := strings.TrimSuffix(req.Name, ".request"); n == req.Name || resp.Name != n+".response" {
					t.Fatalf("sections %q, %q are not a request and its response", req.Name, resp.Name)
				}
				validateExchange(t, req.Name, req.Data, resp.Data)
			}
		})
	}
}

// validateExchange checks one recorded request and its response, in the
// recorder's format: a start line, headers, a blank line, the body.
func validateExchange(t *testing.T, name string, request, response []byte) {
	t.Helper()
	reqHead, reqBody := splitMessage(t, name, request)
	respHead, respBody := splitMessage(t, name, response)
	contentType := respHead["Content-Type"]
	switch {
	case reqHead[""] == "GET /.well-known/agent-card.json":
		if respHead[""] != "200" || contentType != "application/json" {
			t.Fatalf("%s: card answered %q with %q", name, respHead[""], contentType)
		}
		schematest.Validate(t, "Agent Card", respBody)
	case strings.HasPrefix(reqHead[""], "POST "):
		method := schematest.ValidateRequest(t, reqBody)
		if respHead[""] != "200" {
			t.Fatalf("%s: HTTP %s to a JSON-RPC request", name, respHead[""])
		}
		schematest.ValidateResponse(t, method, contentType, respBody)
	default:
		t.Fatalf("%s: no schema check for %q", name, reqHead[""])
	}
}

// splitMessage returns a recorded message's start line (under "") and
// headers, and its body.
func splitMessage(t *testing.T, name string, msg []byte) (map[string]string, []byte) {
	t.Helper()
	// The recorder trims trailing newlines, so a message without a body
	// has no blank line.
	head, body, _ := bytes.Cut(msg, []byte("\n\n"))
	lines := strings.Split(strings.TrimRight(string(head), "\n"), "\n")
	h := map[string]string{"": lines[0]}
	for _, l := range lines[1:] {
		k, v, ok := strings.Cut(l, ": ")
		if !ok {
			t.Fatalf("%s: header line %q", name, l)
		}
		h[k] = v
	}
	return h, body
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func ptr[T any](v T) *T { return &v }
