package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"novaos.dev/novaos/resilience"
	"novaos.dev/novaos/rest"
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

// executionTokenHeader is where the platform's auth proxy hands an agent
// its token (identity.HeaderExecutionToken); a client never sends it.
const executionTokenHeader = "X-NovaOS-Execution-Token"

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
	// Retry says how a call that failed for a while (429 other than a
	// spent budget, 502, 503, 504, a refused or broken connection, a
	// timeout) is tried again; nil is resilience.DefaultPolicy(), three
	// attempts in all, like the OpenAI SDKs' two retries, waiting at
	// least what Retry-After asks. A stream is retried only until its
	// answer starts. &resilience.Policy{} makes one attempt.
	Retry *resilience.Policy
}

// Client calls an OpenAI-compatible API: the platform's LLM gateway, or
// any provider. It is safe for concurrent use.
type Client struct {
	base     string
	api      *rest.Client // builds the requests: headers, token, trace context
	hc       *http.Client
	timeout  time.Duration
	maxResp  int64
	maxEvent int
	retry    *resilience.Policy
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
		base:     strings.TrimRight(u.String(), "/"),
		hc:       o.HTTPClient,
		timeout:  o.Timeout,
		maxResp:  o.MaxResponseBytes,
		maxEvent: o.MaxEventBytes,
		retry:    o.Retry,
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
	if c.retry == nil {
		c.retry = resilience.DefaultPolicy()
	}
	headers := o.Headers.Clone()
	headers.Del("Authorization")
	headers.Del(executionTokenHeader)
	c.api = &rest.Client{Header: headers, Token: token, Traceparent: o.Traceparent, UserAgent: "novaos-llm-go"}
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
	payload, err := json.Marshal(&r)
	if err != nil {
		return nil, fmt.Errorf("llm: chat completion stream: encode request: %w", err)
	}
	var s *Stream
	err = c.retry.Do(ctx, func(ctx context.Context) error {
		sctx, cancel := context.WithCancelCause(ctx)
		// The timer bounds the wait for the answer, then each gap
		// between events: a stream may rightly last longer than Timeout
		// in all.
		timer := time.AfterFunc(c.timeout, func() { cancel(ErrTimeout) })
		resp, err := c.send(sctx, http.MethodPost, "/chat/completions", payload, "text/event-stream")
		if err == nil {
			if err = c.checkStream(resp); err != nil {
				resp.Body.Close()
			}
		}
		if err != nil {
			timer.Stop()
			err = c.attemptError(sctx, err)
			cancel(nil)
			return err
		}
		timer.Reset(c.timeout)
		s = &Stream{
			ctx: sctx, cancel: cancel, timer: timer, timeout: c.timeout,
			body: resp.Body, dec: NewEventReader(resp.Body, c.maxEvent),
		}
		return nil
	})
	if err != nil {
		return nil, wrapOp("chat completion stream", err)
	}
	return s, nil
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

// call sends one request, with retries, and decodes its JSON answer into
// out.
func (c *Client) call(ctx context.Context, op, method, path string, in, out any) error {
	var payload []byte
	if in != nil {
		var err error
		if payload, err = json.Marshal(in); err != nil {
			return fmt.Errorf("llm: %s: encode request: %w", op, err)
		}
	}
	err := c.retry.Do(ctx, func(ctx context.Context) error {
		ctx, cancel := context.WithTimeoutCause(ctx, c.timeout, ErrTimeout)
		defer cancel()
		resp, err := c.send(ctx, method, path, payload, "application/json")
		if err != nil {
			return c.attemptError(ctx, err)
		}
		defer resp.Body.Close()
		if resp.StatusCode < 200 || resp.StatusCode > 299 {
			return c.attemptError(ctx, c.apiError(resp))
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, c.maxResp+1))
		if err != nil {
			return c.attemptError(ctx, err)
		}
		if int64(len(body)) > c.maxResp {
			return fmt.Errorf("%w (over %d bytes)", ErrResponseTooLarge, c.maxResp)
		}
		if err := json.Unmarshal(body, out); err != nil {
			return fmt.Errorf("%w: %w", ErrMalformedResponse, err)
		}
		return nil
	})
	if err != nil {
		return wrapOp(op, err)
	}
	return nil
}

// send sends one request with the client's headers, token and trace
// context.
func (c *Client) send(ctx context.Context, method, path string, payload []byte, accept string) (*http.Response, error) {
	req, _, err := c.api.NewRequest(ctx, method, c.base+path, payload)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", accept)
	return c.hc.Do(req)
}

// attemptError classifies the error of one attempt for the retry policy:
// the client's own timeout becomes ErrTimeout, worth another attempt; a
// refusal is worth one when it is Temporary; other errors are judged by
// resilience.IsTransient (network failures are, a cancelled caller is
// not). The transport's errors name the URL, never a header, so the
// token cannot show.
func (c *Client) attemptError(ctx context.Context, err error) error {
	if errors.Is(context.Cause(ctx), ErrTimeout) {
		return resilience.Retryable(fmt.Errorf("%w (%s)", ErrTimeout, c.timeout))
	}
	var e *APIError
	if errors.As(err, &e) {
		if e.Temporary() {
			return resilience.Retryable(e)
		}
		return e
	}
	return err
}

// apiError reads a refusal.
func (c *Client) apiError(resp *http.Response) *APIError {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	e := ParseError(resp.StatusCode, body)
	e.After = resilience.ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
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
