package a2aclient

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/netguard"
)

// Defaults of Options.
const (
	DefaultTimeout          = 60 * time.Second
	DefaultMaxResponseBytes = 10 << 20
	DefaultResumeAttempts   = 5
	DefaultResumeBackoff    = 100 * time.Millisecond
	DefaultResumeMaxBackoff = 5 * time.Second
)

// Options configure a Client. The zero value (or nil) is usable.
type Options struct {
	// HTTPClient sends the requests (default: a client with no overall
	// timeout; per-call timeouts come from Timeout and the context).
	HTTPClient *http.Client
	// Timeout bounds every unary call (default DefaultTimeout; negative
	// means none). Streams are bounded by their context only. WithTimeout
	// overrides it for one call.
	Timeout time.Duration
	// Tenant is sent on every call, overriding the selected interface's
	// tenant.
	Tenant string
	// Header is added to every request.
	Header http.Header
	// Extensions are activated on every call (A2A-Extensions header).
	Extensions []string
	// Auth adds credentials to every call.
	Auth AuthProvider
	// Interceptors run around every call.
	Interceptors []Interceptor
	// MaxResponseBytes bounds a unary response body (default
	// DefaultMaxResponseBytes); MaxEventBytes bounds one stream event
	// (default a2a.DefaultMaxEventSize).
	MaxResponseBytes int64
	MaxEventBytes    int
	// ResumeAttempts is how many times a dropped stream is resumed with
	// SubscribeToTask (default DefaultResumeAttempts; negative disables).
	// The wait between attempts starts at ResumeBackoff and doubles up to
	// ResumeMaxBackoff; a successful resume resets the count.
	ResumeAttempts   int
	ResumeBackoff    time.Duration
	ResumeMaxBackoff time.Duration
	// StreamIdleTimeout drops a stream connection on which nothing (no
	// frame, no keep-alive comment) arrived for this long, and resumes the
	// stream: it detects half-open connections a proxy or NAT silently
	// dropped. Zero disables it; set it above the server's keep-alive
	// interval (NovaOS sends one every 15 s).
	StreamIdleTimeout time.Duration
	// Transports lists the protocol bindings the client may use, in the
	// caller's order of preference: a2a.BindingJSONRPC,
	// a2a.BindingHTTPJSON, a2a.BindingGRPC or a custom binding's URI. New
	// takes the first of them the card offers (the card's first interface
	// with that binding); empty means any binding the client has a
	// transport for, in the card's order, which is the agent's order of
	// preference. A binding without a transport is skipped. NewForURL
	// calls its URL with the first entry (default JSONRPC).
	Transports []string
	// TransportFactories adds transports for bindings beyond the built-in
	// JSONRPC and HTTP+JSON (gRPC, a custom binding), keyed by binding, or
	// replaces a built-in one. A factory for JSONRPC also gets the A2A 0.3
	// interfaces New may select (TransportConfig.Interface.ProtocolVersion
	// 0.3.x).
	TransportFactories map[string]TransportFactory
	// Resolver fetches the card for NewFromURL (default: a new Resolver,
	// with this ConnectGuard).
	Resolver *Resolver
	// ConnectGuard, when set, checks where every connection of the client
	// goes: the interface URL when the client is built (a refused host
	// fails New), each redirect, and the address each connection is
	// dialled at, after the name was resolved, so a public name that
	// resolves to 127.0.0.1 or a cloud metadata address (DNS rebinding)
	// is refused before anything is sent (netguard.Policy.GuardClient).
	// Nil (the default) checks nothing, so a local agent on localhost
	// works; &netguard.Policy{} allows public addresses only, and its
	// AllowLoopback and AllowPrivate widen that. Metadata and reserved
	// addresses are refused whatever it says. It covers the HTTP
	// bindings (JSON-RPC, HTTP+JSON) and is handed to other transports
	// in TransportConfig.ConnectGuard (the gRPC transport of package
	// a2a/a2agrpc/grpcclient applies it). An HTTPClient whose Transport is
	// not an *http.Transport dials its own way: then only the URL and
	// redirect checks apply.
	ConnectGuard *netguard.Policy
	// DisableStreaming makes SendStreamingMessage call SendMessage and
	// yield its answer as the one frame, as it does when the card says
	// capabilities.streaming is false.
	DisableStreaming bool
	Logger           *slog.Logger
}

func (o *Options) withDefaults() Options {
	var v Options
	if o != nil {
		v = *o
	}
	if v.HTTPClient == nil {
		v.HTTPClient = &http.Client{}
	}
	if v.Timeout == 0 {
		v.Timeout = DefaultTimeout
	}
	if v.MaxResponseBytes <= 0 {
		v.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if v.MaxEventBytes <= 0 {
		v.MaxEventBytes = a2a.DefaultMaxEventSize
	}
	if v.ResumeAttempts == 0 {
		v.ResumeAttempts = DefaultResumeAttempts
	}
	if v.ResumeBackoff <= 0 {
		v.ResumeBackoff = DefaultResumeBackoff
	}
	if v.ResumeMaxBackoff <= 0 {
		v.ResumeMaxBackoff = DefaultResumeMaxBackoff
	}
	if v.Logger == nil {
		v.Logger = slog.New(slog.DiscardHandler)
	}
	if v.ConnectGuard != nil {
		v.HTTPClient = v.ConnectGuard.GuardClient(v.HTTPClient, nil)
	}
	return v
}

// Client calls one agent over one of its interfaces: the JSON-RPC or
// HTTP+JSON binding built in, or a binding added through
// Options.TransportFactories. It is safe for concurrent use.
type Client struct {
	card    *a2a.AgentCard
	iface   a2a.AgentInterface
	tenant  string
	opts    Options
	header  http.Header
	extHead string
	tr      Transport
}

// New returns a client for the card's interface chosen by
// Options.Transports (see there). The card is shared, not copied: do not
// change it afterwards.
func New(card *a2a.AgentCard, opts *Options) (*Client, error) {
	if card == nil {
		return nil, errors.New("a2aclient: nil card")
	}
	o := opts.withDefaults()
	iface, err := o.selectInterface(card)
	if err != nil {
		return nil, err
	}
	return newClient(card, *iface, &o)
}

// NewForURL returns a client for the agent answering at url, with no card:
// the binding url speaks is the first of Options.Transports (default
// JSONRPC), and the tenant comes from Options.Tenant only.
func NewForURL(url string, opts *Options) (*Client, error) {
	o := opts.withDefaults()
	binding := a2a.BindingJSONRPC
	if len(o.Transports) > 0 {
		binding = o.Transports[0]
	}
	return newClient(nil, a2a.AgentInterface{URL: url, ProtocolBinding: binding, ProtocolVersion: a2a.ProtocolVersion}, &o)
}

// NewFromURL fetches the agent card from baseURL's well-known path (through
// Options.Resolver and its cache) and returns New's client for it.
func NewFromURL(ctx context.Context, baseURL string, opts *Options) (*Client, error) {
	r := (*Resolver)(nil)
	if opts != nil {
		r = opts.Resolver
	}
	if r == nil {
		var ro ResolverOptions
		if opts != nil {
			ro.HTTPClient, ro.ConnectGuard = opts.HTTPClient, opts.ConnectGuard
		}
		r = NewResolver(&ro)
	}
	card, err := r.Resolve(ctx, baseURL)
	if err != nil {
		return nil, err
	}
	return New(card, opts)
}

// newClient builds the client of iface; opts has its defaults.
func newClient(card *a2a.AgentCard, iface a2a.AgentInterface, opts *Options) (*Client, error) {
	if iface.URL == "" {
		return nil, errors.New("a2aclient: empty agent URL")
	}
	if opts.ConnectGuard != nil {
		if err := checkInterfaceURL(opts.ConnectGuard, iface.URL); err != nil {
			return nil, fmt.Errorf("a2aclient: agent URL: %w", err)
		}
	}
	f := opts.transportFor(iface.ProtocolBinding)
	if f == nil {
		return nil, fmt.Errorf("a2aclient: no transport for the %s binding (add one in Options.TransportFactories)", iface.ProtocolBinding)
	}
	tr, err := f(&TransportConfig{Interface: iface, HTTPClient: opts.HTTPClient, MaxResponseBytes: opts.MaxResponseBytes, MaxEventBytes: opts.MaxEventBytes, Logger: opts.Logger, ConnectGuard: opts.ConnectGuard})
	if err != nil {
		return nil, err
	}
	c := &Client{card: card, iface: iface, tenant: iface.Tenant, opts: *opts, tr: tr}
	if c.opts.Tenant != "" {
		c.tenant = c.opts.Tenant
	}
	c.header = c.opts.Header.Clone()
	if len(c.opts.Extensions) > 0 {
		c.extHead = strings.Join(a2a.ParseExtensions(c.opts.Extensions), ", ")
	}
	return c, nil
}

// checkInterfaceURL applies the connect guard to an interface URL: an
// http(s) URL as netguard.Policy.CheckURL does, a bare host:port target
// (as gRPC interfaces may be written) by its host. Other forms are the
// transport's to read; its dialer is guarded all the same.
func checkInterfaceURL(p *netguard.Policy, raw string) error {
	host, err := interfaceHost(raw)
	if err != nil || host == "" {
		return err
	}
	return p.CheckHost(host)
}

// interfaceHost is the host of an interface URL, canonical as
// netguard.ParseURL returns it: of an http(s) URL, or of a bare host:port
// target; "" for other forms.
func interfaceHost(raw string) (string, error) {
	if scheme, _, ok := strings.Cut(raw, "://"); ok {
		if !strings.EqualFold(scheme, "http") && !strings.EqualFold(scheme, "https") {
			return "", nil
		}
		_, host, err := netguard.ParseURL(raw)
		return host, err
	}
	host, _, err := net.SplitHostPort(raw)
	if err != nil {
		return "", nil
	}
	return netguard.CanonicalHost(host)
}

// Card returns the agent card the client was built with (nil for NewForURL).
func (c *Client) Card() *a2a.AgentCard { return c.card }

// URL is the URL of the interface the client calls.
func (c *Client) URL() string { return c.iface.URL }

// Binding is the protocol binding of the interface the client calls
// (a2a.BindingJSONRPC, a2a.BindingHTTPJSON, …).
func (c *Client) Binding() string { return c.iface.ProtocolBinding }

// Tenant is the tenant sent on every call ("" for none).
func (c *Client) Tenant() string { return c.tenant }

// CallOption changes one call.
type CallOption func(*callConfig)

type callConfig struct {
	timeout    time.Duration
	session    string
	header     http.Header
	extensions []string
	skill      string
}

// SkillIDMetadataKey is the message metadata key WithSkill sets: A2A has
// no field that names a skill, and NovaOS agents (package agent) read the
// skill to run from it.
const SkillIDMetadataKey = "skillId"

// WithSkill names the agent's skill to run, for SendMessage and
// SendStreamingMessage (other calls ignore it): the message is sent with
// metadata SkillIDMetadataKey set to id, on a copy, so the caller's
// request is left as it was. A multi-skill NovaOS agent refuses a message
// that names no skill; a single-skill one needs none.
func WithSkill(id string) CallOption { return func(c *callConfig) { c.skill = id } }

// withSkill returns req, or a copy whose message carries the skill that
// opts name (the last WithSkill wins).
func withSkill(req *a2a.SendMessageRequest, opts []CallOption) *a2a.SendMessageRequest {
	var cfg callConfig
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.skill == "" || req.Message == nil {
		return req
	}
	r := *req
	m := *req.Message
	m.Metadata = make(map[string]any, len(req.Message.Metadata)+1)
	for k, v := range req.Message.Metadata {
		m.Metadata[k] = v
	}
	m.Metadata[SkillIDMetadataKey] = cfg.skill
	r.Message = &m
	return &r
}

// WithTimeout bounds this call (a unary call, or a stream as a whole);
// negative means no timeout.
func WithTimeout(d time.Duration) CallOption { return func(c *callConfig) { c.timeout = d } }

// WithSession names the caller's session, which keys SessionAuth's
// credential store and is visible to interceptors.
func WithSession(id string) CallOption { return func(c *callConfig) { c.session = id } }

// WithHeader adds a header to this call's request.
func WithHeader(key, value string) CallOption {
	return func(c *callConfig) {
		if c.header == nil {
			c.header = make(http.Header)
		}
		c.header.Add(key, value)
	}
}

// WithExtensions activates extensions for this call, on top of
// Options.Extensions.
func WithExtensions(uris ...string) CallOption {
	return func(c *callConfig) { c.extensions = append(c.extensions, uris...) }
}

func (c *Client) config(opts []CallOption, stream bool) callConfig {
	cfg := callConfig{timeout: c.opts.Timeout}
	if stream {
		cfg.timeout = -1
	}
	for _, o := range opts {
		o(&cfg)
	}
	return cfg
}

// prepare runs the interceptors' Before and the auth provider, and sets
// the service parameters every binding sends; it returns the call and the
// context Before returned.
func (c *Client) prepare(ctx context.Context, method string, params any, cfg *callConfig) (*Call, context.Context, error) {
	call := &Call{Method: method, Params: params, Card: c.card, Binding: c.iface.ProtocolBinding, Header: c.header.Clone(), SessionID: cfg.session}
	if call.Header == nil {
		call.Header = make(http.Header)
	}
	for k, v := range cfg.header {
		call.Header[k] = append(call.Header[k], v...)
	}
	for i, in := range c.opts.Interceptors {
		next, err := in.Before(ctx, call)
		if err != nil {
			err = fmt.Errorf("a2aclient: %s: interceptor: %w", method, err)
			c.finishFirst(ctx, call, i, err)
			return nil, nil, err
		}
		ctx = next
	}
	if c.opts.Auth != nil {
		if err := c.opts.Auth.Authenticate(ctx, call); err != nil {
			err = fmt.Errorf("a2aclient: %s: auth: %w", method, err)
			c.finish(ctx, call, err)
			return nil, nil, err
		}
	}
	ext := c.extHead
	if len(cfg.extensions) > 0 {
		ext = strings.Join(a2a.ParseExtensions(append(append([]string(nil), c.opts.Extensions...), cfg.extensions...)), ", ")
	}
	if ext != "" {
		call.Header.Set(a2a.HeaderExtensions, ext)
	}
	call.Header.Set(a2a.HeaderVersion, a2a.ProtocolVersion)
	return call, ctx, nil
}

// after runs the interceptors' After in reverse order.
func (c *Client) after(ctx context.Context, call *Call, result any, err error) error {
	for i := len(c.opts.Interceptors) - 1; i >= 0; i-- {
		if e := c.opts.Interceptors[i].After(ctx, call, result, err); e != nil {
			err = e
		}
	}
	return err
}

// finish tells the Finishers among the interceptors that call is over,
// in reverse order.
func (c *Client) finish(ctx context.Context, call *Call, err error) {
	c.finishFirst(ctx, call, len(c.opts.Interceptors), err)
}

// finishFirst is finish for the first n interceptors only: those whose
// Before admitted the call.
func (c *Client) finishFirst(ctx context.Context, call *Call, n int, err error) {
	for i := n - 1; i >= 0; i-- {
		if f, ok := c.opts.Interceptors[i].(Finisher); ok {
			f.Finish(ctx, call, err)
		}
	}
}

// unary runs one request/response call.
func (c *Client) unary(ctx context.Context, method string, params, out any, opts []CallOption) error {
	cfg := c.config(opts, false)
	if cfg.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.timeout)
		defer cancel()
	}
	call, ctx, err := c.prepare(ctx, method, params, &cfg)
	if err != nil {
		return err
	}
	err = c.tr.Unary(ctx, call, out)
	if len(c.opts.Interceptors) > 0 {
		var res any
		if err == nil {
			res = out
		}
		err = c.after(ctx, call, res, err)
		c.finish(ctx, call, err)
	}
	return err
}

// SendMessage sends a message and returns the task or message the agent
// answers with (A2A SendMessage).
func (c *Client) SendMessage(ctx context.Context, req *a2a.SendMessageRequest, opts ...CallOption) (*a2a.SendMessageResponse, error) {
	r := *withSkill(req, opts)
	if r.Tenant == "" {
		r.Tenant = c.tenant
	}
	var out a2a.SendMessageResponse
	if err := c.unary(ctx, a2a.MethodSendMessage, &r, &out, opts); err != nil {
		return nil, err
	}
	if (out.Task == nil) == (out.Message == nil) {
		return nil, fmt.Errorf("a2aclient: %s: %w: result must hold exactly one of task or message", a2a.MethodSendMessage, ErrInvalidResponse)
	}
	return &out, nil
}

// SendText sends one user text message, continuing taskID and contextID
// when they are not empty.
func (c *Client) SendText(ctx context.Context, text, taskID, contextID string, opts ...CallOption) (*a2a.SendMessageResponse, error) {
	return c.SendMessage(ctx, TextRequest(text, taskID, contextID), opts...)
}

// TextRequest builds a SendMessageRequest with one user text part and a
// fresh message id.
func TextRequest(text, taskID, contextID string) *a2a.SendMessageRequest {
	m := a2a.NewMessage(a2a.RoleUser, a2a.TextPart(text))
	m.TaskID, m.ContextID = taskID, contextID
	return &a2a.SendMessageRequest{Message: m}
}

// SendMessageSafe is SendMessage with the error as a value: it never
// returns a Go error, and Result.Unreachable tells an agent that was not
// reached from one that answered with an error.
func (c *Client) SendMessageSafe(ctx context.Context, req *a2a.SendMessageRequest, opts ...CallOption) Result {
	out, err := c.SendMessage(ctx, req, opts...)
	if err != nil {
		return Result{Err: err}
	}
	return Result{Task: out.Task, Message: out.Message}
}

// GetTask returns a task (A2A GetTask).
func (c *Client) GetTask(ctx context.Context, req *a2a.GetTaskRequest, opts ...CallOption) (*a2a.Task, error) {
	r := *req
	if r.Tenant == "" {
		r.Tenant = c.tenant
	}
	var out a2a.Task
	if err := c.unary(ctx, a2a.MethodGetTask, &r, &out, opts); err != nil {
		return nil, err
	}
	return &out, nil
}

// CancelTask asks the agent to cancel a task and returns the task as it
// stands afterwards (A2A CancelTask): read its state, the agent decides.
func (c *Client) CancelTask(ctx context.Context, req *a2a.CancelTaskRequest, opts ...CallOption) (*a2a.Task, error) {
	r := *req
	if r.Tenant == "" {
		r.Tenant = c.tenant
	}
	var out a2a.Task
	if err := c.unary(ctx, a2a.MethodCancelTask, &r, &out, opts); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListTasks lists the caller's tasks (A2A ListTasks).
func (c *Client) ListTasks(ctx context.Context, req *a2a.ListTasksRequest, opts ...CallOption) (*a2a.ListTasksResponse, error) {
	r := *req
	if r.Tenant == "" {
		r.Tenant = c.tenant
	}
	var out a2a.ListTasksResponse
	if err := c.unary(ctx, a2a.MethodListTasks, &r, &out, opts); err != nil {
		return nil, err
	}
	return &out, nil
}

// CreateTaskPushNotificationConfig registers a webhook for a task.
func (c *Client) CreateTaskPushNotificationConfig(ctx context.Context, req *a2a.TaskPushNotificationConfig, opts ...CallOption) (*a2a.TaskPushNotificationConfig, error) {
	r := *req
	if r.Tenant == "" {
		r.Tenant = c.tenant
	}
	var out a2a.TaskPushNotificationConfig
	if err := c.unary(ctx, a2a.MethodCreateTaskPushNotificationConfig, &r, &out, opts); err != nil {
		return nil, err
	}
	return &out, nil
}

// GetTaskPushNotificationConfig returns one webhook registration.
func (c *Client) GetTaskPushNotificationConfig(ctx context.Context, req *a2a.GetTaskPushNotificationConfigRequest, opts ...CallOption) (*a2a.TaskPushNotificationConfig, error) {
	r := *req
	if r.Tenant == "" {
		r.Tenant = c.tenant
	}
	var out a2a.TaskPushNotificationConfig
	if err := c.unary(ctx, a2a.MethodGetTaskPushNotificationConfig, &r, &out, opts); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListTaskPushNotificationConfigs lists a task's webhook registrations.
func (c *Client) ListTaskPushNotificationConfigs(ctx context.Context, req *a2a.ListTaskPushNotificationConfigsRequest, opts ...CallOption) (*a2a.ListTaskPushNotificationConfigsResponse, error) {
	r := *req
	if r.Tenant == "" {
		r.Tenant = c.tenant
	}
	var out a2a.ListTaskPushNotificationConfigsResponse
	if err := c.unary(ctx, a2a.MethodListTaskPushNotificationConfigs, &r, &out, opts); err != nil {
		return nil, err
	}
	return &out, nil
}

// DeleteTaskPushNotificationConfig removes one webhook registration.
func (c *Client) DeleteTaskPushNotificationConfig(ctx context.Context, req *a2a.DeleteTaskPushNotificationConfigRequest, opts ...CallOption) error {
	r := *req
	if r.Tenant == "" {
		r.Tenant = c.tenant
	}
	return c.unary(ctx, a2a.MethodDeleteTaskPushNotificationConfig, &r, nil, opts)
}

// GetExtendedAgentCard returns the agent's extended card (for an
// authenticated caller).
func (c *Client) GetExtendedAgentCard(ctx context.Context, opts ...CallOption) (*a2a.AgentCard, error) {
	r := a2a.GetExtendedAgentCardRequest{Tenant: c.tenant}
	var out a2a.AgentCard
	if err := c.unary(ctx, a2a.MethodGetExtendedAgentCard, &r, &out, opts); err != nil {
		return nil, err
	}
	return &out, nil
}
