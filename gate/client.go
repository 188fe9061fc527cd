package gate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"novaos.dev/novaos/problem"
	"novaos.dev/novaos/resilience"
	"novaos.dev/novaos/secret"
)

// DefaultTimeout bounds one attempt of a call that is not a long-poll.
const DefaultTimeout = 30 * time.Second

// DefaultWaitPoll is how long one long-poll for a hold's decision asks the
// server to wait (timeout_s) before the client asks again. It stays under
// the idle timeouts of common proxies.
const DefaultWaitPoll = 25 * time.Second

// DefaultHoldMargin is added to a hold's granted window before the client
// gives up on the hold by itself: the server expires the hold at the end
// of the window, and the margin leaves it time to say so first.
const DefaultHoldMargin = 5 * time.Second

// maxAnswerBytes bounds what the client reads of one answer. An audit page
// of 1000 entries needs more than MaxDocumentSize; verdicts, claims and
// the other answers a write acts on are held to MaxDocumentSize by their
// strict decoders.
const maxAnswerBytes = 16 << 20

// ClientOptions configure a Client; nil or zero fields mean the defaults.
type ClientOptions struct {
	// HTTPClient sends the calls; nil uses a client without a global
	// timeout (each attempt gets its own deadline: DefaultTimeout, or the
	// long-poll's wait plus a margin) keeping DefaultIdleConns
	// keep-alive connections.
	HTTPClient *http.Client
	// Retry is the retry policy of idempotent calls (every call of the
	// write path, the session calls and the operator reads); nil retries
	// 429, 502, 503, 504 and connection errors 3 times in all with
	// jittered backoff, behind a breaker shared by the client's calls.
	// Give &resilience.Policy{} for a single attempt.
	Retry *resilience.Policy
	// Header is sent with every call (e.g. a trace header). An
	// Authorization in it is replaced by the token.
	Header http.Header
	// Logger receives what the client cannot return: an acknowledgement
	// that failed after the write ran. Nil uses slog.Default.
	Logger *slog.Logger
	// Tenant, for operator and admin calls with the server's admin token,
	// names the tenant (?tenant=); platform tokens carry their own.
	Tenant string
	// WaitPoll is the server-side wait of one long-poll (0:
	// DefaultWaitPoll); the client asks again at once when it passes.
	WaitPoll time.Duration
	// HoldMargin is added to a hold's window before the client fails
	// closed on its own with fail_closed_operator_timeout (0:
	// DefaultHoldMargin).
	HoldMargin time.Duration
	// Evidence bounds each session's buffer of reads (zero fields: the
	// defaults of EvidenceLimits).
	Evidence EvidenceLimits
	// NoToken sends no Authorization at all: for an operator on the
	// server's own machine when the server has no admin token (it takes a
	// tokenless loopback caller as its admin). Config.Token is ignored.
	NoToken bool
}

// Client talks to the gate's HTTP API (gate/api.go): it opens and ends
// sessions, submits gated writes and waits for their verdicts, claims and
// acknowledges executions, and makes the operator and admin calls. It is
// safe for concurrent use. The token never appears in an error or a log.
type Client struct {
	base       string // server base URL + APIPath
	token      secret.Value
	http       *http.Client
	retry      *resilience.Policy
	header     http.Header
	log        *slog.Logger
	tenant     string
	waitPoll   time.Duration
	holdMargin time.Duration
	evidence   EvidenceLimits
}

// NewClient returns a client of the gate cfg names. cfg is validated
// first: an unusable configuration is a [fail_closed_config] KillError, so
// nothing can be let through by a client that was never able to ask.
// o may be nil.
// DefaultIdleConns is how many keep-alive connections to the gate the
// default HTTP client keeps (ClientOptions.HTTPClient unset).
const DefaultIdleConns = 64

func NewClient(cfg Config, o *ClientOptions) (*Client, error) {
	if o == nil {
		o = &ClientOptions{}
	}
	if o.NoToken && cfg.Token.IsZero() {
		cfg.Token = secret.New("-") // only to pass Validate; never sent
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if o.NoToken {
		cfg.Token = secret.Value{}
	}
	u, _ := url.Parse(cfg.URL) // Validate parsed it
	base := strings.TrimSuffix(u.String(), "/")
	if !strings.HasSuffix(base, APIPath) {
		base += APIPath
	}
	c := &Client{
		base: base, token: cfg.Token, http: o.HTTPClient, retry: o.Retry, header: o.Header.Clone(),
		log: o.Logger, tenant: o.Tenant, waitPoll: o.WaitPoll, holdMargin: o.HoldMargin,
		evidence: o.Evidence.withDefaults(),
	}
	if c.http == nil {
		// Go's default transport keeps 2 idle connections per host: an
		// agent with many writes in flight would reconnect for most.
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = DefaultIdleConns
		c.http = &http.Client{Transport: t}
	}
	if c.retry == nil {
		c.retry = resilience.DefaultPolicy()
		c.retry.Breaker = resilience.NewBreaker(nil)
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	if c.waitPoll <= 0 {
		c.waitPoll = DefaultWaitPoll
	}
	if c.holdMargin <= 0 {
		c.holdMargin = DefaultHoldMargin
	}
	return c, nil
}

// Problem is an RFC 9457 problem the gate answered with. Reason, when the
// gate gave one, is the gate's own code for the refusal: an extension
// member of the problem.
type Problem struct {
	problem.Problem
	Reason Reason `json:"reason,omitempty"`

	retryAfter time.Duration
}

func (p *Problem) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "gate: %d", p.Status)
	if p.Title != "" {
		b.WriteString(" " + p.Title)
	} else if t := http.StatusText(p.Status); t != "" {
		b.WriteString(" " + t)
	}
	if p.Detail != "" {
		b.WriteString(": " + p.Detail)
	}
	if p.Reason != "" {
		fmt.Fprintf(&b, " (reason=%s)", p.Reason)
	}
	return b.String()
}

// HTTPStatus lets package resilience tell a passing outage from an answer.
func (p *Problem) HTTPStatus() int { return p.Status }

// RetryAfter is the server's Retry-After, 0 when it sent none.
func (p *Problem) RetryAfter() time.Duration { return p.retryAfter }

// protocolError is an answer that failed strict decoding or did not fit
// the request (another action's verdict, an unexpected status).
type protocolError struct{ err error }

func (e *protocolError) Error() string { return "malformed answer: " + e.err.Error() }
func (e *protocolError) Unwrap() error { return e.err }

func protocolf(format string, a ...any) error {
	return &protocolError{fmt.Errorf(format, a...)}
}

// request is one call of the API.
type request struct {
	method string
	path   string // under APIPath, already escaped
	query  url.Values
	body   any
	// idempotent calls are retried on transient faults.
	idempotent bool
	// timeout of one attempt (0: DefaultTimeout).
	timeout time.Duration
	// ok lists the statuses that are answers (nil: 200 only).
	ok []int
}

// call sends r, retrying idempotent calls, and returns the answer body.
// Its errors are transport errors, *Problem and *protocolError; the write
// path turns each into a KillError (failClosed), the operator calls
// return them wrapped.
func (c *Client) call(ctx context.Context, r request) ([]byte, error) {
	var body []byte
	if r.body != nil {
		var err error
		if body, err = json.Marshal(r.body); err != nil {
			return nil, fmt.Errorf("encode request: %w", err)
		}
	}
	policy := c.retry
	if !r.idempotent {
		policy = &resilience.Policy{Breaker: c.retry.Breaker}
	}
	var out []byte
	err := policy.Do(ctx, func(ctx context.Context) error {
		var err error
		out, err = c.attempt(ctx, r, body)
		return err
	})
	return out, err
}

func (c *Client) attempt(ctx context.Context, r request, body []byte) ([]byte, error) {
	timeout := r.timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	u := c.base + r.path
	if len(r.query) > 0 {
		u += "?" + r.query.Encode()
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, u, rd)
	if err != nil {
		return nil, err
	}
	for k, v := range c.header {
		req.Header[k] = v
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json, application/problem+json")
	if !c.token.IsZero() {
		req.Header.Set("Authorization", "Bearer "+c.token.Reveal())
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxAnswerBytes {
		return nil, protocolf("answer over %d bytes", maxAnswerBytes)
	}
	ok := r.ok
	if ok == nil {
		ok = []int{http.StatusOK}
	}
	for _, s := range ok {
		if resp.StatusCode == s {
			return data, nil
		}
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 400 {
		return nil, protocolf("unexpected status %d", resp.StatusCode)
	}
	return nil, problemOf(resp, data)
}

// problemOf reads an error answer. A body that is not a problem still
// yields a Problem with the status; a reason the package does not know is
// dropped, never trusted.
func problemOf(resp *http.Response, data []byte) *Problem {
	p := &Problem{}
	if json.Unmarshal(data, p) != nil {
		p = &Problem{}
	}
	p.Status = resp.StatusCode
	if p.Reason != "" && !p.Reason.Known() {
		p.Reason = ""
	}
	p.Title = clip(p.Title, 200)
	p.Detail = clip(p.Detail, 1000)
	if resilience.RetryableStatus(resp.StatusCode) {
		p.retryAfter = resilience.ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
	}
	return p
}

// failClosed turns a call's error into the KillError a gated write
// returns:
//   - a problem carrying a known reason keeps it (the gate said why);
//   - 401 and 403 are [fail_closed_config]: the token is missing, wrong
//     or lacks gate:submit, which a retry cannot change;
//   - 5xx, 429, transport errors, timeouts and an open breaker are
//     [fail_closed_server_unavailable];
//   - an answer that failed decoding, an unexpected status and every other
//     4xx are [fail_closed_protocol]: client and server disagree on the API.
//
// A cancelled or expired ctx is kept as the wrapped error, so errors.Is
// finds context.Canceled.
func failClosed(err error, actionID, sessionID string) *KillError {
	var k *KillError
	if errors.As(err, &k) {
		return k
	}
	reason := ReasonServerUnavailable
	var p *Problem
	var pe *protocolError
	switch {
	case errors.As(err, &p) && p.Reason != "":
		return &KillError{Verdict: Kill, Reason: p.Reason, Rationale: p.Detail, ActionID: actionID, SessionID: sessionID, Err: err}
	case errors.As(err, &p) && (p.Status == http.StatusUnauthorized || p.Status == http.StatusForbidden):
		reason = ReasonConfig
	case errors.As(err, &p) && p.Status < 500 && p.Status != http.StatusTooManyRequests:
		reason = ReasonProtocol
	case errors.As(err, &pe):
		reason = ReasonProtocol
	}
	return FailClosed(reason, actionID, sessionID, err)
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

// decodeAnswer decodes an operator or admin answer strictly (duplicate
// members, unknown fields and trailing data refused) without the
// MaxDocumentSize bound, which an audit page may exceed.
func decodeAnswer(data []byte, v any) error {
	if err := CheckStructure(data); err != nil {
		return &protocolError{err}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return &protocolError{err}
	}
	return nil
}

// escape is one path segment of an id, so an id with "/" or "?" names
// that id and nothing else.
func escape(id string) string { return url.PathEscape(id) }
