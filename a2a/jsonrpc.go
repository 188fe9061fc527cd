package a2a

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// JSON-RPC method names of A2A v1.0.
const (
	MethodSendMessage                      = "SendMessage"
	MethodSendStreamingMessage             = "SendStreamingMessage"
	MethodGetTask                          = "GetTask"
	MethodListTasks                        = "ListTasks"
	MethodCancelTask                       = "CancelTask"
	MethodSubscribeToTask                  = "SubscribeToTask"
	MethodCreateTaskPushNotificationConfig = "CreateTaskPushNotificationConfig"
	MethodGetTaskPushNotificationConfig    = "GetTaskPushNotificationConfig"
	MethodListTaskPushNotificationConfigs  = "ListTaskPushNotificationConfigs"
	MethodDeleteTaskPushNotificationConfig = "DeleteTaskPushNotificationConfig"
	MethodGetExtendedAgentCard             = "GetExtendedAgentCard"
)

// Request is a decoded JSON-RPC 2.0 request envelope. ID is kept verbatim
// (string, number or null) so it is echoed byte for byte.
type Request struct {
	ID     json.RawMessage
	Method string
	Params json.RawMessage
	// Notification is set when the request has no id member at all: JSON-RPC
	// 2.0 gives a notification no response, not even an error. "id": null
	// is a request like any other (answered with a null id).
	Notification bool
}

var nullID = json.RawMessage("null")

type requestWire struct {
	JSONRPC *string         `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  *string         `json:"method"`
	Params  json.RawMessage `json:"params"`
}

// DecodeRequest parses one JSON-RPC request. On failure it returns the id to
// answer with (null when none could be read) and a protocol error: -32700 for
// invalid JSON, -32600 for a batch or a malformed envelope, including one
// with a repeated member (the error names it; the id is not echoed when it is
// the one repeated). Member names are matched exactly: "METHOD" is an
// unknown member, not the method. Params are not looked into; [DecodeParams]
// checks them. The request's Params may be part of body, so body must not
// change while they are in use.
func DecodeRequest(body []byte) (*Request, *Error) {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) > 0 && trimmed[0] == '[' {
		if !json.Valid(trimmed) {
			return &Request{ID: nullID}, NewError(CodeParseError, "invalid JSON")
		}
		return &Request{ID: nullID}, NewError(CodeInvalidRequest, "batch requests are not supported")
	}
	w, ok := splitRequest(body)
	if !ok {
		if !json.Valid(body) {
			return &Request{ID: nullID}, NewError(CodeParseError, "invalid JSON")
		}
		var err error
		if w, err = readRequest(body); err != nil {
			if dup, ok := errors.AsType[*DuplicateKeyError](err); ok {
				echo := nullID
				if dup.Key != "id" && validID(w.ID) {
					echo = idOrNull(w.ID)
				}
				return &Request{ID: echo}, NewError(CodeInvalidRequest, "invalid request: %s", dup)
			}
			return malformedRequest(body, w.ID)
		}
	}
	req := &Request{ID: idOrNull(w.ID), Params: w.Params, Notification: w.ID == nil}
	if !validID(w.ID) {
		req.ID = nullID
		return req, NewError(CodeInvalidRequest, "id must be a string, a number or null")
	}
	if w.JSONRPC == nil || *w.JSONRPC != "2.0" {
		return req, NewError(CodeInvalidRequest, `jsonrpc must be "2.0"`)
	}
	if w.Method == nil || *w.Method == "" {
		return req, NewError(CodeInvalidRequest, "method must be a non-empty string")
	}
	req.Method = *w.Method
	if p := bytes.TrimSpace(w.Params); len(p) > 0 && p[0] != '{' && string(p) != "null" {
		return req, NewError(CodeInvalidParams, "params must be an object")
	}
	return req, nil
}

// readRequest is the general path of DecodeRequest, for a valid JSON body:
// the members are matched exactly and a repeated one is refused, where
// encoding/json would match "METHOD" to method and keep the last of two.
func readRequest(body []byte) (requestWire, error) {
	var w requestWire
	vals, err := topMembers(body, "jsonrpc", "id", "method", "params")
	w.ID = vals[1]
	if err != nil {
		return w, err
	}
	w.Params = vals[3]
	for i, dst := range []**string{&w.JSONRPC, nil, &w.Method} {
		if dst == nil || vals[i] == nil || string(vals[i]) == "null" {
			continue
		}
		var s string
		if err := json.Unmarshal(vals[i], &s); err != nil {
			return w, err
		}
		*dst = &s
	}
	return w, nil
}

// topMembers reads the members of the JSON object in body (which must be
// valid JSON) that are named in names, returning their values in that
// order (nil for a missing one), each a copy. Keys are matched exactly;
// other members are passed over unread, and a key given twice is a
// *DuplicateKeyError. vals always has len(names) entries.
func topMembers(body []byte, names ...string) (vals []json.RawMessage, err error) {
	vals = make([]json.RawMessage, len(names))
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return vals, errSyntax
	}
	seen := make(map[string]struct{}, len(names))
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return vals, errSyntax
		}
		key, _ := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return vals, errSyntax
		}
		if _, dup := seen[key]; dup {
			return vals, &DuplicateKeyError{Key: key}
		}
		seen[key] = struct{}{}
		for i, n := range names {
			if key == n {
				vals[i] = raw
			}
		}
	}
	return vals, nil
}

// malformedRequest is the answer to a body that is not a request object:
// -32700 for invalid JSON, else -32600, with the id echoed only if it was
// read and is itself of a valid type.
func malformedRequest(body []byte, id json.RawMessage) (*Request, *Error) {
	if !json.Valid(body) {
		return &Request{ID: nullID}, NewError(CodeParseError, "invalid JSON")
	}
	echo := nullID
	if validID(id) {
		echo = idOrNull(id)
	}
	return &Request{ID: echo}, NewError(CodeInvalidRequest, "request must be a JSON-RPC 2.0 object")
}

func idOrNull(id json.RawMessage) json.RawMessage {
	if len(id) == 0 {
		return nullID
	}
	return id
}

func validID(id json.RawMessage) bool {
	if len(id) == 0 {
		return true
	}
	switch id[0] {
	case '"', 'n', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return true
	}
	return false
}

// DecodeParams reads a request's params into v tolerantly (see [Unmarshal]);
// a failure is an invalid-params error that names the problem.
func DecodeParams(params json.RawMessage, v any) *Error {
	if len(params) == 0 || string(params) == "null" {
		params = json.RawMessage("{}")
	}
	if err := Unmarshal(params, v); err != nil {
		return NewError(CodeInvalidParams, "invalid params: %s", describeJSONError(err))
	}
	return nil
}

func describeJSONError(err error) string {
	switch e := err.(type) {
	case *json.UnmarshalTypeError:
		if e.Field != "" {
			return fmt.Sprintf("field %s: want %s", e.Field, e.Type)
		}
		return fmt.Sprintf("want %s", e.Type)
	case *json.SyntaxError:
		return "malformed JSON"
	}
	return err.Error()
}

// AppendResult appends a JSON-RPC success response carrying result, which is
// already encoded JSON.
func AppendResult(b []byte, id json.RawMessage, result []byte) []byte {
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, idOrNull(id)...)
	b = append(b, `,"result":`...)
	b = append(b, result...)
	return append(b, '}')
}

// AppendErrorResponse appends a JSON-RPC error response.
func AppendErrorResponse(b []byte, id json.RawMessage, e *Error) []byte {
	enc, err := e.MarshalJSON()
	if err != nil {
		enc, _ = (&Error{Code: CodeInternalError}).MarshalJSON()
	}
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, idOrNull(id)...)
	b = append(b, `,"error":`...)
	b = append(b, enc...)
	return append(b, '}')
}

// DecodeResult reads a JSON-RPC response body the way a client uses it: a
// JSON-RPC error is returned as rpcErr; otherwise the result member is
// decoded into out with [Unmarshal]. A missing or null result leaves out
// unchanged (a2a-go leaves the result of an Empty answer out altogether).
func DecodeResult(body []byte, out any) (rpcErr *Error, err error) {
	result, errObj, ok := splitResponse(body)
	if !ok {
		if !json.Valid(body) {
			return nil, fmt.Errorf("a2a: decode response: %w", errSyntax)
		}
		vals, err := topMembers(body, "result", "error")
		if err != nil {
			return nil, fmt.Errorf("a2a: decode response: %w", err)
		}
		result, errObj = vals[0], vals[1]
	}
	if len(errObj) > 0 && string(errObj) != "null" {
		rpcErr = new(Error)
		if err := unmarshalGeneral(errObj, rpcErr); err != nil {
			return nil, fmt.Errorf("a2a: decode response error: %w", err)
		}
		return rpcErr, nil
	}
	if len(result) == 0 || string(result) == "null" || out == nil {
		return nil, nil
	}
	if err := Unmarshal(result, out); err != nil {
		return nil, fmt.Errorf("a2a: decode result: %w", err)
	}
	return nil, nil
}

// Response is a decoded JSON-RPC response, as a client reads it.
type Response struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *Error          `json:"error,omitempty"`
}

// DecodeResponse parses a JSON-RPC response envelope.
func DecodeResponse(body []byte) (*Response, error) {
	var r Response
	if err := unmarshalGeneral(body, &r); err != nil {
		return nil, fmt.Errorf("a2a: decode response: %w", err)
	}
	if r.Error == nil && r.Result == nil {
		// A peer answering an Empty result may leave "result" out
		// altogether (a2a-go does, for DeleteTaskPushNotificationConfig);
		// read that as null.
		r.Result = json.RawMessage("null")
	}
	return &r, nil
}
