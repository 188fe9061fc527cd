package adapter

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/propagation"

	"novaos.dev/novaos/delivery"
	"novaos.dev/novaos/dpop"
	"novaos.dev/novaos/problem"
	"novaos.dev/novaos/rest"
)

// Defaults of ClientOptions.
const (
	// DefaultMaxResponseBytes bounds what a Client reads of one answer.
	DefaultMaxResponseBytes = 4 << 20
	// DefaultMaxRetryWait is the longest Retry-After a Client waits out
	// before trying again; a longer one ends the call with the refusal.
	DefaultMaxRetryWait = 2 * time.Minute
)

// ClientOptions are a Client's optional parts; nil or zero fields mean
// defaults.
type ClientOptions struct {
	// Settings are the timings and limits (nil: DefaultSettings()). The
	// client uses HTTPTimeout (one attempt), RetryMaxAttempts,
	// RetryBackoffBase and RetryBackoffCap; a polling source also
	// PollInterval and the reconnect backoff.
	Settings *Settings
	// Clock sleeps the waits between attempts and stamps proofs (nil:
	// SystemClock).
	Clock Clock
	// HTTPClient's Transport sends the requests (nil, or a nil
	// Transport: http.DefaultTransport). Its redirect policy, cookie
	// jar and timeout are not used: the client follows no redirect (a
	// run's token must not travel to another URL) and bounds each
	// attempt by Settings.HTTPTimeout.
	HTTPClient *http.Client
	// UserAgent names the adapter (and its version) in the User-Agent
	// header, before the package's own product: "<name>/<version>
	// novaos-adapter/<module version> (go<version>; <os>/<arch>)".
	UserAgent delivery.NameVersion
	// Logger logs retries and deprecated operations (nil: slog.Default).
	// Lines name the operation, status, code, correlation id and ids;
	// never a header value, body or token.
	Logger *slog.Logger
	// Rand draws the jitter of the waits between attempts (nil: the
	// package's global source). A Client locks around its use.
	Rand *rand.Rand
	// OnDeprecation is called (with one log line) the first time an
	// answer to an operation carries a Deprecation or Sunset header:
	// once per method and path template per Client.
	OnDeprecation func(DeprecationNotice)
	// MaxResponseBytes bounds what is read of one answer (0:
	// DefaultMaxResponseBytes); a longer one fails the call.
	MaxResponseBytes int64
	// MaxRetryWait is the longest Retry-After waited out before another
	// attempt (0: DefaultMaxRetryWait).
	MaxRetryWait time.Duration
}

// DeprecationNotice says that the platform marked an operation as
// deprecated (Deprecation) or going away (Sunset), with the headers'
// values as they came.
type DeprecationNotice struct {
	Operation   string
	Method      string
	Path        string // the route's template, such as /api/v1/delivery/runs/{run}
	Deprecation string
	Sunset      string
}

// Client calls the platform's delivery API for an agent. It
// authenticates every request (Bearer, or DPoP with a fresh proof per
// attempt and the newest nonce), retries what may be retried (see
// IsTransient and WithIdempotencyKey), binds the requests of a run to
// its invocation token (WithRun), and turns refusals into *ProblemError.
// It is safe for concurrent use.
type Client struct {
	base          string // no trailing slash
	creds         Credentials
	settings      Settings
	clock         Clock
	http          *http.Client
	userAgent     string
	log           *slog.Logger
	onDeprecation func(DeprecationNotice)
	maxResponse   int64
	maxRetryWait  time.Duration

	rndMu sync.Mutex
	rnd   *rand.Rand

	mu         sync.Mutex
	nonce      string
	deprecated map[string]bool
}

// clientMaxDeprecated bounds the operations a Client remembers having
// warned of; requests by Do to paths outside the API could grow it.
const clientMaxDeprecated = 1024

// NewClient makes a client of the platform at baseURL (its delivery API
// is under delivery.BasePath there). baseURL must be https, or http for
// a loopback host only (127.0.0.1, ::1, localhost), so that a token
// never crosses a network in clear text.
func NewClient(baseURL string, creds Credentials, opts *ClientOptions) (*Client, error) {
	if opts == nil {
		opts = &ClientOptions{}
	}
	base, err := clientCheckBaseURL(baseURL)
	if err != nil {
		return nil, err
	}
	if tok := creds.APIToken.Reveal(); tok != "" && (len(tok) > clientMaxTokenBytes || !clientVisibleASCII(tok)) {
		return nil, errors.New("adapter: the API token must be one line of visible ASCII characters")
	}
	if creds.DPoP != nil && creds.APIToken.IsZero() {
		return nil, errors.New("adapter: a DPoP key needs the API token bound to it")
	}
	s := DefaultSettings()
	if opts.Settings != nil {
		s = *opts.Settings
	}
	if err := clientCheckSettings(s); err != nil {
		return nil, err
	}
	ua, err := clientUserAgent(opts.UserAgent)
	if err != nil {
		return nil, err
	}
	c := &Client{
		base:          base,
		creds:         creds,
		settings:      s,
		clock:         opts.Clock,
		userAgent:     ua,
		log:           opts.Logger,
		onDeprecation: opts.OnDeprecation,
		maxResponse:   opts.MaxResponseBytes,
		maxRetryWait:  opts.MaxRetryWait,
		rnd:           opts.Rand,
		deprecated:    map[string]bool{},
	}
	if c.clock == nil {
		c.clock = SystemClock{}
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	if c.maxResponse <= 0 {
		c.maxResponse = DefaultMaxResponseBytes
	}
	if c.maxRetryWait <= 0 {
		c.maxRetryWait = DefaultMaxRetryWait
	}
	var rt http.RoundTripper
	if opts.HTTPClient != nil {
		rt = opts.HTTPClient.Transport
	}
	if rt == nil {
		rt = http.DefaultTransport
	}
	c.http = &http.Client{Transport: rt, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}
	return c, nil
}

// clientCheckBaseURL accepts an absolute https URL, or an http one of a
// loopback host, without user info, query or fragment, and returns it
// without a trailing slash. Its errors quote nothing of raw, which may
// hold a password.
func clientCheckBaseURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Opaque != "" {
		return "", errors.New("adapter: the base URL must be an absolute http(s) URL")
	}
	if u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return "", errors.New("adapter: the base URL must have no user info, query or fragment")
	}
	switch strings.ToLower(u.Scheme) {
	case "https":
	case "http":
		if !IsLoopbackHost(u.Hostname()) {
			return "", errors.New("adapter: clear-text http is allowed for a loopback host only (127.0.0.1, ::1, localhost); use https")
		}
	default:
		return "", errors.New("adapter: the base URL must be an absolute http(s) URL")
	}
	u.Scheme = strings.ToLower(u.Scheme)
	return strings.TrimSuffix(u.String(), "/"), nil
}

func clientCheckSettings(s Settings) error {
	switch {
	case s.HTTPTimeout <= 0:
		return errors.New("adapter: Settings.HTTPTimeout must be positive")
	case s.RetryMaxAttempts < 1:
		return errors.New("adapter: Settings.RetryMaxAttempts must be at least 1")
	case s.RetryBackoffBase <= 0 || s.RetryBackoffCap < s.RetryBackoffBase:
		return errors.New("adapter: Settings.RetryBackoffBase must be positive and at most RetryBackoffCap")
	case s.PollInterval <= 0:
		return errors.New("adapter: Settings.PollInterval must be positive")
	case s.ReconnectBackoffBase <= 0 || s.ReconnectBackoffCap < s.ReconnectBackoffBase:
		return errors.New("adapter: Settings.ReconnectBackoffBase must be positive and at most ReconnectBackoffCap")
	}
	return nil
}

// clientUserAgent builds the User-Agent: the adapter's product, the
// package's, and the Go runtime's.
func clientUserAgent(p delivery.NameVersion) (string, error) {
	own := "novaos-adapter/" + clientModuleVersion() + " (go" + strings.TrimPrefix(clientFirstField(runtime.Version()), "go") +
		"; " + runtime.GOOS + "/" + runtime.GOARCH + ")"
	if p.Name == "" {
		if p.Version != "" {
			return "", errors.New("adapter: ClientOptions.UserAgent has a version but no name")
		}
		return own, nil
	}
	if !clientProductToken(p.Name) || (p.Version != "" && !clientProductToken(p.Version)) {
		return "", errors.New("adapter: ClientOptions.UserAgent name and version must be HTTP tokens (letters, digits, .+_-)")
	}
	prod := p.Name
	if p.Version != "" {
		prod += "/" + p.Version
	}
	return prod + " " + own, nil
}

func clientFirstField(s string) string {
	if f := strings.Fields(s); len(f) > 0 {
		return f[0]
	}
	return "unknown"
}

func clientProductToken(s string) bool {
	if s == "" || len(s) > 100 {
		return false
	}
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', strings.ContainsRune(".+_-~!", r):
		default:
			return false
		}
	}
	return true
}

// clientModulePath is the module whose version the User-Agent names.
const clientModulePath = "novaos.dev/novaos"

// clientModuleVersion is the version of this module in the running
// binary, "dev" for a build from a work tree.
var clientModuleVersion = sync.OnceValue(func() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	v := ""
	if info.Main.Path == clientModulePath {
		v = info.Main.Version
	} else {
		for _, d := range info.Deps {
			if d.Path == clientModulePath {
				v = d.Version
				if d.Replace != nil {
					v = d.Replace.Version
				}
			}
		}
	}
	if v == "" || v == "(devel)" || !clientProductToken(v) {
		return "dev"
	}
	return v
})

// String names the client by its base URL.
func (c *Client) String() string { return "adapter.Client{" + c.base + "}" }

// GoString is String.
func (c *Client) GoString() string { return c.String() }

// Format writes String whatever the verb: the client holds credentials.
func (c *Client) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, c.String()) }

// BaseURL is the platform's base URL, without a trailing slash.
func (c *Client) BaseURL() string { return c.base }

// clientCall is one logical call: its request and what is known of its
// route.
type clientCall struct {
	method   string
	path     string // escaped, with query
	template string // the route's, or the path without query
	op       string // operation id, or method and template
	exempt   bool
	body     []byte
	key      string // Idempotency-Key, "" for none
	out      any
}

// Do sends one call of the API: method, path (escaped, starting with
// "/", with a query if any) under the base URL, in as its JSON body (nil
// for none; a json.RawMessage is sent as it is), and decodes a 2xx
// answer into out (nil to ignore it). Its error is a *ProblemError for a
// refusal, wraps ErrMalformedResponse for an answer that does not
// decode, and otherwise the transport's or ctx's error. The typed
// methods are Do with their route.
func (c *Client) Do(ctx context.Context, method, path string, in, out any) error {
	k, err := c.newCall(ctx, method, path, in, out)
	if err != nil {
		return err
	}
	return c.send(ctx, k)
}

func (c *Client) newCall(ctx context.Context, method, path string, in, out any) (*clientCall, error) {
	if !clientProductToken(method) || strings.ToUpper(method) != method {
		return nil, errors.New("adapter: the method must be an upper-case HTTP token")
	}
	if !strings.HasPrefix(path, "/") || strings.HasPrefix(path, "//") || len(path) > clientMaxPathBytes ||
		!clientVisibleASCII(path) || strings.Contains(path, "#") {
		return nil, errors.New("adapter: the path must start with one \"/\" and hold at most 8 KiB of visible ASCII characters")
	}
	if _, err := url.Parse(c.base + path); err != nil {
		return nil, errors.New("adapter: the path is not a valid URL path")
	}
	bare, _, _ := strings.Cut(path, "?")
	k := &clientCall{method: method, path: path, template: clientClip(bare, 300), out: out}
	if r, ok := clientRouteOf(method, bare); ok {
		k.template, k.op, k.exempt = r.Template, r.OperationID, r.ExemptReason != ""
	} else {
		k.op = method + " " + k.template
	}
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, fmt.Errorf("adapter: %s: encode the request: %w", k.op, err)
		}
		k.body = b
	}
	if clientNeedsKey(method, k.exempt) {
		if key, ok := clientIdempotencyKey(ctx); ok {
			if !clientValidKey(key) {
				return nil, fmt.Errorf("adapter: %s: the Idempotency-Key must be 1 to 255 visible ASCII characters", k.op)
			}
			k.key = key
		} else {
			k.key = NewID()
		}
	}
	return k, nil
}

// send makes the attempts of one call.
func (c *Client) send(ctx context.Context, k *clientCall) error {
	retries := clientMethodRetries(k.method, k.key != "", k.exempt)
	nonceRetried, proofRetried := false, false
	for attempt := 1; ; {
		status, data, err := c.attempt(ctx, k)
		if err == nil {
			return c.decodeAnswer(k, status, data)
		}
		var pe *ProblemError
		isProblem := errors.As(err, &pe)
		// A stale nonce is the protocol's handshake, not a failure: the
		// answer carried the nonce to use, and the repeat is free.
		if isProblem && pe.Status == http.StatusUnauthorized && pe.Problem.Code == delivery.CodeUseDPoPNonce &&
			c.creds.DPoP != nil && !nonceRetried {
			nonceRetried = true
			continue
		}
		// A proof refused with a good token was stale by the time it
		// arrived (a slow link, a clock step): one fresh proof is tried.
		if isProblem && pe.Status == http.StatusUnauthorized && pe.Problem.Reason == delivery.InvalidDPoPProof &&
			c.creds.DPoP != nil && !proofRetried {
			proofRetried = true
			continue
		}
		if ctx.Err() != nil || !retries || !IsTransient(err) || attempt >= c.settings.RetryMaxAttempts {
			return err
		}
		wait := c.backoff(attempt - 1)
		if isProblem && pe.RetryAfter > wait {
			if pe.RetryAfter > c.maxRetryWait {
				return err
			}
			wait = pe.RetryAfter
		}
		attrs := []any{"operation", k.op, "attempt", attempt, "wait", wait}
		if isProblem {
			attrs = append(attrs, "status", pe.Status, "code", pe.Problem.Code, "correlation_id", pe.Problem.CorrelationID)
		} else {
			attrs = append(attrs, "error", err.Error())
		}
		c.log.DebugContext(ctx, "adapter: retrying a call", attrs...)
		if serr := c.clock.Sleep(ctx, wait); serr != nil {
			return errors.Join(err, serr)
		}
		attempt++
	}
}

func (c *Client) backoff(n int) time.Duration {
	return clientBackoff(n, c.settings.RetryBackoffBase, c.settings.RetryBackoffCap, c.int64N)
}

func (c *Client) int64N(n int64) int64 {
	if c.rnd == nil {
		return rand.Int64N(n)
	}
	c.rndMu.Lock()
	defer c.rndMu.Unlock()
	return c.rnd.Int64N(n)
}

// attempt sends the request once, bounded by Settings.HTTPTimeout, and
// returns a 2xx answer's status and body, or the error.
func (c *Client) attempt(ctx context.Context, k *clientCall) (int, []byte, error) {
	actx, cancel := context.WithTimeout(ctx, c.settings.HTTPTimeout)
	defer cancel()
	req, secrets, err := c.newRequest(actx, k)
	if err != nil {
		return 0, nil, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, c.noAnswer(ctx, k, err)
	}
	defer resp.Body.Close()
	c.observe(k, resp.Header)
	data, err := io.ReadAll(io.LimitReader(resp.Body, c.maxResponse+1))
	if err != nil {
		return 0, nil, c.noAnswer(ctx, k, err)
	}
	if int64(len(data)) > c.maxResponse {
		return 0, nil, fmt.Errorf("adapter: %s: %w: the answer is larger than %d bytes", k.op, ErrMalformedResponse, c.maxResponse)
	}
	if resp.StatusCode >= 200 && resp.StatusCode <= 299 {
		return resp.StatusCode, data, nil
	}
	return 0, nil, clientReadProblem(k.op, resp.StatusCode, resp.Header, data, c.clock.Now(), secrets...)
}

// noAnswer wraps the error of a request that got no (whole) answer: the
// caller's own end of ctx is final, anything else transient.
func (c *Client) noAnswer(ctx context.Context, k *clientCall, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("adapter: %s: %w", k.op, err)
	}
	return &clientTransportError{op: k.op, err: err}
}

// clientAccept asks for the answer or a problem.
const clientAccept = "application/json, " + problem.ContentType

// newRequest builds one attempt's request, with a fresh proof, and
// returns the tokens and the proof it carries (to be cut out of a
// refusal).
func (c *Client) newRequest(ctx context.Context, k *clientCall) (*http.Request, []string, error) {
	u := c.base + k.path
	var body io.Reader
	if k.body != nil {
		body = bytes.NewReader(k.body)
	}
	req, err := http.NewRequestWithContext(ctx, k.method, u, body)
	if err != nil {
		return nil, nil, fmt.Errorf("adapter: %s: %w", k.op, err)
	}
	h := req.Header
	h.Set("Accept", clientAccept)
	if k.body != nil {
		h.Set("Content-Type", "application/json")
	}
	h.Set("User-Agent", c.userAgent)
	if k.key != "" {
		h.Set(delivery.IdempotencyKeyHeader, k.key)
	}
	var secrets []string
	if b, ok := ctx.Value(clientRunCtx{}).(*clientRunBinding); ok && b.token != nil {
		if tok := b.token(); tok != "" {
			if len(tok) > clientMaxTokenBytes || !clientVisibleASCII(tok) {
				return nil, nil, fmt.Errorf("adapter: %s: the invocation token is not one line of visible ASCII characters", k.op)
			}
			h.Set(delivery.InvocationTokenHeader, tok)
			secrets = append(secrets, tok)
		}
	}
	if tok := c.creds.APIToken.Reveal(); tok != "" {
		secrets = append(secrets, tok)
		if c.creds.DPoP != nil {
			proof, err := c.creds.DPoP.Proof(dpop.Claims{Method: k.method, URL: u, AccessToken: tok,
				Nonce: c.currentNonce(), IssuedAt: c.clock.Now(), ID: NewID()})
			if err != nil {
				return nil, nil, fmt.Errorf("adapter: %s: %w", k.op, err)
			}
			h.Set("Authorization", "DPoP "+tok)
			h.Set(dpop.Header, proof)
			secrets = append(secrets, proof)
		} else {
			h.Set("Authorization", "Bearer "+tok)
		}
	}
	propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(h))
	return req, secrets, nil
}

func clientVisibleASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' {
			return false
		}
	}
	return s != ""
}

// Bounds of what a request carries: a token (an API or invocation
// token; a JWT of a few hundred bytes) and a path with its query.
const (
	clientMaxTokenBytes = 16 << 10
	clientMaxPathBytes  = 8 << 10
)

// clientMaxNonce bounds a nonce the client keeps; a platform's is far
// shorter.
const clientMaxNonce = 1024

// observe takes from every answer what concerns the client beyond the
// call: the newest DPoP nonce, and a deprecation (warned once).
func (c *Client) observe(k *clientCall, h http.Header) {
	if n := h.Get(dpop.NonceHeader); n != "" && len(n) <= clientMaxNonce && clientVisibleASCII(n) {
		c.mu.Lock()
		c.nonce = n
		c.mu.Unlock()
	}
	dep, sun := h.Get(delivery.DeprecationHeader), h.Get(delivery.SunsetHeader)
	if dep == "" && sun == "" {
		return
	}
	key := k.method + " " + k.template
	c.mu.Lock()
	if c.deprecated[key] || len(c.deprecated) >= clientMaxDeprecated {
		c.mu.Unlock()
		return
	}
	c.deprecated[key] = true
	c.mu.Unlock()
	n := DeprecationNotice{Operation: k.op, Method: k.method, Path: k.template,
		Deprecation: clientClip(dep, clientMaxProblemWord), Sunset: clientClip(sun, clientMaxProblemWord)}
	c.log.Warn("adapter: the platform deprecates an operation", "operation", n.Operation, "method", n.Method,
		"path", n.Path, "deprecation", n.Deprecation, "sunset", n.Sunset)
	if c.onDeprecation != nil {
		c.onDeprecation(n)
	}
}

func (c *Client) currentNonce() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nonce
}

// decodeAnswer decodes a 2xx answer into the call's out. An answer the
// call needs but did not get (an empty body other than 204's) is
// malformed, never a zero value passed off as the platform's.
func (c *Client) decodeAnswer(k *clientCall, status int, data []byte) error {
	if k.out == nil || status == http.StatusNoContent {
		return nil
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return fmt.Errorf("adapter: %s: %w: empty answer", k.op, ErrMalformedResponse)
	}
	if err := json.Unmarshal(data, k.out); err != nil {
		return fmt.Errorf("adapter: %s: %w: %s", k.op, ErrMalformedResponse, rest.DescribeJSONError(err))
	}
	return nil
}

// clientRunCtx is the context key of WithRun.
type clientRunCtx struct{}

type clientRunBinding struct {
	runID string
	token func() string
}

// WithRun binds ctx to a run: every request a Client makes with the
// returned context (or one derived from it) carries the run's
// invocation token in delivery.InvocationTokenHeader, as token returns
// it when each attempt is sent, so a renewed token is used at once. A
// request whose context is not bound never carries one. token returning
// "" sends none.
func WithRun(ctx context.Context, runID string, token func() string) context.Context {
	return context.WithValue(ctx, clientRunCtx{}, &clientRunBinding{runID: runID, token: token})
}

// BoundRun is the run ctx is bound to by WithRun.
func BoundRun(ctx context.Context) (runID string, ok bool) {
	b, ok := ctx.Value(clientRunCtx{}).(*clientRunBinding)
	if !ok {
		return "", false
	}
	return b.runID, true
}

// clientDo is Do with a typed answer.
func clientDo[T any](ctx context.Context, c *Client, method, path string, in any) (T, error) {
	var out T
	err := c.Do(ctx, method, path, in, &out)
	return out, err
}

// Discover reads where the platform's delivery parts are (getDiscovery).
func (c *Client) Discover(ctx context.Context) (delivery.Discovery, error) {
	return clientDo[delivery.Discovery](ctx, c, http.MethodGet, delivery.DiscoveryPath, nil)
}

// JWKSURL is where the invocation-token keys of d are published, as an
// absolute URL: Discovery.JWKSURI resolved against the base URL (a path
// starting with "/" is appended to it, so that a platform behind a path
// prefix works), delivery.JWKSPath when it is empty. An absolute URL
// must be https, or http of a loopback host.
func (c *Client) JWKSURL(d delivery.Discovery) (string, error) {
	ref := d.JWKSURI
	if ref == "" {
		ref = delivery.JWKSPath
	}
	if strings.HasPrefix(ref, "/") && !strings.HasPrefix(ref, "//") {
		if _, err := url.Parse(c.base + ref); err != nil {
			return "", errors.New("adapter: the discovery's jwks_uri is not a URL")
		}
		return c.base + ref, nil
	}
	base, _ := url.Parse(c.base + "/")
	r, err := url.Parse(ref)
	if err != nil {
		return "", errors.New("adapter: the discovery's jwks_uri is not a URL")
	}
	abs := base.ResolveReference(r)
	if abs.Scheme != "https" && !(abs.Scheme == "http" && IsLoopbackHost(abs.Hostname())) {
		return "", errors.New("adapter: the discovery's jwks_uri must be https (or http of a loopback host)")
	}
	return abs.String(), nil
}

// clientMaxPollWait bounds the long-poll wait PollEvents asks for,
// whatever the settings say; the platform cuts it further to its own.
const clientMaxPollWait = 5 * time.Minute

// PollEvents reads a page of a consumer's events (pollAgentEvents): up
// to limit (0: the platform's default; at most delivery.MaxPage), the
// platform holding an empty page open for up to wait for one to arrive
// (0: answer at once). wait is sent in whole seconds, cut to half of
// Settings.HTTPTimeout so that the attempt outlives it.
func (c *Client) PollEvents(ctx context.Context, agentID, consumer string, limit int, wait time.Duration) (delivery.EventPage, error) {
	q := url.Values{}
	if limit > 0 {
		q.Set(delivery.PollLimitParam, strconv.Itoa(min(limit, delivery.MaxPage)))
	}
	if secs := int64(min(wait, clientMaxPollWait, c.settings.HTTPTimeout/2) / time.Second); secs > 0 {
		q.Set(delivery.PollWaitParam, strconv.FormatInt(secs, 10))
	}
	path := delivery.ConsumerEventsPath(agentID, consumer)
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	return clientDo[delivery.EventPage](ctx, c, http.MethodGet, path, nil)
}

// AckEvents acknowledges every event of a consumer up to and including
// seq (ackAgentEvents), and answers the consumer's state after it.
func (c *Client) AckEvents(ctx context.Context, agentID, consumer string, seq int64) (delivery.ConsumerState, error) {
	return clientDo[delivery.ConsumerState](ctx, c, http.MethodPost, delivery.ConsumerAckPath(agentID, consumer), delivery.ConsumerAck{Seq: seq})
}

// ConsumerState reads a consumer's cursor (getConsumerState).
func (c *Client) ConsumerState(ctx context.Context, agentID, consumer string) (delivery.ConsumerState, error) {
	return clientDo[delivery.ConsumerState](ctx, c, http.MethodGet, delivery.ConsumerPath(agentID, consumer), nil)
}

// SendHeartbeat tells the platform the agent's state (sendHeartbeat);
// the answer says when to send the next.
func (c *Client) SendHeartbeat(ctx context.Context, agentID string, hb delivery.Heartbeat) (delivery.HeartbeatAck, error) {
	return clientDo[delivery.HeartbeatAck](ctx, c, http.MethodPost, delivery.HeartbeatPath(agentID), hb)
}

// Triggerers reads who may trigger the agent (getAgentTriggerers).
func (c *Client) Triggerers(ctx context.Context, agentID string) (delivery.AgentTriggerers, error) {
	return clientDo[delivery.AgentTriggerers](ctx, c, http.MethodGet, delivery.TriggerersPath(agentID), nil)
}

// GetRun reads a run (getRun).
func (c *Client) GetRun(ctx context.Context, runID string) (delivery.Run, error) {
	return clientDo[delivery.Run](ctx, c, http.MethodGet, delivery.RunPath(runID), nil)
}

// GetRunContext reads what a run works from (getRunContext).
func (c *Client) GetRunContext(ctx context.Context, runID string) (delivery.RunContext, error) {
	return clientDo[delivery.RunContext](ctx, c, http.MethodGet, delivery.RunContextPath(runID), nil)
}

// PatchRun changes a run's progress (patchRun); a stale base version is
// refused with ErrBaseVersionConflict, whose CurrentRun is the run now.
func (c *Client) PatchRun(ctx context.Context, runID string, p delivery.RunPatch) (delivery.RunPatchResult, error) {
	return clientDo[delivery.RunPatchResult](ctx, c, http.MethodPatch, delivery.RunPath(runID), p)
}

// StartRun starts a queued run (startRun) with the token ctx is bound to
// (WithRun): send the newest.
func (c *Client) StartRun(ctx context.Context, runID string, s delivery.RunStart) (delivery.Run, error) {
	return clientDo[delivery.Run](ctx, c, http.MethodPost, delivery.StartRunPath(runID), s)
}

// ResumeRun resumes a waiting run (resumeRun) with the token ctx is
// bound to: the one of the event that answered the run.
func (c *Client) ResumeRun(ctx context.Context, runID string, r delivery.RunResume) (delivery.Run, error) {
	return clientDo[delivery.Run](ctx, c, http.MethodPost, delivery.ResumeRunPath(runID), r)
}

// RenewInvocationToken asks for a fresh token for a run
// (renewInvocationToken), with the expired one ctx is bound to.
func (c *Client) RenewInvocationToken(ctx context.Context, runID string) (delivery.InvocationTokenGrant, error) {
	return clientDo[delivery.InvocationTokenGrant](ctx, c, http.MethodPost, delivery.RenewTokenPath(runID), delivery.InvocationTokenRenew{})
}

// AwaitRunInput moves a running run to waiting (awaitRunInput).
func (c *Client) AwaitRunInput(ctx context.Context, runID string, a delivery.RunAwaitInput) (delivery.Run, error) {
	return clientDo[delivery.Run](ctx, c, http.MethodPost, delivery.AwaitInputPath(runID), a)
}

// FinishRun ends a run (finishRun).
func (c *Client) FinishRun(ctx context.Context, runID string, f delivery.RunFinish) (delivery.Run, error) {
	return clientDo[delivery.Run](ctx, c, http.MethodPost, delivery.FinishRunPath(runID), f)
}

// CreateMessage sends a message to a thread (createMessage). An empty
// ClientMsgID is filled with a new UUIDv7 first, so that the call's
// retries cannot send the message twice; an outbox sets its own, stored
// before the first send.
func (c *Client) CreateMessage(ctx context.Context, m delivery.MessageCreate) (delivery.Message, error) {
	if m.ClientMsgID == "" {
		m.ClientMsgID = NewID()
	}
	return clientDo[delivery.Message](ctx, c, http.MethodPost, delivery.MessagesPath, m)
}

// RewindConsumer sets an agent's consumer back to ackedSeq
// (rewindConsumer), with the client's credentials (a tenant admin's):
// the events after it are delivered again.
func (c *Client) RewindConsumer(ctx context.Context, agentID, consumer string, ackedSeq int64) (delivery.ConsumerState, error) {
	return clientDo[delivery.ConsumerState](ctx, c, http.MethodPost, delivery.ConsumerRewindPath(agentID, consumer), delivery.ConsumerRewind{AckedSeq: ackedSeq})
}

// CreateToken issues an API token for an agent (createToken), with the
// client's credentials (a tenant admin's). The grant's token is shown
// this once: keep it with SecretFromFile's care.
func (c *Client) CreateToken(ctx context.Context, agentID string, t delivery.TokenCreate) (delivery.TokenGrant, error) {
	return clientDo[delivery.TokenGrant](ctx, c, http.MethodPost, delivery.TokensPath(agentID), t)
}
