package llmgw

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"

	"novaos.dev/novaos/llm"
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

// request is a chat completions or embeddings request: read with the
// llm package's types, and kept as the caller's bytes, which go to the
// provider with only the model (and, for a stream, the usage asked for)
// changed in place. Re-encoding the decoded request would lose what its
// types do not name below the top level (a tool's or an image part's
// own members) and rewrite numbers, nulls and order.
type request struct {
	op     string
	model  string
	stream bool
	// usageAsked says the caller asked for the stream's usage chunk
	// (stream_options.include_usage).
	usageAsked bool
	// input and output are the estimate of the call's tokens.
	input, output int64
	body          []byte
	members       []member
}

// member is a top-level member of the body: its name, and where its
// value is in the body.
type member struct {
	name       string
	start, end int
}

// parseRequest reads a request body of op. Its estimate counts a token
// for every four bytes of the body and, for a chat, the answer's
// max_completion_tokens (or max_tokens, or defaultMax) for each of n
// choices. Its cost is linear in len(body).
func parseRequest(op string, body []byte, defaultMax int64) (*request, *llm.APIError) {
	if err := strictjson.Check(body, &strictjson.Options{Object: true, MaxDepth: maxDepth}); err != nil {
		var se *strictjson.Error
		msg := "The body is not one JSON object."
		if errors.As(err, &se) {
			msg = "The body is not valid: " + se.Error() + "."
		}
		return nil, badRequest("", llm.CodeInvalidJSON, msg)
	}
	members, err := scanMembers(body)
	if err != nil {
		return nil, badRequest("", llm.CodeInvalidJSON, "The body is not one JSON object.")
	}
	req := &request{op: op, body: body, members: members, input: int64(len(body))/4 + 1}
	switch op {
	case opChat:
		var c llm.ChatCompletionRequest
		if e := decodeRequest(body, &c); e != nil {
			return nil, e
		}
		req.model = c.Model
		if e := req.checkChat(&c, defaultMax); e != nil {
			return nil, e
		}
	case opEmbeddings:
		if !req.hasValue("input") {
			return nil, badRequest("input", llm.CodeMissingParameter, "You must provide an input parameter.")
		}
		var em llm.EmbeddingRequest
		if e := decodeRequest(body, &em); e != nil {
			return nil, e
		}
		req.model = em.Model
		if e := req.checkModel(); e != nil {
			return nil, e
		}
		if em.Input.Len() == 0 || len(em.Input.Texts) == 1 && em.Input.Texts[0] == "" {
			return nil, badRequest("input", llm.CodeInvalidValue, "input must not be empty.")
		}
	}
	return req, nil
}

// fieldTypes say what a member of a request is, for the refusal of one
// of another type.
var fieldTypes = map[string]string{
	"model":                        "a string",
	"messages":                     "an array of messages",
	"stream":                       "true or false",
	"stream_options":               "an object",
	"stream_options.include_usage": "true or false",
	"max_tokens":                   fmt.Sprintf("an integer from 1 to %d", maxCompletionTokens),
	"max_completion_tokens":        fmt.Sprintf("an integer from 1 to %d", maxCompletionTokens),
	"n":                            fmt.Sprintf("an integer from 1 to %d", maxChoices),
	"input":                        "a string or an array of strings or of token arrays",
}

// decodeRequest reads body into v, one of the llm package's request
// types; a member of the wrong type is refused naming it.
func decodeRequest(body []byte, v any) *llm.APIError {
	err := json.Unmarshal(body, v)
	if err == nil {
		return nil
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		if what, ok := fieldTypes[te.Field]; ok {
			return badRequest(te.Field, llm.CodeInvalidValue, te.Field+" is "+what+".")
		}
		return badRequest(te.Field, llm.CodeInvalidValue, te.Field+" has the wrong type.")
	}
	// A type's own UnmarshalJSON refused a value: a message's content, or
	// an embedding's input, the only members that read themselves.
	param := "messages"
	if _, ok := v.(*llm.EmbeddingRequest); ok {
		param = "input"
	}
	msg := err.Error()
	if len(msg) > 200 {
		msg = msg[:200]
	}
	return badRequest(param, llm.CodeInvalidValue, "The request is not valid: "+msg+".")
}

func (req *request) checkModel() *llm.APIError {
	if req.model == "" {
		return badRequest("model", llm.CodeMissingParameter, "You must provide a model parameter.")
	}
	return nil
}

func (req *request) checkChat(c *llm.ChatCompletionRequest, defaultMax int64) *llm.APIError {
	if e := req.checkModel(); e != nil {
		return e
	}
	switch {
	case c.Messages == nil:
		return badRequest("messages", llm.CodeMissingParameter, "You must provide a messages parameter.")
	case len(c.Messages) == 0:
		return badRequest("messages", llm.CodeInvalidValue, "messages must hold at least one message.")
	case c.StreamOptions != nil && !c.Stream:
		return badRequest("stream_options", llm.CodeInvalidValue, "stream_options are only allowed when stream is true.")
	}
	// Zero is what an absent member reads as; one the caller sent is
	// refused as the API refuses it.
	for _, f := range []struct {
		name string
		v    int
		max  int
	}{{"max_tokens", c.MaxTokens, maxCompletionTokens}, {"max_completion_tokens", c.MaxCompletionTokens, maxCompletionTokens}, {"n", c.N, maxChoices}} {
		if (f.v < 1 || f.v > f.max) && req.hasValue(f.name) {
			return badRequest(f.name, llm.CodeInvalidValue, f.name+" is "+fieldTypes[f.name]+".")
		}
	}
	req.stream = c.Stream
	req.usageAsked = c.StreamOptions != nil && c.StreamOptions.IncludeUsage
	out := defaultMax
	if limit := c.CompletionLimit(); limit > 0 {
		out = int64(limit)
	}
	req.output = out * int64(max(c.N, 1))
	return nil
}

// hasValue reports whether the body has the member name, not null.
func (req *request) hasValue(name string) bool {
	i := slices.IndexFunc(req.members, func(m member) bool { return m.name == name })
	return i >= 0 && !isNull(req.body[req.members[i].start:req.members[i].end])
}

// upstreamBody is the body sent to a provider for model: the caller's
// bytes, with the provider's model name in place of the caller's, and,
// for a stream whose caller did not ask for its usage, with it asked for.
func (req *request) upstreamBody(model string) ([]byte, error) {
	m, err := json.Marshal(model)
	if err != nil {
		return nil, err
	}
	edits := map[string][]byte{"model": m}
	if req.stream && !req.usageAsked {
		so := map[string]json.RawMessage{}
		if i := slices.IndexFunc(req.members, func(m member) bool { return m.name == "stream_options" }); i >= 0 {
			if raw := req.body[req.members[i].start:req.members[i].end]; !isNull(raw) {
				if err := json.Unmarshal(raw, &so); err != nil {
					return nil, err
				}
			}
		}
		so["include_usage"] = json.RawMessage("true")
		b, err := json.Marshal(so)
		if err != nil {
			return nil, err
		}
		edits["stream_options"] = b
	}
	return patchMembers(req.body, req.members, edits), nil
}

// patchMembers returns body with the values of the top-level members
// edits names replaced, and those it does not have added at its end, in
// name order. Every other byte is the caller's.
func patchMembers(body []byte, members []member, edits map[string][]byte) []byte {
	out := make([]byte, 0, len(body)+64)
	done := map[string]bool{}
	pos := 0
	for _, m := range members {
		v, ok := edits[m.name]
		if !ok {
			continue
		}
		out = append(append(out, body[pos:m.start]...), v...)
		pos, done[m.name] = m.end, true
	}
	end := bytes.LastIndexByte(body, '}')
	out = append(out, body[pos:end]...)
	names := make([]string, 0, len(edits))
	for name := range edits {
		if !done[name] {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	comma := len(members) > 0
	for _, name := range names {
		if comma {
			out = append(out, ',')
		}
		comma = true
		k, _ := json.Marshal(name)
		out = append(append(append(out, k...), ':'), edits[name]...)
	}
	return append(out, body[end:]...)
}

// scanMembers finds the top-level members of body, one JSON object, and
// where each value starts and ends.
func scanMembers(body []byte) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, errors.New("llmgw: not an object")
	}
	var out []member
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		name, ok := t.(string)
		if !ok {
			return nil, errors.New("llmgw: a member name is not a string")
		}
		var n valueLen
		if err := dec.Decode(&n); err != nil {
			return nil, err
		}
		end := int(dec.InputOffset())
		out = append(out, member{name: name, start: end - int(n), end: end})
	}
	if _, err := dec.Token(); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return out, nil
}

// valueLen takes a JSON value's length, not its bytes.
type valueLen int

func (n *valueLen) UnmarshalJSON(b []byte) error {
	*n = valueLen(len(b))
	return nil
}

func isNull(raw []byte) bool { return bytes.Equal(raw, []byte("null")) }
