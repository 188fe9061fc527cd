package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/propagation"

	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/secret"
)

// Defaults of Options.
const (
	// DefaultTimeout matches the OpenAI SDKs' default.
	DefaultTimeout = 600 * time.Second
	// DefaultMaxResponseBytes bounds an answer that is not streamed.
	DefaultMaxResponseBytes = 16 << 20
	// DefaultMaxEventBytes bounds one event of a stream.
	DefaultMaxEventBytes = 1 << 20
)

// maxErrorBody bounds the part of an error answer that is read.
const maxErrorBody = 64 << 10

// Errors a caller may branch on with errors.Is. An answer the server
// refused is an *APIError instead.
var (
	// ErrTimeout: the answer, or the next event of a stream, did not come
	// within Options.Timeout.
	ErrTimeout = errors.New("llm: timed out waiting for the answer")
	// ErrResponseTooLarge: an answer larger than Options.MaxResponseBytes.
	ErrResponseTooLarge = errors.New("llm: answer too large")
	// ErrEventTooLarge: a stream event or line larger than
	// Options.MaxEventBytes.
	ErrEventTooLarge = errors.New("llm: stream event too large")
	// ErrMalformedResponse: an answer that is not what the API defines.
	ErrMalformedResponse = errors.New("llm: malformed answer")
	// ErrStreamTruncated: a stream that ended before its [DONE].
	ErrStreamTruncated = errors.New("llm: stream ended before [DONE]")
)

// Options configure a Client; nil or zero fields mean the defaults.
type Options struct {
	// HTTPClient sends the requests (default: a client of its own over
	// http.DefaultTransport). Its own Timeout, if set, also bounds a
	// whole stream.
	HTTPClient *http.Client
	// Timeout bounds a call that does not stream, and, for a stream, the
	// wait for the answer and then for each next event (default
	// DefaultTimeout).
	Timeout time.Duration
	// Headers are sent with every request: the X-NovaOS-* correlation
	// headers From sets, or a caller's own. Authorization and
	// X-NovaOS-Execution-Token are never taken from here: the token goes
	// in Authorization only.
	Headers http.Header
	// Traceparent is the W3C trace context sent when the call's context
	// carries no span (From sets the execution's).
	Traceparent string
	// MaxResponseBytes bounds an answer that is not streamed (default
	// DefaultMaxResponseBytes).
	MaxResponseBytes int64
	// MaxEventBytes bounds one event of a stream, and any one line of
	// it (default DefaultMaxEventBytes).
	MaxEventBytes int
}

// Client calls an OpenAI-compatible API: the platform's LLM gateway, or
// any provider. It is safe for concurrent use.
type Client struct {
	base        string
	token       secret.Value
	hc          *http.Client
	timeout     time.Duration
	headers     http.Header
	traceparent string
	maxResp     int64
	maxEvent    int
}

var defaultHTTPClient = &http.Client{}

// New returns a client of the API at baseURL, the OpenAI base URL (the
// platform's is "<gateway_url>/v1"), that sends token as its bearer
// token. A zero token sends none, for a gateway or provider that asks
// for none. o may be nil.
func New(baseURL string, token secret.Value, o *Options) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return nil, fmt.Errorf("llm: base URL: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("llm: base URL %q is not an absolute http or https URL", u.Redacted())
	}
	if u.User != nil {
		return nil, errors.New("llm: base URL must not carry credentials: pass the token")
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("llm: base URL %q must not have a query or fragment", u.Redacted())
	}
	if o == nil {
		o = &Options{}
	}
	c := &Client{
		base:        strings.TrimRight(u.String(), "/"),
		token:       token,
		hc:          o.HTTPClient,
		timeout:     o.Timeout,
		headers:     o.Headers.Clone(),
		traceparent: o.Traceparent,
		maxResp:     o.MaxResponseBytes,
		maxEvent:    o.MaxEventBytes,
	}
	if c.hc == nil {
		c.hc = defaultHTTPClient
	}
	if c.timeout <= 0 {
		c.timeout = DefaultTimeout
	}
	if c.maxResp <= 0 {
		c.maxResp = DefaultMaxResponseBytes
	}
	if c.maxEvent <= 0 {
		c.maxEvent = DefaultMaxEventBytes
	}
	if c.headers == nil {
		c.headers = http.Header{}
	}
	c.headers.Del("Authorization")
	c.headers.Del(identity.HeaderExecutionToken)
	return c, nil
}

// BaseURL returns the API's base URL, without a trailing slash.
func (c *Client) BaseURL() string { return c.base }

// ChatCompletion asks for a chat completion. An answer the server refused
// is an *APIError.
func (c *Client) ChatCompletion(ctx context.Context, req *ChatCompletionRequest) (*ChatCompletion, error) {
	if req == nil {
		return nil, errors.New("llm: chat completion: no request")
	}
	if req.Stream {
		return nil, errors.New("llm: chat completion: the request sets stream: use ChatCompletionStream")
	}
	var out ChatCompletion
	if err := c.call(ctx, "chat completion", http.MethodPost, "/chat/completions", req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Embeddings embeds the request's inputs.
func (c *Client) Embeddings(ctx context.Context, req *EmbeddingRequest) (*EmbeddingResponse, error) {
	if req == nil {
		return nil, errors.New("llm: embeddings: no request")
	}
	var out EmbeddingResponse
	if err := c.call(ctx, "embeddings", http.MethodPost, "/embeddings", req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Models lists the models the caller may use; the platform's gateway
// lists those the execution token's llm:model:* scopes grant.
func (c *Client) Models(ctx context.Context) (*ModelList, error) {
	var out ModelList
	if err := c.call(ctx, "models", http.MethodGet, "/models", nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// AvailableModels returns the ids of the models the caller may use.
func (c *Client) AvailableModels(ctx context.Context) ([]string, error) {
	list, err := c.Models(ctx)
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(list.Data))
	for _, m := range list.Data {
		ids = append(ids, m.ID)
	}
	return ids, nil
}

// HasModel reports whether the caller may use model.
func (c *Client) HasModel(ctx context.Context, model string) (bool, error) {
	ids, err := c.AvailableModels(ctx)
	if err != nil {
		return false, err
	}
	return slices.Contains(ids, model), nil
}

// ChatCompletionStream asks for a streamed chat completion (the request's
// Stream is set on a copy). The answer is read as it comes: call Next
// until it returns false, then Err, and Close the stream in every case.
func (c *Client) ChatCompletionStream(ctx context.Context, req *ChatCompletionRequest) (*Stream, error) {
	if req == nil {
		return nil, errors.New("llm: chat completion stream: no request")
	}
	r := *req
	r.Stream = true
	ctx, cancel := context.WithCancelCause(ctx)
	// The timer bounds the wait for the answer, then each gap between
	// events: a stream may rightly last longer than Timeout in all.
	timer := time.AfterFunc(c.timeout, func() { cancel(ErrTimeout) })
	resp, err := c.send(ctx, http.MethodPost, "/chat/completions", &r, "text/event-stream")
	if err != nil {
		timer.Stop()
		cancel(nil)
		return nil, c.callError(ctx, "chat completion stream", err)
	}
	if err := c.checkStream(resp); err != nil {
		timer.Stop()
		resp.Body.Close()
		cancel(nil)
		return nil, wrapOp("chat completion stream", err)
	}
	timer.Reset(c.timeout)
	return &Stream{
		ctx: ctx, cancel: cancel, timer: timer, timeout: c.timeout,
		body: resp.Body, dec: newEventDecoder(resp.Body, c.maxEvent),
	}, nil
}

// checkStream checks that resp is a stream, and turns a refusal into its
// *APIError.
func (c *Client) checkStream(resp *http.Response) error {
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return c.apiError(resp)
	}
	// Servers label streams loosely (openai-mock-api sends text/plain),
	// and the OpenAI SDKs read any 2xx answer to a stream request as
	// events; so does this client, except for one JSON value: an error,
	// or an answer it did not ask for.
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt != "application/json" && !strings.HasSuffix(mt, "+json") {
		return nil
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	if e := parseErrorEvent(body); e != nil {
		e.Status = resp.StatusCode
		return e
	}
	return fmt.Errorf("%w: %q is not an event stream", ErrMalformedResponse, clip(mt, maxErrorField))
}

// call sends one request and decodes its JSON answer into out.
func (c *Client) call(ctx context.Context, op, method, path string, in, out any) error {
	ctx, cancel := context.WithTimeoutCause(ctx, c.timeout, ErrTimeout)
	defer cancel()
	resp, err := c.send(ctx, method, path, in, "application/json")
	if err != nil {
		return c.callError(ctx, op, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return wrapOp(op, c.apiError(resp))
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, c.maxResp+1))
	if err != nil {
		return c.callError(ctx, op, err)
	}
	if int64(len(body)) > c.maxResp {
		return fmt.Errorf("llm: %s: %w (over %d bytes)", op, ErrResponseTooLarge, c.maxResp)
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("llm: %s: %w: %w", op, ErrMalformedResponse, err)
	}
	return nil
}

// send sends one request with the client's headers, token and trace
// context.
func (c *Client) send(ctx context.Context, method, path string, in any, accept string) (*http.Response, error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, fmt.Errorf("encode request: %w", err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return nil, err
	}
	for k, v := range c.headers {
		req.Header[k] = slices.Clone(v)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", accept)
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", "novaos-llm-go")
	}
	if !c.token.IsZero() {
		req.Header.Set("Authorization", "Bearer "+c.token.Reveal())
	}
	propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(req.Header))
	if req.Header.Get("traceparent") == "" && c.traceparent != "" {
		req.Header.Set("traceparent", c.traceparent)
	}
	return c.hc.Do(req)
}

// callError reports a failed exchange: the client's own timeout as
// ErrTimeout, anything else as it came (the transport's errors name the
// URL, never a header, so the token cannot show).
func (c *Client) callError(ctx context.Context, op string, err error) error {
	if errors.Is(context.Cause(ctx), ErrTimeout) {
		return fmt.Errorf("llm: %s: %w (%s)", op, ErrTimeout, c.timeout)
	}
	return fmt.Errorf("llm: %s: %w", op, err)
}

// apiError reads a refusal.
func (c *Client) apiError(resp *http.Response) *APIError {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	e := ParseError(resp.StatusCode, body)
	e.RetryAfter = retryAfter(resp.Header.Get("Retry-After"))
	return e
}

// wrapOp keeps an *APIError as it is, so its Error stays the server's
// words, and names the operation of any other error.
func wrapOp(op string, err error) error {
	var e *APIError
	if errors.As(err, &e) {
		return err
	}
	return fmt.Errorf("llm: %s: %w", op, err)
}

// retryAfter reads a Retry-After of delay seconds; an HTTP date or
// anything else is zero.
func retryAfter(v string) time.Duration {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 0 || n > 24*3600 {
		return 0
	}
	return time.Duration(n) * time.Second
}
