package llmgw

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"novaos.dev/novaos/strictjson"
)

// Operations the gateway serves, as the GenAI conventions name them.
const (
	opChat       = "chat"
	opEmbeddings = "embeddings"
)

// Bounds of a request's fields.
const (
	maxCompletionTokens = 1 << 30
	maxChoices          = 128
	maxDepth            = 128
)

// request is what the gateway reads of a chat completions or embeddings
// request; the rest of the body goes to the provider as it came.
type request struct {
	op     string
	model  string
	stream bool
	// usageAsked says the caller asked for the stream's usage chunk
	// (stream_options.include_usage).
	usageAsked bool
	// input and output are the estimate of the call's tokens.
	input, output int64
	// fields are the body's members, by name, for the upstream body.
	fields map[string]json.RawMessage
}

// parseRequest reads a request body of op. Its estimate counts a token
// for every four bytes of the body and, for a chat, the answer's
// max_completion_tokens (or max_tokens, or defaultMax) for each of n
// choices. Its cost is linear in len(body).
func parseRequest(op string, body []byte, defaultMax int64) (*request, *apiError) {
	if err := strictjson.Check(body, &strictjson.Options{Object: true, MaxDepth: maxDepth}); err != nil {
		var se *strictjson.Error
		msg := "The body is not one JSON object."
		if errors.As(err, &se) {
			msg = "The body is not valid: " + se.Error() + "."
		}
		return nil, badRequest("", codeInvalidJSON, msg)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		return nil, badRequest("", codeInvalidJSON, "The body is not one JSON object.")
	}
	req := &request{op: op, fields: fields, input: int64(len(body))/4 + 1}
	if e := stringField(fields, "model", &req.model); e != nil {
		return nil, e
	}
	if req.model == "" {
		return nil, badRequest("model", codeMissing, "You must provide a model parameter.")
	}
	switch op {
	case opChat:
		if e := req.parseChat(defaultMax); e != nil {
			return nil, e
		}
	case opEmbeddings:
		raw, ok := fields["input"]
		if !ok || isNull(raw) {
			return nil, badRequest("input", codeMissing, "You must provide an input parameter.")
		}
		if c := raw[0]; c != '"' && c != '[' {
			return nil, badRequest("input", codeInvalidValue, "input is a string or an array of strings or of token arrays.")
		}
		if bytes.Equal(raw, []byte(`""`)) || bytes.Equal(raw, []byte(`[]`)) {
			return nil, badRequest("input", codeInvalidValue, "input must not be empty.")
		}
	}
	return req, nil
}

func (req *request) parseChat(defaultMax int64) *apiError {
	msgs, ok := req.fields["messages"]
	if !ok || isNull(msgs) {
		return badRequest("messages", codeMissing, "You must provide a messages parameter.")
	}
	if msgs[0] != '[' {
		return badRequest("messages", codeInvalidValue, "messages is an array of messages.")
	}
	if len(bytes.TrimSpace(msgs[1:len(msgs)-1])) == 0 {
		return badRequest("messages", codeInvalidValue, "messages must hold at least one message.")
	}
	if raw, ok := req.fields["stream"]; ok && !isNull(raw) {
		if err := json.Unmarshal(raw, &req.stream); err != nil {
			return badRequest("stream", codeInvalidValue, "stream is true or false.")
		}
	}
	if raw, ok := req.fields["stream_options"]; ok && !isNull(raw) {
		if !req.stream {
			return badRequest("stream_options", codeInvalidValue, "stream_options are only allowed when stream is true.")
		}
		var so map[string]json.RawMessage
		if raw[0] != '{' || json.Unmarshal(raw, &so) != nil {
			return badRequest("stream_options", codeInvalidValue, "stream_options is an object.")
		}
		if v, ok := so["include_usage"]; ok && !isNull(v) {
			if err := json.Unmarshal(v, &req.usageAsked); err != nil {
				return badRequest("stream_options.include_usage", codeInvalidValue, "stream_options.include_usage is true or false.")
			}
		}
	}
	out := defaultMax
	for _, name := range []string{"max_tokens", "max_completion_tokens"} {
		var n int64
		found, e := intField(req.fields, name, 1, maxCompletionTokens, &n)
		if e != nil {
			return e
		}
		if found {
			out = n // max_completion_tokens, read last, wins
		}
	}
	n := int64(1)
	if _, e := intField(req.fields, "n", 1, maxChoices, &n); e != nil {
		return e
	}
	req.output = out * n
	return nil
}

// upstreamBody is the body sent to a provider for model: the caller's,
// with the provider's model name, and with the stream's usage asked for
// when the caller did not ask.
func (req *request) upstreamBody(model string) ([]byte, error) {
	f := make(map[string]json.RawMessage, len(req.fields)+1)
	for k, v := range req.fields {
		f[k] = v
	}
	m, err := json.Marshal(model)
	if err != nil {
		return nil, err
	}
	f["model"] = m
	if req.stream && !req.usageAsked {
		so := map[string]json.RawMessage{}
		if raw, ok := req.fields["stream_options"]; ok && !isNull(raw) {
			if err := json.Unmarshal(raw, &so); err != nil {
				return nil, err
			}
		}
		so["include_usage"] = json.RawMessage("true")
		b, err := json.Marshal(so)
		if err != nil {
			return nil, err
		}
		f["stream_options"] = b
	}
	return json.Marshal(f)
}

func isNull(raw json.RawMessage) bool { return bytes.Equal(raw, []byte("null")) }

// stringField reads the string member name into dst, if present.
func stringField(fields map[string]json.RawMessage, name string, dst *string) *apiError {
	raw, ok := fields[name]
	if !ok || isNull(raw) {
		return nil
	}
	if raw[0] != '"' || json.Unmarshal(raw, dst) != nil {
		return badRequest(name, codeInvalidValue, name+" is a string.")
	}
	return nil
}

// intField reads the integer member name, from lo to hi, into dst.
func intField(fields map[string]json.RawMessage, name string, lo, hi int64, dst *int64) (bool, *apiError) {
	raw, ok := fields[name]
	if !ok || isNull(raw) {
		return false, nil
	}
	var f float64
	if err := json.Unmarshal(raw, &f); err != nil || f != math.Trunc(f) || f < float64(lo) || f > float64(hi) {
		return false, badRequest(name, codeInvalidValue, fmt.Sprintf("%s is an integer from %d to %d.", name, lo, hi))
	}
	*dst = int64(f)
	return true, nil
}
