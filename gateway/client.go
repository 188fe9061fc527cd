package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"novaos.dev/novaos/problem"
	"novaos.dev/novaos/resilience"
	"novaos.dev/novaos/rest"
	"novaos.dev/novaos/secret"
)

// DefaultTimeout bounds one attempt of a call that is not an event
// stream.
const DefaultTimeout = 30 * time.Second

// DefaultStreamIdleTimeout is how long an event stream may bring nothing,
// not even a keepalive comment, before the client takes its connection
// for dead.
const DefaultStreamIdleTimeout = 2 * time.Minute

// TenantHeader names the tenant an admin-token call acts for.
const TenantHeader = rest.TenantHeader

// maxAnswerBytes bounds what the client reads of one answer that is not an
// event stream.
const maxAnswerBytes = 16 << 20

// Errors a call's error matches (errors.Is), besides ErrNotFound and
// ErrConflict, which an *Error with status 404 or 409 matches too.
var (
	// ErrInvalidRequest: the client refused to send a request (an
	// *InvalidError), or the gateway answered 400 or 413.
	ErrInvalidRequest = errors.New("gateway: invalid request")
	// ErrUnauthorized: 401, no token or one the gateway refused.
	ErrUnauthorized = errors.New("gateway: unauthorized")
	// ErrForbidden: 403, a caller the gateway knows but refuses.
	ErrForbidden = errors.New("gateway: forbidden")
	// ErrProtocol: an answer that does not fit the API (an unexpected
	// status, a body that is not the JSON asked for).
	ErrProtocol = errors.New("gateway: malformed answer")
)

// Error is an error answer of the gateway: its status and, when the body
// was an RFC 9457 problem, the problem's members. It matches (errors.Is)
// ErrInvalidRequest for 400 and 413, ErrUnauthorized for 401,
// ErrForbidden for 403, ErrNotFound for 404 and ErrConflict for 409. The
// client's token never appears in it: a title or detail that echoes it
// has it replaced.
type Error struct {
	Status int
	// Type is the problem type URI ("about:blank" when the answer was not
	// a problem).
	Type   string
	Title  string
	Detail string
	// Errors names each field of the request that broke a rule, when the
	// gateway said.
	Errors []problem.FieldError

	retryAfter time.Duration
}

func (e *Error) Error() string {
	msg := "gateway: " + strconv.Itoa(e.Status)
	if e.Title != "" {
		msg += " " + e.Title
	}
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg
}

// HTTPStatus is the answer's status; package resilience reads it to tell
// a passing outage from an answer.
func (e *Error) HTTPStatus() int { return e.Status }

// RetryAfter is the gateway's Retry-After on a 429 or 503, 0 when none.
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
		return target == ErrConflict
	}
	return false
}

// InvalidError is a request the client refused to send: Field (a JSON
// path, such as "attachments[0].name") breaks the rule Message states.
type InvalidError struct {
	Field   string
	Message string
}

func (e *InvalidError) Error() string {
	return "gateway: invalid " + e.Field + ": " + e.Message
}

// Is matches ErrInvalidRequest.
func (e *InvalidError) Is(target error) bool { return target == ErrInvalidRequest }

func invalid(field, format string, a ...any) error {
	return &InvalidError{Field: field, Message: fmt.Sprintf(format, a...)}
}

// IsRetryable reports whether err is a passing failure that the same call
// may get past later: a dropped or refused connection, a stream that ended
// before its run did (ErrStreamEnded), a timeout, or an answer 429, 502,
// 503 or 504. An authentication failure, a refusal, a malformed answer
// and a cancellation are not.
func IsRetryable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, ErrMalformedEvent) || errors.Is(err, ErrProtocol) {
		return false
	}
	var ge *Error
	if errors.As(err, &ge) {
		return resilience.RetryableStatus(ge.Status)
	}
	if errors.Is(err, ErrStreamEnded) || errors.Is(err, ErrStreamIdle) {
		return true
	}
	return resilience.IsTransient(err)
}

// ClientOptions configure a Client; nil or zero fields mean the defaults.
type ClientOptions struct {
	// HTTPClient sends the calls; nil uses one without a global timeout
	// (each call but an event stream gets Timeout). A client with a
	// Timeout of its own cuts event streams that last longer.
	HTTPClient *http.Client
	// Token is sent as "Authorization: Bearer <token>" with every call:
	// the admin token, a platform token or an OIDC access token.
	Token secret.Value
	// TokenFunc, when set, is asked for the token before every request
	// (a token that is refreshed); it takes precedence over Token.
	TokenFunc func(ctx context.Context) (secret.Value, error)
	// Tenant is sent as X-Tenant-ID: the tenant an admin-token call acts
	// for. A platform token carries its own; a different one is refused.
	Tenant string
	// Headers are sent with every call (a trace header, say). An
	// Authorization among them is replaced by the token, when there is
	// one.
	Headers http.Header
	// Timeout bounds one attempt of every call but an event stream
	// (0: DefaultTimeout).
	Timeout time.Duration
	// StreamIdleTimeout ends an event stream on which nothing arrived
	// for so long, with ErrStreamIdle, which EventsWithReconnect
	// reconnects after (0: DefaultStreamIdleTimeout; negative: never).
	// The time the consumer spends on an event does not count.
	StreamIdleTimeout time.Duration
	// Retry is the retry policy of the reads (every GET but an event
	// stream); nil retries 429, 502, 503, 504 and connection failures
	// resilience.DefaultAttempts times in all with jittered backoff,
	// behind a circuit breaker the client's calls share
	// (resilience.NewBreaker's defaults: open after 5 failures in a row,
	// for 30s). Writes are not retried, except when a connection could
	// not even be opened (nothing was sent): then Retry's attempts and
	// delays apply; a debug action is never retried. Give
	// &resilience.Policy{} for a single attempt.
	Retry *resilience.Policy
}

// Client calls the execution gateway's REST API: it installs and manages
// agent instances, starts runs, follows their events and answers their
// pauses. It is safe for concurrent use. Requests are checked before they
// are sent, so one the gateway would refuse for its form fails without a
// round trip.
type Client struct {
	api   *rest.Client
	base  string
	idle  time.Duration
	retry *resilience.Policy
	// userRoute is set once the service route of RunEvents answered 403
	// and the user route answered: later "auto" calls go to the user
	// route directly.
	userRoute atomic.Bool
}

// NewClient returns a client of the gateway at baseURL, the server's base
// URL (such as "http://127.0.0.1:8080"); the API's paths are under it.
func NewClient(baseURL string, o *ClientOptions) (*Client, error) {
	base, err := rest.BaseURL(baseURL)
	if err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	if o == nil {
		o = &ClientOptions{}
	}
	if strings.ContainsAny(o.Tenant, "\r\n") {
		return nil, fmt.Errorf("gateway: tenant must be one line")
	}
	c := &Client{base: base, idle: o.StreamIdleTimeout, retry: o.Retry}
	switch {
	case c.idle == 0:
		c.idle = DefaultStreamIdleTimeout
	case c.idle < 0:
		c.idle = 0
	}
	if c.retry == nil {
		c.retry = resilience.DefaultPolicy()
		c.retry.Breaker = resilience.NewBreaker(nil)
	}
	c.api = &rest.Client{
		Base: base, HTTP: o.HTTPClient, Timeout: o.Timeout, Retry: c.retry,
		MaxAnswer: maxAnswerBytes, Header: o.Headers.Clone(), Tenant: o.Tenant, Token: o.Token, TokenFunc: o.TokenFunc,
		Malformed: ErrProtocol, Refused: refused,
	}
	if c.api.HTTP == nil {
		c.api.HTTP = &http.Client{}
	}
	if c.api.Timeout <= 0 {
		c.api.Timeout = DefaultTimeout
	}
	return c, nil
}

// Limits of an execute request the gateway enforces besides those of
// run.go; Validate checks them before anything is sent.
const (
	maxRequestIDBytes    = 128 // instance_id, thread_id, conversation_id
	maxAttachmentType    = 255
	maxAttachmentURL     = 2048
	maxCustomHeaders     = 32
	maxCustomHeaderName  = 128
	maxCustomHeaderValue = 8 << 10
)

// Validate checks r as the gateway does: an instance id (and a thread and
// conversation id, when set) of at most 128 printable characters without
// white space; an input that is not blank, of at most MaxInputChars
// characters; at most MaxAttachments attachments, each with a type, exactly
// one of URL (an absolute http or https URL without credentials) and
// non-empty Data, and a name ValidAttachmentName accepts when it has one;
// at most 32 custom headers, each an HTTP field name with a one-line value
// of at most 8 KiB. The error is an *InvalidError naming the first field
// that breaks a rule.
func (r *ExecuteRequest) Validate() error {
	if r.InstanceID == "" {
		return invalid("instance_id", "is required")
	}
	for _, f := range [...]struct{ name, v string }{{"instance_id", r.InstanceID}, {"thread_id", r.ThreadID}, {"conversation_id", r.ConversationID}} {
		if f.v != "" && !validRequestID(f.v) {
			return invalid(f.name, "is not an id: at most %d printable characters without white space", maxRequestIDBytes)
		}
	}
	if strings.TrimSpace(r.Input) == "" {
		return invalid("input", "is required")
	}
	if !utf8.ValidString(r.Input) {
		return invalid("input", "is not valid UTF-8")
	}
	if n := utf8.RuneCountInString(r.Input); n > MaxInputChars {
		return invalid("input", "has %d characters, more than %d", n, MaxInputChars)
	}
	if len(r.Attachments) > MaxAttachments {
		return invalid("attachments", "has %d entries, more than %d", len(r.Attachments), MaxAttachments)
	}
	for i, a := range r.Attachments {
		if err := a.validate(); err != nil {
			var ie *InvalidError
			if errors.As(err, &ie) {
				ie.Field = fmt.Sprintf("attachments[%d].%s", i, ie.Field)
			}
			return err
		}
	}
	if len(r.CustomHeaders) > maxCustomHeaders {
		return invalid("custom_headers", "has %d entries, more than %d", len(r.CustomHeaders), maxCustomHeaders)
	}
	for name, v := range r.CustomHeaders {
		if !validHeaderName(name) || len(name) > maxCustomHeaderName {
			return invalid("custom_headers", "%q is not a header name of at most %d characters", clip(strings.ToValidUTF8(name, "?"), 64), maxCustomHeaderName)
		}
		// The value may be a credential: it is never quoted.
		if len(v) > maxCustomHeaderValue || strings.ContainsAny(v, "\r\n\x00") {
			return invalid("custom_headers", "the value of %s is longer than 8 KiB or not one line", name)
		}
	}
	return nil
}

func validRequestID(s string) bool {
	return len(s) <= maxRequestIDBytes && utf8.ValidString(s) &&
		!strings.ContainsFunc(s, func(r rune) bool { return unicode.IsControl(r) || unicode.IsSpace(r) })
}

func (a Attachment) validate() error {
	if strings.TrimSpace(a.Type) == "" {
		return invalid("type", "is required")
	}
	if len(a.Type) > maxAttachmentType || strings.ContainsFunc(a.Type, unicode.IsControl) {
		return invalid("type", "must be at most %d characters without a control character", maxAttachmentType)
	}
	switch {
	case a.URL == "" && len(a.Data) == 0:
		return invalid("url", "one of url and data is required (data may not be empty)")
	case a.URL != "" && len(a.Data) > 0:
		return invalid("url", "url and data exclude each other")
	case a.URL != "":
		u, err := url.Parse(a.URL)
		if err != nil || len(a.URL) > maxAttachmentURL || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
			return invalid("url", "must be an absolute http or https URL without credentials, at most %d characters", maxAttachmentURL)
		}
	}
	if a.Name != "" {
		if err := ValidAttachmentName(a.Name); err != nil {
			return invalid("name", "%s", err.Error())
		}
	}
	return nil
}

// ValidAttachmentName reports why name is not a plain file name, or nil:
// it must be valid UTF-8 of at most MaxAttachmentNameLen bytes, without a
// path separator ('/', '\\' or ':'), a control character, or "..", and
// not "." alone.
func ValidAttachmentName(name string) error {
	switch {
	case name == "":
		return errors.New("is empty")
	case len(name) > MaxAttachmentNameLen:
		return fmt.Errorf("is %d bytes long, more than %d", len(name), MaxAttachmentNameLen)
	case !utf8.ValidString(name):
		return errors.New("is not valid UTF-8")
	case strings.ContainsAny(name, `/\:`):
		return errors.New("has a path separator")
	case strings.Contains(name, ".."):
		return errors.New(`has ".."`)
	case name == ".":
		return errors.New(`is "."`)
	}
	for _, r := range name {
		if unicode.IsControl(r) || r == utf8.RuneError {
			return errors.New("has a control character")
		}
	}
	return nil
}

// validHeaderName reports whether s is an HTTP field name (RFC 9110 token).
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0 {
			continue
		}
		return false
	}
	return true
}

// Execute starts a run (POST /api/v1/execute) and returns its id; follow
// it with Events or EventsWithReconnect. r is validated first and nothing
// is sent if that fails. Execute is not retried once a request may have
// reached the gateway: a second try could start a second run.
func (c *Client) Execute(ctx context.Context, r ExecuteRequest) (*ExecuteResult, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	var out ExecuteResult
	if err := c.api.Do(ctx, rest.Call{Method: http.MethodPost, Path: ExecutePath, Body: r, OK: []int{http.StatusAccepted, http.StatusOK, http.StatusCreated}}, &out); err != nil {
		return nil, fmt.Errorf("gateway: execute: %w", err)
	}
	if out.RunID == "" {
		return nil, fmt.Errorf("gateway: execute: %w: no run_id", ErrProtocol)
	}
	return &out, nil
}

// StreamingHealth reports whether the gateway can stream events now
// (GET /api/v1/streaming/health): true for 200 {"healthy": true}, false
// with a nil error for a 503 that says healthy false. Anything else is an
// error.
func (c *Client) StreamingHealth(ctx context.Context) (bool, error) {
	var out struct {
		Healthy *bool  `json:"healthy"`
		Status  string `json:"status"`
	}
	err := c.api.Do(ctx, rest.Call{Method: http.MethodGet, Path: StreamingHealthPath, Retry: rest.RetryProbe}, &out)
	var ge *Error
	if errors.As(err, &ge) && ge.Status == http.StatusServiceUnavailable {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("gateway: streaming health: %w", err)
	}
	if out.Healthy == nil {
		return false, fmt.Errorf("gateway: streaming health: %w: no healthy member", ErrProtocol)
	}
	return *out.Healthy, nil
}

// GetRun returns a run the caller may see (GET /api/v1/runs/{id}).
func (c *Client) GetRun(ctx context.Context, runID string) (*Run, error) {
	if err := validID("run_id", runID); err != nil {
		return nil, err
	}
	var out Run
	if err := c.api.Do(ctx, rest.Call{Method: http.MethodGet, Path: RunsPath + "/" + url.PathEscape(runID), Retry: rest.RetryTransient}, &out); err != nil {
		return nil, fmt.Errorf("gateway: get run %s: %w", runID, err)
	}
	return &out, nil
}

// GetServiceRun returns a run through the service route
// (GET /api/v1/service/runs/{id}), with each artifact's data; a user
// token is refused (ErrForbidden).
func (c *Client) GetServiceRun(ctx context.Context, runID string) (*Run, error) {
	if err := validID("run_id", runID); err != nil {
		return nil, err
	}
	var out Run
	if err := c.api.Do(ctx, rest.Call{Method: http.MethodGet, Path: ServiceRunsPath + url.PathEscape(runID), Retry: rest.RetryTransient}, &out); err != nil {
		return nil, fmt.Errorf("gateway: get service run %s: %w", runID, err)
	}
	return &out, nil
}

// RunListOptions select runs; zero fields select all, with the gateway's
// default page size.
type RunListOptions struct {
	Status     Status
	InstanceID string
	// After is the NextCursor of the previous page.
	After string
	Limit int
}

// RunPage is one page of runs, newest first.
type RunPage struct {
	Runs []Run `json:"runs"`
	// NextCursor fetches the next page; empty on the last one.
	NextCursor string `json:"next_cursor"`
}

// ListRuns returns one page of the runs the caller may see (a user's
// own; every run of the tenant for an admin or a service account).
func (c *Client) ListRuns(ctx context.Context, o RunListOptions) (*RunPage, error) {
	q := url.Values{}
	setQuery(q, "status", string(o.Status))
	setQuery(q, "instance_id", o.InstanceID)
	setQuery(q, "after", o.After)
	if o.Limit < 0 {
		return nil, invalid("limit", "must not be negative")
	}
	if o.Limit > 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	var out RunPage
	if err := c.api.Do(ctx, rest.Call{Method: http.MethodGet, Path: RunsPath, Query: q, Retry: rest.RetryTransient}, &out); err != nil {
		return nil, fmt.Errorf("gateway: list runs: %w", err)
	}
	return &out, nil
}

// CancelRun cancels a run that has not ended and returns it; a run that
// has is ErrConflict.
func (c *Client) CancelRun(ctx context.Context, runID string) (*Run, error) {
	if err := validID("run_id", runID); err != nil {
		return nil, err
	}
	var out Run
	if err := c.api.Do(ctx, rest.Call{Method: http.MethodPost, Path: RunsPath + "/" + url.PathEscape(runID) + "/cancel"}, &out); err != nil {
		return nil, fmt.Errorf("gateway: cancel run %s: %w", runID, err)
	}
	return &out, nil
}

// Reply is the answer to a run waiting in WAITING_USER: text Input for
// a question, ActionID with InputValue for a human-in-the-loop request's
// action buttons and input fields, or Approved with the paused CallID for
// a write confirmation.
type Reply struct {
	Input      string `json:"input,omitempty"`
	ActionID   string `json:"action_id,omitempty"`
	InputValue string `json:"input_value,omitempty"`
	CallID     string `json:"call_id,omitempty"`
	Approved   *bool  `json:"approved,omitempty"`
}

// Reply answers a paused run, which continues under the same run id;
// follow it on the same event stream. A run that waits for nothing is
// ErrConflict. A reply is not retried.
func (c *Client) Reply(ctx context.Context, runID string, r Reply) (*ExecuteResult, error) {
	if err := validID("run_id", runID); err != nil {
		return nil, err
	}
	if r.Input == "" && r.ActionID == "" && r.InputValue == "" && r.Approved == nil {
		return nil, invalid("input", "a reply needs input, action_id, input_value or approved")
	}
	if utf8.RuneCountInString(r.Input) > MaxInputChars {
		return nil, invalid("input", "has more than %d characters", MaxInputChars)
	}
	if len(r.InputValue) > 4*MaxInputChars {
		return nil, invalid("input_value", "is longer than %d bytes", 4*MaxInputChars)
	}
	var out ExecuteResult
	if err := c.api.Do(ctx, rest.Call{Method: http.MethodPost, Path: RunsPath + "/" + url.PathEscape(runID) + "/reply", Body: r, OK: []int{http.StatusAccepted, http.StatusOK}}, &out); err != nil {
		return nil, fmt.Errorf("gateway: reply to run %s: %w", runID, err)
	}
	return &out, nil
}

// The routes RunEventsOptions.Route names.
const (
	RouteAuto    = "auto"
	RouteService = "service"
	RouteUser    = "user"
)

// RunEventsOptions page through a run's event index.
type RunEventsOptions struct {
	// After is the NextCursor of the previous page ("" from the start).
	After string
	// Limit is the page size; only the service route honours it (the
	// user route's pages are 100 events).
	Limit int
	// Route is RouteService (a service account or the admin), RouteUser
	// (a user's own run) or RouteAuto ("" too): the service route, and
	// the user route when that answers 403; once the user route answered
	// so, the client remembers to use it for later RouteAuto calls.
	Route string
}

// RunEvent is one event of a run's event index.
type RunEvent struct {
	// EventID identifies the event; empty on the user route.
	EventID string `json:"event_id,omitempty"`
	Type    string `json:"type"`
	// Data is the event's payload.
	Data json.RawMessage `json:"data,omitempty"`
	// Timestamp is when it was recorded, RFC 3339.
	Timestamp string `json:"timestamp"`
	// Sequence orders a run's events from 1; 0 when the route did not
	// say.
	Sequence int64 `json:"sequence,omitempty"`
	// TraceID and SpanID are the trace the event was recorded in, when
	// the gateway kept it.
	TraceID string `json:"trace_id,omitempty"`
	SpanID  string `json:"span_id,omitempty"`
}

// RunEventsPage is one page of a run's event index.
type RunEventsPage struct {
	Events []RunEvent
	// NextCursor continues after the page's last event (as
	// RunEventsOptions.After); empty when the page was the last. On the
	// user route, which has no cursor, it is the last event's sequence,
	// and empty once a page comes back empty.
	NextCursor string
	// RequestID is the gateway's id of the request, for support.
	RequestID string
}

// RunEvents returns one page of a run's recorded events.
func (c *Client) RunEvents(ctx context.Context, runID string, o RunEventsOptions) (*RunEventsPage, error) {
	if err := validID("run_id", runID); err != nil {
		return nil, err
	}
	if o.Limit < 0 {
		return nil, invalid("limit", "must not be negative")
	}
	switch o.Route {
	case RouteService:
		return c.serviceRunEvents(ctx, runID, o)
	case RouteUser:
		return c.userRunEvents(ctx, runID, o)
	case RouteAuto, "":
		if c.userRoute.Load() {
			return c.userRunEvents(ctx, runID, o)
		}
		p, err := c.serviceRunEvents(ctx, runID, o)
		if !errors.Is(err, ErrForbidden) {
			return p, err
		}
		if p, err = c.userRunEvents(ctx, runID, o); err == nil {
			c.userRoute.Store(true)
		}
		return p, err
	}
	return nil, invalid("route", "must be %q, %q or %q", RouteAuto, RouteService, RouteUser)
}

func (c *Client) serviceRunEvents(ctx context.Context, runID string, o RunEventsOptions) (*RunEventsPage, error) {
	q := url.Values{}
	setQuery(q, "after", o.After)
	if o.Limit > 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	var out struct {
		Events     []RunEvent `json:"events"`
		NextCursor *string    `json:"next_cursor"`
		RequestID  string     `json:"request_id"`
	}
	if err := c.api.Do(ctx, rest.Call{Method: http.MethodGet, Path: ServiceRunsPath + url.PathEscape(runID) + "/events", Query: q, Retry: rest.RetryTransient}, &out); err != nil {
		return nil, fmt.Errorf("gateway: run events %s: %w", runID, err)
	}
	p := &RunEventsPage{Events: out.Events, RequestID: out.RequestID}
	if out.NextCursor != nil {
		p.NextCursor = *out.NextCursor
	}
	return p, nil
}

func (c *Client) userRunEvents(ctx context.Context, runID string, o RunEventsOptions) (*RunEventsPage, error) {
	q := url.Values{}
	setQuery(q, "after", o.After)
	var out struct {
		Events    []RunEvent `json:"events"`
		RequestID string     `json:"request_id"`
	}
	if err := c.api.Do(ctx, rest.Call{Method: http.MethodGet, Path: RunsPath + "/" + url.PathEscape(runID) + "/events", Query: q, Retry: rest.RetryTransient}, &out); err != nil {
		return nil, fmt.Errorf("gateway: run events %s: %w", runID, err)
	}
	p := &RunEventsPage{Events: out.Events, RequestID: out.RequestID}
	if n := len(out.Events); n > 0 {
		p.NextCursor = strconv.FormatInt(out.Events[n-1].Sequence, 10)
	}
	return p, nil
}

// SendDebugControl applies a debugger action to a run that has not ended
// (POST /api/v1/runs/{id}/debug/{action}) and returns the run's debugger
// as it then is: DebugPause holds the run at its next event boundary,
// DebugStep lets one more event through a paused run, DebugResume lets
// it go on, DebugAbort cancels it. metadata (nil for none) is kept with
// the action's event. An ended run is ErrConflict, and so is a step of a
// run that is not paused. The call is made once, never retried: a step
// the gateway applied but whose answer was lost would be applied twice.
// (An open circuit breaker still refuses it without a request.)
func (c *Client) SendDebugControl(ctx context.Context, runID string, action DebugAction, metadata map[string]any) (*DebugSession, error) {
	if err := validID("run_id", runID); err != nil {
		return nil, err
	}
	if !action.Valid() {
		return nil, invalid("action", "must be %q, %q, %q or %q", DebugPause, DebugResume, DebugStep, DebugAbort)
	}
	body := DebugRequest{Metadata: metadata}
	if b, err := json.Marshal(body); err != nil {
		return nil, invalid("metadata", "is not JSON: %v", err)
	} else if len(b) > MaxDebugMetadataBytes {
		return nil, invalid("metadata", "is larger than %d bytes as JSON", MaxDebugMetadataBytes)
	}
	var out DebugSession
	path := RunsPath + "/" + url.PathEscape(runID) + "/debug/" + string(action)
	if err := c.api.Do(ctx, rest.Call{Method: http.MethodPost, Path: path, Body: body, Retry: rest.RetryOnce}, &out); err != nil {
		return nil, fmt.Errorf("gateway: debug %s run %s: %w", action, runID, err)
	}
	return &out, nil
}

// InstallRequest installs an agent as an instance: exactly one of a
// Hosted agent, the A2A agent at URL, and the agent of the registry named
// AgentID.
type InstallRequest struct {
	// Name is 1 to 64 of a-z, 0-9, '.', '_' and '-', starting with a
	// letter or digit; unique in the tenant.
	Name    string
	Hosted  string
	URL     string
	AgentID string
	Config  map[string]any
	// Secrets are sealed at rest by the gateway and sent only to the
	// agent; they are never returned.
	Secrets       map[string]secret.Value
	Memory        bool
	MemoryBudget  *MemoryBudget
	Scopes        []string
	CustomHeaders []string
	Published     bool
	// Delivery is DeliveryPull for an agent that connects out and pulls
	// its runs (then none of Hosted, URL and AgentID); BillingMode and
	// ToolClass are what its invocation tokens grant.
	Delivery    string
	BillingMode string
	ToolClass   string
}

// wire returns the request body, with the secrets' values: the only place
// they are revealed. It is not MarshalJSON, so that a request logged as
// JSON (slog's JSON handler, say) shows secret.Redacted.
func (r InstallRequest) wire() ([]byte, error) {
	type body struct {
		Name          string            `json:"name"`
		Hosted        string            `json:"hosted,omitempty"`
		URL           string            `json:"url,omitempty"`
		AgentID       string            `json:"agent_id,omitempty"`
		Config        map[string]any    `json:"config,omitempty"`
		Secrets       map[string]string `json:"secrets,omitempty"`
		Memory        bool              `json:"memory,omitempty"`
		MemoryBudget  *MemoryBudget     `json:"memory_budget,omitempty"`
		Scopes        []string          `json:"scopes,omitempty"`
		CustomHeaders []string          `json:"custom_headers,omitempty"`
		Published     bool              `json:"published,omitempty"`
		Delivery      string            `json:"delivery,omitempty"`
		BillingMode   string            `json:"billing_mode,omitempty"`
		ToolClass     string            `json:"tool_class,omitempty"`
	}
	b := body{
		Name: r.Name, Hosted: r.Hosted, URL: r.URL, AgentID: r.AgentID, Config: r.Config, Memory: r.Memory,
		MemoryBudget: r.MemoryBudget, Scopes: r.Scopes, CustomHeaders: r.CustomHeaders, Published: r.Published,
		Delivery: r.Delivery, BillingMode: r.BillingMode, ToolClass: r.ToolClass,
	}
	if len(r.Secrets) > 0 {
		b.Secrets = make(map[string]string, len(r.Secrets))
		for k, v := range r.Secrets {
			b.Secrets[k] = v.Reveal()
		}
	}
	return json.Marshal(b)
}

// Install installs an instance and returns it (without secret values).
func (c *Client) Install(ctx context.Context, r InstallRequest) (*Instance, error) {
	if r.Name == "" {
		return nil, invalid("name", "is required")
	}
	if !validInstanceName(r.Name) {
		return nil, invalid("name", "must be 1 to 64 of a-z 0-9 . _ -, starting with a letter or digit")
	}
	switch n := targets(r.Hosted != "", r.URL != "", r.AgentID != ""); {
	case r.Delivery == DeliveryPull && n != 0:
		return nil, invalid("delivery", "a pull instance has none of hosted, url and agent_id: its agent connects out")
	case r.Delivery != DeliveryPull && n != 1:
		return nil, invalid("hosted", "exactly one of hosted, url and agent_id is required")
	}
	body, err := r.wire()
	if err != nil {
		return nil, fmt.Errorf("gateway: install %s: %w", r.Name, err)
	}
	var out Instance
	if err := c.api.Do(ctx, rest.Call{Method: http.MethodPost, Path: InstancesPath, Body: json.RawMessage(body), OK: []int{http.StatusCreated, http.StatusOK}}, &out); err != nil {
		return nil, fmt.Errorf("gateway: install %s: %w", r.Name, err)
	}
	return &out, nil
}

// validInstanceName reports whether s is an instance name the gateway
// takes: 1 to 64 of a-z 0-9 . _ -, the first a letter or digit.
func validInstanceName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || i > 0 && (c == '.' || c == '_' || c == '-') {
			continue
		}
		return false
	}
	return true
}

// targets counts what an instance runs: hosted, url, agent_id.
func targets(set ...bool) int {
	n := 0
	for _, b := range set {
		if b {
			n++
		}
	}
	return n
}

// InstanceListOptions page through a tenant's instances, by name.
type InstanceListOptions struct {
	// After is the NextCursor of the previous page.
	After string
	Limit int
}

// InstancePage is one page of instances.
type InstancePage struct {
	Instances  []Instance `json:"instances"`
	NextCursor string     `json:"next_cursor"`
}

// ListInstances returns one page of the tenant's instances.
func (c *Client) ListInstances(ctx context.Context, o InstanceListOptions) (*InstancePage, error) {
	if o.Limit < 0 {
		return nil, invalid("limit", "must not be negative")
	}
	q := url.Values{}
	setQuery(q, "after", o.After)
	if o.Limit > 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	var out InstancePage
	if err := c.api.Do(ctx, rest.Call{Method: http.MethodGet, Path: InstancesPath, Query: q, Retry: rest.RetryTransient}, &out); err != nil {
		return nil, fmt.Errorf("gateway: list instances: %w", err)
	}
	return &out, nil
}

// GetInstance returns an instance of the tenant.
func (c *Client) GetInstance(ctx context.Context, id string) (*Instance, error) {
	if err := validID("instance_id", id); err != nil {
		return nil, err
	}
	var out Instance
	if err := c.api.Do(ctx, rest.Call{Method: http.MethodGet, Path: InstancesPath + "/" + url.PathEscape(id), Retry: rest.RetryTransient}, &out); err != nil {
		return nil, fmt.Errorf("gateway: get instance %s: %w", id, err)
	}
	return &out, nil
}

// InstanceUpdate changes an instance: each field set (non-nil) replaces
// the instance's; an empty non-nil slice or map clears it. SetSecrets
// sets the named secrets' values and RemoveSecrets removes secrets; the
// others stay.
type InstanceUpdate struct {
	Name *string
	// Hosted, URL and AgentID exclude each other: set one to change what
	// the instance runs.
	Hosted        *string
	URL           *string
	AgentID       *string
	Config        map[string]any
	SetSecrets    map[string]secret.Value
	RemoveSecrets []string
	Memory        *bool
	MemoryBudget  *MemoryBudget
	Scopes        []string
	CustomHeaders []string
	Published     *bool
	Delivery      *string
	BillingMode   *string
	ToolClass     *string
}

// wire returns the PATCH body: the fields set, and "secrets" with a value
// per set secret and null per removed one. Like InstallRequest.wire, it is
// not MarshalJSON.
func (u InstanceUpdate) wire() ([]byte, error) {
	m := map[string]any{}
	setPtr := func(k string, p any, isNil bool) {
		if !isNil {
			m[k] = p
		}
	}
	setPtr("name", u.Name, u.Name == nil)
	setPtr("hosted", u.Hosted, u.Hosted == nil)
	setPtr("url", u.URL, u.URL == nil)
	setPtr("agent_id", u.AgentID, u.AgentID == nil)
	setPtr("config", u.Config, u.Config == nil)
	setPtr("memory", u.Memory, u.Memory == nil)
	setPtr("memory_budget", u.MemoryBudget, u.MemoryBudget == nil)
	setPtr("scopes", u.Scopes, u.Scopes == nil)
	setPtr("custom_headers", u.CustomHeaders, u.CustomHeaders == nil)
	setPtr("published", u.Published, u.Published == nil)
	setPtr("delivery", u.Delivery, u.Delivery == nil)
	setPtr("billing_mode", u.BillingMode, u.BillingMode == nil)
	setPtr("tool_class", u.ToolClass, u.ToolClass == nil)
	if len(u.SetSecrets) > 0 || len(u.RemoveSecrets) > 0 {
		s := make(map[string]*string, len(u.SetSecrets)+len(u.RemoveSecrets))
		for _, k := range u.RemoveSecrets {
			s[k] = nil
		}
		for k, v := range u.SetSecrets {
			val := v.Reveal()
			s[k] = &val
		}
		m["secrets"] = s
	}
	return json.Marshal(m)
}

// UpdateInstance changes an instance and returns it.
func (c *Client) UpdateInstance(ctx context.Context, id string, u InstanceUpdate) (*Instance, error) {
	if err := validID("instance_id", id); err != nil {
		return nil, err
	}
	if u.Name != nil && !validInstanceName(*u.Name) {
		return nil, invalid("name", "must be 1 to 64 of a-z 0-9 . _ -, starting with a letter or digit")
	}
	if targets(u.Hosted != nil, u.URL != nil, u.AgentID != nil) > 1 {
		return nil, invalid("hosted", "hosted, url and agent_id exclude each other")
	}
	for _, k := range u.RemoveSecrets {
		if _, ok := u.SetSecrets[k]; ok {
			return nil, invalid("secrets", "%q is both set and removed", clip(k, 64))
		}
	}
	body, err := u.wire()
	if err != nil {
		return nil, fmt.Errorf("gateway: update instance %s: %w", id, err)
	}
	var out Instance
	if err := c.api.Do(ctx, rest.Call{Method: http.MethodPatch, Path: InstancesPath + "/" + url.PathEscape(id), Body: json.RawMessage(body)}, &out); err != nil {
		return nil, fmt.Errorf("gateway: update instance %s: %w", id, err)
	}
	return &out, nil
}

// RemoveInstance removes an instance; its runs stay.
func (c *Client) RemoveInstance(ctx context.Context, id string) error {
	if err := validID("instance_id", id); err != nil {
		return err
	}
	if err := c.api.Do(ctx, rest.Call{Method: http.MethodDelete, Path: InstancesPath + "/" + url.PathEscape(id), OK: []int{http.StatusNoContent, http.StatusOK}}, nil); err != nil {
		return fmt.Errorf("gateway: remove instance %s: %w", id, err)
	}
	return nil
}

func validID(field, id string) error {
	if id == "" {
		return invalid(field, "is required")
	}
	if len(id) > 256 || !utf8.ValidString(id) || strings.ContainsFunc(id, unicode.IsControl) {
		return invalid(field, "is not an id")
	}
	return nil
}

func setQuery(q url.Values, k, v string) {
	if v != "" {
		q.Set(k, v)
	}
}

// refused is the *Error of a refusal.
func refused(r *rest.Refusal) error {
	return &Error{Status: r.Status, Type: r.Type, Title: r.Title, Detail: r.Detail, Errors: r.Errors, retryAfter: r.After}
}
