package heartbeat

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"novaos.dev/novaos/problem"
	"novaos.dev/novaos/resilience"
	"novaos.dev/novaos/rest"
	"novaos.dev/novaos/secret"
)

// URLEnv names the variable New reads the base URL from when it is given
// none (the NovaOS Python SDK's).
const URLEnv = "NOVAOS_AGENT_OPS_URL"

// DefaultTimeout bounds one attempt of a call.
const DefaultTimeout = 30 * time.Second

// TenantHeader names the tenant an admin-token call acts for.
const TenantHeader = rest.TenantHeader

// maxAnswerBytes bounds what the client reads of an answer.
const maxAnswerBytes = 8 << 20

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
	api *rest.Client
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
	base, err := rest.BaseURL(baseURL)
	if err != nil {
		return nil, fmt.Errorf("heartbeat: %w", err)
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
	api := &rest.Client{
		Base: strings.TrimSuffix(base, BasePath), HTTP: o.HTTPClient, Timeout: o.Timeout, Retry: o.Retry,
		MaxAnswer: maxAnswerBytes, Header: o.Header.Clone(), Tenant: o.Tenant, Token: token,
		Malformed: ErrProtocol, Refused: refused,
	}
	if api.HTTP == nil {
		api.HTTP = &http.Client{}
	}
	if api.Timeout <= 0 {
		api.Timeout = DefaultTimeout
	}
	if api.Retry == nil {
		api.Retry = resilience.DefaultPolicy()
		api.Retry.Breaker = resilience.NewBreaker(nil)
	}
	return &Client{api: api}, nil
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

// call sends one request, retrying per the policy (every call of the API
// may be repeated), and decodes a want answer into out (unless out is
// nil).
func (c *Client) call(ctx context.Context, method, path string, in any, want int, out any) error {
	return c.api.Do(ctx, rest.Call{Method: method, Path: path, Body: in, OK: []int{want}, Retry: rest.RetryTransient}, out)
}

// refused is the *Error of a refusal.
func refused(r *rest.Refusal) error {
	return &Error{Status: r.Status, Type: r.Type, Title: r.Title, Detail: r.Detail, Errors: r.Errors, retryAfter: r.After}
}
