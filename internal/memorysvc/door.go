package memorysvc

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"

	"novaos.dev/novaos/memory"
	"novaos.dev/novaos/problem"
	"novaos.dev/novaos/strictjson"
)

// This file is the direct door (see the package doc): the memory guide's
// MemoryClient posts "tool name + payload + context" to Path and reads the
// outcome from the HTTP status. It dispatches to the operations the MCP
// tools run (toolSet.ops), so the two doors share validation, policy,
// telemetry and store.

// doorPrefix starts every direct-door tool name.
const doorPrefix = "memory."

// ProblemTypePrefix starts the problem type of a refused door call; the
// memory.Error code follows, its underscores as hyphens
// (…/memory/not-found).
const ProblemTypePrefix = "https://novaos.dev/problems/memory/"

// DoorRequest is a direct-door call.
type DoorRequest struct {
	// Tool is the operation: "memory.write", "memory.query", …
	Tool string `json:"tool"`
	// Payload is the tool's arguments; absent or null is {}.
	Payload json.RawMessage `json:"payload,omitempty"`
	// Context is accepted and not read; it must be an object when given.
	Context json.RawMessage `json:"context,omitempty"`
}

// DoorProblem is the body of a refused door call: RFC 9457 problem
// details with the memory.Error members a client branches on.
type DoorProblem struct {
	problem.Problem
	Code  string `json:"code"`
	Field string `json:"field,omitempty"`
	Rule  string `json:"rule,omitempty"`
}

// doorFields are the members of a door request.
var doorFields = &strictjson.Fields{Names: map[string]*strictjson.Fields{"tool": nil, "payload": nil, "context": nil}}

// scanTop reads the top level of body: rpc when an object member named
// "jsonrpc" comes before the body ends or breaks, object when the whole
// body is one well-formed JSON object. It stops at the jsonrpc member,
// which MCP clients send first or nearly so, and otherwise makes one pass
// over the bytes (strings skipped, nesting counted) and one json.Valid.
func scanTop(body []byte) (rpc, object bool) {
	i := skipSpace(body, 0)
	if i == len(body) || body[i] != '{' {
		return false, false
	}
	depth, key := 0, true // key: the next string at depth 1 is a member name
	for ; i < len(body); i++ {
		switch c := body[i]; c {
		case '"':
			end := stringEnd(body, i)
			if end < 0 {
				return false, false
			}
			if depth == 1 && key {
				if isJSONRPC(body[i : end+1]) {
					return true, false
				}
				key = false
			}
			i = end
		case '{', '[':
			depth++
			key = c == '{' && depth == 1
		case '}', ']':
			depth--
			if depth == 0 {
				return false, skipSpace(body, i+1) == len(body) && json.Valid(body)
			}
		case ',':
			key = depth == 1
		}
	}
	return false, false
}

// skipSpace returns the index of the first byte at or after i that is not
// JSON whitespace.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// stringEnd returns the index of the quote closing the string that opens
// at b[start], or -1 when b ends first.
func stringEnd(b []byte, start int) int {
	for i := start + 1; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return -1
}

// isJSONRPC reports whether the quoted JSON string q is "jsonrpc", escapes
// resolved.
func isJSONRPC(q []byte) bool {
	if bytes.IndexByte(q, '\\') < 0 {
		return string(q) == `"jsonrpc"`
	}
	var name string
	return json.Unmarshal(q, &name) == nil && name == "jsonrpc"
}

// isDoor reports whether body is a direct-door request.
func isDoor(body []byte) bool {
	rpc, object := scanTop(body)
	return object && !rpc
}

// doorShaped reports whether a body cut short (over the size limit)
// reads as a door request so far: an object with no jsonrpc member yet.
func doorShaped(partial []byte) bool {
	b := bytes.TrimLeft(partial, " \t\r\n")
	if len(b) == 0 || b[0] != '{' {
		return false
	}
	rpc, _ := scanTop(b)
	return !rpc
}

// serveDoor answers a direct-door request with the operation its tool
// names.
func serveDoor(w http.ResponseWriter, r *http.Request, body []byte, caller func(*http.Request) (*Caller, bool), set *toolSet) {
	c, ok := caller(r)
	if !ok {
		w.Header().Set("WWW-Authenticate", `Bearer realm="novaos"`)
		writeDoorError(w, r, &memory.Error{Status: http.StatusUnauthorized, Code: memory.CodeUnauthorized, Message: "a verified bearer token is required"})
		return
	}
	req, bad := decodeDoor(body)
	if bad != nil {
		writeDoorError(w, r, bad)
		return
	}
	op := set.ops[req.Tool]
	if op == nil {
		rule := "must be one of " + strings.Join(doorTools(set), ", ")
		if req.Tool == "" {
			rule = "is required: " + rule
		}
		writeDoorError(w, r, invalidArg("tool", rule))
		return
	}
	res, e := op(r.Context(), c, req.Payload)
	if e != nil {
		writeDoorError(w, r, e)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(append(res, '\n'))
}

// decodeDoor reads a door request: one JSON object with no member named
// twice anywhere, no member but tool, payload and context, a string tool
// and object (or null) payload and context.
func decodeDoor(body []byte) (*DoorRequest, *memory.Error) {
	err := strictjson.Check(body, &strictjson.Options{Object: true, Fields: doorFields})
	if se, ok := errors.AsType[*strictjson.Error](err); ok && se.Problem == strictjson.Unknown {
		return nil, invalidArg(fieldPath(se.Path), "is not a member of a direct-door request (tool, payload, context; names are case-sensitive)")
	}
	if err != nil {
		return nil, &memory.Error{Status: http.StatusBadRequest, Code: memory.CodeInvalid, Message: "malformed request body: " + err.Error()}
	}
	var req DoorRequest
	if bad := decodeChecked(body, &req); bad != nil {
		return nil, bad
	}
	for _, m := range []struct {
		name string
		raw  *json.RawMessage
	}{{"payload", &req.Payload}, {"context", &req.Context}} {
		v := bytes.TrimSpace(*m.raw)
		switch {
		case len(v) == 0 || string(v) == "null":
			*m.raw = json.RawMessage("{}")
		case v[0] != '{':
			return nil, invalidArg(m.name, "must be a JSON object")
		}
	}
	return &req, nil
}

// doorTools lists the door's tool names, sorted.
func doorTools(set *toolSet) []string {
	names := make([]string, 0, len(set.ops))
	for n := range set.ops {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// writeDoorError answers a refused door call with e as problem details;
// a malformed body (400) has the platform's malformed-json type.
func writeDoorError(w http.ResponseWriter, r *http.Request, e *memory.Error) {
	typ := ProblemTypePrefix + strings.ReplaceAll(e.Code, "_", "-")
	if e.Status == http.StatusBadRequest {
		typ = problem.TypeMalformedJSON
	}
	p := DoorProblem{Problem: problem.Problem{Type: typ, Title: http.StatusText(e.Status), Status: e.Status,
		Detail: e.Message, Instance: r.URL.Path}, Code: e.Code, Field: e.Field, Rule: e.Rule}
	b, err := json.Marshal(p)
	if err != nil {
		panic("memorysvc: problem does not encode: " + err.Error()) // strings and an int
	}
	h := w.Header()
	h.Set("Content-Type", problem.ContentType)
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(e.Status)
	_, _ = w.Write(append(b, '\n'))
}
