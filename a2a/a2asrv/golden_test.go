package a2asrv_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/tools/txtar"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/internal/httpgolden"
	"novaos.dev/novaos/internal/schematest"
)

var update = flag.Bool("update", false, "rewrite the golden exchanges in testdata/golden")

// The golden exchanges are txtar files of numbered request/response pairs:
//
//	-- 1.request --
//	POST /
//	A2A-Version: 1.0
//
//	{"jsonrpc":"2.0",...}
//	-- 1.response --
//	200
//	Content-Type: application/json
//
//	{"jsonrpc":"2.0",...}
//
// Requests run in order against a fresh handler with a scripted executor, a
// fixed clock and sequential ids, so the responses are reproducible. Run
// with -update to rewrite the responses after an intended change; every
// JSON payload is also validated against the A2A JSON Schema.
func TestGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/golden/*.txtar")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no golden files")
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			runGolden(t, file)
		})
	}
}

// responseHeaders are the headers a golden response records.
var responseHeaders = []string{"Content-Type", "Cache-Control", "X-Accel-Buffering", "A2A-Extensions", "ETag", "Allow", "Vary"}

func runGolden(t *testing.T, file string) {
	ar, err := txtar.ParseFile(file)
	if err != nil {
		t.Fatal(err)
	}
	opts := goldenOptions(ar.Comment)
	h := newScriptedHandler(t, opts)
	srv := httptest.NewServer(h)
	defer srv.Close()
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		h.Shutdown(ctx)
	}()

	var out []txtar.File
	for i := 0; i < len(ar.Files); i++ {
		f := ar.Files[i]
		if !strings.HasSuffix(f.Name, ".request") {
			continue
		}
		step := strings.TrimSuffix(f.Name, ".request")
		got := doRequest(t, srv, f.Data)
		validatePayloads(t, step, f.Data, got)
		out = append(out, f, txtar.File{Name: step + ".response", Data: got})
		var want []byte
		if i+1 < len(ar.Files) && ar.Files[i+1].Name == step+".response" {
			want = ar.Files[i+1].Data
		}
		if !*update && !bytes.Equal(want, got) {
			t.Errorf("step %s: response differs\n--- want\n%s\n--- got\n%s", step, want, got)
		}
	}
	if *update {
		ar.Files = out
		if err := os.WriteFile(file, txtar.Format(ar), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// goldenOptions reads "option: value" lines from the archive comment.
func goldenOptions(comment []byte) map[string]string {
	m := map[string]string{}
	for line := range strings.SplitSeq(string(comment), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && !strings.HasPrefix(line, "#") {
			m[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return m
}

func doRequest(t *testing.T, srv *httptest.Server, raw []byte) []byte {
	t.Helper()
	head, body := httpgolden.Do(t, srv, raw, responseHeaders)
	out := append(head, body...)
	if !bytes.HasSuffix(out, []byte("\n")) {
		out = append(out, '\n')
	}
	return out
}

// resultDefinitions maps a method to the schema definition of its result.
var resultDefinitions = map[string]string{
	a2a.MethodSendMessage:                      "Send Message Response",
	a2a.MethodGetTask:                          "Task",
	a2a.MethodCancelTask:                       "Task",
	a2a.MethodListTasks:                        "List Tasks Response",
	a2a.MethodCreateTaskPushNotificationConfig: "Task Push Notification Config",
	a2a.MethodGetTaskPushNotificationConfig:    "Task Push Notification Config",
	a2a.MethodListTaskPushNotificationConfigs:  "List Task Push Notification Configs Response",
	a2a.MethodGetExtendedAgentCard:             "Agent Card",
	a2a.MethodSendStreamingMessage:             "Stream Response",
	a2a.MethodSubscribeToTask:                  "Stream Response",
}

// validatePayloads checks every result the server emitted against the A2A
// JSON Schema, and that every error carries an ErrorInfo detail.
func validatePayloads(t *testing.T, step string, request, response []byte) {
	t.Helper()
	_, reqBody, _ := bytes.Cut(request, []byte("\n\n"))
	var env struct {
		Method string `json:"method"`
	}
	_ = json.Unmarshal(reqBody, &env)
	_, body, _ := bytes.Cut(response, []byte("\n\n"))
	if bytes.HasPrefix(request, []byte("GET /.well-known/agent-card.json")) {
		// Without A2A-Version (A2A 0.3, spec §3.2.6) the card carries 0.3's
		// members too, which the v1 schema does not allow.
		if len(bytes.TrimSpace(body)) > 0 && bytes.Contains(request, []byte("A2A-Version: 1.0")) {
			schematest.Validate(t, "Agent Card", body)
		}
		return
	}
	if line, _, _ := bytes.Cut(request, []byte("\n")); !bytes.HasPrefix(line, []byte("POST / ")) && string(line) != "POST /" {
		validateREST(t, step, string(line), response)
		return
	}
	var payloads [][]byte
	if bytes.Contains(response, []byte("Content-Type: text/event-stream")) {
		er := a2a.NewEventReader(bytes.NewReader(body), 0)
		for {
			ev, err := er.Next()
			if err != nil {
				break
			}
			payloads = append(payloads, ev.Data)
		}
	} else if bytes.Contains(response, []byte("Content-Type: application/json")) {
		payloads = append(payloads, body)
	}
	for _, p := range payloads {
		var r struct {
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Code int               `json:"code"`
				Data []json.RawMessage `json:"data"`
			} `json:"error"`
		}
		if err := json.Unmarshal(p, &r); err != nil {
			t.Errorf("step %s: payload is not JSON-RPC: %v\n%s", step, err, p)
			continue
		}
		if r.Error != nil {
			if len(r.Error.Data) == 0 || !bytes.Contains(r.Error.Data[0], []byte(a2a.ErrorInfoType)) {
				t.Errorf("step %s: error without ErrorInfo: %s", step, p)
			}
			continue
		}
		if def, ok := resultDefinitions[env.Method]; ok && string(r.Result) != "null" {
			schematest.Validate(t, def, r.Result)
		}
	}
}

// newScriptedHandler serves a test agent whose behaviour is chosen by the
// first word of the message text:
//
//	complete     completes with an artifact echoing the text
//	reply        answers with a message (no task)
//	refs         answers with the referenced tasks that resolved and did not
//	input        asks for input; a follow-up message completes the task
//	auth         asks for authorisation
//	reject       rejects the task
//	fail         returns an error
//	panic        panics
//	giveup       ends in its own cancellation after marking the task working
//	wait         waits, without writing, until cancelled
//	chunks       streams an artifact in three chunks, then completes
//	unsupported  returns ContentTypeNotSupported before writing
func newScriptedHandler(t *testing.T, opt map[string]string) *a2asrv.Handler {
	t.Helper()
	var mu sync.Mutex
	n := 0
	base := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	opts := &a2asrv.Options{
		TaskStore: a2asrv.NewMemoryTaskStore(nil),
		Now:       func() time.Time { return base },
		NewID: func() string {
			mu.Lock()
			defer mu.Unlock()
			n++
			return fmt.Sprintf("id-%03d", n)
		},
		KeepAlive: time.Hour,
	}
	if opt["push"] == "on" {
		opts.PushConfigStore = a2asrv.NewMemoryPushConfigStore(nil)
	}
	if opt["extended-card"] == "on" {
		c := testCard()
		c.Description = "Extended card, for authenticated callers."
		opts.ExtendedCard = c
	}
	if v := opt["max-body"]; v != "" {
		fmt.Sscan(v, &opts.MaxBodyBytes)
	}
	card := testCard()
	if opt["streaming"] == "off" {
		card.Capabilities.Streaming = a2a.Bool(false)
	}
	if opt["required-extension"] != "" {
		card.Capabilities.Extensions = append(card.Capabilities.Extensions, a2a.AgentExtension{URI: opt["required-extension"], Required: true})
	}
	return a2asrv.NewHandler(card, a2asrv.ExecutorFunc(scripted), opts)
}

func testCard() *a2a.AgentCard {
	return &a2a.AgentCard{
		Name:        "scripted",
		Description: "Test agent driven by the first word of the message.",
		Version:     "1.0.0",
		SupportedInterfaces: []a2a.AgentInterface{
			{URL: "http://127.0.0.1/agents/scripted", ProtocolBinding: a2a.BindingJSONRPC, ProtocolVersion: a2a.ProtocolVersion},
		},
		Capabilities: a2a.AgentCapabilities{
			Streaming:         a2a.Bool(true),
			PushNotifications: a2a.Bool(true),
			Extensions:        []a2a.AgentExtension{{URI: "https://example.com/ext/trace/v1", Description: "Trace echo"}},
		},
		DefaultInputModes:  []string{"text/plain"},
		DefaultOutputModes: []string{"text/plain"},
		Skills:             []a2a.AgentSkill{{ID: "script", Name: "script", Description: "Runs a scripted behaviour.", Tags: []string{"test"}}},
	}
}

func agentText(u a2asrv.Updater, suffix, text string) *a2a.Message {
	return &a2a.Message{MessageID: u.TaskID() + "-" + suffix, Role: a2a.RoleAgent, Parts: []a2a.Part{a2a.TextPart(text)}}
}

func scripted(ctx context.Context, req *a2asrv.RequestContext, u a2asrv.Updater) error {
	text := req.Message.Text()
	word, rest, _ := strings.Cut(text, " ")
	if req.Task != nil && req.Task.Status.State.Interrupted() {
		word = "complete"
	}
	switch word {
	case "reply":
		return u.Reply(ctx, agentText(u, "reply", "You said: "+rest))
	case "unsupported":
		return a2a.NewError(a2a.CodeContentTypeNotSupported, "this agent only reads text/plain")
	case "fail":
		if err := u.UpdateStatus(ctx, a2a.TaskStateWorking, nil, nil); err != nil {
			return err
		}
		return fmt.Errorf("upstream service unavailable")
	case "panic":
		panic("scripted panic")
	case "refs":
		var resolved []string
		for _, t := range req.ReferencedTasks {
			resolved = append(resolved, t.ID)
		}
		return u.Reply(ctx, agentText(u, "refs", fmt.Sprintf("resolved %v unresolved %v", resolved, req.UnresolvedReferences)))
	case "wait":
		// No write before waiting, so what other requests observe does not
		// depend on scheduling.
		<-ctx.Done()
		return context.Cause(ctx)
	}
	if err := u.UpdateStatus(ctx, a2a.TaskStateWorking, nil, nil); err != nil {
		return err
	}
	switch word {
	case "input":
		return u.UpdateStatus(ctx, a2a.TaskStateInputRequired, agentText(u, "ask", "Which city?"), nil)
	case "auth":
		return u.UpdateStatus(ctx, a2a.TaskStateAuthRequired, agentText(u, "auth", "Sign in at https://example.com/oauth"), nil)
	case "reject":
		return u.UpdateStatus(ctx, a2a.TaskStateRejected, agentText(u, "reject", "I cannot do that."), nil)
	case "giveup":
		return context.Canceled
	case "chunks":
		for i, chunk := range []string{"one ", "two ", "three"} {
			art := a2a.Artifact{ArtifactID: u.TaskID() + "-art", Name: "counting", Parts: []a2a.Part{a2a.TextPart(chunk)}}
			if err := u.AddArtifact(ctx, art, i > 0, i == 2, nil); err != nil {
				return err
			}
		}
	default:
		art := a2a.Artifact{ArtifactID: u.TaskID() + "-art", Name: "echo", Parts: []a2a.Part{a2a.TextPart(text)}}
		if err := u.AddArtifact(ctx, art, false, true, nil); err != nil {
			return err
		}
	}
	return u.UpdateStatus(ctx, a2a.TaskStateCompleted, agentText(u, "done", "Done."), nil)
}

// validateREST checks an HTTP+JSON answer: errors in the google.rpc.Status
// shape with an ErrorInfo detail, results (and stream frames) against the
// schema of the method the request line names.
func validateREST(t *testing.T, step, line string, response []byte) {
	t.Helper()
	status, stream, body := splitResponse(response)
	method := restMethodOf(line)
	check := func(b []byte) {
		if bytes.HasPrefix(b, []byte(`{"error":`)) {
			restErrorCode(t, "", b)
			return
		}
		def := resultDefinitions[method]
		if def == "" || string(b) == "{}" {
			return
		}
		schematest.Validate(t, def, b)
	}
	switch {
	case stream:
		for _, ev := range events(body) {
			check(ev.Data)
		}
	case status == "200", strings.Contains(string(response), "application/a2a+json"):
		check(bytes.TrimSpace(body))
	}
}

// restMethodOf names the method an HTTP+JSON request line calls.
func restMethodOf(line string) string {
	verb, path, _ := strings.Cut(line, " ")
	path, _, _ = strings.Cut(path, "?")
	switch {
	case strings.HasSuffix(path, "/message:send"):
		return a2a.MethodSendMessage
	case strings.HasSuffix(path, "/message:stream"):
		return a2a.MethodSendStreamingMessage
	case strings.HasSuffix(path, ":cancel"):
		return a2a.MethodCancelTask
	case strings.HasSuffix(path, ":subscribe"):
		return a2a.MethodSubscribeToTask
	case strings.HasSuffix(path, "/extendedAgentCard"):
		return a2a.MethodGetExtendedAgentCard
	case strings.HasSuffix(path, "/pushNotificationConfigs"):
		if verb == "POST" {
			return a2a.MethodCreateTaskPushNotificationConfig
		}
		return a2a.MethodListTaskPushNotificationConfigs
	case strings.Contains(path, "/pushNotificationConfigs/"):
		if verb == "DELETE" {
			return a2a.MethodDeleteTaskPushNotificationConfig
		}
		return a2a.MethodGetTaskPushNotificationConfig
	case strings.HasSuffix(path, "/tasks"):
		return a2a.MethodListTasks
	case strings.Contains(path, "/tasks/"):
		return a2a.MethodGetTask
	}
	return ""
}
