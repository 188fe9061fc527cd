package memory

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"novaos.dev/novaos/resilience"
	"novaos.dev/novaos/secret"
)

// ServiceURLEnv names the variable NewClient reads the service's base URL
// from when none is given (the variable the NovaOS memory guide names).
const ServiceURLEnv = "MEMORY_SERVICE_URL"

// ServicePath is where the service answers under its base URL.
const ServicePath = "/api/v1/mcp"

// DefaultTimeout bounds one attempt of a call (the NovaOS Python SDK's 30 s).
const DefaultTimeout = 30 * time.Second

// maxResponseBytes bounds what the client reads of one answer: an assemble
// of 100 memories of 32 KiB each and 100 live messages fits.
const maxResponseBytes = 16 << 20

// ClientOptions configure a Client; nil or zero fields mean the defaults.
type ClientOptions struct {
	// HTTPClient sends the calls; nil uses one with DefaultTimeout.
	HTTPClient *http.Client
	// Retry is the retry policy; nil retries 429, 502, 503, 504 and
	// connection errors 3 times in all with jittered backoff, behind a
	// breaker that opens after 5 failures in a row for 30 s (the NovaOS
	// Python SDK's MemoryClient). Give &resilience.Policy{} for a single
	// attempt.
	Retry *resilience.Policy
	// Header is sent with every call (e.g. a trace header).
	Header http.Header
}

// Client calls the memory service's tools. It is safe for concurrent
// use. Every call is validated before it is sent, so a request the
// service would refuse for its form fails without a round trip.
type Client struct {
	endpoint string
	token    secret.Value
	http     *http.Client
	retry    *resilience.Policy
	header   http.Header
	nextID   atomic.Int64
	// exec, when set, is the agent execution the client is bound to
	// (From): it fills in idempotency keys and ids a request leaves out.
	exec Execution
}

// NewClient returns a client of the service at baseURL (the server's
// base URL; "" reads MEMORY_SERVICE_URL) calling with token, an execution
// token granting memory scopes.
func NewClient(baseURL string, token secret.Value, o *ClientOptions) (*Client, error) {
	if baseURL == "" {
		baseURL = os.Getenv(ServiceURLEnv)
	}
	if baseURL == "" {
		return nil, fmt.Errorf("memory: no service URL: pass one or set %s", ServiceURLEnv)
	}
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("memory: service URL must be an absolute http(s) URL")
	}
	if token.Reveal() == "" {
		return nil, errors.New("memory: an execution token is required")
	}
	if o == nil {
		o = &ClientOptions{}
	}
	c := &Client{endpoint: strings.TrimSuffix(u.String(), "/") + ServicePath, token: token, http: o.HTTPClient, retry: o.Retry, header: o.Header}
	if strings.HasSuffix(strings.TrimSuffix(u.Path, "/"), ServicePath) {
		c.endpoint = strings.TrimSuffix(u.String(), "/") // the full endpoint was given
	}
	if c.http == nil {
		c.http = &http.Client{Timeout: DefaultTimeout}
	}
	if c.retry == nil {
		c.retry = resilience.DefaultPolicy()
		c.retry.Breaker = resilience.NewBreaker(nil)
	}
	return c, nil
}

// Write stores a memory (see the novaos.memory.write tool). A result
// whose MemoryID has the ProposalPrefix is a proposal: Durable is false
// and PollProposal tells what became of it. A key the caller sent with
// another request within IdempotencyWindow (a retried execution whose
// n-th write says something else this time) is an *Error that matches
// ErrKeyReused; the first request's memory stays as it was.
func (c *Client) Write(ctx context.Context, r *WriteRequest) (*WriteResult, error) {
	if c.exec != nil && r.IdempotencyKey == "" {
		cp := *r
		cp.IdempotencyKey = c.exec.WriteKey()
		r = &cp
	}
	return call[WriteResult](ctx, c, "novaos.memory.write", r, r.Validate)
}

// Query searches one scope.
func (c *Client) Query(ctx context.Context, r *QueryRequest) (*QueryResult, error) {
	return call[QueryResult](ctx, c, "novaos.memory.query", r, r.Validate)
}

// Update changes an agent-scope memory if r.Version is still current; a
// stale version is an *Error that matches ErrConflict.
func (c *Client) Update(ctx context.Context, r *UpdateRequest) (*UpdateResult, error) {
	return call[UpdateResult](ctx, c, "novaos.memory.update", r, r.Validate)
}

// Forget deletes one memory; a request without a reason is sent with
// DefaultForgetReason. No such memory is an *Error that matches
// ErrNotFound.
func (c *Client) Forget(ctx context.Context, r *ForgetRequest) (*ForgetResult, error) {
	r = r.WithDefaults(c.exec)
	return call[ForgetResult](ctx, c, "novaos.memory.forget", r, r.Validate)
}

// WithDefaults is r as a client sends it: with DefaultForgetReason when
// it gives no reason, and, when keys is not nil, its next write key when
// it gives no idempotency key. It returns r itself when nothing is
// missing, and a copy otherwise, so the caller's request is left as it
// was.
func (r *ForgetRequest) WithDefaults(keys interface{ WriteKey() string }) *ForgetRequest {
	if r.Reason != "" && (keys == nil || r.IdempotencyKey != "") {
		return r
	}
	cp := *r
	cp.Reason = cmp.Or(cp.Reason, DefaultForgetReason)
	if keys != nil && cp.IdempotencyKey == "" {
		cp.IdempotencyKey = keys.WriteKey()
	}
	return &cp
}

// Hint submits an observation for consolidation into user memory; a hint
// without a conversation id is refused before any request.
func (c *Client) Hint(ctx context.Context, r *HintRequest) (*HintResult, error) {
	if c.exec != nil && r.ConversationID == "" {
		cp := *r
		cp.ConversationID = c.exec.ContextID()
		r = &cp
	}
	return call[HintResult](ctx, c, "novaos.memory.hint", r, r.Validate)
}

// Assemble gathers context from every source the token can read.
func (c *Client) Assemble(ctx context.Context, r *AssembleRequest) (*AssembleResult, error) {
	if c.exec != nil && (r.RequestID == "" || r.TraceID == "") {
		cp := *r
		cp.RequestID = cmp.Or(cp.RequestID, c.exec.RunID())
		cp.TraceID = cmp.Or(cp.TraceID, c.exec.TraceID())
		r = &cp
	}
	return call[AssembleResult](ctx, c, "novaos.memory.assemble", r, r.Validate)
}

// HintStatus reports a hint's outcome.
func (c *Client) HintStatus(ctx context.Context, hintID string) (*HintStatus, error) {
	return call[HintStatus](ctx, c, "novaos.memory.hint_status", map[string]string{"hint_id": hintID}, func() error {
		return validID("hint_id", hintID, true)
	})
}

// ProposalStatus reports the write gate's decision on a proposal.
func (c *Client) ProposalStatus(ctx context.Context, proposalID string) (*ProposalStatus, error) {
	return call[ProposalStatus](ctx, c, "novaos.memory.proposal_status", map[string]string{"proposal_id": proposalID}, func() error {
		if !strings.HasPrefix(proposalID, ProposalPrefix) {
			return invalid("proposal_id", "must be a %s id returned by Write", ProposalPrefix)
		}
		return validID("proposal_id", proposalID, true)
	})
}

// PollProposal asks every interval (default 200 ms) until the proposal is
// decided or ctx ends, and returns the decision.
func (c *Client) PollProposal(ctx context.Context, proposalID string, interval time.Duration) (*ProposalStatus, error) {
	if interval <= 0 {
		interval = 200 * time.Millisecond
	}
	for {
		st, err := c.ProposalStatus(ctx, proposalID)
		if err != nil || st.Status != ProposalPending {
			return st, err
		}
		t := time.NewTimer(interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return st, ctx.Err()
		case <-t.C:
		}
	}
}

// call sends one tools/call and decodes its structured result.
func call[R any](ctx context.Context, c *Client, tool string, args any, validate func() error) (*R, error) {
	if err := validate(); err != nil {
		return nil, err
	}
	argBytes, err := json.Marshal(args)
	if err != nil {
		return nil, fmt.Errorf("memory: encode %s: %w", tool, err)
	}
	body, err := json.Marshal(map[string]any{
		"jsonrpc": "2.0", "id": c.nextID.Add(1), "method": "tools/call",
		"params": map[string]any{"name": tool, "arguments": json.RawMessage(argBytes)},
	})
	if err != nil {
		return nil, fmt.Errorf("memory: encode %s: %w", tool, err)
	}
	var out *R
	err = c.retry.Do(ctx, func(ctx context.Context) error {
		var err error
		out, err = attempt[R](ctx, c, body)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", tool, err)
	}
	return out, nil
}

// rpcResponse is the JSON-RPC answer to tools/call.
type rpcResponse struct {
	Result *struct {
		IsError           bool            `json:"isError"`
		StructuredContent json.RawMessage `json:"structuredContent"`
		Content           []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	} `json:"result"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func attempt[R any](ctx context.Context, c *Client, body []byte) (*R, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	for k, v := range c.header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+c.token.Reveal())
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxResponseBytes {
		return nil, fmt.Errorf("answer over %d bytes", maxResponseBytes)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, httpError(resp, data)
	}
	var rr rpcResponse
	if err := json.Unmarshal(data, &rr); err != nil {
		return nil, fmt.Errorf("malformed answer: %w", err)
	}
	switch {
	case rr.Error != nil:
		return nil, &Error{Status: http.StatusBadRequest, Code: CodeInvalid, Message: fmt.Sprintf("protocol error %d: %s", rr.Error.Code, rr.Error.Message)}
	case rr.Result == nil:
		return nil, errors.New("malformed answer: no result")
	case rr.Result.IsError:
		return nil, toolError(rr.Result.Content)
	}
	raw := rr.Result.StructuredContent
	if len(raw) == 0 && len(rr.Result.Content) > 0 {
		raw = json.RawMessage(rr.Result.Content[0].Text)
	}
	var out R
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("malformed result: %w", err)
	}
	return &out, nil
}

// toolError reads the {"error": Error} text of an isError result.
func toolError(content []struct {
	Type string `json:"type"`
	Text string `json:"text"`
}) error {
	for _, part := range content {
		var wrapped struct {
			Error *Error `json:"error"`
		}
		if json.Unmarshal([]byte(part.Text), &wrapped) == nil && wrapped.Error != nil && wrapped.Error.Status != 0 {
			return wrapped.Error
		}
	}
	msg := "the tool failed"
	if len(content) > 0 {
		msg = content[0].Text
	}
	return &Error{Status: http.StatusBadRequest, Code: CodeInvalid, Message: msg}
}

// httpError is the Error of a non-200 answer: the platform's
// problem+json (401, 403, 413, 503 …) or a JSON-RPC error body.
func httpError(resp *http.Response, body []byte) error {
	e := &Error{Status: resp.StatusCode, Code: codeForStatus(resp.StatusCode)}
	var problem struct {
		Detail string `json:"detail"`
		Error  *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &problem) == nil {
		e.Message = problem.Detail
		if e.Message == "" && problem.Error != nil {
			e.Message = problem.Error.Message
		}
	}
	if e.Message == "" {
		e.Message = http.StatusText(resp.StatusCode)
	}
	if resilience.RetryableStatus(resp.StatusCode) {
		return &retryAfterError{err: e, after: resilience.ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now())}
	}
	return e
}

// retryAfterError carries a server's Retry-After beside the Error.
type retryAfterError struct {
	err   *Error
	after time.Duration
}

func (e *retryAfterError) Error() string             { return e.err.Error() }
func (e *retryAfterError) HTTPStatus() int           { return e.err.Status }
func (e *retryAfterError) RetryAfter() time.Duration { return e.after }
func (e *retryAfterError) Unwrap() error             { return e.err }

func codeForStatus(status int) string {
	switch status {
	case http.StatusUnauthorized:
		return CodeUnauthorized
	case http.StatusForbidden:
		return CodeScope
	case http.StatusNotFound:
		return CodeNotFound
	case http.StatusConflict:
		return CodeConflict
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return CodeUnavailable
	case http.StatusUnprocessableEntity, http.StatusBadRequest, http.StatusRequestEntityTooLarge:
		return CodeInvalid
	}
	return CodeInternal
}
