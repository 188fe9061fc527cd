package llmtest

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"novaos.dev/novaos/llm"
	"novaos.dev/novaos/strictjson"
)

// Paths the provider serves. Calls counts calls under these; a model
// lookup (GET /v1/models/{id}) counts as PathModels.
const (
	PathChatCompletions = "/v1/chat/completions"
	PathEmbeddings      = "/v1/embeddings"
	PathModels          = "/v1/models"
)

// Models the provider serves when Options.Models is empty.
const (
	ModelChat      = "gpt-4o"
	ModelChatMini  = "gpt-4o-mini"
	ModelEmbedding = "text-embedding-3-small"
)

// Defaults of Options.
const (
	DefaultDimensions   = 8
	DefaultMaxBodyBytes = 4 << 20
	// MaxDimensions bounds the dimensions a request may ask for.
	MaxDimensions = 4096
)

// defaultCreated is the creation time of every answer and model unless
// Options.Created says otherwise, so answers are the same on every run.
var defaultCreated = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// Options configure a Server; nil or zero fields mean the defaults.
type Options struct {
	// Models are the model ids the provider serves, for chat and
	// embeddings alike; a request for another answers 404
	// model_not_found. Default: ModelChat, ModelChatMini, ModelEmbedding.
	Models []string
	// APIKey, when set, is the only key accepted (Authorization: Bearer
	// <APIKey>); other calls answer 401 invalid_api_key. Empty accepts
	// any caller.
	APIKey string
	// Dimensions is the length of an embedding when the request does not
	// ask for one (default DefaultDimensions).
	Dimensions int
	// MaxBodyBytes bounds a request body (default DefaultMaxBodyBytes);
	// a larger one answers 413.
	MaxBodyBytes int64
	// Reply makes the answer's text from a valid request; the default is
	// Echo. The answer is cut at the request's completion limit, one
	// token per word.
	Reply func(*llm.ChatCompletionRequest) string
	// Created is the creation time of every answer and model (default
	// 2024-01-01T00:00:00Z).
	Created time.Time
	// NoUsage leaves the usage out of chat answers, and the usage chunk
	// out of streams that ask for it, as some local model servers do.
	NoUsage bool
}

// Request is a request as the provider received it.
type Request struct {
	Method string
	Path   string
	Header http.Header
	Body   []byte
}

// Server is a fake OpenAI-compatible provider listening on a loopback
// port. It is safe for concurrent use.
type Server struct {
	// URL is the server's root, "http://127.0.0.1:port"; BaseURL is
	// where an OpenAI client points.
	URL string

	o      Options
	models map[string]bool
	srv    *httptest.Server

	mu       sync.Mutex
	calls    map[string]int
	last     Request
	failures []failure
	holds    []*Hold
	cuts     int
	seq      int
}

type failure struct {
	n   int
	err llm.APIError
}

// NewServer starts a provider. Close it when done.
func NewServer(o *Options) *Server {
	s := newServer(o)
	s.srv = httptest.NewServer(s)
	s.URL = s.srv.URL
	return s
}

// NewHandler returns a provider that listens nowhere, for a server of
// the caller's own (its URL fields stay empty): serve it on the address
// a program is given, or mount it in a larger server.
func NewHandler(o *Options) *Server { return newServer(o) }

func newServer(o *Options) *Server {
	s := &Server{calls: map[string]int{}}
	if o != nil {
		s.o = *o
	}
	if len(s.o.Models) == 0 {
		s.o.Models = []string{ModelChat, ModelChatMini, ModelEmbedding}
	}
	s.o.Models = slices.Clone(s.o.Models)
	s.models = map[string]bool{}
	for _, m := range s.o.Models {
		s.models[m] = true
	}
	if s.o.Dimensions <= 0 {
		s.o.Dimensions = DefaultDimensions
	}
	if s.o.MaxBodyBytes <= 0 {
		s.o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if s.o.Reply == nil {
		s.o.Reply = Echo
	}
	if s.o.Created.IsZero() {
		s.o.Created = defaultCreated
	}
	return s
}

// BaseURL is the OpenAI base URL of the provider: URL + "/v1".
func (s *Server) BaseURL() string { return s.URL + "/v1" }

// Close releases every held stream and shuts the server down (a
// NewHandler's is the caller's to shut down).
func (s *Server) Close() {
	s.mu.Lock()
	holds := s.holds
	s.holds = nil
	s.mu.Unlock()
	for _, h := range holds {
		h.Release()
	}
	if s.srv != nil {
		s.srv.Close()
	}
}

// Calls returns how many requests reached path (one of the Path
// constants), answered or failed.
func (s *Server) Calls(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[path]
}

// LastRequest returns the last request that reached one of the paths: its
// headers (traceparent, Authorization, …) and body. The zero Request when
// none has.
func (s *Server) LastRequest() Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.last
	r.Header = r.Header.Clone()
	r.Body = slices.Clone(r.Body)
	return r
}

// FailNext makes the next n calls, on any path, answer status with the
// error body a provider sends for it: 429 rate_limit_exceeded, 5xx
// server_error, else invalid_request_error.
func (s *Server) FailNext(n, status int) {
	e := llm.APIError{Status: status, Type: llm.TypeInvalidRequest, Message: http.StatusText(status)}
	switch {
	case status == http.StatusTooManyRequests:
		e.Type, e.Code = "requests", llm.CodeRateLimit
		e.Message = "Rate limit reached for requests."
	case status >= 500:
		e.Type = llm.TypeServer
		e.Message = "The server had an error while processing your request."
	}
	s.FailNextWith(n, &e)
}

// FailNextWith makes the next n calls, on any path, answer e.
func (s *Server) FailNextWith(n int, e *llm.APIError) {
	if n <= 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures = append(s.failures, failure{n: n, err: *e})
}

// Hold is a streamed answer held after its first chunk.
type Hold struct {
	held, release chan struct{}
	heldOnce      sync.Once
	releaseOnce   sync.Once
}

// Held is closed when the stream has sent (and flushed) its first chunk
// and waits.
func (h *Hold) Held() <-chan struct{} { return h.held }

// Release lets the stream go on. It may be called more than once, and
// before the stream is held.
func (h *Hold) Release() { h.releaseOnce.Do(func() { close(h.release) }) }

// HoldNextStream holds the next streamed chat answer after its first
// chunk until the Hold is released, the caller goes away or the server
// closes. Several holds apply to the next streams in turn.
func (s *Server) HoldNextStream() *Hold {
	h := &Hold{held: make(chan struct{}), release: make(chan struct{})}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.holds = append(s.holds, h)
	return h
}

// CutNextStream makes the next streamed chat answer break its connection
// after its first chunk, with no final chunk and no [DONE], as a provider
// that fails mid-answer does.
func (s *Server) CutNextStream() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cuts++
}

// Echo is the default reply: the text of the last user message.
func Echo(r *llm.ChatCompletionRequest) string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == llm.RoleUser {
			return r.Messages[i].Content.String()
		}
	}
	return ""
}

// Tokens is the provider's token count of s: its number of words
// (runs of non-space characters). Usage is counted with it: a prompt's
// tokens are those of all its messages' text, an answer's those of its
// text.
func Tokens(s string) int { return len(strings.Fields(s)) }

// Embed returns the provider's embedding of text: dims numbers drawn from
// SHA-256 of the text, scaled to unit length. The same text always has
// the same vector. Token inputs are embedded as their ids written in
// decimal, separated by spaces.
func Embed(text string, dims int) llm.Vector {
	v := make(llm.Vector, dims)
	var block [sha256.Size]byte
	var norm float64
	for i := range v {
		if i%8 == 0 {
			var ctr [4]byte
			binary.BigEndian.PutUint32(ctr[:], uint32(i/8))
			block = sha256.Sum256(append(ctr[:], text...))
		}
		u := binary.BigEndian.Uint32(block[4*(i%8):])
		f := float64(u)/math.MaxUint32*2 - 1
		v[i] = float32(f)
		norm += f * f
	}
	if norm = math.Sqrt(norm); norm > 0 {
		for i := range v {
			v[i] = float32(float64(v[i]) / norm)
		}
	}
	return v
}

// ServeHTTP serves the OpenAI API; a Server can be mounted in another
// server too.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	endpoint, method := route(r.URL.Path)
	if endpoint == "" {
		writeError(w, http.StatusNotFound, llm.TypeInvalidRequest, "", "", fmt.Sprintf("Invalid URL (%s %s)", r.Method, r.URL.Path))
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.o.MaxBodyBytes))
	s.mu.Lock()
	s.calls[endpoint]++
	s.last = Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body}
	s.mu.Unlock()
	if err != nil {
		if errors.As(err, new(*http.MaxBytesError)) {
			writeError(w, http.StatusRequestEntityTooLarge, llm.TypeInvalidRequest, "", "", "Request body too large.")
			return
		}
		writeError(w, http.StatusBadRequest, llm.TypeInvalidRequest, "", "", "Could not read the request body.")
		return
	}
	if r.Method != method {
		w.Header().Set("Allow", method)
		writeError(w, http.StatusMethodNotAllowed, llm.TypeInvalidRequest, "", "", fmt.Sprintf("Invalid method for URL (%s %s)", r.Method, r.URL.Path))
		return
	}
	if e, ok := s.takeFailure(); ok {
		llm.WriteError(w, &e)
		return
	}
	if s.o.APIKey != "" && r.Header.Get("Authorization") != "Bearer "+s.o.APIKey {
		writeError(w, http.StatusUnauthorized, llm.TypeInvalidRequest, "", llm.CodeInvalidAPIKey, "Incorrect API key provided.")
		return
	}
	switch endpoint {
	case PathChatCompletions:
		s.chat(w, r, body)
	case PathEmbeddings:
		s.embeddings(w, body)
	case PathModels:
		s.listModels(w, strings.TrimPrefix(strings.TrimPrefix(r.URL.Path, PathModels), "/"))
	}
}

// route returns the endpoint a path belongs to and the method it takes.
func route(path string) (endpoint, method string) {
	switch {
	case path == PathChatCompletions:
		return PathChatCompletions, http.MethodPost
	case path == PathEmbeddings:
		return PathEmbeddings, http.MethodPost
	case path == PathModels:
		return PathModels, http.MethodGet
	case strings.HasPrefix(path, PathModels+"/") && len(path) > len(PathModels)+1:
		return PathModels, http.MethodGet
	}
	return "", ""
}

func (s *Server) takeFailure() (llm.APIError, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.failures) == 0 {
		return llm.APIError{}, false
	}
	f := &s.failures[0]
	e := f.err
	if f.n--; f.n == 0 {
		s.failures = s.failures[1:]
	}
	return e, true
}

// nextID numbers the answers.
func (s *Server) nextID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	return s.seq
}

func (s *Server) streamControls() (hold *Hold, cut bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.holds) > 0 {
		hold, s.holds = s.holds[0], s.holds[1:]
	}
	if s.cuts > 0 {
		s.cuts--
		cut = true
	}
	return hold, cut
}

func writeError(w http.ResponseWriter, status int, typ, param, code, msg string) {
	llm.WriteError(w, &llm.APIError{Status: status, Type: typ, Param: param, Code: code, Message: msg})
}

// badRequest is a 400 for a request a provider refuses.
type badRequest struct {
	status      int
	param, code string
	msg         string
}

func (b *badRequest) write(w http.ResponseWriter) {
	status := b.status
	if status == 0 {
		status = http.StatusBadRequest
	}
	writeError(w, status, llm.TypeInvalidRequest, b.param, b.code, b.msg)
}

// decode checks that body is one JSON object with no member named twice
// and reads it into v.
func decode(body []byte, v any) *badRequest {
	if err := strictjson.Check(body, &strictjson.Options{Object: true}); err != nil {
		return &badRequest{msg: "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload.)"}
	}
	if err := json.Unmarshal(body, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return &badRequest{param: te.Field, msg: fmt.Sprintf("Invalid type for '%s': expected %s, got a JSON %s.", te.Field, te.Type, te.Value)}
		}
		return &badRequest{msg: "Invalid request body: " + err.Error()}
	}
	return nil
}

func (s *Server) checkModel(model string) *badRequest {
	if model == "" {
		return &badRequest{param: "model", msg: "you must provide a model parameter"}
	}
	if !s.models[model] {
		return &badRequest{status: http.StatusNotFound, param: "model", code: llm.CodeModelNotFound,
			msg: fmt.Sprintf("The model `%s` does not exist or you do not have access to it.", model)}
	}
	return nil
}

var roles = map[string]bool{
	llm.RoleSystem: true, llm.RoleDeveloper: true, llm.RoleUser: true,
	llm.RoleAssistant: true, llm.RoleTool: true, llm.RoleFunction: true,
}

func (s *Server) checkChat(req *llm.ChatCompletionRequest) *badRequest {
	if bad := s.checkModel(req.Model); bad != nil {
		return bad
	}
	if len(req.Messages) == 0 {
		return &badRequest{param: "messages", msg: "[] is too short - 'messages'"}
	}
	for i, m := range req.Messages {
		param := "messages[" + strconv.Itoa(i) + "]"
		switch {
		case !roles[m.Role]:
			return &badRequest{param: param + ".role", msg: fmt.Sprintf("Invalid value: '%s'. Supported values are: 'system', 'developer', 'user', 'assistant', 'tool' and 'function'.", m.Role)}
		case m.Role == llm.RoleTool && m.ToolCallID == "":
			return &badRequest{param: param + ".tool_call_id", msg: "Missing required parameter: '" + param + ".tool_call_id'."}
		}
		for j, p := range m.Content.Parts {
			if p.Type == "" {
				return &badRequest{param: param + ".content[" + strconv.Itoa(j) + "].type", msg: "Missing required parameter: 'type'."}
			}
		}
	}
	switch {
	case req.N < 0 || req.N > 1:
		return &badRequest{param: "n", msg: "llmtest answers one choice only (n must be 1)."}
	case req.StreamOptions != nil && !req.Stream:
		return &badRequest{param: "stream_options", msg: "The 'stream_options' parameter is only allowed when 'stream' is enabled."}
	case req.MaxTokens < 0:
		return &badRequest{param: "max_tokens", msg: "max_tokens must be at least 1."}
	case req.MaxCompletionTokens < 0:
		return &badRequest{param: "max_completion_tokens", msg: "max_completion_tokens must be at least 1."}
	case req.Temperature != nil && (*req.Temperature < 0 || *req.Temperature > 2):
		return &badRequest{param: "temperature", msg: "temperature must be between 0 and 2."}
	case req.TopP != nil && (*req.TopP < 0 || *req.TopP > 1):
		return &badRequest{param: "top_p", msg: "top_p must be between 0 and 1."}
	}
	return nil
}

// pieces splits text into its streamed pieces: each holds one word and
// the white space after it (the first also any before it), so they join
// back into text.
func pieces(text string) []string {
	var out []string
	start, inWord, seenWord := 0, false, false
	for i, r := range text {
		space := unicode.IsSpace(r)
		if !space && !inWord && seenWord {
			out = append(out, text[start:i])
			start = i
		}
		if !space {
			seenWord = true
		}
		inWord = !space
	}
	if start < len(text) {
		out = append(out, text[start:])
	}
	return out
}

func (s *Server) chat(w http.ResponseWriter, r *http.Request, body []byte) {
	var req llm.ChatCompletionRequest
	if bad := decode(body, &req); bad != nil {
		bad.write(w)
		return
	}
	if bad := s.checkChat(&req); bad != nil {
		bad.write(w)
		return
	}
	parts := pieces(s.o.Reply(&req))
	finish := llm.FinishStop
	if limit := req.CompletionLimit(); limit > 0 && Tokens(strings.Join(parts, "")) > limit {
		parts, finish = parts[:limit], llm.FinishLength
	}
	text := strings.Join(parts, "")
	prompt := 0
	for _, m := range req.Messages {
		prompt += Tokens(m.Content.String())
	}
	usage := &llm.Usage{PromptTokens: prompt, CompletionTokens: Tokens(text)}
	usage.TotalTokens = usage.PromptTokens + usage.CompletionTokens
	if s.o.NoUsage {
		usage = nil
	}
	id := "chatcmpl-llmtest-" + strconv.Itoa(s.nextID())
	if !req.Stream {
		writeJSON(w, &llm.ChatCompletion{
			ID: id, Object: llm.ObjectChatCompletion, Created: s.o.Created.Unix(), Model: req.Model,
			Choices: []llm.Choice{{
				Message:      llm.Message{Role: llm.RoleAssistant, Content: llm.Text(text)},
				FinishReason: finish,
			}},
			Usage:             usage,
			SystemFingerprint: "fp_llmtest",
		})
		return
	}
	s.stream(w, r, &req, id, parts, finish, usage)
}

func (s *Server) stream(w http.ResponseWriter, r *http.Request, req *llm.ChatCompletionRequest, id string, parts []string, finish llm.FinishReason, usage *llm.Usage) {
	hold, cut := s.streamControls()
	if hold != nil {
		// A stream that never reaches its first chunk still lets the test
		// waiting on Held go on.
		defer hold.heldOnce.Do(func() { close(hold.held) })
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	chunk := func(c *llm.Chunk) bool {
		c.ID, c.Object, c.Created, c.Model, c.SystemFingerprint = id, llm.ObjectChatCompletionChunk, s.o.Created.Unix(), req.Model, "fp_llmtest"
		b, _ := json.Marshal(c) // plain strings and numbers: cannot fail
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	first := ""
	if len(parts) > 0 {
		first = parts[0]
		parts = parts[1:]
	}
	if !chunk(&llm.Chunk{Choices: []llm.ChunkChoice{{Delta: llm.Delta{Role: llm.RoleAssistant, Content: first}}}}) {
		return
	}
	if cut {
		// Break the connection as a provider that dies mid-answer does.
		panic(http.ErrAbortHandler)
	}
	if hold != nil {
		hold.heldOnce.Do(func() { close(hold.held) })
		select {
		case <-hold.release:
		case <-r.Context().Done():
			return
		}
	}
	for _, p := range parts {
		if !chunk(&llm.Chunk{Choices: []llm.ChunkChoice{{Delta: llm.Delta{Content: p}}}}) {
			return
		}
	}
	if !chunk(&llm.Chunk{Choices: []llm.ChunkChoice{{Delta: llm.Delta{}, FinishReason: finish}}}) {
		return
	}
	if req.StreamOptions != nil && req.StreamOptions.IncludeUsage && usage != nil {
		if !chunk(&llm.Chunk{Choices: []llm.ChunkChoice{}, Usage: usage}) {
			return
		}
	}
	if _, err := io.WriteString(w, "data: [DONE]\n\n"); err == nil {
		_ = rc.Flush()
	}
}

// base64Embedding is an embedding as a provider writes it for
// encoding_format "base64".
type base64Embedding struct {
	Object    string `json:"object"`
	Index     int    `json:"index"`
	Embedding string `json:"embedding"`
}

func (s *Server) embeddings(w http.ResponseWriter, body []byte) {
	var req llm.EmbeddingRequest
	if bad := decode(body, &req); bad != nil {
		bad.write(w)
		return
	}
	if bad := s.checkModel(req.Model); bad != nil {
		bad.write(w)
		return
	}
	invalidInput := &badRequest{param: "input", msg: "'$.input' is invalid. Please check the API reference: https://platform.openai.com/docs/api-reference."}
	var texts []string
	tokens := 0
	switch {
	case req.Input.Len() == 0:
		invalidInput.write(w)
		return
	case req.Input.Texts != nil:
		for _, t := range req.Input.Texts {
			if t == "" {
				invalidInput.write(w)
				return
			}
			texts = append(texts, t)
			tokens += Tokens(t)
		}
	default:
		for _, ids := range req.Input.Tokens {
			if len(ids) == 0 {
				invalidInput.write(w)
				return
			}
			words := make([]string, len(ids))
			for i, id := range ids {
				words[i] = strconv.Itoa(id)
			}
			texts = append(texts, strings.Join(words, " "))
			tokens += len(ids)
		}
	}
	dims := s.o.Dimensions
	switch {
	case req.Dimensions < 0 || req.Dimensions > MaxDimensions:
		(&badRequest{param: "dimensions", msg: fmt.Sprintf("dimensions must be between 1 and %d.", MaxDimensions)}).write(w)
		return
	case req.Dimensions > 0:
		dims = req.Dimensions
	}
	usage := llm.EmbeddingUsage{PromptTokens: tokens, TotalTokens: tokens}
	switch req.EncodingFormat {
	case "", llm.EncodingFloat:
		resp := &llm.EmbeddingResponse{Object: llm.ObjectList, Model: req.Model, Usage: usage}
		for i, t := range texts {
			resp.Data = append(resp.Data, llm.Embedding{Object: llm.ObjectEmbedding, Index: i, Embedding: Embed(t, dims)})
		}
		writeJSON(w, resp)
	case llm.EncodingBase64:
		data := make([]base64Embedding, len(texts))
		for i, t := range texts {
			data[i] = base64Embedding{Object: llm.ObjectEmbedding, Index: i, Embedding: Embed(t, dims).Base64()}
		}
		writeJSON(w, map[string]any{"object": llm.ObjectList, "data": data, "model": req.Model, "usage": usage})
	default:
		(&badRequest{param: "encoding_format", msg: fmt.Sprintf("Invalid value: '%s'. Supported values are: 'float' and 'base64'.", req.EncodingFormat)}).write(w)
	}
}

func (s *Server) listModels(w http.ResponseWriter, id string) {
	model := func(id string) llm.Model {
		return llm.Model{ID: id, Object: llm.ObjectModel, Created: s.o.Created.Unix(), OwnedBy: "llmtest"}
	}
	if id != "" {
		if bad := s.checkModel(id); bad != nil {
			bad.write(w)
			return
		}
		writeJSON(w, model(id))
		return
	}
	list := &llm.ModelList{Object: llm.ObjectList, Data: []llm.Model{}}
	for _, m := range s.o.Models {
		list.Data = append(list.Data, model(m))
	}
	writeJSON(w, list)
}

func writeJSON(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeError(w, http.StatusInternalServerError, llm.TypeServer, "", "", "llmtest: encode answer: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	_, _ = w.Write(b)
}
