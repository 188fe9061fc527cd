package tools

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"novaos.dev/novaos/rest"
	"novaos.dev/novaos/secret"
)

// ProtocolVersion is the MCP revision the client speaks: the Streamable
// HTTP revision whose sessions (Mcp-Session-Id) the gateway keeps.
const ProtocolVersion = "2025-11-25"

// ProtocolHeader carries the MCP revision on every request.
const ProtocolHeader = "MCP-Protocol-Version"

// QueryMetaKey is where tools/list also carries its query, in the
// request's _meta, for servers that keep to the MCP schema's params.
const QueryMetaKey = "novaos.dev/query"

// CallIDMetaKey carries a call's id in its request's _meta, so the
// gateway's record of the call (the run's tool.call and tool.result, the
// audit) and the agent's own report of it share the id.
const CallIDMetaKey = "novaos.dev/call_id"

type callIDKey struct{}

// WithCallID returns ctx carrying the id CallTool sends as the call's
// (1 to 64 of a-z, A-Z, 0-9, '_', '-' and '.'; the gateway makes one for
// a call without). A call the gateway held is made again, once a person
// approved it, under the id the hold named (WriteConfirmationData.CallID)
// and with the same arguments: the gate answers it from its approval, and
// it runs once. Within a platform run the run's resume token does this.
func WithCallID(ctx context.Context, id string) context.Context {
	if id == "" {
		return ctx
	}
	return context.WithValue(ctx, callIDKey{}, id)
}

func callIDFrom(ctx context.Context) string {
	id, _ := ctx.Value(callIDKey{}).(string)
	return id
}

// Defaults of ClientOptions.
const (
	// DefaultMaxResponseBytes bounds what the client reads of one answer.
	DefaultMaxResponseBytes = 16 << 20
	// DefaultMaxRequestBytes bounds one request body: the arguments of a
	// call, encoded. The MCP Go SDK's servers take 4 MiB.
	DefaultMaxRequestBytes = 4 << 20
	// DefaultMaxListPages bounds the pages ListTools follows.
	DefaultMaxListPages = 100
)

// supportedVersions are the revisions an initialize may settle on: the
// Streamable HTTP ones, whose wire this client speaks.
var supportedVersions = map[string]bool{"2025-11-25": true, "2025-06-18": true, "2025-03-26": true}

// Errors a caller may branch on with errors.Is.
var (
	// ErrResponseTooLarge: an answer was longer than MaxResponseBytes.
	ErrResponseTooLarge = errors.New("tools: answer too large")
	// ErrRequestTooLarge: a call's encoded request was longer than
	// MaxRequestBytes; nothing was sent.
	ErrRequestTooLarge = errors.New("tools: request too large")
	// ErrInvalidArgument: a call was refused before anything was sent
	// (a malformed tool name, arguments that are not a JSON object, a
	// value a binding checks).
	ErrInvalidArgument = errors.New("tools: invalid argument")
)

// ClientOptions configure a Client; nil or zero fields mean the defaults.
type ClientOptions struct {
	// HTTPClient sends the requests; nil uses one that follows no
	// redirects (an MCP endpoint does not move, and a redirect must not
	// carry the token elsewhere). The context of each call bounds it.
	HTTPClient *http.Client
	// TenantID, when set, is sent as X-Tenant-ID; the gateway refuses a
	// call naming another tenant than the token's.
	TenantID string
	// Traceparent, when set, is sent as the W3C traceparent header.
	Traceparent string
	// Header is sent with every request: a caller's custom headers.
	// Names the agent SDK does not forward (credentials, X-NovaOS-*,
	// trace context, hop-by-hop: agent.IsSafeCustomHeader) and the MCP
	// transport's own (Mcp-*, Last-Event-ID) are dropped, and so are
	// values holding a line break; the client's Authorization, tenant and
	// protocol headers always win.
	Header http.Header
	// Timeout bounds a call whose context has no deadline (default
	// DefaultToolTimeout, 128 s).
	Timeout time.Duration
	// MaxResponseBytes bounds one answer, also a stream's (default
	// DefaultMaxResponseBytes, 16 MiB).
	MaxResponseBytes int64
	// MaxRequestBytes bounds one request body (default
	// DefaultMaxRequestBytes, 4 MiB).
	MaxRequestBytes int64
	// MaxListPages bounds the pages ListTools follows (default
	// DefaultMaxListPages, 100).
	MaxListPages int
	// ClientName and ClientVersion are what Initialize tells the server
	// (default "novaos-go", "dev").
	ClientName, ClientVersion string
	// Logger logs what the client drops or repairs; nil discards.
	Logger *slog.Logger
}

// Client calls the tool gateway (or any MCP server speaking Streamable
// HTTP): it lists tools and calls them. It is safe for concurrent use.
//
// Every call is one JSON-RPC 2.0 POST, answered with JSON or with a
// server-sent event stream that ends in the answer; both are read. A
// client need not initialize: the gateway takes a call without a session.
// After Initialize it keeps the session id the server gave and sends it
// on every call; a server that has forgotten the session (404) gets one
// new initialize and the call again.
//
// The token is sent as a bearer token and appears in no error, log or
// formatted value.
type Client struct {
	endpoint     string // the gateway's base URL + Path
	callEndpoint string // base + CallPath
	token        secret.Value
	api          *rest.Client // builds the requests: headers, token, tenant, trace context
	http         *http.Client
	timeout      time.Duration
	maxResp      int64
	maxReq       int64
	maxPages     int
	name         string
	version      string
	log          *slog.Logger
	nextID       atomic.Int64

	// initMu serialises (re-)initializing, so calls that all find their
	// session gone start one new session, not one each.
	initMu sync.Mutex

	mu          sync.Mutex
	session     string
	protocol    string // the revision initialize settled on
	initialized bool
}

// NewClient returns a client of the gateway at baseURL, the platform's
// base URL or the gateway's endpoint itself (a URL ending in Path or
// CallPath), calling with token as a bearer token. o may be nil.
func NewClient(baseURL string, token secret.Value, o *ClientOptions) (*Client, error) {
	base, err := baseOf(baseURL)
	if err != nil {
		return nil, err
	}
	if token.IsZero() {
		return nil, errors.New("tools: a token is required")
	}
	if o == nil {
		o = &ClientOptions{}
	}
	c := &Client{
		endpoint: base + Path, callEndpoint: base + CallPath,
		token:    token,
		http:     o.HTTPClient,
		timeout:  cmp.Or(o.Timeout, DefaultToolTimeout),
		maxResp:  cmp.Or(o.MaxResponseBytes, DefaultMaxResponseBytes),
		maxReq:   cmp.Or(o.MaxRequestBytes, DefaultMaxRequestBytes),
		maxPages: cmp.Or(o.MaxListPages, DefaultMaxListPages),
		name:     cmp.Or(o.ClientName, "novaos-go"),
		version:  cmp.Or(o.ClientVersion, "dev"),
		log:      o.Logger,
	}
	if c.timeout < 0 || c.maxResp < 0 || c.maxReq < 0 || c.maxPages < 0 {
		return nil, errors.New("tools: client limits must not be negative")
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if c.http == nil {
		c.http = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	if strings.ContainsAny(o.TenantID, "\r\n") || strings.ContainsAny(o.Traceparent, "\r\n") {
		return nil, errors.New("tools: the tenant and traceparent must be one line")
	}
	header := make(http.Header)
	var dropped []string
	for name, values := range o.Header {
		if !forwardable(name) || slices.ContainsFunc(values, func(v string) bool { return strings.ContainsAny(v, "\r\n") }) {
			dropped = append(dropped, name)
			continue
		}
		header[http.CanonicalHeaderKey(name)] = append([]string(nil), values...)
	}
	if len(dropped) > 0 {
		// Names only: values may be credentials.
		c.log.Debug("tools: headers not forwarded", "names", dropped)
	}
	c.api = &rest.Client{Header: header, Tenant: o.TenantID, Token: token, Traceparent: o.Traceparent}
	return c, nil
}

// baseOf checks a gateway URL and returns its base, without Path or
// CallPath and without a trailing slash.
func baseOf(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", errors.New("tools: the gateway URL must be an absolute http(s) URL")
	}
	if u.User != nil {
		return "", errors.New("tools: the gateway URL must not carry user information")
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "", errors.New("tools: the gateway URL must not carry a query or fragment")
	}
	s := strings.TrimSuffix(u.String(), "/")
	for _, p := range []string{CallPath, ListPath, Path} {
		if strings.HasSuffix(s, p) {
			return strings.TrimSuffix(s, p), nil
		}
	}
	return s, nil
}

// forwardable reports whether a caller's header may be sent: a valid
// name that is none of the credential, hop-by-hop, content-negotiation,
// trace-context, proxy, platform (X-NovaOS-*, X-Tenant-ID), A2A and MCP
// transport headers, which are the client's own or nobody's to send. It
// refuses at least what the agent SDK's IsSafeCustomHeader refuses (a
// test holds the two together), so a skill's custom headers pass
// unchanged.
func forwardable(name string) bool {
	if !headerToken(name) {
		return false
	}
	n := strings.ToLower(name)
	if blockedHeaders[n] {
		return false
	}
	for _, p := range blockedHeaderPrefixes {
		if strings.HasPrefix(n, p) {
			return false
		}
	}
	return true
}

// blockedHeaders are the lower-cased names forwardable refuses.
var blockedHeaders = map[string]bool{
	"authorization": true, "proxy-authorization": true, "cookie": true, "set-cookie": true,
	"www-authenticate": true, "proxy-authenticate": true, "x-api-key": true,
	"connection": true, "keep-alive": true, "proxy-connection": true, "te": true, "trailer": true,
	"transfer-encoding": true, "upgrade": true, "host": true, "content-length": true,
	"content-type": true, "content-encoding": true, "expect": true,
	"accept": true, "accept-encoding": true, "accept-charset": true, "accept-language": true,
	"user-agent": true, "origin": true, "referer": true, "cache-control": true, "pragma": true,
	"traceparent": true, "tracestate": true, "baggage": true,
	"forwarded": true, "via": true, "x-real-ip": true, "x-tenant-id": true, "last-event-id": true,
}

// blockedHeaderPrefixes are the lower-cased name prefixes forwardable
// refuses.
var blockedHeaderPrefixes = []string{
	"x-novaos-", "a2a-", "x-a2a-", "x-forwarded-", "sec-", "if-", "access-control-", "mcp-",
}

// headerToken reports whether s is an HTTP header name (RFC 9110 token).
func headerToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// String names the client by its endpoint; the token is never shown.
func (c *Client) String() string { return "tools.Client(" + c.endpoint + ")" }

// GoString is String, so %#v shows no field either.
func (c *Client) GoString() string { return c.String() }

// Endpoint returns the gateway's MCP endpoint (base URL + Path).
func (c *Client) Endpoint() string { return c.endpoint }

// SessionID returns the MCP session id the server gave, "" when there is
// none.
func (c *Client) SessionID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.session
}

// Initialize opens an MCP session: initialize, then
// notifications/initialized. The client keeps the Mcp-Session-Id the
// server answers with and sends it on every later call. Calling it again
// starts a new session.
func (c *Client) Initialize(ctx context.Context) error {
	c.initMu.Lock()
	defer c.initMu.Unlock()
	return c.initialize(ctx)
}

func (c *Client) initialize(ctx context.Context) error {
	c.mu.Lock()
	c.session, c.protocol = "", ""
	c.mu.Unlock()
	params := map[string]any{
		"protocolVersion": ProtocolVersion,
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]string{"name": c.name, "version": c.version},
	}
	raw, err := c.roundTrip(ctx, c.endpoint, "initialize", params, false)
	if err != nil {
		return err
	}
	var res struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return fmt.Errorf("tools: initialize: malformed result: %w", err)
	}
	if !supportedVersions[res.ProtocolVersion] {
		return fmt.Errorf("tools: initialize: the server speaks MCP %q, which this client does not", clip(res.ProtocolVersion, 40))
	}
	c.mu.Lock()
	c.protocol, c.initialized = res.ProtocolVersion, true
	c.mu.Unlock()
	return c.notify(ctx, "notifications/initialized")
}

// notify sends a JSON-RPC notification, which the server answers with
// 202 Accepted and no body.
func (c *Client) notify(ctx context.Context, method string) error {
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": method})
	if err != nil {
		return err
	}
	resp, _, err := c.post(ctx, c.endpoint, body)
	if err != nil {
		return fmt.Errorf("tools: %s: %w", method, err)
	}
	defer resp.Body.Close()
	data, err := readBounded(resp.Body, c.maxResp)
	if err != nil {
		return fmt.Errorf("tools: %s: %w", method, err)
	}
	if resp.StatusCode/100 != 2 {
		return c.httpError(method, resp, data)
	}
	return nil
}

// ListTools returns the tools the caller may call, following every page
// (nextCursor). A query keeps those whose name or description contains
// it, case-insensitively: the gateway filters by it (a NovaOS extension
// of tools/list), and the client again, so a server that ignores it
// gives the same answer.
func (c *Client) ListTools(ctx context.Context, query string) ([]Tool, error) {
	var out []Tool
	cursor := ""
	seen := map[string]bool{}
	for page := 0; ; page++ {
		if page == c.maxPages {
			return nil, fmt.Errorf("tools: tools/list: more than %d pages", c.maxPages)
		}
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		if query != "" {
			params["query"] = query
			params["_meta"] = map[string]string{QueryMetaKey: query}
		}
		raw, err := c.rpc(ctx, c.endpoint, "tools/list", params)
		if err != nil {
			return nil, err
		}
		var res struct {
			Tools      []Tool `json:"tools"`
			NextCursor string `json:"nextCursor"`
		}
		if err := json.Unmarshal(raw, &res); err != nil {
			return nil, fmt.Errorf("tools: tools/list: malformed result: %w", err)
		}
		for _, t := range res.Tools {
			if matches(&t, query) {
				out = append(out, t)
			}
		}
		if res.NextCursor == "" {
			return out, nil
		}
		if seen[res.NextCursor] {
			return nil, errors.New("tools: tools/list: the server repeated a cursor")
		}
		seen[res.NextCursor] = true
		cursor = res.NextCursor
	}
}

// matches reports whether t's name or description contains query,
// ignoring case.
func matches(t *Tool, query string) bool {
	if query == "" {
		return true
	}
	q := strings.ToLower(query)
	return strings.Contains(strings.ToLower(t.Name), q) || strings.Contains(strings.ToLower(t.Description), q)
}

// CallTool calls the tool name with args: nil (no arguments), a
// json.RawMessage holding a JSON object, or any value that encodes as
// one. It posts to CallPath.
//
// A tool that ran and failed is a result with IsError set, not an error.
// A call the gateway refused is an error: a *WriteConfirmationRequired
// when a person must approve it first (-32042), otherwise an *Error
// carrying the JSON-RPC code, its data and the HTTP status.
func (c *Client) CallTool(ctx context.Context, name string, args any) (*CallResult, error) {
	if !validToolName(name) {
		return nil, fmt.Errorf("%w: tool name %q: want 1 to 128 of A-Z, a-z, 0-9, '_', '-' and '.'", ErrInvalidArgument, clip(name, 140))
	}
	argBytes, err := objectJSON(args)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: arguments: %v", ErrInvalidArgument, name, err)
	}
	params := map[string]any{"name": name, "arguments": argBytes}
	var meta map[string]string
	if id := callIDFrom(ctx); id != "" {
		meta = map[string]string{CallIDMetaKey: id}
	}
	if meta = traceMeta(ctx, meta); meta != nil {
		params["_meta"] = meta
	}
	raw, err := c.rpc(ctx, c.callEndpoint, "tools/call", params)
	if err != nil {
		var e *Error
		if errors.As(err, &e) && e.Tool == "" {
			e.Tool = name
		}
		var w *WriteConfirmationRequired
		if errors.As(err, &w) && w.Data.ToolName == "" {
			w.Data.ToolName = name
		}
		return nil, err
	}
	res, err := decodeCallResult(raw)
	if err != nil {
		return nil, fmt.Errorf("tools: %s: %w", name, err)
	}
	return res, nil
}

// validToolName reports whether name follows MCP's tool-name rules.
func validToolName(name string) bool {
	if name == "" || len(name) > 128 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// objectJSON encodes args as a JSON object ({} for nil).
func objectJSON(args any) (json.RawMessage, error) {
	var b []byte
	switch v := args.(type) {
	case nil:
		return json.RawMessage("{}"), nil
	case json.RawMessage:
		b = v
	case []byte:
		b = v
	default:
		var err error
		if b, err = json.Marshal(v); err != nil {
			return nil, err
		}
	}
	b = bytes.TrimSpace(b)
	if len(b) == 0 || string(b) == "null" {
		return json.RawMessage("{}"), nil
	}
	if b[0] != '{' || !json.Valid(b) {
		return nil, errors.New("not a JSON object")
	}
	return json.RawMessage(b), nil
}

// rpc sends one request and returns its result. A session the server
// has forgotten (404 to a call that carried one) is opened again once,
// and the call repeated: the server did not run it.
func (c *Client) rpc(ctx context.Context, endpoint, method string, params any) (json.RawMessage, error) {
	if _, ok := ctx.Deadline(); !ok && c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	return c.roundTrip(ctx, endpoint, method, params, true)
}

func (c *Client) roundTrip(ctx context.Context, endpoint, method string, params any, reinit bool) (json.RawMessage, error) {
	id := c.nextID.Add(1)
	body, err := json.Marshal(struct {
		JSONRPC string `json:"jsonrpc"`
		ID      int64  `json:"id"`
		Method  string `json:"method"`
		Params  any    `json:"params"`
	}{"2.0", id, method, params})
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrInvalidArgument, method, err)
	}
	if int64(len(body)) > c.maxReq {
		return nil, fmt.Errorf("%w: %s: %d bytes, over the %d-byte limit", ErrRequestTooLarge, method, len(body), c.maxReq)
	}
	raw, sent, err := c.exchange(ctx, endpoint, method, body, id)
	if reinit && sent != "" && sessionGone(err) {
		if rerr := c.reopen(ctx, sent); rerr != nil {
			return nil, errors.Join(err, rerr)
		}
		raw, _, err = c.exchange(ctx, endpoint, method, body, id)
	}
	return raw, err
}

// sessionGone reports whether err is the 404 a server answers for a
// session it does not know (with a JSON-RPC error body or without).
func sessionGone(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Status == http.StatusNotFound
}

// reopen starts a new session in place of gone, unless another call has
// already done so. A session that came without an initialize is simply
// dropped.
func (c *Client) reopen(ctx context.Context, gone string) error {
	c.initMu.Lock()
	defer c.initMu.Unlock()
	c.mu.Lock()
	current, initialized := c.session, c.initialized
	if current == gone {
		c.session = ""
	}
	c.mu.Unlock()
	if current != gone || !initialized {
		return nil
	}
	c.log.Debug("tools: the server forgot the session; starting a new one")
	return c.initialize(ctx)
}

// exchange posts one request and reads its answer; sent is the session
// id the request carried.
func (c *Client) exchange(ctx context.Context, endpoint, method string, body []byte, id int64) (raw json.RawMessage, sent string, err error) {
	resp, sent, err := c.post(ctx, endpoint, body)
	if err != nil {
		return nil, sent, fmt.Errorf("tools: %s: %w", method, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		data, rerr := readBounded(resp.Body, c.maxResp)
		if rerr != nil && !errors.Is(rerr, ErrResponseTooLarge) {
			return nil, sent, fmt.Errorf("tools: %s: HTTP %d: %w", method, resp.StatusCode, rerr)
		}
		return nil, sent, c.httpError(method, resp, data)
	}
	ans, err := readAnswer(resp.Header.Get("Content-Type"), resp.Body, id, c.maxResp)
	if err != nil {
		return nil, sent, fmt.Errorf("tools: %s: %w", method, err)
	}
	if ans.Error != nil {
		return nil, sent, c.rpcError(method, resp.StatusCode, ans.Error)
	}
	return ans.Result, sent, nil
}

// post sends body with the client's headers and keeps a session id the
// answer carries.
func (c *Client) post(ctx context.Context, endpoint string, body []byte) (*http.Response, string, error) {
	req, _, err := c.api.NewRequest(ctx, http.MethodPost, endpoint, body)
	if err != nil {
		return nil, "", err
	}
	c.mu.Lock()
	session, protocol := c.session, cmp.Or(c.protocol, ProtocolVersion)
	c.mu.Unlock()
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(ProtocolHeader, protocol)
	if session != "" {
		req.Header.Set(SessionHeader, session)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, session, err
	}
	if s := resp.Header.Get(SessionHeader); s != "" && s != session {
		if validSessionID(s) {
			c.mu.Lock()
			c.session = s
			c.mu.Unlock()
		} else {
			c.log.Warn("tools: the server sent a malformed session id; it is not kept")
		}
	}
	return resp, session, nil
}

// validSessionID reports whether s is a session id MCP allows: visible
// ASCII, and here at most 256 bytes.
func validSessionID(s string) bool {
	if len(s) > 256 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// readBounded reads r whole, failing past limit bytes.
func readBounded(r io.Reader, limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return data[:limit], fmt.Errorf("%w: over %d bytes", ErrResponseTooLarge, limit)
	}
	return data, nil
}

// scrub removes the token from text a server sent, should a server echo
// it.
func (c *Client) scrub(s string) string {
	if tok := c.token.Reveal(); tok != "" && strings.Contains(s, tok) {
		return strings.ReplaceAll(s, tok, secret.Redacted)
	}
	return s
}

// rpcError is the typed error of a JSON-RPC error answer.
func (c *Client) rpcError(method string, status int, e *wireError) error {
	msg := c.scrub(e.Message)
	data := json.RawMessage(c.scrub(string(e.Data)))
	if e.Code == CodeWriteConfirmationRequired {
		w := &WriteConfirmationRequired{Message: msg, Status: status}
		if len(data) > 0 {
			if err := json.Unmarshal(data, &w.Data); err != nil {
				c.log.Warn("tools: a write confirmation's data could not be read", "err", err)
			}
		}
		return w
	}
	out := &Error{Method: method, Code: e.Code, Message: msg, Status: status, RawData: data}
	if len(data) > 0 && data[0] == '{' {
		_ = json.Unmarshal(data, &out.Data) // data in another shape stays in RawData
	}
	return out
}

// httpError is the typed error of an answer with an HTTP error status:
// a JSON-RPC error body when it has one, else the status with what the
// WWW-Authenticate challenge or a problem document says.
func (c *Client) httpError(method string, resp *http.Response, body []byte) error {
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if ct == "application/json" || ct == "text/event-stream" {
		if ans, err := readAnswer(ct, bytes.NewReader(body), 0, c.maxResp); err == nil && ans.Error != nil {
			err := c.rpcError(method, resp.StatusCode, ans.Error)
			if e, ok := err.(*Error); ok {
				e.retryAfter = retryAfterOf(resp)
			}
			return err
		}
	}
	e := &Error{Method: method, Status: resp.StatusCode, retryAfter: retryAfterOf(resp)}
	if ch := parseChallenge(resp.Header.Get("WWW-Authenticate")); ch != nil {
		e.Data.Code, e.Data.Scope = c.scrub(ch["error"]), c.scrub(ch["scope"])
		e.Message = c.scrub(ch["error_description"])
	}
	if e.Message == "" && (ct == "application/problem+json" || ct == "application/json") {
		var p struct {
			Title  string `json:"title"`
			Detail string `json:"detail"`
		}
		if json.Unmarshal(body, &p) == nil {
			e.Message = c.scrub(cmp.Or(p.Detail, p.Title))
		}
	}
	if e.Message == "" {
		e.Message = http.StatusText(resp.StatusCode)
	}
	e.Message = clip(e.Message, 1000)
	return e
}

func retryAfterOf(resp *http.Response) time.Duration {
	v := strings.TrimSpace(resp.Header.Get("Retry-After"))
	if n, err := strconv.ParseUint(v, 10, 32); err == nil {
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := time.Until(t); d > 0 {
			return d
		}
	}
	return 0
}

// clip cuts s to at most n bytes on a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}
