package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"novaos.dev/novaos/a2a"
)

// testTimeout bounds every exchange with a peer so a hung stream fails the
// test instead of the whole run.
const testTimeout = 20 * time.Second

// rawClient speaks JSON-RPC over plain net/http and decodes everything with
// our wire model, so a test sees exactly what the peer put on the wire.
type rawClient struct {
	url    string
	header http.Header
	nextID int
}

func newRawClient(url string) *rawClient {
	h := http.Header{}
	h.Set("A2A-Version", a2a.ProtocolVersion)
	return &rawClient{url: url, header: h}
}

// withHeader returns a copy of c that also sends name: value (or drops the
// header when value is empty).
func (c *rawClient) withHeader(name, value string) *rawClient {
	cp := &rawClient{url: c.url, header: c.header.Clone()}
	if value == "" {
		cp.header.Del(name)
	} else {
		cp.header.Set(name, value)
	}
	return cp
}

func (c *rawClient) post(ctx context.Context, t *testing.T, method string, params any, accept string) (*http.Response, json.RawMessage) {
	t.Helper()
	c.nextID++
	id, _ := json.Marshal(c.nextID)
	p, err := json.Marshal(params)
	if err != nil {
		t.Fatalf("encode %s params: %v", method, err)
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(id), "method": method, "params": json.RawMessage(p)})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		t.Fatalf("new request: %v", err)
	}
	for k, v := range c.header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", accept)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	return resp, id
}

// callRaw sends one unary request and returns the response body and the
// request id it used.
func (c *rawClient) callRaw(t *testing.T, method string, params any) (body []byte, id json.RawMessage) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	resp, id := c.post(ctx, t, method, params, "application/json")
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s: read body: %v", method, err)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("%s: Content-Type %q, want application/json; body %s", method, ct, body)
	}
	return body, id
}

// call sends one unary request and decodes the JSON-RPC response envelope.
func (c *rawClient) call(t *testing.T, method string, params any) *a2a.Response {
	t.Helper()
	body, id := c.callRaw(t, method, params)
	r, err := a2a.DecodeResponse(body)
	if err != nil {
		t.Fatalf("%s: %v; body %s", method, err, body)
	}
	if string(r.ID) != string(id) {
		t.Fatalf("%s: response id %s, want %s", method, r.ID, id)
	}
	return r
}

// sseStream is an open streaming call.
type sseStream struct {
	t           *testing.T
	method      string
	id          json.RawMessage
	contentType string
	resp        *http.Response
	events      *a2a.EventReader
	cancel      context.CancelFunc
	// plain holds the body when the server answered with plain JSON instead
	// of opening a stream (a pre-stream error).
	plain *a2a.Response
}

// open starts a streaming call. A server may refuse with a plain JSON error
// instead of a stream; then s.plain is set.
func (c *rawClient) open(t *testing.T, method string, params any) *sseStream {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	resp, id := c.post(ctx, t, method, params, "text/event-stream")
	s := &sseStream{t: t, method: method, id: id, resp: resp, cancel: cancel, contentType: resp.Header.Get("Content-Type")}
	t.Cleanup(s.close)
	if !strings.HasPrefix(s.contentType, "text/event-stream") {
		body, _ := io.ReadAll(resp.Body)
		r, err := a2a.DecodeResponse(body)
		if err != nil {
			t.Fatalf("%s: Content-Type %q and no JSON-RPC body: %v; body %s", method, s.contentType, err, body)
		}
		s.plain = r
		return s
	}
	s.events = a2a.NewEventReader(resp.Body, 0)
	return s
}

func (s *sseStream) close() {
	s.cancel()
	s.resp.Body.Close()
}

// next reads the next frame; io.EOF means the server closed the stream.
func (s *sseStream) next() (*a2a.Response, error) {
	s.t.Helper()
	if s.plain != nil {
		s.t.Fatalf("%s: server answered without a stream: %+v", s.method, s.plain.Error)
	}
	ev, err := s.events.Next()
	if err != nil {
		return nil, err
	}
	r, err := a2a.DecodeResponse(ev.Data)
	if err != nil {
		s.t.Fatalf("%s: frame %q: %v", s.method, ev.Data, err)
	}
	if string(r.ID) != string(s.id) {
		s.t.Fatalf("%s: frame id %s, want %s", s.method, r.ID, s.id)
	}
	return r, nil
}

// nextEvent reads the next frame and decodes it as a StreamResponse.
func (s *sseStream) nextEvent() *a2a.StreamResponse {
	s.t.Helper()
	r, err := s.next()
	if err != nil {
		s.t.Fatalf("%s: next frame: %v", s.method, err)
	}
	return decodeResult[a2a.StreamResponse](s.t, r)
}

// rest reads frames until the server closes the stream. Every frame must
// be a result; an error frame fails the test.
func (s *sseStream) rest() []*a2a.StreamResponse {
	s.t.Helper()
	var out []*a2a.StreamResponse
	for {
		r, err := s.next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			s.t.Fatalf("%s: read stream: %v", s.method, err)
		}
		out = append(out, decodeResult[a2a.StreamResponse](s.t, r))
	}
}

// firstError returns the error a streaming call was refused with, whether
// the server sent it as plain JSON or as the stream's only frame; viaSSE
// says which.
func (s *sseStream) firstError() (e *a2a.Error, viaSSE bool) {
	s.t.Helper()
	if s.plain != nil {
		if s.plain.Error == nil {
			s.t.Fatalf("%s: want an error, got result %s", s.method, s.plain.Result)
		}
		return s.plain.Error, false
	}
	r, err := s.next()
	if err != nil {
		s.t.Fatalf("%s: want an error frame: %v", s.method, err)
	}
	if r.Error == nil {
		s.t.Fatalf("%s: want an error frame, got result %s", s.method, r.Result)
	}
	return r.Error, true
}

// decodeResult reads a successful response's result with our tolerant
// decoder; an error response fails the test.
func decodeResult[T any](t *testing.T, r *a2a.Response) *T {
	t.Helper()
	if r.Error != nil {
		t.Fatalf("want a result, got error %d %q data %s", r.Error.Code, r.Error.Message, r.Error.Data)
	}
	var v T
	if err := a2a.Unmarshal(r.Result, &v); err != nil {
		t.Fatalf("decode %T: %v; result %s", v, err, r.Result)
	}
	return &v
}

// wantError checks that r is an error with the given code and returns it.
func wantError(t *testing.T, r *a2a.Response, code int) *a2a.Error {
	t.Helper()
	if r.Error == nil {
		t.Fatalf("want error %d, got result %s", code, r.Result)
	}
	if r.Error.Code != code {
		t.Fatalf("error code %d (%q), want %d", r.Error.Code, r.Error.Message, code)
	}
	return r.Error
}

// errorInfoReason is the reason of the google.rpc.ErrorInfo detail in an
// error's data array, or "" when there is none.
func errorInfoReason(e *a2a.Error) string {
	var details []struct {
		Type   string `json:"@type"`
		Reason string `json:"reason"`
		Domain string `json:"domain"`
	}
	if json.Unmarshal(e.Data, &details) != nil {
		return ""
	}
	for _, d := range details {
		if d.Type == a2a.ErrorInfoType {
			return d.Reason
		}
	}
	return ""
}

// kinds names the member set in each frame, for order assertions.
func kinds(evs []*a2a.StreamResponse) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = kind(ev)
	}
	return out
}

func kind(ev *a2a.StreamResponse) string {
	switch {
	case ev.Task != nil:
		return "task:" + ev.Task.Status.State.String()
	case ev.Message != nil:
		return "message"
	case ev.StatusUpdate != nil:
		return "status:" + ev.StatusUpdate.Status.State.String()
	case ev.ArtifactUpdate != nil:
		return "artifact"
	}
	return "empty"
}

func userMessage(text string) *a2a.Message {
	return a2a.NewMessage(a2a.RoleUser, a2a.TextPart(text))
}

func int32p(v int32) *int32 { return &v }
