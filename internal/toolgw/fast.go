package toolgw

import (
	"bytes"
	"encoding/json"
	"errors"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"novaos.dev/novaos/strictjson"
)

// The gateway answers tools/call and tools/list itself once it has read
// the envelope, as the MCP SDK's server would answer them: for each
// request that server decodes the body several times over and builds a
// session, which cost more than the rest of a proxied call. Only a
// request the SDK would take as it is goes this way: nothing in its
// envelope but the members the SDK reads, spelt as it spells them, an id
// every decoder reads alike, and the HTTP and protocol checks the SDK
// makes of either era met. Any other request, and every other method, is
// the SDK's to answer, as before. Answers are built with the SDK's own
// encoder, so ids, results, errors, statuses and headers are the bytes
// the SDK would send; the tests compare both paths.

// plainShape is a request the fast path may take: exactly these member
// names (any other, a case variant among them, leaves the request to
// the SDK, which reads names exactly where encoding/json folds case),
// nested no deeper than the SDK reads (it refuses 1,000 levels).
var plainShape = &strictjson.Options{Object: true, MaxDepth: 900, Fields: &strictjson.Fields{Names: map[string]*strictjson.Fields{
	"jsonrpc": nil, "id": nil, "method": nil,
	"params": {Names: map[string]*strictjson.Fields{"name": nil, "arguments": nil, "_meta": {Open: true}, "query": nil}},
}}}

// plainEnvelope decodes a body plainShape admits. With every name exact
// and once, it reads what envelope reads, and fails where it fails, and
// also keeps what the fast path checks: the version tag, whether params
// are there, and _meta as sent.
type plainEnvelope struct {
	JSONRPC json.RawMessage `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  *struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		Query     string          `json:"query"`
		Meta      json.RawMessage `json:"_meta"`
	} `json:"params"`
}

// decodePlain reads a body plainShape admitted.
func decodePlain(data []byte) (*envelope, error) {
	var p plainEnvelope
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, err
	}
	env := &envelope{ID: p.ID, Method: p.Method, plain: true, jsonrpc: p.JSONRPC}
	if p.Params != nil {
		env.hasParams = true
		env.Params.Name, env.Params.Arguments, env.Params.Query = p.Params.Name, p.Params.Arguments, p.Params.Query
		env.meta = p.Params.Meta
		if len(p.Params.Meta) > 0 {
			if err := json.Unmarshal(p.Params.Meta, &env.Params.Meta); err != nil {
				return nil, err
			}
		}
	}
	return env, nil
}

// The SDK's protocol revisions, and the first of the stateless era.
var (
	sdkRevisions = mcp.SupportedProtocolVersions()
	modernEra    = "2026-07-28"
)

// fastAnswer is how the fast path answers a request: with its id, and in
// the stateless era (2026-07-28) or the session era.
type fastAnswer struct {
	id     jsonrpc.ID
	modern bool
}

// fastPath reports whether the gateway answers the request itself, and
// how: only when the SDK would pass it, unchanged, to the gateway's tool
// methods.
func (s *Service) fastPath(r *http.Request, c *Caller, env *envelope) (fastAnswer, bool) {
	var fa fastAnswer
	if s.sdkOnly || !env.plain || string(env.jsonrpc) != `"2.0"` {
		return fa, false
	}
	switch env.Method {
	case "tools/call":
		if !env.hasParams {
			return fa, false // the SDK's "missing params", for a missing or null one
		}
	case "tools/list":
	default:
		return fa, false
	}
	id, ok := plainID(env.ID)
	if !ok {
		return fa, false
	}
	fa.id = id
	// What the SDK's bearer check and streamable handler check, in turn.
	if f := strings.Fields(r.Header.Get("Authorization")); len(f) != 2 || strings.ToLower(f[0]) != "bearer" {
		return fa, false
	}
	if c.Expiry.IsZero() || c.Expiry.Before(time.Now()) {
		return fa, false
	}
	pv := r.Header.Get("Mcp-Protocol-Version")
	if pv != "" && !slices.Contains(sdkRevisions, pv) {
		return fa, false
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return fa, false
	}
	if jsonOK, streamOK := accepts(r.Header.Values("Accept")); !jsonOK || !streamOK {
		return fa, false
	}
	if len(r.Header.Values("Last-Event-Id")) > 0 {
		return fa, false
	}
	// The era: the session era names no revision in _meta; the stateless
	// one names the header's there, with the client's capabilities, and
	// repeats the method and tool name in headers.
	var meta map[string]json.RawMessage
	if len(env.meta) > 0 && json.Unmarshal(env.meta, &meta) != nil {
		return fa, false
	}
	mv := metaString(meta[mcp.MetaKeyProtocolVersion])
	switch {
	case pv < modernEra && mv == "":
		return fa, true
	case pv < modernEra || mv != pv:
		return fa, false
	}
	fa.modern = true
	if r.Header.Get("Mcp-Method") != env.Method {
		return fa, false
	}
	if env.Method == "tools/call" && (!printable(env.Params.Name) || r.Header.Get("Mcp-Name") != env.Params.Name) {
		return fa, false
	}
	if raw, ok := meta[mcp.MetaKeyClientInfo]; ok && !decodesObject(raw, &mcp.Implementation{}) {
		return fa, false
	}
	if !decodesObject(meta[mcp.MetaKeyClientCapabilities], &clientCapabilities{}) {
		return fa, false
	}
	return fa, true
}

// clientCapabilities is the shape the SDK reads a stateless request's
// client capabilities into.
type clientCapabilities struct {
	mcp.ClientCapabilities
	Roots *mcp.RootCapabilities `json:"roots,omitempty"`
}

// serveFast answers a request fastPath took, as the SDK's server would:
// the tool methods' result or error, encoded by the SDK, a stateless
// request's result marked with the server's identity, and its protocol
// errors with their HTTP statuses.
func (s *Service) serveFast(w http.ResponseWriter, r *http.Request, req *request, fa fastAnswer) {
	s.fastServed.Add(1)
	var (
		res mcp.Result
		err error
	)
	if req.env.Method == "tools/list" {
		var list *mcp.ListToolsResult
		if list, err = s.list(r.Context(), req); err == nil {
			res = list
			if fa.modern {
				// The SDK marks every listing final; the mark's field is
				// unexported, and decoding is the way to set it.
				if err := json.Unmarshal([]byte(`{"resultType":"complete"}`), list); err != nil {
					s.log.Error("toolgw: mark a listing complete", "err", err)
				}
				s.annotate(list)
			}
		}
	} else {
		var call *mcp.CallToolResult
		if call, err = s.call(r.Context(), req); err == nil {
			res = call
			if fa.modern {
				res = completeResult{call}
				s.annotate(call)
			}
		}
	}
	resp := &jsonrpc.Response{ID: fa.id, Error: err}
	if err == nil {
		resp.Result, err = encodeResult(res)
		if err != nil {
			s.log.Error("toolgw: encode a result", "method", req.env.Method, "err", err)
			resp.Error = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the result could not be encoded"}
		}
	}
	body, err := jsonrpc.EncodeMessage(resp)
	if err != nil {
		s.log.Error("toolgw: encode an answer", "method", req.env.Method, "err", err)
		writeRPCError(w, http.StatusInternalServerError, req.env.ID, jsonrpc.CodeInternalError, "the answer could not be encoded", nil)
		return
	}
	h := w.Header()
	h.Set("Cache-Control", "no-cache, no-transform")
	h.Set("Content-Type", "application/json")
	if fa.modern {
		if status := protocolStatus(resp.Error); status != 0 {
			w.WriteHeader(status)
		}
	}
	_, _ = w.Write(body)
}

// annotate names the server in a stateless-era result, as the SDK does.
func (s *Service) annotate(res mcp.Result) {
	m := res.GetMeta()
	if m == nil {
		m = map[string]any{}
	}
	if _, ok := m[mcp.MetaKeyServerInfo]; ok {
		return
	}
	m[mcp.MetaKeyServerInfo] = s.impl
	res.SetMeta(m)
}

// protocolStatus is the HTTP status the SDK gives a stateless-era error
// answer; 0 for 200.
func protocolStatus(err error) int {
	var e *jsonrpc.Error
	if !errors.As(err, &e) {
		return 0
	}
	switch e.Code {
	case jsonrpc.CodeMethodNotFound:
		return http.StatusNotFound
	case jsonrpc.CodeInvalidParams, mcp.CodeUnsupportedProtocolVersion, mcp.CodeMissingRequiredClientCapabilities:
		return http.StatusBadRequest
	}
	return 0
}

// encodeResult encodes a result as the SDK's JSON-RPC layer does: without
// escaping HTML.
func encodeResult(v any) (json.RawMessage, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// plainID is a request id every decoder reads alike: a string of
// printable ASCII without escapes, or an integer of at most 15 digits,
// which the SDK reads exactly.
func plainID(raw json.RawMessage) (jsonrpc.ID, bool) {
	switch {
	case len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"':
		s := string(raw[1 : len(raw)-1])
		if !printable(s) || strings.ContainsAny(s, `"\`) {
			return jsonrpc.ID{}, false
		}
		id, err := jsonrpc.MakeID(s)
		return id, err == nil
	case len(raw) > 0 && len(raw) <= 16 && (raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9'):
		digits := raw
		if raw[0] == '-' {
			digits = raw[1:]
		}
		if len(digits) == 0 || len(digits) > 15 || len(digits) > 1 && digits[0] == '0' {
			return jsonrpc.ID{}, false
		}
		for _, b := range digits {
			if b < '0' || b > '9' {
				return jsonrpc.ID{}, false
			}
		}
		// The SDK reads a number as a float64, which holds these exactly.
		f, err := strconv.ParseFloat(string(raw), 64)
		if err != nil {
			return jsonrpc.ID{}, false
		}
		id, err := jsonrpc.MakeID(f)
		return id, err == nil
	}
	return jsonrpc.ID{}, false
}

// printable reports whether s is printable ASCII.
func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// metaString is a _meta value that is a JSON string, else "".
func metaString(raw json.RawMessage) string {
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// decodesObject reports whether raw is a JSON object that decodes into v.
// encoding/json matches names case-insensitively, the SDK's reader
// exactly, so what decodes here decodes there.
func decodesObject(raw json.RawMessage, v any) bool {
	return len(raw) > 0 && raw[0] == '{' && json.Unmarshal(raw, v) == nil
}

// accepts reads Accept headers as the SDK does: whether they admit JSON,
// and an event stream.
func accepts(values []string) (jsonOK, streamOK bool) {
	for _, value := range values {
		for raw := range strings.SplitSeq(value, ",") {
			base, _, _ := strings.Cut(strings.TrimSpace(raw), ";")
			switch strings.ToLower(strings.TrimSpace(base)) {
			case "application/json", "application/*":
				jsonOK = true
			case "text/event-stream", "text/*":
				streamOK = true
			case "*/*":
				jsonOK, streamOK = true, true
			}
		}
	}
	return jsonOK, streamOK
}
