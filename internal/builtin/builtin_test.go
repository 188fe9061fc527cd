package builtin

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/agent"
	"novaos.dev/novaos/internal/schematest"
)

// server serves a on an httptest server through a2asrv.
func server(t *testing.T, a *agent.Agent) *rpc {
	t.Helper()
	srv := httptest.NewServer(nil)
	h := a.Handler(srv.URL, nil)
	srv.Config.Handler = h
	t.Cleanup(func() {
		srv.Close()
	})
	return &rpc{t: t, url: srv.URL}
}

type rpc struct {
	t   *testing.T
	url string
	n   int
}

func (r *rpc) post(method string, params any) *http.Response {
	r.t.Helper()
	r.n++
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": r.n, "method": method, "params": params})
	if err != nil {
		r.t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, r.url, bytes.NewReader(body))
	if err != nil {
		r.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(a2a.HeaderVersion, a2a.ProtocolVersion)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	return resp
}

// call runs a unary method; it returns the result or the JSON-RPC error.
func (r *rpc) call(method string, params any) (json.RawMessage, *a2a.Error) {
	r.t.Helper()
	resp := r.post(method, params)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		r.t.Fatal(err)
	}
	out, err := a2a.DecodeResponse(b)
	if err != nil {
		r.t.Fatalf("%s: %v in %s", method, err, b)
	}
	return out.Result, out.Error
}

// send runs SendMessage and returns the task or message it answered.
func (r *rpc) send(msg *a2a.Message) *a2a.SendMessageResponse {
	r.t.Helper()
	res, e := r.call("SendMessage", a2a.SendMessageRequest{Message: msg})
	if e != nil {
		r.t.Fatalf("SendMessage: %v", e)
	}
	schematest.Validate(r.t, "Send Message Response", res)
	var out a2a.SendMessageResponse
	if err := a2a.Unmarshal(res, &out); err != nil {
		r.t.Fatalf("decode %s: %v", res, err)
	}
	return &out
}

// stream runs SendStreamingMessage and returns every frame until the
// server closes the stream.
func (r *rpc) stream(msg *a2a.Message) []a2a.StreamResponse {
	r.t.Helper()
	resp := r.post("SendStreamingMessage", a2a.SendMessageRequest{Message: msg})
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		b, _ := io.ReadAll(resp.Body)
		r.t.Fatalf("stream answered %s: %s", ct, b)
	}
	er := a2a.NewEventReader(resp.Body, 0)
	var frames []a2a.StreamResponse
	for {
		ev, err := er.Next()
		if errors.Is(err, io.EOF) {
			return frames
		}
		if err != nil {
			r.t.Fatalf("read stream: %v", err)
		}
		env, err := a2a.DecodeResponse(ev.Data)
		if err != nil || env.Error != nil {
			r.t.Fatalf("stream frame %s: %v %v", ev.Data, err, env.Error)
		}
		schematest.Validate(r.t, "Stream Response", env.Result)
		var f a2a.StreamResponse
		if err := a2a.Unmarshal(env.Result, &f); err != nil {
			r.t.Fatalf("decode frame %s: %v", env.Result, err)
		}
		frames = append(frames, f)
	}
}

func userMessage(id, text string) *a2a.Message {
	return &a2a.Message{MessageID: id, Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart(text)}}
}

// summary renders frames as short strings: "task:WORKING",
// "status:COMPLETED", "artifact:<text>[+append][+last]", "message:<text>".
func summary(frames []a2a.StreamResponse) []string {
	var out []string
	for _, f := range frames {
		switch {
		case f.Task != nil:
			out = append(out, "task:"+short(f.Task.Status.State))
		case f.StatusUpdate != nil:
			out = append(out, "status:"+short(f.StatusUpdate.Status.State))
		case f.ArtifactUpdate != nil:
			s := "artifact:" + partsSummary(f.ArtifactUpdate.Artifact.Parts)
			if f.ArtifactUpdate.Append {
				s += "+append"
			}
			if f.ArtifactUpdate.LastChunk {
				s += "+last"
			}
			out = append(out, s)
		case f.Message != nil:
			out = append(out, "message:"+f.Message.Text())
		}
	}
	return out
}

// afterSnapshot reads a stream summary as the sequence of changes: the
// opening task snapshot counts as a status change to its state unless it is
// still SUBMITTED.
func afterSnapshot(got []string) []string {
	if len(got) == 0 {
		return nil
	}
	state, ok := strings.CutPrefix(got[0], "task:")
	if !ok {
		return got
	}
	rest := got[1:]
	if state != "SUBMITTED" {
		rest = append([]string{"status:" + state}, rest...)
	}
	return rest
}

func short(s a2a.TaskState) string { return strings.TrimPrefix(s.String(), "TASK_STATE_") }

func partsSummary(parts []a2a.Part) string {
	var ss []string
	for _, p := range parts {
		switch p.Kind {
		case a2a.PartText:
			ss = append(ss, p.Text)
		case a2a.PartRaw:
			ss = append(ss, "raw("+p.Filename+","+p.MediaType+")")
		case a2a.PartURL:
			ss = append(ss, "url("+p.URL+")")
		case a2a.PartData:
			ss = append(ss, "data"+string(p.Data))
		}
	}
	return strings.Join(ss, "|")
}

func TestEcho(t *testing.T) {
	c := server(t, Echo())

	res := c.send(userMessage("m1", "hello  brave\tnew world"))
	if res.Task == nil {
		t.Fatalf("SendMessage answered %+v, want a task", res)
	}
	task := res.Task
	if task.Status.State != a2a.TaskStateCompleted || task.Status.Message.Text() != "echoed 22 bytes" {
		t.Errorf("task status = %v %q", task.Status.State, task.Status.Message.Text())
	}
	if len(task.Artifacts) != 1 || a2a.PartsText(task.Artifacts[0].Parts) != "hello  brave\tnew world" {
		t.Errorf("artifacts = %+v", task.Artifacts)
	}

	frames := c.stream(userMessage("m2", "hello brave world"))
	want := []string{"status:WORKING", "artifact:hello ", "artifact:brave +append", "artifact:world+append+last", "status:COMPLETED"}
	if diff := cmp.Diff(want, afterSnapshot(summary(frames))); diff != "" {
		t.Errorf("stream frames (-want +got):\n%s", diff)
	}
	// The chunks add up to the input.
	var sb strings.Builder
	for _, f := range frames {
		if f.ArtifactUpdate != nil {
			sb.WriteString(a2a.PartsText(f.ArtifactUpdate.Artifact.Parts))
		}
	}
	if sb.String() != "hello brave world" {
		t.Errorf("chunks join to %q", sb.String())
	}

	card := Echo().CardAt("http://x")
	if len(card.Skills) != 1 || card.Skills[0].ID != "echo" || !*card.Capabilities.Streaming {
		t.Errorf("echo card = %+v", card)
	}
}

// TestEchoOnce pins how often a large message's text is in the answer:
// once as the caller's message in the history, once as the result artifact.
// The status message says what happened instead of repeating the text, and
// it is not also in the history (it would be, once replaced).
func TestEchoOnce(t *testing.T) {
	c := server(t, Echo())
	text := strings.Repeat("large ", 200_000) // 1.2 MB
	res := c.send(userMessage("m1", text))
	if res.Task == nil {
		t.Fatalf("SendMessage answered %+v, want a task", res)
	}
	body, err := json.Marshal(res.Task)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(body), text); n != 2 {
		t.Errorf("the text is %d times in the answer, want 2 (the caller's message and the artifact)", n)
	}
	if len(body) > 2*len(text)+4096 {
		t.Errorf("answer is %d bytes for a %d-byte message", len(body), len(text))
	}
}

func TestSplitWords(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"one", []string{"one"}},
		{"one two", []string{"one ", "two"}},
		{"  lead  and trail  ", []string{"  lead  ", "and ", "trail  "}},
		{"héllo wörld", []string{"héllo ", "wörld"}},
	}
	for _, tt := range tests {
		got := splitWords(tt.in)
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("splitWords(%q) (-want +got):\n%s", tt.in, diff)
		}
		if strings.Join(got, "") != tt.in {
			t.Errorf("splitWords(%q) does not join back", tt.in)
		}
	}
}

func TestTCKUnary(t *testing.T) {
	c := server(t, NewTCK(&TCKOptions{StreamingTimeout: 50 * time.Millisecond}))
	tests := []struct {
		prefix    string
		wantState a2a.TaskState
		wantText  string // status message text
		wantArt   string // partsSummary of the only artifact, "" for none
	}{
		{"tck-complete-task", a2a.TaskStateCompleted, "Hello from TCK", ""},
		{"tck-delayed-complete", a2a.TaskStateCompleted, "Done after delay", ""},
		{"tck-artifact-text", a2a.TaskStateCompleted, "", "Generated text content"},
		{"tck-artifact-file", a2a.TaskStateCompleted, "", "raw(output.txt,text/plain)"},
		{"tck-artifact-file-url", a2a.TaskStateCompleted, "", "url(https://example.com/output.txt)"},
		{"tck-artifact-data", a2a.TaskStateCompleted, "", `data{"key":"value","count":42}`},
		{"tck-input-required", a2a.TaskStateInputRequired, "Input required", ""},
		{"tck-reject-task", a2a.TaskStateRejected, "rejected", ""},
		{"tck-something-else", a2a.TaskStateCompleted, "Handled message tck-something-else-1a2b3c4d", ""},
	}
	for _, tt := range tests {
		t.Run(tt.prefix, func(t *testing.T) {
			res := c.send(userMessage(tt.prefix+"-1a2b3c4d", "TCK test"))
			if res.Task == nil {
				t.Fatalf("answer = %+v, want a task", res)
			}
			task := res.Task
			if task.Status.State != tt.wantState {
				t.Errorf("state = %v, want %v", task.Status.State, tt.wantState)
			}
			if got := task.Status.Message.Text(); got != tt.wantText {
				t.Errorf("status text = %q, want %q", got, tt.wantText)
			}
			var art string
			if len(task.Artifacts) == 1 {
				art = partsSummary(task.Artifacts[0].Parts)
				if task.Artifacts[0].ArtifactID == "" {
					t.Error("artifact has no id")
				}
			} else if len(task.Artifacts) > 1 {
				t.Errorf("%d artifacts", len(task.Artifacts))
			}
			if art != tt.wantArt {
				t.Errorf("artifact = %q, want %q", art, tt.wantArt)
			}
		})
	}

	t.Run("message response", func(t *testing.T) {
		res := c.send(userMessage("tck-message-response-1a2b", "hi"))
		if res.Task != nil || res.Message == nil || res.Message.Text() != "Direct message response" || res.Message.Role != a2a.RoleAgent {
			t.Errorf("answer = %+v, want the direct message", res)
		}
	})

	t.Run("input required then complete", func(t *testing.T) {
		first := c.send(userMessage("tck-input-required-aa", "start"))
		if first.Task == nil || first.Task.Status.State != a2a.TaskStateInputRequired {
			t.Fatalf("first = %+v", first)
		}
		follow := userMessage("tck-complete-task-bb", "answer")
		follow.TaskID, follow.ContextID = first.Task.ID, first.Task.ContextID
		second := c.send(follow)
		if second.Task == nil || second.Task.ID != first.Task.ID || second.Task.Status.State != a2a.TaskStateCompleted {
			t.Fatalf("second = %+v", second)
		}
		if len(second.Task.History) < 2 {
			t.Errorf("history has %d messages, want both turns", len(second.Task.History))
		}
	})

	t.Run("unsupported content type", func(t *testing.T) {
		msg := &a2a.Message{MessageID: "tck-send-003-x", Role: a2a.RoleUser,
			Parts: []a2a.Part{a2a.RawPart([]byte("tck"), "", "application/x-unsupported-tck-type")}}
		_, e := c.call("SendMessage", a2a.SendMessageRequest{Message: msg})
		if e == nil || e.Code != a2a.CodeContentTypeNotSupported {
			t.Errorf("error = %v, want ContentTypeNotSupported", e)
		}
	})
}

func TestTCKStreaming(t *testing.T) {
	const timeout = 50 * time.Millisecond
	c := server(t, NewTCK(&TCKOptions{StreamingTimeout: timeout}))
	tests := []struct {
		prefix string
		want   []string // frames after the initial task snapshot
	}{
		{"tck-stream-001", []string{"status:WORKING", "artifact:Stream hello from TCK", "status:COMPLETED"}},
		{"tck-stream-002", []string{"status:COMPLETED"}},
		{"tck-stream-003", []string{"status:WORKING", "artifact:Stream task lifecycle", "status:COMPLETED"}},
		{"tck-stream-ordering-001", []string{"status:WORKING", "artifact:Ordered output", "status:COMPLETED"}},
		{"tck-stream-artifact-text", []string{"status:WORKING", "artifact:Streamed text content", "status:COMPLETED"}},
		{"tck-stream-artifact-file", []string{"status:WORKING", "artifact:raw(output.txt,text/plain)", "status:COMPLETED"}},
		{"tck-stream-artifact-chunked", []string{"status:WORKING", "artifact:chunk-1 ", "artifact:chunk-2+append+last", "status:COMPLETED"}},
		{"test-resubscribe-message-id", []string{"status:WORKING", "status:COMPLETED"}},
	}
	for _, tt := range tests {
		t.Run(tt.prefix, func(t *testing.T) {
			start := time.Now()
			got := summary(c.stream(userMessage(tt.prefix+"-1a2b3c4d", "TCK stream")))
			if diff := cmp.Diff(tt.want, afterSnapshot(got)); diff != "" {
				t.Errorf("frames (-want +got):\n%s\nall: %v", diff, got)
			}
			if tt.prefix == "test-resubscribe-message-id" && time.Since(start) < 2*timeout {
				t.Errorf("resubscribe task ended after %v, want at least %v", time.Since(start), 2*timeout)
			}
		})
	}

	t.Run("message response", func(t *testing.T) {
		got := summary(c.stream(userMessage("tck-message-response-9", "hi")))
		if diff := cmp.Diff([]string{"message:Direct message response"}, got); diff != "" {
			t.Errorf("frames (-want +got):\n%s", diff)
		}
	})
}

func TestScenarioOrder(t *testing.T) {
	// A prefix must not be shadowed by an earlier, shorter one.
	for i, s := range scenarios {
		for _, earlier := range scenarios[:i] {
			if strings.HasPrefix(s.prefix, earlier.prefix) {
				t.Errorf("%q is shadowed by the earlier %q", s.prefix, earlier.prefix)
			}
		}
	}
}

func TestServedCards(t *testing.T) {
	for _, a := range []*agent.Agent{Echo(), TCK()} {
		t.Run(a.Name(), func(t *testing.T) {
			c := server(t, a)
			// As a v1 client asks: without A2A-Version the card has 0.3's members too.
			req, _ := http.NewRequest(http.MethodGet, c.url+a2a.WellKnownCardPath, nil)
			req.Header.Set(a2a.HeaderVersion, a2a.ProtocolVersion)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			schematest.Validate(t, "Agent Card", body)
			var card a2a.AgentCard
			if err := a2a.Unmarshal(body, &card); err != nil {
				t.Fatal(err)
			}
			if card.SupportedInterfaces[0].URL != c.url || card.Name != a.Name() {
				t.Errorf("served card = %+v", card)
			}
		})
	}
}

func TestTCKCard(t *testing.T) {
	card := TCK().CardAt("http://127.0.0.1:9999")
	if card.Name != "tck" || len(card.Skills) != 1 || card.Skills[0].ID != "tck" {
		t.Errorf("card = %+v", card)
	}
	if len(card.SupportedInterfaces) != 2 || card.SupportedInterfaces[0].ProtocolBinding != a2a.BindingJSONRPC ||
		card.SupportedInterfaces[1].ProtocolBinding != a2a.BindingHTTPJSON || card.SupportedInterfaces[0].ProtocolVersion != "1.0" {
		t.Errorf("interfaces = %+v", card.SupportedInterfaces)
	}
}
