package schematest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// A method's request and result definitions, as its rpc in a2a.proto
// declares them. DeleteTaskPushNotificationConfig returns
// google.protobuf.Empty, which the schema does not define: its result must
// be {} or null.
var methods = map[string]struct{ params, result string }{
	"SendMessage":                      {"Send Message Request", "Send Message Response"},
	"SendStreamingMessage":             {"Send Message Request", "Stream Response"},
	"GetTask":                          {"Get Task Request", "Task"},
	"ListTasks":                        {"List Tasks Request", "List Tasks Response"},
	"CancelTask":                       {"Cancel Task Request", "Task"},
	"SubscribeToTask":                  {"Subscribe To Task Request", "Stream Response"},
	"CreateTaskPushNotificationConfig": {"Task Push Notification Config", "Task Push Notification Config"},
	"GetTaskPushNotificationConfig":    {"Get Task Push Notification Config Request", "Task Push Notification Config"},
	"ListTaskPushNotificationConfigs":  {"List Task Push Notification Configs Request", "List Task Push Notification Configs Response"},
	"GetExtendedAgentCard":             {"Get Extended Agent Card Request", "Agent Card"},
	"DeleteTaskPushNotificationConfig": {"Delete Task Push Notification Config Request", ""},
}

// ValidateRequest fails t unless body is a JSON-RPC 2.0 request for an A2A
// method whose params match the method's request definition. It returns the
// method, so the caller can validate the response.
func ValidateRequest(t testing.TB, body []byte) (method string) {
	t.Helper()
	method, err := CheckRequest(body)
	report(t, "request", err, body)
	return method
}

// CheckRequest is ValidateRequest without a testing.TB.
func CheckRequest(body []byte) (method string, err error) {
	var req struct {
		JSONRPC string          `json:"jsonrpc"`
		Method  string          `json:"method"`
		Params  json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return "", fmt.Errorf("not a JSON-RPC request: %w", err)
	}
	if req.JSONRPC != "2.0" {
		return req.Method, fmt.Errorf("jsonrpc is %q, want \"2.0\"", req.JSONRPC)
	}
	m, ok := methods[req.Method]
	if !ok {
		return req.Method, fmt.Errorf("method %q is not an A2A method", req.Method)
	}
	if len(req.Params) == 0 {
		return req.Method, errors.New("no params")
	}
	if err := check(m.params, req.Params); err != nil {
		return req.Method, fmt.Errorf("params (%s): %w", m.params, err)
	}
	return req.Method, nil
}

// ValidateResponse fails t unless body answers method as JSON-RPC 2.0 over
// A2A: one response object, or, when contentType is text/event-stream, a
// stream of events each carrying one. Every result must match the method's
// result definition; every error must have an integer code, a message, and
// details that each name their @type, as the spec requires. A stream must
// hold at least one event.
func ValidateResponse(t testing.TB, method, contentType string, body []byte) {
	t.Helper()
	report(t, "response to "+method, CheckResponse(method, contentType, body), body)
}

// CheckResponse is ValidateResponse without a testing.TB.
func CheckResponse(method, contentType string, body []byte) error {
	m, ok := methods[method]
	if !ok {
		return fmt.Errorf("method %q is not an A2A method", method)
	}
	payloads := [][]byte{body}
	if mt, _, _ := strings.Cut(contentType, ";"); strings.TrimSpace(mt) == "text/event-stream" {
		payloads = eventData(body)
		if len(payloads) == 0 {
			return errors.New("event stream without an event")
		}
	}
	var errs []error
	for i, p := range payloads {
		if err := checkResponse(m.result, p); err != nil {
			if len(payloads) > 1 {
				err = fmt.Errorf("event %d: %w", i+1, err)
			}
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func checkResponse(definition string, body []byte) error {
	var resp struct {
		JSONRPC string          `json:"jsonrpc"`
		Result  json.RawMessage `json:"result"`
		Error   json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(body, &resp); err != nil {
		return fmt.Errorf("not a JSON-RPC response: %w", err)
	}
	if resp.JSONRPC != "2.0" {
		return fmt.Errorf("jsonrpc is %q, want \"2.0\"", resp.JSONRPC)
	}
	switch {
	case resp.Error != nil && resp.Result != nil:
		return errors.New("both result and error")
	case resp.Error != nil:
		return checkError(resp.Error)
	case resp.Result == nil:
		return errors.New("neither result nor error")
	case definition == "":
		if r := string(bytes.TrimSpace(resp.Result)); r != "null" && r != "{}" {
			return fmt.Errorf("result %s, want {} or null (google.protobuf.Empty)", r)
		}
		return nil
	}
	if err := check(definition, resp.Result); err != nil {
		return fmt.Errorf("result (%s): %w", definition, err)
	}
	return nil
}

func checkError(raw json.RawMessage) error {
	var e struct {
		Code    *json.Number      `json:"code"`
		Message *string           `json:"message"`
		Data    []json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(raw, &e); err != nil {
		return fmt.Errorf("error object: %w", err)
	}
	if e.Code == nil {
		return errors.New("error without a code")
	}
	if _, err := e.Code.Int64(); err != nil {
		return fmt.Errorf("error code %s is not an integer", *e.Code)
	}
	if e.Message == nil {
		return errors.New("error without a message")
	}
	for i, d := range e.Data {
		var detail struct {
			Type string `json:"@type"`
		}
		if err := json.Unmarshal(d, &detail); err != nil || detail.Type == "" {
			return fmt.Errorf("error detail %d has no @type: %s", i, d)
		}
	}
	return nil
}

// eventData returns the data of each event in a text/event-stream body, as
// the HTML event-stream format assembles it: data lines joined with "\n",
// one space after the colon dropped, events without data ignored.
func eventData(body []byte) [][]byte {
	var out [][]byte
	var data []byte
	has := false
	lines := strings.Split(strings.ReplaceAll(strings.ReplaceAll(string(body), "\r\n", "\n"), "\r", "\n"), "\n")
	for _, line := range append(lines, "") {
		if line == "" {
			if has {
				out = append(out, data)
			}
			data, has = nil, false
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		if field != "data" {
			continue // id, event, retry and comments carry no payload
		}
		value = strings.TrimPrefix(value, " ")
		if has {
			data = append(data, '\n')
		}
		data = append(data, value...)
		has = true
	}
	return out
}

func report(t testing.TB, what string, err error, payload []byte) {
	t.Helper()
	if err == nil {
		return
	}
	var setup *setupError
	if errors.As(err, &setup) {
		t.Fatalf("schematest: %v", err)
	}
	t.Errorf("schematest: %s: %v\npayload: %s", what, err, abbreviate(payload, 2000))
}
