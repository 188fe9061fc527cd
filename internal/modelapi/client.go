package modelapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"novaos.dev/novaos/llm"
	"novaos.dev/novaos/resilience"
	"novaos.dev/novaos/secret"
	"novaos.dev/novaos/strictjson"
)

// Defaults of Options.
const (
	DefaultTimeout     = 30 * time.Second
	DefaultMaxResponse = 32 << 20
)

// Options configure a client; nil or zero fields mean the defaults.
type Options struct {
	// HTTPClient sends requests; nil uses one with Timeout.
	HTTPClient *http.Client
	// Timeout bounds one attempt (default 30s).
	Timeout time.Duration
	// Retry is the retry policy (nil: resilience.DefaultPolicy()).
	Retry *resilience.Policy
	// MaxResponseBytes bounds an answer (default 32 MiB).
	MaxResponseBytes int64
}

// client posts JSON to one OpenAI-compatible endpoint.
type client struct {
	url   string
	key   secret.Value
	http  *http.Client
	retry *resilience.Policy
	limit int64
}

func newClient(baseURL, endpoint string, key secret.Value, o *Options) *client {
	if o == nil {
		o = &Options{}
	}
	c := &client{url: strings.TrimSuffix(baseURL, "/") + endpoint, key: key, http: o.HTTPClient, retry: o.Retry, limit: o.MaxResponseBytes}
	if c.http == nil {
		timeout := o.Timeout
		if timeout <= 0 {
			timeout = DefaultTimeout
		}
		c.http = &http.Client{Timeout: timeout}
	}
	if c.retry == nil {
		c.retry = resilience.DefaultPolicy()
	}
	if c.limit <= 0 {
		c.limit = DefaultMaxResponse
	}
	return c
}

// APIError is a non-success answer of the model API. Its text holds the
// status and the API's own error message, cut short; never the request.
// It is not llm.APIError, whose retries llm.Client decides itself: this
// one carries its status (resilience.StatusCoder), and resilience's
// policy retries it by status alone, as the memory service and the judge
// have always been retried.
type APIError struct {
	Status  int
	Message string
	After   time.Duration
}

func (e *APIError) Error() string {
	return fmt.Sprintf("model API answered %d: %s", e.Status, e.Message)
}
func (e *APIError) HTTPStatus() int           { return e.Status }
func (e *APIError) RetryAfter() time.Duration { return e.After }

// ErrMalformed is matched by every error about an answer that is not what
// the API promises.
var ErrMalformed = errors.New("modelapi: malformed answer")

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrMalformed}, args...)...)
}

// post sends body and decodes the answer into out, with retries.
func (c *client) post(ctx context.Context, body any, out any) error {
	payload, err := json.Marshal(body)
	if err != nil {
		return err
	}
	return c.retry.Do(ctx, func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(payload))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json")
		if k := c.key.Reveal(); k != "" {
			req.Header.Set("Authorization", "Bearer "+k)
		}
		resp, err := c.http.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(io.LimitReader(resp.Body, c.limit+1))
		if err != nil {
			return err
		}
		if int64(len(data)) > c.limit {
			return malformed("answer over %d bytes", c.limit)
		}
		if resp.StatusCode != http.StatusOK {
			return apiError(resp, data)
		}
		// A repeated key would be read last-wins here and first-wins by
		// another client of the same API.
		if err := strictjson.Decode(data, out, nil, true); err != nil {
			return malformed("%v", err)
		}
		return nil
	})
}

// apiError reads a refusal with the llm package's reader of OpenAI error
// bodies, keeping its message only.
func apiError(resp *http.Response, data []byte) error {
	e := &APIError{Status: resp.StatusCode, After: resilience.ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now()),
		Message: llm.ParseError(resp.StatusCode, data).Message}
	if e.Message == "" {
		e.Message = http.StatusText(resp.StatusCode)
	}
	if len(e.Message) > 200 {
		e.Message = strings.ToValidUTF8(e.Message[:200], "") + "…"
	}
	return e
}
