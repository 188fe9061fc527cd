package heartbeat

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
	"os"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/propagation"

	"novaos.dev/novaos/problem"
	"novaos.dev/novaos/resilience"
	"novaos.dev/novaos/secret"
)

// URLEnv names the variable New reads the base URL from when it is given
// none (the NovaOS Python SDK's).
const URLEnv = "NOVAOS_AGENT_OPS_URL"

// DefaultTimeout bounds one attempt of a call.
const DefaultTimeout = 30 * time.Second

// TenantHeader names the tenant an admin-token call acts for.
const TenantHeader = "X-Tenant-ID"

// What the client reads of an answer at most.
const (
	maxAnswerBytes  = 8 << 20
	maxProblemBytes = 64 << 10
)

// Errors a call's error matches (errors.Is), besides ErrNotFound (404),
// ErrConflict (409) and ErrExists (409 for an instance that has a config
// already), which an *Error matches too.
var (
	// ErrInvalidRequest: the client refused to send a request (an
	// *InvalidError), or the server answered 400 or 413.
	ErrInvalidRequest = errors.New("heartbeat: invalid request")
	// ErrUnauthorized: 401, no token or one the server refused.
	ErrUnauthorized = errors.New("heartbeat: unauthorized")
	// ErrForbidden: 403, a caller the server knows but refuses.
	ErrForbidden = errors.New("heartbeat: forbidden")
	// ErrProtocol: an answer that does not fit the API.
	ErrProtocol = errors.New("heartbeat: malformed answer")
)

// Error is an error answer of the server: its status and, when the body
// was an RFC 9457 problem, the problem's members. The client's token
// never appears in it.
type Error struct {
	Status int
	Type   string // "about:blank" when the answer was not a problem
	Title  string
	Detail string
	// Errors names each field of the request that broke a rule.
	Errors []problem.FieldError

	retryAfter time.Duration
}

func (e *Error) Error() string {
	msg := "heartbeat: " + strconv.Itoa(e.Status)
	if e.Title != "" {
		msg += " " + e.Title
	}
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg
}

// HTTPStatus is the answer's status; package resilience reads it to tell
// an outage from an answer.
func (e *Error) HTTPStatus() int { return e.Status }

// RetryAfter is the server's Retry-After on a 429 or 503, 0 when none.
func (e *Error) RetryAfter() time.Duration { return e.retryAfter }

// Is matches the sentinel of the status.
func (e *Error) Is(target error) bool {
	switch e.Status {
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge:
		return target == ErrInvalidRequest
	case http.StatusUnauthorized:
		return target == ErrUnauthorized
	case http.StatusForbidden:
		return target == ErrForbidden
	case http.StatusNotFound:
		return target == ErrNotFound
	case http.StatusConflict:
		return target == ErrConflict || (target == ErrExists && e.Type == ProblemConfigExists)
	}
	return false
}

// InvalidError is a request the client refused to send: Field breaks the
// rule Message states.
type InvalidError struct {
	Field   string
	Message string
}

func (e *InvalidError) Error() string { return "heartbeat: invalid " + e.Field + ": " + e.Message }

// Is matches ErrInvalidRequest.
func (e *InvalidError) Is(target error) bool { return target == ErrInvalidRequest }

// Options configure a Client; nil or zero fields mean the defaults.
type Options struct {
	// HTTPClient sends the calls; nil uses one without a global timeout
	// (each attempt gets Timeout).
	HTTPClient *http.Client
	// Timeout bounds one attempt (0: DefaultTimeout).
	Timeout time.Duration
	// Retry is the retry policy of every call; nil retries connection
	// failures and 429, 502, 503, 504 DefaultAttempts times in all with
	// jittered backoff, behind a breaker that opens after 5 failures in a
	// row for 30 s (the NovaOS Python SDK's HeartbeatClient). Give
	// &resilience.Policy{} for a single attempt.
	Retry *resilience.Policy
	// Tenant is sent as X-Tenant-ID: the tenant an admin-token call acts
	// for. A platform token carries its own.
	Tenant string
	// Header is sent with every call. An Authorization in it is replaced
	// by the token, when there is one.
	Header http.Header
}

// Client calls the heartbeat endpoints of the agent-ops API. Every call
// is retried on a passing failure, which is safe: a repeated create finds
// the first one's config (ErrExists), and pausing or resuming a config
// that is so already changes nothing. It is safe for concurrent use.
type Client struct {
	base    string
	token   secret.Value
	http    *http.Client
	timeout time.Duration
	retry   *resilience.Policy
	tenant  string
	header  http.Header
}

// New returns a client of the server at baseURL (its base URL, such as
// "http://127.0.0.1:8080"; "" reads NOVAOS_AGENT_OPS_URL; a URL ending in
// BasePath is taken as well) calling with token: a platform token of the
// instance's tenant, or the admin token with Options.Tenant. A zero token
// sends none, which a server on the same machine without an admin token
// accepts as its operator.
func New(baseURL string, token secret.Value, o *Options) (*Client, error) {
	if baseURL == "" {
		baseURL = os.Getenv(URLEnv)
	}
	if baseURL == "" {
		return nil, fmt.Errorf("heartbeat: no base URL: pass one or set %s", URLEnv)
	}
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errors.New("heartbeat: the base URL must be an absolute http(s) URL")
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, errors.New("heartbeat: the base URL must have no user info, query or fragment")
	}
	if strings.ContainsAny(token.Reveal(), "\r\n") {
		return nil, errors.New("heartbeat: the token must be one line")
	}
	if o == nil {
		o = &Options{}
	}
	if strings.ContainsAny(o.Tenant, "\r\n") {
		return nil, errors.New("heartbeat: the tenant must be one line")
	}
	base := strings.TrimSuffix(u.String(), "/")
	base = strings.TrimSuffix(base, BasePath)
	c := &Client{base: base, token: token, http: o.HTTPClient, timeout: o.Timeout, retry: o.Retry,
		tenant: o.Tenant, header: o.Header.Clone()}
	if c.http == nil {
		c.http = &http.Client{}
	}
	if c.timeout <= 0 {
		c.timeout = DefaultTimeout
	}
	if c.retry == nil {
		c.retry = resilience.DefaultPolicy()
		c.retry.Breaker = resilience.NewBreaker(nil)
	}
	return c, nil
}

// CreateConfig schedules heartbeat runs of an instance: one config per
// instance, so a second create is an *Error matching ErrExists (and
// ErrConflict).
func (c *Client) CreateConfig(ctx context.Context, agentID, instanceID string, r CreateRequest) (*ConfigCreated, error) {
	if err := checkIDs(agentID, instanceID); err != nil {
		return nil, err
	}
	if p := r.Problems(); len(p) > 0 {
		return nil, &InvalidError{Field: p[0].Field, Message: p[0].Message}
	}
	var out ConfigCreated
	if err := c.call(ctx, http.MethodPost, ConfigsPath(agentID, instanceID), r, http.StatusCreated, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListConfigs returns the instance's configs: none or one.
func (c *Client) ListConfigs(ctx context.Context, agentID, instanceID string) ([]Config, error) {
	if err := checkIDs(agentID, instanceID); err != nil {
		return nil, err
	}
	var raw json.RawMessage
	if err := c.call(ctx, http.MethodGet, ConfigsPath(agentID, instanceID), nil, http.StatusOK, &raw); err != nil {
		return nil, err
	}
	// The answer is {"configs": [...]}; a bare list is read too.
	var list ConfigList
	if bytes.HasPrefix(bytes.TrimSpace(raw), []byte("[")) {
		if err := json.Unmarshal(raw, &list.Configs); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrProtocol, err)
		}
	} else if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrProtocol, err)
	}
	if list.Configs == nil {
		list.Configs = []Config{}
	}
	return list.Configs, nil
}

// PauseConfig stops a config's schedule; pausing a paused one changes
// nothing and answers the same.
func (c *Client) PauseConfig(ctx context.Context, agentID, instanceID, configID string) (*ConfigStatus, error) {
	return c.setStatus(ctx, agentID, instanceID, configID, "pause")
}

// ResumeConfig starts a paused config's schedule again from the next
// tick; resuming an active one changes nothing and answers the same.
func (c *Client) ResumeConfig(ctx context.Context, agentID, instanceID, configID string) (*ConfigStatus, error) {
	return c.setStatus(ctx, agentID, instanceID, configID, "resume")
}

// DeleteConfig removes a config; its fires' records go with it, the runs
// they started stay. A retry after a lost answer may find it gone
// (ErrNotFound).
func (c *Client) DeleteConfig(ctx context.Context, agentID, instanceID, configID string) error {
	if err := checkIDs(agentID, instanceID, configID); err != nil {
		return err
	}
	return c.call(ctx, http.MethodDelete, ConfigsPath(agentID, instanceID)+"/"+pathEscape(configID), nil, http.StatusNoContent, nil)
}

func (c *Client) setStatus(ctx context.Context, agentID, instanceID, configID, action string) (*ConfigStatus, error) {
	if err := checkIDs(agentID, instanceID, configID); err != nil {
		return nil, err
	}
	var out ConfigStatus
	path := ConfigsPath(agentID, instanceID) + "/" + pathEscape(configID) + "/" + action
	if err := c.call(ctx, http.MethodPost, path, nil, http.StatusOK, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

func checkIDs(ids ...string) error {
	for i, id := range ids {
		if !ValidID(id) {
			field := [...]string{"agent_id", "instance_id", "config_id"}[i]
			return &InvalidError{Field: field, Message: "not an id: 1 to " + strconv.Itoa(MaxIDBytes) + " printable characters without space, '/', '?', '#' or '%'"}
		}
	}
	return nil
}

// call sends one request, retrying per the policy, and decodes a want
// answer into out (unless out is nil).
func (c *Client) call(ctx context.Context, method, path string, in any, want int, out any) error {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return fmt.Errorf("heartbeat: encode the request: %w", err)
		}
	}
	var data []byte
	err := c.retry.Do(ctx, func(ctx context.Context) error {
		var err error
		data, err = c.attempt(ctx, method, path, body, want)
		return err
	})
	if err != nil {
		return err
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%w: %v", ErrProtocol, err)
	}
	return nil
}

func (c *Client) attempt(ctx context.Context, method, path string, body []byte, want int) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, err
	}
	for k, v := range c.header {
		req.Header[k] = v
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json, "+problem.ContentType)
	if c.tenant != "" {
		req.Header.Set(TenantHeader, c.tenant)
	}
	if !c.token.IsZero() {
		req.Header.Set("Authorization", "Bearer "+c.token.Reveal())
	}
	propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(req.Header))
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != want {
		return nil, c.errorOf(resp)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxAnswerBytes {
		return nil, fmt.Errorf("%w: an answer over %d bytes", ErrProtocol, maxAnswerBytes)
	}
	return data, nil
}

// errorOf reads an answer that is not the one asked for: an *Error for a
// 4xx or 5xx, ErrProtocol for anything else.
func (c *Client) errorOf(resp *http.Response) error {
	if resp.StatusCode < 400 {
		return fmt.Errorf("%w: unexpected status %d", ErrProtocol, resp.StatusCode)
	}
	data, _ := io.ReadAll(io.LimitReader(resp.Body, maxProblemBytes))
	e := &Error{Status: resp.StatusCode}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == problem.ContentType || mt == "application/json" {
		var p problem.Problem
		if json.Unmarshal(data, &p) == nil {
			e.Type, e.Title, e.Detail, e.Errors = p.Type, p.Title, p.Detail, p.Errors
		}
	}
	if e.Type == "" {
		e.Type = "about:blank"
	}
	if e.Title == "" {
		e.Title = http.StatusText(resp.StatusCode)
	}
	e.Title, e.Detail = c.redact(clip(e.Title, 200)), c.redact(clip(e.Detail, 1000))
	for i := range e.Errors {
		e.Errors[i].Message = c.redact(clip(e.Errors[i].Message, 200))
	}
	if resilience.RetryableStatus(resp.StatusCode) {
		e.retryAfter = resilience.ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
	}
	return e
}

// redact replaces the token in s: a server that echoes a request's
// Authorization must not put it into an error.
func (c *Client) redact(s string) string {
	if t := c.token.Reveal(); len(t) >= 4 && strings.Contains(s, t) {
		s = strings.ReplaceAll(s, t, secret.Redacted)
	}
	return s
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
