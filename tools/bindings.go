package tools

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"

	"novaos.dev/novaos/envconfig"
	"novaos.dev/novaos/memory"
	"novaos.dev/novaos/resilience"
)

// Names of the built-in tools the bindings call.
const (
	ToolMemoryWrite    = "novaos.memory.write"
	ToolMemoryQuery    = "novaos.memory.query"
	ToolMemoryUpdate   = "novaos.memory.update"
	ToolMemoryForget   = "novaos.memory.forget"
	ToolMemoryHint     = "novaos.memory.hint"
	ToolMemoryAssemble = "novaos.memory.assemble"

	ToolKnowledgeCreateCollection = "novaos.knowledge.create_collection"
	ToolKnowledgeListCollections  = "novaos.knowledge.list_collections"
	ToolKnowledgeDeleteCollection = "novaos.knowledge.delete_collection"
	ToolKnowledgeSearch           = "novaos.knowledge.search"
	ToolKnowledgeIngest           = "novaos.knowledge.ingest"
	ToolKnowledgeJobStatus        = "novaos.knowledge.job_status"
	ToolKnowledgeBuildGraph       = "novaos.knowledge.build_graph"
	ToolKnowledgeGraphStatus      = "novaos.knowledge.graph_status"
	ToolKnowledgeQueryGraphLocal  = "novaos.knowledge.query_graph_local"
	ToolKnowledgeQueryGraphGlobal = "novaos.knowledge.query_graph_global"

	ToolAgentsCall    = "novaos.agents.call"
	ToolHITLRequest   = "novaos.hitl.request_input"
	ToolFilesWrite    = "novaos.files.write"
	ToolFilesRead     = "novaos.files.read"
	ToolFilesList     = "novaos.files.list"
	ToolFilesDelete   = "novaos.files.delete"
	ToolNotifyWebhook = "novaos.notify.webhook"
	ToolHTTPFetch     = "novaos.http.fetch"
)

// DefaultToolTimeout is a tool call's timeout when nothing sets one:
// above the gateway's own ceilings (120 s for a built-in tool, 30 s by
// default for an upstream's), so a caller sees the gateway's timeout
// error rather than its own. A program that honours NOVAOS_TOOL_TIMEOUT_S
// reads it with envconfig.ToolTimeout and passes it as
// BindingsOptions.Timeout.
const DefaultToolTimeout = envconfig.DefaultToolTimeout

// DefaultIngestTimeout is the timeout of a knowledge ingest submission.
const DefaultIngestTimeout = 120 * time.Second

// ValidateTimeout refuses a call timeout shorter than the gateway's
// ceiling for the tools called: the SDK should wait at least as long as
// the gateway, or a call times out here while the tool keeps running
// there. gateway 0 skips the check (there is no single gateway ceiling:
// 120 s for built-in tools, 30 s by default for an upstream's).
func ValidateTimeout(timeout, gateway time.Duration) error {
	if timeout <= 0 {
		return fmt.Errorf("%w: a timeout must be positive, not %v", ErrInvalidArgument, timeout)
	}
	if gateway > 0 && timeout < gateway {
		return fmt.Errorf("%w: the timeout %v is shorter than the gateway's %v: the call would time out here while the tool still runs", ErrInvalidArgument, timeout, gateway)
	}
	return nil
}

// BindingsOptions configure Bindings; nil or zero fields mean the
// defaults.
type BindingsOptions struct {
	// Timeout is each call's timeout unless the call gives its own
	// (WithTimeout); 0 means DefaultToolTimeout (128 s). The bindings
	// never read the environment: envconfig.ToolTimeout reads
	// NOVAOS_TOOL_TIMEOUT_S for the program to pass here.
	Timeout time.Duration
	// GatewayTimeout, when set, is the floor every call's timeout is
	// checked against (ValidateTimeout); a shorter one fails the call
	// before it is sent.
	GatewayTimeout time.Duration
	// IngestTimeout is a knowledge ingest's timeout unless the call gives
	// its own (default DefaultIngestTimeout, 120 s).
	IngestTimeout time.Duration
	// KnowledgeRetry is the knowledge bindings' retry policy, the only
	// bindings that retry; nil makes 3 attempts with jittered backoff
	// from 1 s on 429, 502, 503, 504, the gateway's unavailable error and
	// network timeouts, behind a breaker that opens after 5 failures in
	// a row for 30 s. The other bindings never retry: their calls may
	// write.
	KnowledgeRetry *resilience.Policy
	// BatchConcurrency bounds IngestBatch's and PollBatch's calls in
	// flight (default 10).
	BatchConcurrency int
	// MaxBatchItems bounds the items of one IngestBatch (default 1000).
	MaxBatchItems int
	// MaxParamsBytes bounds a connector call's encoded params (default
	// DefaultMaxParamsBytes, 256 KiB).
	MaxParamsBytes int
	// TracerProvider traces every call as a client span, "tools/call
	// <tool>", whose trace context the call carries; nil uses the
	// provider of the span in the call's context (a skill's), else
	// otel.GetTracerProvider().
	TracerProvider trace.TracerProvider
}

// CallOption adjusts one binding call.
type CallOption func(*callConfig)

type callConfig struct{ timeout time.Duration }

// WithTimeout gives one call its own timeout.
func WithTimeout(d time.Duration) CallOption { return func(c *callConfig) { c.timeout = d } }

// Bindings are the platform's tools as typed calls through one Client:
// the NovaOS Python SDK's ToolBindings. Every method returns a Response,
// also when it fails; the error is nil when the tool ran (its own
// failure is Response.Success false), and otherwise says why there is
// no answer: a refused call (*Error), a call held for a person
// (*WriteConfirmationRequired: pause the task with its Pause), a
// timeout, a bad argument (ErrInvalidArgument). Only Knowledge retries.
type Bindings struct {
	Memory    *Memory
	Knowledge *Knowledge
	Agents    *Agents
	HITL      *HITL
	Files     *Files
	Notify    *Notify
	HTTP      *HTTP
	Connector *Connector
}

// NewBindings returns the bindings over c. o may be nil.
func NewBindings(c *Client, o *BindingsOptions) (*Bindings, error) {
	return newBindings(c, o, nil)
}

// observer is told of every call a binding makes: before it with the
// tool and its arguments, naming the call's id (sent to the gateway), and,
// through the function it returns, after.
type observer func(tool string, args json.RawMessage) (callID string, done func(*Response, error))

// execution is what the bindings take of a skill's execution (From).
type execution interface {
	WriteKey() string
	ContextID() string
	RunID() string
	TraceID() string
}

// core is what the bindings share.
type core struct {
	client           *Client
	timeout          time.Duration
	gatewayTimeout   time.Duration
	ingestTimeout    time.Duration
	knowledgeRetry   *resilience.Policy
	batchConcurrency int
	maxBatchItems    int
	maxParamsBytes   int
	observe          observer
	exec             execution
	tracing          trace.TracerProvider // nil: see BindingsOptions.TracerProvider
}

func newBindings(c *Client, o *BindingsOptions, observe observer) (*Bindings, error) {
	if c == nil {
		return nil, errors.New("tools: bindings need a client")
	}
	if o == nil {
		o = &BindingsOptions{}
	}
	timeout := cmp.Or(o.Timeout, DefaultToolTimeout)
	if timeout < 0 || o.GatewayTimeout < 0 || o.IngestTimeout < 0 || o.BatchConcurrency < 0 || o.MaxBatchItems < 0 || o.MaxParamsBytes < 0 {
		return nil, errors.New("tools: binding limits must not be negative")
	}
	k := &core{
		client: c, timeout: timeout, gatewayTimeout: o.GatewayTimeout,
		ingestTimeout:    cmp.Or(o.IngestTimeout, DefaultIngestTimeout),
		knowledgeRetry:   o.KnowledgeRetry,
		batchConcurrency: cmp.Or(o.BatchConcurrency, 10),
		maxBatchItems:    cmp.Or(o.MaxBatchItems, 1000),
		maxParamsBytes:   cmp.Or(o.MaxParamsBytes, DefaultMaxParamsBytes),
		observe:          observe,
		tracing:          o.TracerProvider,
	}
	if k.knowledgeRetry == nil {
		k.knowledgeRetry = &resilience.Policy{Attempts: resilience.DefaultAttempts, Breaker: resilience.NewBreaker(nil)}
	}
	return &Bindings{
		Memory: &Memory{k}, Knowledge: &Knowledge{k}, Agents: &Agents{k}, HITL: &HITL{k},
		Files: &Files{k}, Notify: &Notify{k}, HTTP: &HTTP{k}, Connector: &Connector{k},
	}, nil
}

// Call calls any tool by name, as the typed bindings do (the
// bindings' timeout, and tool.call and tool.result events when bound to
// a skill), without retries: an upstream server's tool, or a built-in
// one with arguments the typed methods do not take.
func (b *Bindings) Call(ctx context.Context, name string, args any, opts ...CallOption) (*Response, error) {
	if !validToolName(name) {
		return invalid(clip(name, 140), errors.New("not a tool name: want 1 to 128 of A-Z, a-z, 0-9, '_', '-' and '.'"))
	}
	return b.Memory.k.call(ctx, name, args, spec{}, opts)
}

// Client returns the client the bindings call through.
func (b *Bindings) Client() *Client { return b.Memory.k.client }

// spec says how one call is made.
type spec struct {
	timeout time.Duration // the binding's default, before CallOptions
	retry   *resilience.Policy
}

// invalid is the failed Response and error of a call refused before
// anything was sent.
func invalid(tool string, err error) (*Response, error) {
	err = fmt.Errorf("%w: %s: %w", ErrInvalidArgument, tool, err)
	return failed(err), err
}

// call makes one binding call: checks the timeout, encodes the
// arguments once (the observer and the gateway see the same bytes), and
// calls, retrying when s says so, each attempt with the full timeout.
func (k *core) call(ctx context.Context, tool string, args any, s spec, opts []CallOption) (*Response, error) {
	cfg := callConfig{timeout: cmp.Or(s.timeout, k.timeout)}
	for _, o := range opts {
		o(&cfg)
	}
	if err := ValidateTimeout(cfg.timeout, k.gatewayTimeout); err != nil {
		err = fmt.Errorf("%s: %w", tool, err)
		return failed(err), err
	}
	argBytes, err := objectJSON(args)
	if err != nil {
		return invalid(tool, err)
	}
	if int64(len(argBytes)) > k.client.maxReq {
		err := fmt.Errorf("%w: %s: arguments of %d bytes, over the %d-byte limit", ErrRequestTooLarge, tool, len(argBytes), k.client.maxReq)
		return failed(err), err
	}
	var done func(*Response, error)
	var callID string
	if k.observe != nil {
		callID, done = k.observe(tool, argBytes)
		ctx = WithCallID(ctx, callID)
	}
	runID := ""
	if k.exec != nil {
		runID = k.exec.RunID()
	}
	ctx, span := startCall(k.tracing, ctx, tool, callID, runID)
	attempt := func(ctx context.Context) (*CallResult, error) {
		actx, cancel := context.WithTimeout(ctx, cfg.timeout)
		defer cancel()
		res, err := k.client.CallTool(actx, tool, argBytes)
		if err != nil && ctx.Err() == nil && errors.Is(actx.Err(), context.DeadlineExceeded) {
			err = fmt.Errorf("tools: %s: no answer within %v: %w", tool, cfg.timeout, err)
		}
		return res, err
	}
	var res *CallResult
	if s.retry != nil {
		err = s.retry.Do(ctx, func(ctx context.Context) error {
			var aerr error
			res, aerr = attempt(ctx)
			return aerr
		})
	} else {
		res, err = attempt(ctx)
	}
	var resp *Response
	if err != nil {
		resp = failed(err)
	} else {
		resp = NewResponse(res)
		resp.Error = k.client.scrub(resp.Error)
	}
	endCall(span, resp, err)
	if done != nil {
		done(resp, err)
	}
	return resp, err
}

// Memory calls the memory service's tools through the gateway (the
// governed door): novaos.memory.*, with the memory package's request
// types, checked before they are sent. Bound to a skill (From), a write
// or forget without an idempotency key takes the execution's next write
// key, and a hint without a conversation the task's context id.
type Memory struct{ k *core }

// Write stores a memory.
func (m *Memory) Write(ctx context.Context, r *memory.WriteRequest, opts ...CallOption) (*Response, error) {
	if r == nil {
		return invalid(ToolMemoryWrite, errors.New("no request"))
	}
	if m.k.exec != nil && r.IdempotencyKey == "" {
		cp := *r
		cp.IdempotencyKey = m.k.exec.WriteKey()
		r = &cp
	}
	return m.send(ctx, ToolMemoryWrite, r, r.Validate, opts)
}

// Query searches one scope.
func (m *Memory) Query(ctx context.Context, r *memory.QueryRequest, opts ...CallOption) (*Response, error) {
	if r == nil {
		return invalid(ToolMemoryQuery, errors.New("no request"))
	}
	return m.send(ctx, ToolMemoryQuery, r, r.Validate, opts)
}

// Update changes an agent-scope memory in place if r.Version is still
// its version.
func (m *Memory) Update(ctx context.Context, r *memory.UpdateRequest, opts ...CallOption) (*Response, error) {
	if r == nil {
		return invalid(ToolMemoryUpdate, errors.New("no request"))
	}
	return m.send(ctx, ToolMemoryUpdate, r, r.Validate, opts)
}

// Forget deletes one memory; a request without a reason is sent with
// memory.DefaultForgetReason.
func (m *Memory) Forget(ctx context.Context, r *memory.ForgetRequest, opts ...CallOption) (*Response, error) {
	if r == nil {
		return invalid(ToolMemoryForget, errors.New("no request"))
	}
	var keys interface{ WriteKey() string }
	if m.k.exec != nil {
		keys = m.k.exec
	}
	r = r.WithDefaults(keys)
	return m.send(ctx, ToolMemoryForget, r, r.Validate, opts)
}

// Hint submits an observation for consolidation into user memory.
func (m *Memory) Hint(ctx context.Context, r *memory.HintRequest, opts ...CallOption) (*Response, error) {
	if r == nil {
		return invalid(ToolMemoryHint, errors.New("no request"))
	}
	if m.k.exec != nil && r.ConversationID == "" {
		cp := *r
		cp.ConversationID = m.k.exec.ContextID()
		r = &cp
	}
	return m.send(ctx, ToolMemoryHint, r, r.Validate, opts)
}

// Assemble gathers the context of a turn from every source the token
// can read.
func (m *Memory) Assemble(ctx context.Context, r *memory.AssembleRequest, opts ...CallOption) (*Response, error) {
	if r == nil {
		return invalid(ToolMemoryAssemble, errors.New("no request"))
	}
	if m.k.exec != nil && (r.RequestID == "" || r.TraceID == "") {
		cp := *r
		cp.RequestID = cmp.Or(cp.RequestID, m.k.exec.RunID())
		cp.TraceID = cmp.Or(cp.TraceID, m.k.exec.TraceID())
		r = &cp
	}
	return m.send(ctx, ToolMemoryAssemble, r, r.Validate, opts)
}

func (m *Memory) send(ctx context.Context, tool string, r any, validate func() error, opts []CallOption) (*Response, error) {
	if err := validate(); err != nil {
		return invalid(tool, err)
	}
	return m.k.call(ctx, tool, r, spec{}, opts)
}

// AgentCallRequest is the arguments of novaos.agents.call: a message to
// another installed agent, by its instance id, with the caller's token
// chained.
type AgentCallRequest struct {
	Agent   string `json:"agent"`
	Message string `json:"message"`
	// SkillID names the skill to run; "" lets the agent choose.
	SkillID string `json:"skill_id,omitempty"`
	// Data is structured input, sent as a data part beside the text.
	Data map[string]any `json:"data,omitempty"`
}

// Agents calls other agents through the gateway (governed,
// token-chained).
type Agents struct{ k *core }

// Call sends message to the agent instance agent, to run skillID ("":
// the agent's choice).
func (a *Agents) Call(ctx context.Context, agent, message, skillID string, opts ...CallOption) (*Response, error) {
	switch {
	case strings.TrimSpace(agent) == "":
		return invalid(ToolAgentsCall, errors.New("agent: the instance id is required"))
	case message == "":
		return invalid(ToolAgentsCall, errors.New("message is required"))
	}
	return a.k.call(ctx, ToolAgentsCall, &AgentCallRequest{Agent: agent, Message: message, SkillID: skillID}, spec{}, opts)
}

// ErrHITLUnavailable is the error of HITL.RequestInput: the platform has
// no human-input tool, and the binding fails closed rather than answer
// for a person.
var ErrHITLUnavailable = errors.New("tools: novaos.hitl.request_input is unavailable: no human-input service backs it; pause the task with a HITL input request (package a2a/hitl) instead")

// HITL is the human-in-the-loop binding.
type HITL struct{ k *core }

// RequestInput fails closed without calling the gateway: there is no
// human-input service behind the tool (as in the NovaOS Python SDK). A skill asks
// a person by pausing its task (agent.Result with StatusWaitingUser and a
// hitl.InputRequest).
func (h *HITL) RequestInput(ctx context.Context, prompt, inputType string) (*Response, error) {
	return &Response{Error: ErrHITLUnavailable.Error()}, ErrHITLUnavailable
}

// RequiresWriteHITL reports, without a network call, whether the gateway
// is likely to hold a call of the tool name for a person (-32042): the
// classifier the gateway itself uses. A tool's own annotations or the
// tenant's policy may still decide otherwise.
func (h *HITL) RequiresWriteHITL(name string) bool { return RequiresWriteHITL(name) }

// File encodings of FileWriteRequest.
const (
	EncodingText   = "text"
	EncodingBase64 = "base64"
)

// File areas of the files tools' Scope: the calling agent's own (the
// default) and the tenant's shared one.
const (
	FileScopeAgent  = "agent"
	FileScopeTenant = "tenant"
)

// FileWriteRequest is the arguments of novaos.files.write.
type FileWriteRequest struct {
	Path string `json:"path"`
	// Content is the file: text, or base64 (standard, padded) when
	// Encoding is EncodingBase64.
	Content string `json:"content"`
	// Encoding is EncodingText ("" means the same) or EncodingBase64.
	Encoding    string `json:"encoding,omitempty"`
	ContentType string `json:"content_type,omitempty"`
	// Scope is the area ("" is FileScopeAgent).
	Scope string `json:"scope,omitempty"`
	// IfVersion makes the write conditional: only if the file is at
	// that version, 0 only if it does not exist.
	IfVersion *int64 `json:"if_version,omitempty"`
}

// FileReadRequest is the arguments of novaos.files.read.
type FileReadRequest struct {
	Path  string `json:"path"`
	Scope string `json:"scope,omitempty"`
}

// FileListRequest is the arguments of novaos.files.list.
type FileListRequest struct {
	Prefix string `json:"prefix,omitempty"`
	Scope  string `json:"scope,omitempty"`
	// Cursor is the next_cursor of the page before.
	Cursor string `json:"cursor,omitempty"`
	Limit  int    `json:"limit,omitempty"`
}

// FileDeleteRequest is the arguments of novaos.files.delete.
type FileDeleteRequest struct {
	Path  string `json:"path"`
	Scope string `json:"scope,omitempty"`
	// IfVersion deletes only if the file is at that version.
	IfVersion *int64 `json:"if_version,omitempty"`
}

// Files is the tenant-scoped file storage, in the agent's own area. The
// request types (FileWriteRequest, …) reach the tenant's shared area,
// conditional writes and listing pages through Bindings.Call.
type Files struct{ k *core }

// Write stores data at path, sent base64-encoded.
func (f *Files) Write(ctx context.Context, path string, data []byte, contentType string, opts ...CallOption) (*Response, error) {
	if err := checkPath(path); err != nil {
		return invalid(ToolFilesWrite, err)
	}
	return f.k.call(ctx, ToolFilesWrite, &FileWriteRequest{Path: path, Content: base64.StdEncoding.EncodeToString(data),
		ContentType: contentType, Encoding: EncodingBase64}, spec{}, opts)
}

// WriteText stores text at path.
func (f *Files) WriteText(ctx context.Context, path, text, contentType string, opts ...CallOption) (*Response, error) {
	if err := checkPath(path); err != nil {
		return invalid(ToolFilesWrite, err)
	}
	return f.k.call(ctx, ToolFilesWrite, &FileWriteRequest{Path: path, Content: text, ContentType: contentType, Encoding: EncodingText}, spec{}, opts)
}

// Read reads the file at path: the data holds its content (text, or
// base64 as its encoding says), content_type and version.
func (f *Files) Read(ctx context.Context, path string, opts ...CallOption) (*Response, error) {
	if err := checkPath(path); err != nil {
		return invalid(ToolFilesRead, err)
	}
	return f.k.call(ctx, ToolFilesRead, &FileReadRequest{Path: path}, spec{}, opts)
}

// List lists the files under prefix ("" lists all), a page at a time.
func (f *Files) List(ctx context.Context, prefix string, opts ...CallOption) (*Response, error) {
	return f.k.call(ctx, ToolFilesList, &FileListRequest{Prefix: prefix}, spec{}, opts)
}

// Delete deletes the file at path. The gateway treats it as a write:
// it may be held for a person.
func (f *Files) Delete(ctx context.Context, path string, opts ...CallOption) (*Response, error) {
	if err := checkPath(path); err != nil {
		return invalid(ToolFilesDelete, err)
	}
	return f.k.call(ctx, ToolFilesDelete, &FileDeleteRequest{Path: path}, spec{}, opts)
}

func checkPath(path string) error {
	if strings.TrimSpace(path) == "" {
		return errors.New("path is required")
	}
	return nil
}

// WebhookRequest is the arguments of novaos.notify.webhook.
type WebhookRequest struct {
	URL string `json:"url"`
	// Payload is any JSON value, sent as the request body.
	Payload any `json:"payload"`
	// Headers are extra request headers; the gateway refuses the ones
	// the transport or the platform sets.
	Headers map[string]string `json:"headers,omitempty"`
}

// Notify sends notifications. Every send is write-class: the gateway may
// hold it for a person.
type Notify struct{ k *core }

// Webhook posts payload as JSON to url (the gateway guards the address).
func (n *Notify) Webhook(ctx context.Context, url string, payload any, opts ...CallOption) (*Response, error) {
	if err := checkURL(url); err != nil {
		return invalid(ToolNotifyWebhook, err)
	}
	return n.k.call(ctx, ToolNotifyWebhook, &WebhookRequest{URL: url, Payload: payload}, spec{}, opts)
}

// FetchRequest is the arguments of novaos.http.fetch.
type FetchRequest struct {
	URL string `json:"url"`
	// Method is GET or HEAD ("" means GET).
	Method  string            `json:"method,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
}

// HTTP fetches from the web through the gateway: domain allow-listed,
// size- and time-limited.
type HTTP struct{ k *core }

// Fetch fetches r.URL.
func (h *HTTP) Fetch(ctx context.Context, r *FetchRequest, opts ...CallOption) (*Response, error) {
	if r == nil {
		return invalid(ToolHTTPFetch, errors.New("no request"))
	}
	if err := checkURL(r.URL); err != nil {
		return invalid(ToolHTTPFetch, err)
	}
	cp := *r
	cp.Method = strings.ToUpper(cmp.Or(cp.Method, "GET"))
	if cp.Method != "GET" && cp.Method != "HEAD" {
		return invalid(ToolHTTPFetch, fmt.Errorf("method %q: want GET or HEAD", clip(r.Method, 20)))
	}
	for name, v := range cp.Headers {
		if !headerToken(name) || strings.ContainsAny(v, "\r\n") {
			return invalid(ToolHTTPFetch, fmt.Errorf("header %q: not a valid header", clip(name, 60)))
		}
	}
	return h.k.call(ctx, ToolHTTPFetch, &cp, spec{}, opts)
}

func checkURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("url: want an absolute http(s) URL")
	}
	return nil
}
