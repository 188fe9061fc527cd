package a2aclient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"unicode"

	"novaos.dev/novaos/a2a"
)

// MediaTypeA2AJSON is the content type of the HTTP+JSON binding's requests
// and answers (A2A v1.0.1 §11.1).
const MediaTypeA2AJSON = "application/a2a+json"

// restAccept is what a unary REST call accepts: peers still answer
// application/json (a2a-go v2.3.1 does).
const restAccept = MediaTypeA2AJSON + ", application/json"

// restTransport speaks the HTTP+JSON binding (A2A v1.0.1 §11): one verb and
// path per method under the interface URL, a /{tenant} prefix when the
// request names a tenant, GET parameters in the query, SSE streams whose
// data are StreamResponse objects, errors as google.rpc.Status bodies.
type restTransport struct {
	httpWire
	base string // the interface URL without a trailing slash
	// subscribeGET is set once the server answered POST :subscribe with
	// 405: the spec's text says POST, its proto GET, and servers differ.
	subscribeGET atomic.Bool
}

var _ Transport = (*restTransport)(nil)

// NewRESTTransport is the TransportFactory of the HTTP+JSON binding
// (a2a.BindingHTTPJSON).
func NewRESTTransport(cfg *TransportConfig) (Transport, error) {
	w, err := newHTTPWire(a2a.BindingHTTPJSON, cfg)
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(cfg.Interface.URL)
	if err != nil {
		return nil, fmt.Errorf("a2aclient: HTTP+JSON agent URL: %w", err)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("a2aclient: HTTP+JSON agent URL %q has a query or fragment: the binding appends paths to it", cfg.Interface.URL)
	}
	return &restTransport{httpWire: w, base: strings.TrimSuffix(cfg.Interface.URL, "/")}, nil
}

// restRoute is one call on the HTTP+JSON wire.
type restRoute struct {
	verb  string
	path  string // escaped, from the tenant prefix on
	query query
	body  []byte // nil: no body
}

// query is a query string built in the order parameters are added.
type query []byte

// add appends name=value, escaped as RFC 3986 says (a space is %20: "+"
// means a plus sign to a server that does not read forms).
func (q *query) add(name, value string) {
	if len(*q) > 0 {
		*q = append(*q, '&')
	}
	*q = append(*q, name...)
	*q = append(*q, '=')
	*q = append(*q, strings.ReplaceAll(url.QueryEscape(value), "+", "%20")...)
}

// route maps a call onto its verb, path, query and body. Fields that travel
// in the path (tenant, task id, config id) are left out of the body.
func route(call *Call) (restRoute, error) {
	var (
		r       restRoute
		tenant  string
		err     error
		missing string
	)
	need := func(name, v string) {
		if v == "" && missing == "" {
			missing = name
		}
	}
	seg := url.PathEscape
	switch p := call.Params.(type) {
	case *a2a.SendMessageRequest:
		tenant = p.Tenant
		r.verb, r.path = http.MethodPost, "/message:send"
		if call.Method == a2a.MethodSendStreamingMessage {
			r.path = "/message:stream"
		}
		q := *p
		q.Tenant = ""
		r.body, err = a2a.AppendSendMessageRequest(make([]byte, 0, 512), &q)
	case *a2a.GetTaskRequest:
		tenant = p.Tenant
		need("id", p.ID)
		r.verb, r.path = http.MethodGet, "/tasks/"+seg(p.ID)
		if p.HistoryLength != nil {
			r.query.add("historyLength", strconv.Itoa(int(*p.HistoryLength)))
		}
	case *a2a.ListTasksRequest:
		tenant = p.Tenant
		r.verb, r.path = http.MethodGet, "/tasks"
		r.query = listTasksQuery(p)
	case *a2a.CancelTaskRequest:
		tenant = p.Tenant
		need("id", p.ID)
		r.verb, r.path = http.MethodPost, "/tasks/"+seg(p.ID)+":cancel"
		r.body, err = json.Marshal(struct {
			Metadata map[string]any `json:"metadata,omitempty"`
		}{p.Metadata})
	case *a2a.SubscribeToTaskRequest:
		tenant = p.Tenant
		need("id", p.ID)
		r.verb, r.path, r.body = http.MethodPost, "/tasks/"+seg(p.ID)+":subscribe", []byte("{}")
	case *a2a.TaskPushNotificationConfig:
		tenant = p.Tenant
		need("taskId", p.TaskID)
		r.verb, r.path = http.MethodPost, "/tasks/"+seg(p.TaskID)+"/pushNotificationConfigs"
		q := *p
		q.Tenant, q.TaskID = "", ""
		r.body, err = json.Marshal(&q)
	case *a2a.GetTaskPushNotificationConfigRequest: // and Delete: the same type
		tenant = p.Tenant
		need("taskId", p.TaskID)
		need("id", p.ID)
		r.verb, r.path = http.MethodGet, "/tasks/"+seg(p.TaskID)+"/pushNotificationConfigs/"+seg(p.ID)
		if call.Method == a2a.MethodDeleteTaskPushNotificationConfig {
			r.verb = http.MethodDelete
		}
	case *a2a.ListTaskPushNotificationConfigsRequest:
		tenant = p.Tenant
		need("taskId", p.TaskID)
		r.verb, r.path = http.MethodGet, "/tasks/"+seg(p.TaskID)+"/pushNotificationConfigs"
		if p.PageSize != nil {
			r.query.add("pageSize", strconv.Itoa(int(*p.PageSize)))
		}
		if p.PageToken != "" {
			r.query.add("pageToken", p.PageToken)
		}
	case *a2a.GetExtendedAgentCardRequest:
		tenant = p.Tenant
		r.verb, r.path = http.MethodGet, "/extendedAgentCard"
	default:
		return r, fmt.Errorf("a2aclient: %s: the HTTP+JSON binding has no route for params of type %T", call.Method, call.Params)
	}
	if missing != "" {
		return r, fmt.Errorf("a2aclient: %s: %s is required (the HTTP+JSON binding puts it in the path)", call.Method, missing)
	}
	if err != nil {
		return r, fmt.Errorf("a2aclient: %s: encode request: %w", call.Method, err)
	}
	if tenant != "" {
		r.path = "/" + seg(tenant) + r.path
	}
	return r, nil
}

// listTasksQuery spells ListTasks' filters as query parameters (§11.5:
// camelCase names, enums by name, booleans in lower case).
func listTasksQuery(p *a2a.ListTasksRequest) query {
	var q query
	if p.ContextID != "" {
		q.add("contextId", p.ContextID)
	}
	if p.Status != a2a.TaskStateUnspecified {
		q.add("status", p.Status.String())
	}
	if p.PageSize != nil {
		q.add("pageSize", strconv.Itoa(int(*p.PageSize)))
	}
	if p.PageToken != "" {
		q.add("pageToken", p.PageToken)
	}
	if p.HistoryLength != nil {
		q.add("historyLength", strconv.Itoa(int(*p.HistoryLength)))
	}
	if p.StatusTimestampAfter != "" {
		q.add("statusTimestampAfter", p.StatusTimestampAfter)
	}
	if p.IncludeArtifacts {
		q.add("includeArtifacts", "true")
	}
	return q
}

// url is the request URL of a route.
func (t *restTransport) url(r *restRoute) string {
	u := t.base + r.path
	if len(r.query) > 0 {
		u += "?" + string(r.query)
	}
	return u
}

func (t *restTransport) Unary(ctx context.Context, call *Call, out any) error {
	r, err := route(call)
	if err != nil {
		return err
	}
	resp, err := t.do(ctx, call, r.verb, t.url(&r), r.body, MediaTypeA2AJSON, restAccept)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := t.read(ctx, call.Method, resp)
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return restError(call.Method, resp.StatusCode, resp.Header, body)
	}
	return decodeRESTResult(call.Method, body, out)
}

// decodeRESTResult reads a successful answer into out (nil: the method
// has no result, and any body is ignored).
func decodeRESTResult(method string, body []byte, out any) error {
	if out == nil {
		return nil
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return fmt.Errorf("a2aclient: %s: %w: empty body", method, ErrInvalidResponse)
	}
	if err := a2a.Unmarshal(body, out); err != nil {
		return fmt.Errorf("a2aclient: %s: %w: %v", method, ErrInvalidResponse, err)
	}
	return nil
}

func (t *restTransport) Stream(ctx context.Context, call *Call, activity func()) (FrameStream, error) {
	r, err := route(call)
	if err != nil {
		return nil, permanent{err}
	}
	subscribe := call.Method == a2a.MethodSubscribeToTask
	if subscribe && t.subscribeGET.Load() {
		r.verb, r.body = http.MethodGet, nil
	}
	resp, err := t.do(ctx, call, r.verb, t.url(&r), r.body, MediaTypeA2AJSON, "text/event-stream")
	if err != nil {
		return nil, err
	}
	if subscribe && resp.StatusCode == http.StatusMethodNotAllowed && r.verb == http.MethodPost {
		resp.Body.Close()
		t.subscribeGET.Store(true)
		if resp, err = t.do(ctx, call, http.MethodGet, t.url(&r), nil, "", "text/event-stream"); err != nil {
			return nil, err
		}
	}
	if mediaType(resp.Header) == "text/event-stream" && resp.StatusCode/100 == 2 {
		return newSSEStream(ctx, call.Method, resp, t.maxEvent, activity, decodeRESTFrame), nil
	}
	// A refusal, or a whole answer, as plain JSON.
	defer resp.Body.Close()
	body, err := t.read(ctx, call.Method, resp)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		return nil, restError(call.Method, resp.StatusCode, resp.Header, body)
	}
	var f a2a.StreamResponse
	if err := decodeRESTResult(call.Method, body, &f); err != nil {
		return nil, err
	}
	if err := checkFrame(call.Method, &f); err != nil {
		return nil, err
	}
	return &oneFrame{f: &f}, nil
}

// decodeRESTFrame parses one SSE event of an HTTP+JSON stream: a
// StreamResponse, or the agent's error as a google.rpc.Status body (a2a-js
// names such an event "error"; a2a-go does not name it).
func decodeRESTFrame(method string, ev a2a.Event) (*a2a.StreamResponse, error) {
	var f a2a.StreamResponse
	if ev.Event != "error" {
		if err := a2a.Unmarshal(ev.Data, &f); err != nil {
			return nil, fmt.Errorf("a2aclient: %s: %w: %v", method, ErrInvalidResponse, err)
		}
		if f.Task != nil || f.Message != nil || f.StatusUpdate != nil || f.ArtifactUpdate != nil {
			return &f, nil
		}
	}
	st, ok := decodeStatus(ev.Data)
	if !ok {
		if ev.Event == "error" {
			return nil, fmt.Errorf("a2aclient: %s: %w: an error event that is not a google.rpc.Status body", method, ErrInvalidResponse)
		}
		return &f, nil // checkFrame says what is wrong with it
	}
	// Inside a stream there is no HTTP status but the body's own code.
	if err := st.callError(method, st.Code); err != nil {
		return nil, err
	}
	return nil, &HTTPError{Method: method, StatusCode: st.Code, Detail: st.Message}
}

// restStatus is the error member of an HTTP+JSON error body: a
// google.rpc.Status in its JSON form (§11.6).
type restStatus struct {
	Code    int               `json:"code"`
	Status  string            `json:"status"`
	Message string            `json:"message"`
	Details []json.RawMessage `json:"details"`
}

// decodeStatus reads {"error": {code, status, message, details}}; ok is
// false for any other body.
func decodeStatus(body []byte) (*restStatus, bool) {
	var w struct {
		Error *restStatus `json:"error"`
	}
	if err := a2a.Unmarshal(body, &w); err != nil || w.Error == nil {
		return nil, false
	}
	return w.Error, true
}

// errorInfo is the google.rpc.ErrorInfo detail an A2A error carries.
type errorInfo struct {
	Type     string            `json:"@type"`
	Reason   string            `json:"reason"`
	Domain   string            `json:"domain"`
	Metadata map[string]string `json:"metadata"`
}

// codeForReason reads an ErrorInfo reason back as a code: the a2a
// registry's, and UNAUTHENTICATED, which a2a-go and NovaOS send for a
// missing credential.
func codeForReason(reason string) (int, bool) {
	if reason == "UNAUTHENTICATED" {
		return codeUnauthenticated, true
	}
	return a2a.CodeForReason(reason)
}

// statusCodes is the code of an error body without a known A2A reason,
// from its HTTP status, where the status alone says it (§5.4 read
// backwards: 404 is only ever TaskNotFound). Other statuses stay an
// *HTTPError, so 401, 403 and 429 keep matching ErrUnauthenticated,
// ErrForbidden and ErrRateLimited.
var statusCodes = map[int]int{
	http.StatusBadRequest:          a2a.CodeInvalidParams,
	http.StatusNotFound:            a2a.CodeTaskNotFound,
	http.StatusInternalServerError: a2a.CodeInternalError,
	http.StatusNotImplemented:      a2a.CodeMethodNotFound,
}

// callError is the *CallError the status stands for, or nil when it names
// no A2A error (no known ErrorInfo reason, and an HTTP status that maps to
// none).
func (s *restStatus) callError(method string, httpStatus int) error {
	e := &a2a.Error{Message: s.Message}
	found := false
	for _, d := range s.Details {
		var info errorInfo
		if a2a.Unmarshal(d, &info) != nil || info.Type != a2a.ErrorInfoType || info.Domain != a2a.ErrorDomain {
			continue
		}
		e.Metadata = info.Metadata
		if c, ok := codeForReason(info.Reason); ok {
			e.Code, found = c, true
		}
		break
	}
	if !found {
		c, ok := statusCodes[httpStatus]
		if !ok {
			return nil
		}
		e.Code = c
	}
	if len(s.Details) > 0 {
		e.Data, _ = json.Marshal(s.Details)
	}
	return &CallError{Method: method, Err: e}
}

// restError turns a non-2xx answer into an error: a *CallError when the
// body is a google.rpc.Status naming an A2A error, else an *HTTPError
// whose Detail is what a plain-text or problem+json body said.
func restError(method string, status int, h http.Header, body []byte) error {
	if st, ok := decodeStatus(body); ok {
		if err := st.callError(method, status); err != nil {
			return err
		}
		return &HTTPError{Method: method, StatusCode: status, Body: snippet(body), Detail: st.Message}
	}
	return &HTTPError{Method: method, StatusCode: status, Body: snippet(body), Detail: bodyDetail(mediaType(h), body)}
}

// bodyDetail is the human-readable part of an error body that is not a
// google.rpc.Status: an RFC 9457 problem's title and detail, or the first
// line of plain text.
func bodyDetail(mt string, body []byte) string {
	switch {
	case mt == "application/problem+json":
		var p struct {
			Title  string `json:"title"`
			Detail string `json:"detail"`
		}
		if json.Unmarshal(body, &p) != nil {
			return ""
		}
		if p.Title != "" && p.Detail != "" {
			return printable(p.Title + ": " + p.Detail)
		}
		return printable(p.Title + p.Detail)
	case mt == "text/plain" || mt == "":
		line, _, _ := strings.Cut(string(body), "\n")
		return printable(line)
	}
	return ""
}

// printable keeps a peer's text safe to print on one line: control
// characters become spaces, and it is cut at 200 bytes.
func printable(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == unicode.ReplacementChar {
			return ' '
		}
		return r
	}, strings.TrimSpace(s))
	if len(s) > 200 {
		s = strings.ToValidUTF8(s[:200], "") + "…"
	}
	return s
}
