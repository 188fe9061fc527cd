package rest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/propagation"

	"novaos.dev/novaos/problem"
	"novaos.dev/novaos/resilience"
	"novaos.dev/novaos/secret"
)

// DefaultMaxAnswer bounds what Do reads of an answer when
// Client.MaxAnswer is 0.
const DefaultMaxAnswer = 16 << 20

// TenantHeader carries Client.Tenant: the tenant an admin-token call
// acts for.
const TenantHeader = "X-Tenant-ID"

// ErrMalformed is what an answer that does not fit the API wraps when
// Client.Malformed is nil.
var ErrMalformed = errors.New("rest: malformed answer")

// accept is the Accept of a call Do sends: its answer, or a problem.
const accept = "application/json, " + problem.ContentType

// Client sends the calls of one REST API. Its fields are set before its
// first call and not changed after; it is then safe for concurrent use.
type Client struct {
	// Base is the API's base URL without a trailing slash (BaseURL
	// checks one); a call's Path is appended to it.
	Base string
	// HTTP sends the requests (nil: a client of the package's own over
	// http.DefaultTransport).
	HTTP *http.Client
	// Timeout bounds one attempt of Do (0: only the caller's context).
	Timeout time.Duration
	// Retry is the policy of Do's calls and, through its Breaker, of the
	// calls a Retry other than RetryProbe makes once (nil:
	// resilience.DefaultPolicy(), without a breaker).
	Retry *resilience.Policy
	// MaxAnswer bounds what Do reads of an answer (0:
	// DefaultMaxAnswer); a longer one is a malformed answer.
	MaxAnswer int64

	// Header is sent with every request, before anything below: the
	// client's Authorization, tenant and trace context win over it.
	Header http.Header
	// Tenant, when set, is sent as X-Tenant-ID.
	Tenant string
	// Token is sent as "Authorization: Bearer <token>" (none when zero).
	Token secret.Value
	// TokenFunc, when set, is asked for the token before every request
	// (a token that is refreshed); it takes precedence over Token.
	TokenFunc func(ctx context.Context) (secret.Value, error)
	// Traceparent is the W3C trace context sent when the request's
	// context carries no span and Header names none.
	Traceparent string
	// UserAgent is sent when Header names none (nil: Go's).
	UserAgent string

	// Malformed is the sentinel an answer that does not fit the API
	// wraps (an unexpected status, a body over MaxAnswer, JSON that does
	// not decode): the client package's own (nil: ErrMalformed).
	Malformed error
	// Refused turns a refusal into the client package's error (nil: the
	// *Refusal itself).
	Refused func(*Refusal) error
}

// Retry says when Do tries a call again after a passing failure (a
// dropped or refused connection, a timeout, 429, 502, 503 or 504).
type Retry int

const (
	// RetryUnsent, the zero Retry, is for a write that must not be
	// applied twice: it is tried again, per the policy, only when its
	// connection could not even be opened, so no byte of it left.
	RetryUnsent Retry = iota
	// RetryTransient tries a call again on every passing failure, per
	// the policy: a read, or a write whose repetition changes nothing.
	RetryTransient
	// RetryOnce makes one attempt behind the policy's breaker: a write
	// whose lost answer must not make it twice.
	RetryOnce
	// RetryProbe makes one attempt that neither waits on the breaker
	// nor counts for it: a health probe.
	RetryProbe
)

// Call is one call of the API.
type Call struct {
	Method string
	// Path is appended to the base URL, already escaped.
	Path  string
	Query url.Values
	// Body is sent as JSON (a json.RawMessage as it is); nil sends none.
	Body any
	// OK lists the statuses that answer the call (nil: 200 only); any
	// other is an error.
	OK    []int
	Retry Retry
}

var defaultHTTP = &http.Client{}

// Do sends call and decodes its answer into out (unless out is nil). Its
// error is the client package's (Refused's) for a refusal, wraps
// Malformed for an answer that does not fit, and is the transport's, the
// policy's (resilience.ErrOpen) or the context's otherwise.
func (c *Client) Do(ctx context.Context, call Call, out any) error {
	var body []byte
	if call.Body != nil {
		var err error
		if body, err = json.Marshal(call.Body); err != nil {
			return fmt.Errorf("encode request: %w", err)
		}
	}
	var data []byte
	op := func(ctx context.Context) error {
		var err error
		data, err = c.attempt(ctx, call, body)
		return err
	}
	var err error
	switch call.Retry {
	case RetryProbe:
		err = op(ctx)
	case RetryOnce:
		p := &resilience.Policy{}
		if c.Retry != nil {
			p.Breaker = c.Retry.Breaker
		}
		err = p.Do(ctx, op)
	case RetryTransient:
		err = c.Retry.Do(ctx, op)
	default:
		err = c.Retry.Do(ctx, func(ctx context.Context) error {
			err := op(ctx)
			// Only a passing failure needs hiding: a refusal the policy
			// would not retry anyway stays itself, so that the breaker
			// sees a caller's mistake (a 4xx) as the service's answer.
			if err != nil && !notSent(err) && resilience.IsTransient(err) {
				return final{err}
			}
			return err
		})
		var f final
		if errors.As(err, &f) {
			err = f.err
		}
	}
	if err != nil {
		return err
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%w: %s", c.malformed(), DescribeJSONError(err))
	}
	return nil
}

// final carries a passing failure a Policy must not retry: it hides the
// error's kind from resilience.IsTransient (and so counts against the
// breaker, as the failure would), and Do unwraps it again.
type final struct{ err error }

func (f final) Error() string { return f.err.Error() }

// notSent reports whether err says no byte of the request left: the
// connection could not be opened. Only then is a RetryUnsent call tried
// again.
func notSent(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

func (c *Client) attempt(ctx context.Context, call Call, body []byte) ([]byte, error) {
	if c.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}
	u := c.Base + call.Path
	if len(call.Query) > 0 {
		u += "?" + call.Query.Encode()
	}
	req, tok, err := c.NewRequest(ctx, call.Method, u, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", accept)
	resp, err := c.httpClient().Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	ok := call.OK
	if ok == nil {
		ok = []int{http.StatusOK}
	}
	if !slices.Contains(ok, resp.StatusCode) {
		return nil, c.ErrorOf(resp, tok)
	}
	limit := c.MaxAnswer
	if limit <= 0 {
		limit = DefaultMaxAnswer
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%w: answer over %d bytes", c.malformed(), limit)
	}
	return data, nil
}

// NewRequest builds a request as Do sends it: Header, then a JSON
// Content-Type when body is not nil, the tenant, the bearer token, the
// trace context of ctx's span (else Traceparent) and the User-Agent. It
// returns the token it sent, for ErrorOf.
func (c *Client) NewRequest(ctx context.Context, method, url string, body []byte) (*http.Request, secret.Value, error) {
	tok, err := c.bearer(ctx)
	if err != nil {
		return nil, secret.Value{}, err
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return nil, secret.Value{}, err
	}
	for k, v := range c.Header {
		req.Header[k] = slices.Clone(v)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.Tenant != "" {
		req.Header.Set(TenantHeader, c.Tenant)
	}
	if !tok.IsZero() {
		if strings.ContainsAny(tok.Reveal(), "\r\n") {
			return nil, secret.Value{}, errors.New("token: must be one line")
		}
		req.Header.Set("Authorization", "Bearer "+tok.Reveal())
	}
	propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(req.Header))
	if c.Traceparent != "" && req.Header.Get("traceparent") == "" {
		req.Header.Set("traceparent", c.Traceparent)
	}
	if c.UserAgent != "" && req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", c.UserAgent)
	}
	return req, tok, nil
}

func (c *Client) bearer(ctx context.Context) (secret.Value, error) {
	if c.TokenFunc != nil {
		v, err := c.TokenFunc(ctx)
		if err != nil {
			return secret.Value{}, fmt.Errorf("token: %w", err)
		}
		return v, nil
	}
	return c.Token, nil
}

func (c *Client) httpClient() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return defaultHTTP
}

func (c *Client) malformed() error {
	if c.Malformed != nil {
		return c.Malformed
	}
	return ErrMalformed
}

// DescribeJSONError names what json.Unmarshal found wrong without quoting
// the input (an answer may echo a secret): the member of the wrong type,
// or the offset of a syntax error.
func DescribeJSONError(err error) string {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		return fmt.Sprintf("member %q has the wrong JSON type (%s)", clip(te.Field, 64), te.Value)
	case errors.As(err, &se):
		return fmt.Sprintf("not JSON (offset %d)", se.Offset)
	}
	return "not a JSON object"
}

// BaseURL checks that raw is an absolute http or https URL without user
// info, query or fragment, and returns it without a trailing slash. Its
// error quotes nothing of raw, which may hold a password.
func BaseURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", errors.New("base URL must be an absolute http(s) URL")
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", errors.New("base URL must have no user info, query or fragment")
	}
	return strings.TrimSuffix(u.String(), "/"), nil
}
