package llm

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"novaos.dev/novaos/resilience"
)

// Object names of the OpenAI answers.
const (
	ObjectChatCompletion      = "chat.completion"
	ObjectChatCompletionChunk = "chat.completion.chunk"
	ObjectList                = "list"
	ObjectEmbedding           = "embedding"
	ObjectModel               = "model"
)

// Roles of a chat message.
const (
	RoleSystem    = "system"
	RoleDeveloper = "developer"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
	RoleFunction  = "function"
)

// Finish reasons of a choice.
const (
	FinishStop          FinishReason = "stop"
	FinishLength        FinishReason = "length"
	FinishToolCalls     FinishReason = "tool_calls"
	FinishContentFilter FinishReason = "content_filter"
)

// ChatCompletionRequest is the body of POST /chat/completions. The members
// most callers set are fields; every other member (stop, logprobs,
// presence_penalty, a provider's own extensions, …) is kept in Extra as it
// came, so a request decoded and encoded again loses nothing.
type ChatCompletionRequest struct {
	Model    string    `json:"model"`
	Messages []Message `json:"messages"`
	// Stream is set by Client.ChatCompletionStream; ChatCompletion refuses
	// a request that sets it.
	Stream        bool           `json:"stream,omitempty"`
	StreamOptions *StreamOptions `json:"stream_options,omitempty"`
	// MaxTokens is the older spelling of MaxCompletionTokens; zero leaves
	// either out.
	MaxTokens           int      `json:"max_tokens,omitempty"`
	MaxCompletionTokens int      `json:"max_completion_tokens,omitempty"`
	Temperature         *float64 `json:"temperature,omitempty"`
	TopP                *float64 `json:"top_p,omitempty"`
	N                   int      `json:"n,omitempty"`
	User                string   `json:"user,omitempty"`
	Tools               []Tool   `json:"tools,omitempty"`
	// ToolChoice and ResponseFormat are passed as the caller wrote them:
	// "auto", "none", "required" or an object; {"type":"json_object"} or
	// a JSON schema.
	ToolChoice     json.RawMessage `json:"tool_choice,omitempty"`
	ResponseFormat json.RawMessage `json:"response_format,omitempty"`
	// Extra holds the members the fields above do not name.
	Extra map[string]json.RawMessage `json:"-"`
}

// MarshalJSON writes the fields and then Extra.
func (r ChatCompletionRequest) MarshalJSON() ([]byte, error) {
	type plain ChatCompletionRequest
	return marshalExtra(plain(r), r.Extra)
}

// UnmarshalJSON reads the fields and keeps the other members in Extra.
func (r *ChatCompletionRequest) UnmarshalJSON(b []byte) error {
	type plain ChatCompletionRequest
	return unmarshalExtra(b, (*plain)(r), &r.Extra)
}

// CompletionLimit returns the most completion tokens the request allows:
// MaxCompletionTokens, else MaxTokens; zero when it sets neither.
func (r *ChatCompletionRequest) CompletionLimit() int {
	if r.MaxCompletionTokens > 0 {
		return r.MaxCompletionTokens
	}
	return r.MaxTokens
}

// StreamOptions tune a streamed answer. IncludeUsage asks for a last chunk,
// with no choices, that carries the usage of the whole call.
type StreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// Message is one message of a chat, in a request or an answer. Members
// it does not name are kept in Extra.
type Message struct {
	Role    string  `json:"role"`
	Content Content `json:"content"`
	Name    string  `json:"name,omitempty"`
	// Refusal is the model's refusal, in an answer.
	Refusal    string                     `json:"refusal,omitempty"`
	ToolCalls  []ToolCall                 `json:"tool_calls,omitempty"`
	ToolCallID string                     `json:"tool_call_id,omitempty"`
	Extra      map[string]json.RawMessage `json:"-"`
}

// MarshalJSON writes the fields and then Extra.
func (m Message) MarshalJSON() ([]byte, error) {
	type plain Message
	return marshalExtra(plain(m), m.Extra)
}

// UnmarshalJSON reads the fields and keeps the other members in Extra.
func (m *Message) UnmarshalJSON(b []byte) error {
	type plain Message
	return unmarshalExtra(b, (*plain)(m), &m.Extra)
}

// Content is a message's content: a string, or, when Parts is not nil,
// an array of parts. JSON null reads as the empty string.
type Content struct {
	Text  string
	Parts []ContentPart
}

// Text returns content that is the string s.
func Text(s string) Content { return Content{Text: s} }

// String returns the text: Text, or the text parts joined by newlines.
func (c Content) String() string {
	if c.Parts == nil {
		return c.Text
	}
	var b strings.Builder
	for _, p := range c.Parts {
		if p.Type != PartText {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(p.Text)
	}
	return b.String()
}

// MarshalJSON writes a string, or the parts as an array.
func (c Content) MarshalJSON() ([]byte, error) {
	if c.Parts != nil {
		return json.Marshal(c.Parts)
	}
	return json.Marshal(c.Text)
}

// UnmarshalJSON reads a string, null or an array of parts.
func (c *Content) UnmarshalJSON(b []byte) error {
	*c = Content{}
	switch firstByte(b) {
	case 'n':
		return json.Unmarshal(b, new(any)) // checks it is null
	case '[':
		parts := []ContentPart{}
		if err := json.Unmarshal(b, &parts); err != nil {
			return err
		}
		c.Parts = parts
		return nil
	case '"':
		return json.Unmarshal(b, &c.Text)
	}
	return errors.New("llm: content is neither a string nor an array of parts")
}

// Content part types.
const (
	PartText     = "text"
	PartImageURL = "image_url"
)

// ContentPart is one part of a message's content: text, an image, or a
// kind this type does not name, whose members are kept in Extra.
type ContentPart struct {
	Type     string                     `json:"type"`
	Text     string                     `json:"text,omitempty"`
	ImageURL *ImageURL                  `json:"image_url,omitempty"`
	Extra    map[string]json.RawMessage `json:"-"`
}

// MarshalJSON writes the fields and then Extra.
func (p ContentPart) MarshalJSON() ([]byte, error) {
	type plain ContentPart
	return marshalExtra(plain(p), p.Extra)
}

// UnmarshalJSON reads the fields and keeps the other members in Extra.
func (p *ContentPart) UnmarshalJSON(b []byte) error {
	type plain ContentPart
	return unmarshalExtra(b, (*plain)(p), &p.Extra)
}

// ImageURL is an image part's image: a URL or a data: URL.
type ImageURL struct {
	URL    string `json:"url"`
	Detail string `json:"detail,omitempty"`
}

// Tool is a function the model may call.
type Tool struct {
	Type     string      `json:"type"`
	Function FunctionDef `json:"function"`
}

// FunctionDef describes a callable function; Parameters is its JSON
// Schema.
type FunctionDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

// ToolCall is a call the model asks for; Function.Arguments is JSON text.
type ToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function FunctionCall `json:"function"`
}

// FunctionCall names the function and its arguments, JSON as text.
type FunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// FinishReason says why a choice ended. The empty reason is written as
// null, as a provider writes it in every chunk but the last of a choice.
type FinishReason string

// MarshalJSON writes the reason, or null when it is empty.
func (f FinishReason) MarshalJSON() ([]byte, error) {
	if f == "" {
		return []byte("null"), nil
	}
	return json.Marshal(string(f))
}

// UnmarshalJSON reads a string or null.
func (f *FinishReason) UnmarshalJSON(b []byte) error {
	var s *string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	*f = ""
	if s != nil {
		*f = FinishReason(*s)
	}
	return nil
}

// ChatCompletion is the answer to a chat completion request.
type ChatCompletion struct {
	ID                string   `json:"id"`
	Object            string   `json:"object"`
	Created           int64    `json:"created"`
	Model             string   `json:"model"`
	Choices           []Choice `json:"choices"`
	Usage             *Usage   `json:"usage,omitempty"`
	SystemFingerprint string   `json:"system_fingerprint,omitempty"`
}

// Text returns the content of the first choice, "" when there is none.
func (c *ChatCompletion) Text() string {
	if len(c.Choices) == 0 {
		return ""
	}
	return c.Choices[0].Message.Content.String()
}

// Choice is one answer of a chat completion.
type Choice struct {
	Index        int          `json:"index"`
	Message      Message      `json:"message"`
	FinishReason FinishReason `json:"finish_reason"`
}

// Usage counts the tokens of a call.
type Usage struct {
	PromptTokens            int                      `json:"prompt_tokens"`
	CompletionTokens        int                      `json:"completion_tokens"`
	TotalTokens             int                      `json:"total_tokens"`
	PromptTokensDetails     *PromptTokensDetails     `json:"prompt_tokens_details,omitempty"`
	CompletionTokensDetails *CompletionTokensDetails `json:"completion_tokens_details,omitempty"`
}

// PromptTokensDetails break the prompt tokens down.
type PromptTokensDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

// CompletionTokensDetails break the completion tokens down.
type CompletionTokensDetails struct {
	ReasoningTokens int `json:"reasoning_tokens"`
}

// Chunk is one event of a streamed chat completion. The last chunk of a
// stream whose request set StreamOptions.IncludeUsage has no choices and
// carries Usage.
type Chunk struct {
	ID                string        `json:"id"`
	Object            string        `json:"object"`
	Created           int64         `json:"created"`
	Model             string        `json:"model"`
	Choices           []ChunkChoice `json:"choices"`
	Usage             *Usage        `json:"usage,omitempty"`
	SystemFingerprint string        `json:"system_fingerprint,omitempty"`
}

// Text returns the content delta of the first choice.
func (c *Chunk) Text() string {
	if len(c.Choices) == 0 {
		return ""
	}
	return c.Choices[0].Delta.Content
}

// ChunkChoice is one choice's delta in a chunk.
type ChunkChoice struct {
	Index        int          `json:"index"`
	Delta        Delta        `json:"delta"`
	FinishReason FinishReason `json:"finish_reason"`
}

// Delta is what a chunk adds to a choice's message.
type Delta struct {
	Role      string          `json:"role,omitempty"`
	Content   string          `json:"content,omitempty"`
	Refusal   string          `json:"refusal,omitempty"`
	ToolCalls []ToolCallDelta `json:"tool_calls,omitempty"`
}

// ToolCallDelta is a piece of a tool call: the call at Index gets its id,
// name and the first part of its arguments in one chunk, and more
// arguments in later ones.
type ToolCallDelta struct {
	Index    int          `json:"index"`
	ID       string       `json:"id,omitempty"`
	Type     string       `json:"type,omitempty"`
	Function FunctionCall `json:"function"`
}

// Encoding formats of an embedding.
const (
	EncodingFloat  = "float"
	EncodingBase64 = "base64"
)

// EmbeddingRequest is the body of POST /embeddings. Members it does not
// name are kept in Extra.
type EmbeddingRequest struct {
	Model string         `json:"model"`
	Input EmbeddingInput `json:"input"`
	// EncodingFormat is EncodingFloat (the default) or EncodingBase64;
	// Vector reads either.
	EncodingFormat string                     `json:"encoding_format,omitempty"`
	Dimensions     int                        `json:"dimensions,omitempty"`
	User           string                     `json:"user,omitempty"`
	Extra          map[string]json.RawMessage `json:"-"`
}

// MarshalJSON writes the fields and then Extra.
func (r EmbeddingRequest) MarshalJSON() ([]byte, error) {
	type plain EmbeddingRequest
	return marshalExtra(plain(r), r.Extra)
}

// UnmarshalJSON reads the fields and keeps the other members in Extra.
func (r *EmbeddingRequest) UnmarshalJSON(b []byte) error {
	type plain EmbeddingRequest
	return unmarshalExtra(b, (*plain)(r), &r.Extra)
}

// EmbeddingInput is what to embed: texts, or inputs already turned into
// token ids. On the wire it is a string, an array of strings, an array of
// token ids or an array of such arrays; one text is written as a string,
// one token array as a flat array.
type EmbeddingInput struct {
	Texts  []string
	Tokens [][]int
}

// Len returns the number of inputs, and so of embeddings in the answer.
func (in EmbeddingInput) Len() int { return len(in.Texts) + len(in.Tokens) }

// MarshalJSON writes the input in its shortest wire form.
func (in EmbeddingInput) MarshalJSON() ([]byte, error) {
	switch {
	case in.Texts != nil && in.Tokens != nil:
		return nil, errors.New("llm: embedding input has both texts and tokens")
	case in.Tokens != nil:
		if len(in.Tokens) == 1 {
			return json.Marshal(in.Tokens[0])
		}
		return json.Marshal(in.Tokens)
	case len(in.Texts) == 1:
		return json.Marshal(in.Texts[0])
	case in.Texts == nil:
		return []byte("[]"), nil
	}
	return json.Marshal(in.Texts)
}

// UnmarshalJSON reads any of the four wire forms.
func (in *EmbeddingInput) UnmarshalJSON(b []byte) error {
	*in = EmbeddingInput{}
	switch firstByte(b) {
	case '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		in.Texts = []string{s}
		return nil
	case '[':
	default:
		return errors.New("llm: embedding input is neither a string nor an array")
	}
	var items []json.RawMessage
	if err := json.Unmarshal(b, &items); err != nil {
		return err
	}
	if len(items) == 0 {
		in.Texts = []string{}
		return nil
	}
	switch firstByte(items[0]) {
	case '"':
		return json.Unmarshal(b, &in.Texts)
	case '[':
		return json.Unmarshal(b, &in.Tokens)
	}
	var one []int
	if err := json.Unmarshal(b, &one); err != nil {
		return errors.New("llm: embedding input array holds neither strings, token ids nor token arrays")
	}
	in.Tokens = [][]int{one}
	return nil
}

// EmbeddingResponse is the answer to an embedding request: one embedding
// per input, in input order (Index).
type EmbeddingResponse struct {
	Object string         `json:"object"`
	Data   []Embedding    `json:"data"`
	Model  string         `json:"model"`
	Usage  EmbeddingUsage `json:"usage"`
}

// Embedding is the vector of one input.
type Embedding struct {
	Object    string `json:"object"`
	Index     int    `json:"index"`
	Embedding Vector `json:"embedding"`
}

// EmbeddingUsage counts an embedding call's tokens.
type EmbeddingUsage struct {
	PromptTokens int `json:"prompt_tokens"`
	TotalTokens  int `json:"total_tokens"`
}

// Vector is an embedding. It is written as an array of numbers and read
// from one, or from the base64 of its little-endian float32 values, as a
// provider answers encoding_format "base64".
type Vector []float32

// UnmarshalJSON reads an array of numbers or a base64 string.
func (v *Vector) UnmarshalJSON(b []byte) error {
	if firstByte(b) != '"' {
		var f []float32
		if err := json.Unmarshal(b, &f); err != nil {
			return err
		}
		*v = f
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	raw, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return fmt.Errorf("llm: base64 embedding: %w", err)
	}
	if len(raw)%4 != 0 {
		return errors.New("llm: base64 embedding is not a whole number of float32 values")
	}
	f := make([]float32, len(raw)/4)
	for i := range f {
		f[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	*v = f
	return nil
}

// Base64 returns the vector as a provider writes it for encoding_format
// "base64".
func (v Vector) Base64() string {
	raw := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(f))
	}
	return base64.StdEncoding.EncodeToString(raw)
}

// ModelList is the answer of GET /models.
type ModelList struct {
	Object string  `json:"object"`
	Data   []Model `json:"data"`
}

// Model is one model a caller may use.
type Model struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

// Error types of the OpenAI error body.
const (
	TypeInvalidRequest    = "invalid_request_error"
	TypeAuthentication    = "authentication_error"
	TypePermission        = "permission_error"
	TypeNotFound          = "not_found_error"
	TypeRateLimit         = "rate_limit_error"
	TypeServer            = "server_error"
	TypeInsufficientQuota = "insufficient_quota"
)

// Error codes of the OpenAI error body that callers branch on: OpenAI's,
// and those the platform's gateway adds.
const (
	// CodeBudgetExceeded: the gateway refused the call because a budget
	// (tokens or cost, of the tenant, the instance or the run) is spent.
	CodeBudgetExceeded = "budget_exceeded"
	CodeModelNotFound  = "model_not_found"
	CodeInvalidAPIKey  = "invalid_api_key"
	CodeRateLimit      = "rate_limit_exceeded"
	// CodeModelNotAllowed: the token's llm:model:* scopes do not grant
	// the model.
	CodeModelNotAllowed = "model_not_allowed"
	// CodeProviderUnavailable: no provider of the model answered, or none
	// is enabled.
	CodeProviderUnavailable = "provider_unavailable"
	// CodeOverloaded: the gateway has too many calls in flight; retry
	// after Retry-After.
	CodeOverloaded = "overloaded"
	// Codes of a request the gateway could not read: Param names the
	// member where there is one.
	CodeInvalidJSON          = "invalid_json"
	CodeInvalidValue         = "invalid_value"
	CodeMissingParameter     = "missing_required_parameter"
	CodeRequestTooLarge      = "request_too_large"
	CodeUnsupportedMediaType = "unsupported_media_type"
)

// APIError is an error an OpenAI-compatible server answered, as the body
// {"error":{"message","type","param","code"}} gives it. Status is the
// HTTP status (0 for an error that came inside a stream). Callers branch
// with errors.As and the Code or Type.
type APIError struct {
	Status  int
	Message string
	Type    string
	Param   string
	Code    string
	// After is the wait the server asked for (Retry-After), zero when it
	// named none.
	After time.Duration
}

// Error returns "llm: <status> <code or type>: <message>".
func (e *APIError) Error() string {
	var b strings.Builder
	b.WriteString("llm: ")
	if e.Status != 0 {
		b.WriteString(strconv.Itoa(e.Status))
		b.WriteByte(' ')
	}
	switch {
	case e.Code != "":
		b.WriteString(e.Code)
	case e.Type != "":
		b.WriteString(e.Type)
	default:
		b.WriteString("error")
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	return b.String()
}

// BudgetExceeded reports whether the gateway refused the call because a
// budget is spent.
func (e *APIError) BudgetExceeded() bool { return e.Code == CodeBudgetExceeded }

// Temporary reports whether the same call may succeed later: a rate
// limit or a service that is down for a while (resilience.RetryableStatus),
// but not a spent budget or quota, which waiting does not refill.
func (e *APIError) Temporary() bool {
	return resilience.RetryableStatus(e.Status) && e.Code != CodeBudgetExceeded &&
		e.Type != TypeInsufficientQuota && e.Code != TypeInsufficientQuota
}

// RetryAfter returns After, so a resilience.Policy waits as the server
// asked.
func (e *APIError) RetryAfter() time.Duration { return e.After }

// errorBody is the wire form of an APIError.
type errorBody struct {
	Error *errorObject `json:"error"`
}

type errorObject struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

// MarshalJSON writes the OpenAI error body; an empty param or code is
// written as null.
func (e *APIError) MarshalJSON() ([]byte, error) {
	o := &errorObject{Message: e.Message, Type: e.Type}
	if e.Param != "" {
		o.Param = &e.Param
	}
	if e.Code != "" {
		o.Code = &e.Code
	}
	return json.Marshal(errorBody{Error: o})
}

// WriteError answers an HTTP request with e as an OpenAI error body and
// e.Status (500 when unset), and e.After, rounded up to seconds, as
// Retry-After.
func WriteError(w http.ResponseWriter, e *APIError) {
	status := e.Status
	if status < 400 || status > 599 {
		status = http.StatusInternalServerError
	}
	b, _ := e.MarshalJSON() // strings only: cannot fail
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)+1))
	if e.After > 0 {
		h.Set("Retry-After", strconv.Itoa(int((e.After+time.Second-1)/time.Second)))
	}
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// ParseError reads an error answer: the OpenAI error body, or, for a body
// that is not one (a proxy's HTML page, a truncated body), an APIError
// whose Message is the status text, so a caller can always branch on
// Status. It never returns nil and never puts more than a short excerpt
// of body in the message.
func ParseError(status int, body []byte) *APIError {
	e := &APIError{Status: status}
	var wire struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &wire) == nil && len(wire.Error) > 0 {
		var o struct {
			Message json.RawMessage `json:"message"`
			Type    json.RawMessage `json:"type"`
			Param   json.RawMessage `json:"param"`
			Code    json.RawMessage `json:"code"`
		}
		if json.Unmarshal(wire.Error, &o) == nil {
			e.Message = scalar(o.Message)
			e.Type = scalar(o.Type)
			e.Param = scalar(o.Param)
			e.Code = scalar(o.Code)
		} else {
			// Some servers send {"error":"text"}.
			e.Message = scalar(wire.Error)
		}
	}
	if e.Message == "" && e.Type == "" && e.Code == "" {
		e.Message = http.StatusText(status)
		if e.Message == "" {
			e.Message = "status " + strconv.Itoa(status)
		}
	}
	e.Message = clip(e.Message, maxErrorMessage)
	e.Type = clip(e.Type, maxErrorField)
	e.Param = clip(e.Param, maxErrorField)
	e.Code = clip(e.Code, maxErrorField)
	return e
}

// Error message and field bounds: an error from an untrusted server ends
// up in logs, so it is kept short.
const (
	maxErrorMessage = 1 << 10
	maxErrorField   = 128
)

// scalar renders a JSON string, number or boolean as text, and anything
// else (null, objects, arrays) as "".
func scalar(raw json.RawMessage) string {
	switch firstByte(raw) {
	case '"':
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
	case 'n', '{', '[', 0:
		return ""
	default:
		var v any
		if json.Unmarshal(raw, &v) == nil {
			return strings.TrimSpace(string(raw))
		}
	}
	return ""
}

// clip cuts s to at most n bytes on a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

// firstByte returns the first byte of b that is not JSON white space, 0
// when there is none.
func firstByte(b []byte) byte {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		}
		return c
	}
	return 0
}
