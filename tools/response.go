package tools

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// CallResult is a tool's answer, MCP's CallToolResult.
type CallResult struct {
	// Content are the result's blocks: text, image, audio, resource
	// links and embedded resources.
	Content []Content `json:"content"`
	// Structured is the result's structuredContent, nil when it sent none.
	Structured json.RawMessage `json:"structuredContent,omitempty"`
	// IsError is set when the tool ran and failed; Content says why.
	IsError bool `json:"isError,omitempty"`
	// Meta is the result's _meta, nil when it sent none.
	Meta json.RawMessage `json:"_meta,omitempty"`
}

// Text returns the text of the first text block, "" when there is none.
func (r *CallResult) Text() string {
	for _, c := range r.Content {
		if c.Type == "text" {
			return c.Text
		}
	}
	return ""
}

// Content is one content block of a result. Raw is the block as the
// server sent it, for the kinds this package does not model (image and
// audio data, resources); Text is set for a text block.
type Content struct {
	Type string
	Text string
	Raw  json.RawMessage
}

// TextContent returns a text block.
func TextContent(text string) Content {
	raw, _ := json.Marshal(map[string]string{"type": "text", "text": text})
	return Content{Type: "text", Text: text, Raw: raw}
}

// UnmarshalJSON reads a block: an object with a type.
func (c *Content) UnmarshalJSON(b []byte) error {
	var head struct {
		Type string          `json:"type"`
		Text json.RawMessage `json:"text"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return err
	}
	if head.Type == "" {
		return errors.New("a content block without a type")
	}
	out := Content{Type: head.Type, Raw: append(json.RawMessage(nil), b...)}
	if head.Type == "text" && len(head.Text) > 0 {
		if err := json.Unmarshal(head.Text, &out.Text); err != nil {
			return errors.New("a text block whose text is not a string")
		}
	}
	*c = out
	return nil
}

// MarshalJSON writes the block as it came, or a text block.
func (c Content) MarshalJSON() ([]byte, error) {
	if len(c.Raw) > 0 {
		return c.Raw, nil
	}
	return json.Marshal(map[string]string{"type": c.Type, "text": c.Text})
}

// decodeCallResult reads a tools/call result.
func decodeCallResult(raw json.RawMessage) (*CallResult, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return nil, errors.New("malformed result: not an object")
	}
	var res CallResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("malformed result: %w", err)
	}
	if string(res.Structured) == "null" {
		res.Structured = nil
	}
	if string(res.Meta) == "null" {
		res.Meta = nil
	}
	return &res, nil
}

// Response is a binding's answer, the NovaOS Python SDK's ToolResponse: whether the
// call succeeded, its data and, when it failed, why.
type Response struct {
	Success bool `json:"success"`
	// Data is the result's structured content; else its first text block,
	// when that is JSON; else that text as a JSON string. A failed tool's
	// JSON answer is kept here too. Always valid JSON when set.
	Data json.RawMessage `json:"data,omitempty"`
	// Error says why the call failed: the tool's own words for a tool
	// that ran and failed, the gateway's message for a refused call.
	Error string `json:"error,omitempty"`
}

// Decode decodes Data into v.
func (r *Response) Decode(v any) error {
	if len(r.Data) == 0 {
		return errors.New("tools: the response carries no data")
	}
	return json.Unmarshal(r.Data, v)
}

// NewResponse reads a tool's answer as a Response: a result with
// IsError is a failure whose Error is the tool's error text.
func NewResponse(res *CallResult) *Response {
	out := &Response{Success: !res.IsError, Data: dataOf(res)}
	if res.IsError {
		out.Error = failureText(res)
	}
	return out
}

// dataOf is a result's data as Response.Data has it.
func dataOf(res *CallResult) json.RawMessage {
	if len(res.Structured) > 0 {
		return res.Structured
	}
	for _, c := range res.Content {
		if c.Type != "text" {
			continue
		}
		if t := strings.TrimSpace(c.Text); t != "" && json.Valid([]byte(t)) {
			return json.RawMessage(t)
		}
		b, _ := json.Marshal(c.Text) // a string always encodes
		return b
	}
	return nil
}

// failureText is what a failed tool says: the "error" of a JSON answer
// ({"error": "…"} or {"error": {"message": "…"}}), else its text.
func failureText(res *CallResult) string {
	text := strings.TrimSpace(res.Text())
	if text == "" {
		return "the tool failed without saying why"
	}
	var body struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	if text[0] == '{' && json.Unmarshal([]byte(text), &body) == nil {
		var s string
		var obj struct {
			Message string `json:"message"`
			Code    string `json:"code"`
		}
		switch {
		case json.Unmarshal(body.Error, &s) == nil && s != "":
			return s
		case json.Unmarshal(body.Error, &obj) == nil && obj.Message != "":
			if obj.Code != "" {
				return obj.Code + ": " + obj.Message
			}
			return obj.Message
		case body.Message != "":
			return body.Message
		}
	}
	return text
}

// failed is the Response of a call that did not produce a tool answer.
func failed(err error) *Response {
	var e *Error
	var w *WriteConfirmationRequired
	switch {
	case errors.As(err, &w):
		return &Response{Error: w.describe()}
	case errors.As(err, &e):
		return &Response{Error: e.Message}
	}
	return &Response{Error: err.Error()}
}

// Error is a call the server refused or could not answer: a JSON-RPC
// error (Code set), or an HTTP error status without one (Code 0; 401,
// 403 with insufficient_scope, 413, 5xx). Branch on Code, Data.Code (a
// Reason) and Status.
type Error struct {
	// Method is the JSON-RPC method: tools/call, tools/list, initialize.
	Method string
	// Tool is the tool a tools/call named.
	Tool string
	// Code is the JSON-RPC error code; 0 for an HTTP refusal.
	Code    int
	Message string
	// Data is the error's data as the gateway writes it; for an HTTP
	// refusal with a WWW-Authenticate challenge, its error (Data.Code,
	// e.g. insufficient_scope) and scope.
	Data ErrorData
	// RawData is the error's data as sent, for servers whose data has
	// another shape.
	RawData json.RawMessage
	// Status is the answer's HTTP status.
	Status int

	retryAfter time.Duration
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("tools: ")
	if e.Tool != "" {
		b.WriteString(e.Tool)
	} else {
		b.WriteString(e.Method)
	}
	b.WriteString(": ")
	b.WriteString(e.Message)
	var detail []string
	if e.Code != 0 {
		detail = append(detail, "code "+strconv.Itoa(e.Code))
	}
	if e.Status != 0 && e.Status != http.StatusOK {
		detail = append(detail, "HTTP "+strconv.Itoa(e.Status))
	}
	if e.Data.Code != "" {
		detail = append(detail, e.Data.Code)
	}
	if e.Data.Scope != "" {
		detail = append(detail, "scope "+e.Data.Scope)
	}
	if e.Data.Rule != "" {
		detail = append(detail, "rule "+e.Data.Rule)
	}
	if len(detail) > 0 {
		b.WriteString(" (" + strings.Join(detail, ", ") + ")")
	}
	return b.String()
}

// HTTPStatus is the status the error means: the answer's, or for a
// JSON-RPC error in a 200 answer the status its code stands for (the
// gateway's -32004 unavailable is 503, 504 when it timed out), so that
// retries and circuit breakers (package resilience) read it alike.
func (e *Error) HTTPStatus() int {
	if e.Status >= 400 || e.Code == 0 {
		return e.Status
	}
	switch {
	case e.Code == CodeUnavailable && e.Data.Code == ReasonTimeout:
		return http.StatusGatewayTimeout
	case e.Code == CodeUnavailable:
		return http.StatusServiceUnavailable
	case e.Code == CodeForbidden:
		return http.StatusForbidden
	case e.Code == -32001: // MCP's request timeout
		return http.StatusGatewayTimeout
	case e.Code == -32601:
		return http.StatusNotFound
	case e.Code == -32603, e.Code <= -32000 && e.Code >= -32099:
		return http.StatusInternalServerError
	}
	return http.StatusBadRequest
}

// RetryAfter is the server's Retry-After, 0 when it sent none.
func (e *Error) RetryAfter() time.Duration { return e.retryAfter }

// WriteConfirmationRequired is a write-class call the gateway held for a
// person's decision (-32042): nothing ran. The skill pauses its task
// with Pause, and the call runs once when the person approves and the
// run resumes.
type WriteConfirmationRequired struct {
	Message string
	Data    WriteConfirmationData
	// Status is the answer's HTTP status.
	Status int
}

func (e *WriteConfirmationRequired) Error() string { return "tools: " + e.describe() }

func (e *WriteConfirmationRequired) describe() string {
	s := fmt.Sprintf("the call of %s waits for a person's approval", e.Data.ToolName)
	if e.Data.CallID != "" {
		s += " (call " + e.Data.CallID + ")"
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// HTTPStatus reports 403: the call is refused until a person approves
// it. A retry does not help and the service is healthy.
func (e *WriteConfirmationRequired) HTTPStatus() int { return http.StatusForbidden }

// ApprovalURL returns where the person decides (the first URL
// elicitation), "" when the gateway named no page.
func (e *WriteConfirmationRequired) ApprovalURL() string {
	for _, el := range e.Data.Elicitations {
		if el.URL != "" {
			return el.URL
		}
	}
	return ""
}

// wireMessage is one JSON-RPC message of an answer.
type wireMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Result  json.RawMessage `json:"result"`
	Error   *wireError      `json:"error"`
}

type wireError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// readAnswer reads the answer to request id (0: any) from a body of the
// content type: one JSON-RPC response, or a server-sent event stream
// that carries it among notifications. At most limit bytes are read.
func readAnswer(contentType string, body io.Reader, id int64, limit int64) (*wireMessage, error) {
	mt, _, _ := mime.ParseMediaType(contentType)
	switch mt {
	case "application/json":
		data, err := readBounded(body, limit)
		if err != nil {
			return nil, err
		}
		m, err := decodeMessage(data)
		if err != nil {
			return nil, err
		}
		if !m.answers(id) {
			return nil, errors.New("malformed answer: not the response to the request")
		}
		return m, nil
	case "text/event-stream":
		return readStream(body, id, limit)
	}
	return nil, fmt.Errorf("unexpected content type %q", clip(contentType, 80))
}

// decodeMessage reads one JSON-RPC message.
func decodeMessage(data []byte) (*wireMessage, error) {
	var m wireMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("malformed answer: %w", err)
	}
	if m.JSONRPC != "2.0" {
		return nil, errors.New("malformed answer: not JSON-RPC 2.0")
	}
	if m.Method == "" && (m.Result == nil) == (m.Error == nil) {
		return nil, errors.New("malformed answer: want exactly one of result and error")
	}
	return &m, nil
}

// answers reports whether m is the response to request id: a result or
// error with that id, or an error with a null id (the server could not
// read the request). id 0 takes any response.
func (m *wireMessage) answers(id int64) bool {
	if m.Method != "" {
		return false // a request or notification of the server's
	}
	got := string(bytes.TrimSpace(m.ID))
	if m.Error != nil && (got == "" || got == "null") {
		return true
	}
	return id == 0 || got == strconv.FormatInt(id, 10)
}

// readStream reads server-sent events until the response to request id,
// passing over the server's notifications and requests (the client
// declares no capability a server may ask of it). Lines end in LF or
// CRLF.
func readStream(body io.Reader, id int64, limit int64) (*wireMessage, error) {
	br := bufio.NewReader(&capReader{r: body, left: limit + 1, limit: limit})
	var data []byte
	var event string
	hasData := false
	dispatch := func() (*wireMessage, error) {
		defer func() { data, event, hasData = data[:0], "", false }()
		if !hasData || (event != "" && event != "message") {
			return nil, nil
		}
		m, err := decodeMessage(data)
		if err != nil {
			return nil, fmt.Errorf("event stream: %w", err)
		}
		if m.answers(id) {
			return m, nil
		}
		return nil, nil
	}
	for {
		line, err := readLine(br)
		if err != nil && err != io.EOF {
			return nil, err
		}
		eof := err == io.EOF
		if len(line) == 0 && !eof {
			if m, err := dispatch(); m != nil || err != nil {
				return m, err
			}
			continue
		}
		if len(line) > 0 && line[0] != ':' {
			field, value, _ := bytes.Cut(line, []byte(":"))
			value = bytes.TrimPrefix(value, []byte(" "))
			switch string(field) {
			case "data":
				if hasData {
					data = append(data, '\n')
				}
				data, hasData = append(data, value...), true
			case "event":
				event = string(value)
			}
		}
		if eof {
			if m, err := dispatch(); m != nil || err != nil {
				return m, err
			}
			return nil, fmt.Errorf("the event stream ended before the answer: %w", io.ErrUnexpectedEOF)
		}
	}
}

// readLine reads one line without its LF or CRLF.
func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		frag, err := br.ReadSlice('\n')
		line = append(line, frag...)
		if err == bufio.ErrBufferFull {
			continue
		}
		line = bytes.TrimSuffix(line, []byte("\n"))
		line = bytes.TrimSuffix(line, []byte("\r"))
		return line, err
	}
}

// capReader reads at most limit bytes of r, then fails with
// ErrResponseTooLarge.
type capReader struct {
	r     io.Reader
	left  int64 // limit+1 at the start: reading that many is one too many
	limit int64
}

func (c *capReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		return 0, fmt.Errorf("%w: over %d bytes", ErrResponseTooLarge, c.limit)
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	if c.left <= 0 {
		return n, fmt.Errorf("%w: over %d bytes", ErrResponseTooLarge, c.limit)
	}
	return n, err
}

// parseChallenge reads the parameters of a Bearer WWW-Authenticate
// challenge (RFC 6750): error, error_description, scope,
// resource_metadata. nil when v is not one.
func parseChallenge(v string) map[string]string {
	v = strings.TrimSpace(v)
	scheme, rest, _ := strings.Cut(v, " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return nil
	}
	out := map[string]string{}
	for i := 0; i < len(rest); {
		for i < len(rest) && (rest[i] == ' ' || rest[i] == ',' || rest[i] == '\t') {
			i++
		}
		start := i
		for i < len(rest) && rest[i] != '=' && rest[i] != ',' && rest[i] != ' ' {
			i++
		}
		key := strings.ToLower(rest[start:i])
		for i < len(rest) && rest[i] == ' ' {
			i++
		}
		if i >= len(rest) || rest[i] != '=' {
			continue // a bare token (token68) or a stray word
		}
		i++
		for i < len(rest) && rest[i] == ' ' {
			i++
		}
		var val strings.Builder
		if i < len(rest) && rest[i] == '"' {
			i++
			for i < len(rest) && rest[i] != '"' {
				if rest[i] == '\\' && i+1 < len(rest) {
					i++
				}
				val.WriteByte(rest[i])
				i++
			}
			i++ // the closing quote
		} else {
			for i < len(rest) && rest[i] != ',' && rest[i] != ' ' {
				val.WriteByte(rest[i])
				i++
			}
		}
		if key != "" {
			out[key] = val.String()
		}
	}
	return out
}
