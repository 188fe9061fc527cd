package tools

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"novaos.dev/novaos/secret"
)

// testToken is the bearer token the tests call with; no error, log or
// formatted value may show it.
const testToken = "tok-3f9a7c1e-never-shown"

// gwCall is one request the fake gateway received.
type gwCall struct {
	Path   string
	Header http.Header
	Method string
	ID     json.RawMessage
	Params json.RawMessage
}

// tool is the name a tools/call named.
func (c gwCall) tool() string {
	var p struct {
		Name string `json:"name"`
	}
	_ = json.Unmarshal(c.Params, &p)
	return p.Name
}

// args are the arguments a tools/call carried.
func (c gwCall) args() json.RawMessage {
	var p struct {
		Arguments json.RawMessage `json:"arguments"`
	}
	_ = json.Unmarshal(c.Params, &p)
	return p.Arguments
}

// reply is how the fake answers one call.
type reply struct {
	result any        // the JSON-RPC result
	err    *wireError // or the JSON-RPC error
	// status is the HTTP status (default 200); header is added to the
	// answer's.
	status int
	header http.Header
	// body, when set, is sent as is with contentType instead.
	body        string
	contentType string
	// stream answers with server-sent events: a progress notification
	// first, then the response.
	stream bool
}

// fakeGateway is a small JSON-RPC server shaped as the tool gateway:
// it answers initialize with a session, notifications with 202, a call
// carrying a session it does not know with 404, and everything else as
// answer says.
type fakeGateway struct {
	t   *testing.T
	srv *httptest.Server

	mu       sync.Mutex
	calls    []gwCall
	sessions map[string]bool
	minted   int
	answer   func(c gwCall) reply
}

func newFakeGateway(t *testing.T, answer func(c gwCall) reply) *fakeGateway {
	t.Helper()
	g := &fakeGateway{t: t, sessions: map[string]bool{}, answer: answer}
	g.srv = httptest.NewServer(http.HandlerFunc(g.serve))
	t.Cleanup(g.srv.Close)
	return g
}

// result answers every call with res.
func result(res any) func(gwCall) reply { return func(gwCall) reply { return reply{result: res} } }

// okResult is a tool result with structured content {"ok": true}.
var okResult = map[string]any{"content": []any{map[string]any{"type": "text", "text": `{"ok":true}`}},
	"structuredContent": map[string]any{"ok": true}}

func (g *fakeGateway) client(t *testing.T, o *ClientOptions) *Client {
	t.Helper()
	c, err := NewClient(g.srv.URL, secret.New(testToken), o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (g *fakeGateway) recorded() []gwCall {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]gwCall(nil), g.calls...)
}

// toolCalls are the recorded tools/call requests.
func (g *fakeGateway) toolCalls() []gwCall {
	var out []gwCall
	for _, c := range g.recorded() {
		if c.Method == "tools/call" {
			out = append(out, c)
		}
	}
	return out
}

// expire forgets every session, as a gateway does after the idle time.
func (g *fakeGateway) expire() {
	g.mu.Lock()
	defer g.mu.Unlock()
	clear(g.sessions)
}

func (g *fakeGateway) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req struct {
		Method string          `json:"method"`
		ID     json.RawMessage `json:"id"`
		Params json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, "bad json", http.StatusBadRequest)
		return
	}
	c := gwCall{Path: r.URL.Path, Header: r.Header.Clone(), Method: req.Method, ID: req.ID, Params: req.Params}
	g.mu.Lock()
	g.calls = append(g.calls, c)
	sid := r.Header.Get(SessionHeader)
	known := g.sessions[sid]
	g.mu.Unlock()

	switch {
	case req.Method == "initialize":
		g.mu.Lock()
		g.minted++
		sid = fmt.Sprintf("session-%d", g.minted)
		g.sessions[sid] = true
		g.mu.Unlock()
		w.Header().Set(SessionHeader, sid)
		writeReply(w, req.ID, reply{result: map[string]any{"protocolVersion": ProtocolVersion, "capabilities": map[string]any{},
			"serverInfo": map[string]any{"name": "fake", "version": "1"}}})
		return
	case len(req.ID) == 0:
		w.WriteHeader(http.StatusAccepted)
		return
	case sid != "" && !known:
		http.Error(w, "session not found", http.StatusNotFound)
		return
	}
	writeReply(w, req.ID, g.answer(c))
}

func writeReply(w http.ResponseWriter, id json.RawMessage, rp reply) {
	for k, v := range rp.header {
		w.Header()[k] = v
	}
	status := rp.status
	if status == 0 {
		status = http.StatusOK
	}
	if rp.body != "" || rp.contentType != "" {
		w.Header().Set("Content-Type", rp.contentType)
		w.WriteHeader(status)
		io.WriteString(w, rp.body)
		return
	}
	msg := map[string]any{"jsonrpc": "2.0", "id": id}
	if rp.err != nil {
		msg["error"] = rp.err
	} else {
		msg["result"] = rp.result
	}
	b, _ := json.Marshal(msg)
	if rp.stream {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(status)
		fmt.Fprintf(w, ": keep-alive\n\nevent: message\ndata: %s\n\n", `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}`)
		// The response split over two data lines, as SSE allows.
		s := string(b)
		cut := strings.Index(s, `,"`)
		fmt.Fprintf(w, "id: 7\nevent: message\ndata: %s\ndata: %s\n\n", s[:cut+1], s[cut+1:])
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}

// rpcErr is a JSON-RPC error with data.
func rpcErr(code int, msg string, data any) *wireError {
	e := &wireError{Code: code, Message: msg}
	if data != nil {
		e.Data, _ = json.Marshal(data)
	}
	return e
}
