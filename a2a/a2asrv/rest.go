package a2asrv

import (
	"bytes"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"novaos.dev/novaos/a2a"
)

// The HTTP+JSON binding (spec §11): each method is a verb on a resource
// path, optionally under a /{tenant} prefix; bodies and answers are the
// request and response messages themselves, in application/a2a+json;
// streams are SSE whose data lines are StreamResponse objects; errors are
// the google.rpc.Status body with the v1.0.1 HTTP status.

// restRoute is a parsed resource path.
type restRoute struct {
	method string // the A2A method
	tenant string
	id     string // task id
	config string // push-config id
}

// restContentType is what the binding answers with (spec §11.1), unless
// the caller's Accept names application/json and not it: a2a-go's client
// asks for application/json and reads an error body only under that type.
const restContentType = "application/a2a+json"

// answerType is the media type of a JSON answer to r: application/a2a+json
// when the caller asks for it or for anything, else application/json (a
// caller that asks for application/json, or for an event stream and is
// answered with an error instead).
func answerType(r *http.Request) string {
	accept := strings.Join(r.Header.Values("Accept"), ",")
	if accept == "" || strings.Contains(accept, restContentType) || strings.Contains(accept, "*/*") {
		return restContentType
	}
	return "application/json"
}

// parseRESTPath maps a verb and a path relative to the agent's root to a
// method. The path is matched first as it is, then with its first segment
// taken as the tenant, so a tenant named like a resource ("tasks") loses
// to the resource. ok is false for a path that names no resource;
// allowed then lists the verbs the path accepts (empty for none).
func parseRESTPath(verb, escapedPath string) (r restRoute, allowed []string, ok bool) {
	segs, valid := splitPath(escapedPath)
	if !valid {
		return r, nil, false
	}
	if r, allowed, ok = matchREST(verb, segs); ok || len(allowed) > 0 {
		return r, allowed, ok
	}
	if len(segs) > 1 && segs[0] != "" {
		if r, allowed, ok = matchREST(verb, segs[1:]); ok {
			r.tenant = segs[0]
		}
		return r, allowed, ok
	}
	return r, nil, false
}

// splitPath splits an escaped path into unescaped segments; an id may hold
// an escaped slash.
func splitPath(p string) ([]string, bool) {
	p = strings.TrimPrefix(p, "/")
	if p == "" {
		return nil, true
	}
	segs := strings.Split(p, "/")
	for i, s := range segs {
		u, err := url.PathUnescape(s)
		if err != nil || u == "" {
			return nil, false
		}
		segs[i] = u
	}
	return segs, true
}

// matchREST matches segments against the binding's paths.
func matchREST(verb string, segs []string) (restRoute, []string, bool) {
	var r restRoute
	pick := func(byVerb map[string]string) ([]string, bool) {
		if m, ok := byVerb[verb]; ok {
			r.method = m
			return nil, true
		}
		allowed := make([]string, 0, len(byVerb))
		for v := range byVerb {
			allowed = append(allowed, v)
		}
		return allowed, false
	}
	var allowed []string
	var ok bool
	switch {
	case len(segs) == 1 && segs[0] == "message:send":
		allowed, ok = pick(map[string]string{http.MethodPost: a2a.MethodSendMessage})
	case len(segs) == 1 && segs[0] == "message:stream":
		allowed, ok = pick(map[string]string{http.MethodPost: a2a.MethodSendStreamingMessage})
	case len(segs) == 1 && segs[0] == "extendedAgentCard":
		allowed, ok = pick(map[string]string{http.MethodGet: a2a.MethodGetExtendedAgentCard})
	case len(segs) == 1 && segs[0] == "tasks":
		allowed, ok = pick(map[string]string{http.MethodGet: a2a.MethodListTasks})
	case len(segs) == 2 && segs[0] == "tasks":
		id, action := splitAction(segs[1])
		r.id = id
		switch action {
		case "cancel":
			allowed, ok = pick(map[string]string{http.MethodPost: a2a.MethodCancelTask})
		case "subscribe":
			// The spec's text says POST, its proto GET: both are served.
			allowed, ok = pick(map[string]string{http.MethodPost: a2a.MethodSubscribeToTask, http.MethodGet: a2a.MethodSubscribeToTask})
		default:
			allowed, ok = pick(map[string]string{http.MethodGet: a2a.MethodGetTask})
		}
	case len(segs) == 3 && segs[0] == "tasks" && segs[2] == "pushNotificationConfigs":
		r.id = segs[1]
		allowed, ok = pick(map[string]string{http.MethodPost: a2a.MethodCreateTaskPushNotificationConfig, http.MethodGet: a2a.MethodListTaskPushNotificationConfigs})
	case len(segs) == 4 && segs[0] == "tasks" && segs[2] == "pushNotificationConfigs":
		r.id, r.config = segs[1], segs[3]
		allowed, ok = pick(map[string]string{http.MethodGet: a2a.MethodGetTaskPushNotificationConfig, http.MethodDelete: a2a.MethodDeleteTaskPushNotificationConfig})
	}
	return r, allowed, ok
}

// splitAction splits "{id}:cancel" and "{id}:subscribe"; any other colon
// is part of the id.
func splitAction(seg string) (id, action string) {
	if i := strings.LastIndexByte(seg, ':'); i > 0 {
		switch seg[i+1:] {
		case "cancel", "subscribe":
			return seg[:i], seg[i+1:]
		}
	}
	return seg, ""
}

// restBinding is the HTTP+JSON binding of a Handler.
type restBinding struct {
	core    *Core
	bodies  *bodyPool
	methods map[string]restMethod // by A2A method name
}

// A restMethod builds a method's request from the route, the query and the
// body, and answers the call.
type restMethod func(b *restBinding, rc *restCall)

// A restReader builds a method's request from the route, the query and the
// body.
type restReader[Req any] func(b *restBinding, rc *restCall) (*Req, *a2a.Error)

// restCall is one HTTP+JSON request in flight.
type restCall struct {
	w     http.ResponseWriter
	r     *http.Request
	route restRoute
	call  Call
	// status, when set, overrides the error's HTTP status (413 for a body
	// over the limit).
	status int
}

func newRESTBinding(co *Core, bodies *bodyPool) *restBinding {
	return &restBinding{core: co, bodies: bodies, methods: map[string]restMethod{
		a2a.MethodSendMessage:          restUnary(bodyRequest[a2a.SendMessageRequest], co.tasks.sendMessage),
		a2a.MethodSendStreamingMessage: restStream(bodyRequest[a2a.SendMessageRequest], co.tasks.sendStreamingMessage),
		a2a.MethodGetTask:              restUnary(getTaskRequest, co.tasks.getTask),
		a2a.MethodListTasks:            restUnary(listTasksRequest, co.tasks.listTasks),
		a2a.MethodCancelTask: restUnary(func(b *restBinding, rc *restCall) (*a2a.CancelTaskRequest, *a2a.Error) {
			req, e := optionalBody[a2a.CancelTaskRequest](b, rc)
			if e == nil {
				e = pathField("id", &req.ID, rc.route.id)
			}
			return req, e
		}, co.tasks.cancelTask),
		a2a.MethodSubscribeToTask: restStream(func(b *restBinding, rc *restCall) (*a2a.SubscribeToTaskRequest, *a2a.Error) {
			req, e := optionalBody[a2a.SubscribeToTaskRequest](b, rc)
			if e == nil {
				e = pathField("id", &req.ID, rc.route.id)
			}
			return req, e
		}, co.tasks.subscribeToTask),
		a2a.MethodCreateTaskPushNotificationConfig: restUnary(func(b *restBinding, rc *restCall) (*a2a.TaskPushNotificationConfig, *a2a.Error) {
			req, e := bodyRequest[a2a.TaskPushNotificationConfig](b, rc)
			if e == nil {
				e = pathField("taskId", &req.TaskID, rc.route.id)
			}
			return req, e
		}, co.push.createConfig),
		a2a.MethodGetTaskPushNotificationConfig: restUnary(pushConfigRequest, co.push.getConfig),
		a2a.MethodListTaskPushNotificationConfigs: restUnary(func(_ *restBinding, rc *restCall) (*a2a.ListTaskPushNotificationConfigsRequest, *a2a.Error) {
			req := &a2a.ListTaskPushNotificationConfigsRequest{TaskID: rc.route.id}
			return req, readQuery(rc.r.URL.Query(), queryInt("pageSize", &req.PageSize), queryString("pageToken", &req.PageToken))
		}, co.push.listConfigs),
		a2a.MethodDeleteTaskPushNotificationConfig: restUnary(pushConfigRequest, co.push.deleteConfig),
		a2a.MethodGetExtendedAgentCard: restUnary(func(*restBinding, *restCall) (*a2a.GetExtendedAgentCardRequest, *a2a.Error) {
			return &a2a.GetExtendedAgentCardRequest{}, nil
		}, co.extendedCard),
	}}
}

func getTaskRequest(_ *restBinding, rc *restCall) (*a2a.GetTaskRequest, *a2a.Error) {
	req := &a2a.GetTaskRequest{ID: rc.route.id}
	return req, readQuery(rc.r.URL.Query(), queryInt("historyLength", &req.HistoryLength))
}

func listTasksRequest(_ *restBinding, rc *restCall) (*a2a.ListTasksRequest, *a2a.Error) {
	req := &a2a.ListTasksRequest{}
	return req, readQuery(rc.r.URL.Query(),
		queryString("contextId", &req.ContextID), queryState("status", &req.Status),
		queryInt("pageSize", &req.PageSize), queryString("pageToken", &req.PageToken),
		queryInt("historyLength", &req.HistoryLength), queryString("statusTimestampAfter", &req.StatusTimestampAfter),
		// a2a-go v2.3.1's client sends the filter under this
		// name; the spec's name wins when both are given.
		queryParam{"lastUpdatedAfter", func(v string) *a2a.Error {
			if req.StatusTimestampAfter == "" {
				req.StatusTimestampAfter = v
			}
			return nil
		}},
		queryBool("includeArtifacts", &req.IncludeArtifacts))
}

func pushConfigRequest(_ *restBinding, rc *restCall) (*a2a.GetTaskPushNotificationConfigRequest, *a2a.Error) {
	return &a2a.GetTaskPushNotificationConfigRequest{TaskID: rc.route.id, ID: rc.route.config}, nil
}

// pathField sets a request field the path names; a body that names it
// too must agree.
func pathField(name string, field *string, fromPath string) *a2a.Error {
	if *field != "" && *field != fromPath {
		return fieldError(name, "%s in the body does not match the path", name)
	}
	*field = fromPath
	return nil
}

// bodyRequest decodes the request body as a Req, strictly, like JSON-RPC
// params.
func bodyRequest[Req any](b *restBinding, rc *restCall) (*Req, *a2a.Error) {
	req := new(Req)
	if e := checkContentType(rc.r.Header); e != nil {
		rc.status = http.StatusUnsupportedMediaType
		return nil, e
	}
	// Not pooled: the request may keep slices of the body past this call.
	var buf bytes.Buffer
	body, status, e := b.bodies.read(&buf, rc.r)
	if e != nil {
		rc.status = status
		return nil, e
	}
	if e := a2a.DecodeParams(body, req); e != nil {
		return nil, e
	}
	return req, nil
}

// optionalBody is bodyRequest for methods whose body may be left out
// (cancel, subscribe).
func optionalBody[Req any](b *restBinding, rc *restCall) (*Req, *a2a.Error) {
	if rc.r.ContentLength == 0 || rc.r.Method == http.MethodGet {
		return new(Req), nil
	}
	return bodyRequest[Req](b, rc)
}

// A queryParam reads one query parameter into a request field.
type queryParam struct {
	name string
	set  func(string) *a2a.Error
}

// readQuery reads the parameters a method takes. Unknown parameters are
// ignored, as unknown JSON members are; a known one given twice is
// refused, since either reading would be a guess.
func readQuery(q url.Values, params ...queryParam) *a2a.Error {
	for _, p := range params {
		vs, ok := q[p.name]
		if !ok {
			continue
		}
		if len(vs) != 1 {
			return fieldError(p.name, "query parameter %s is given %d times", p.name, len(vs))
		}
		if e := p.set(vs[0]); e != nil {
			return e
		}
	}
	return nil
}

func queryString(name string, dst *string) queryParam {
	return queryParam{name, func(v string) *a2a.Error { *dst = v; return nil }}
}

func queryInt(name string, dst **int32) queryParam {
	return queryParam{name, func(v string) *a2a.Error {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil {
			return fieldError(name, "query parameter %s must be a 32-bit integer", name)
		}
		i := int32(n)
		*dst = &i
		return nil
	}}
}

func queryBool(name string, dst *bool) queryParam {
	return queryParam{name, func(v string) *a2a.Error {
		switch v {
		case "true":
			*dst = true
		case "false":
			*dst = false
		default:
			return fieldError(name, "query parameter %s must be true or false", name)
		}
		return nil
	}}
}

func queryState(name string, dst *a2a.TaskState) queryParam {
	return queryParam{name, func(v string) *a2a.Error {
		// The JSON model's own reading of an enum: its name or number.
		if err := a2a.Unmarshal([]byte(strconv.Quote(v)), dst); err != nil {
			if n, nerr := strconv.Atoi(v); nerr == nil && a2a.Unmarshal([]byte(strconv.Itoa(n)), dst) == nil {
				return nil
			}
			return fieldError(name, "query parameter %s is not a task state", name)
		}
		return nil
	}}
}

func restUnary[Req, Resp any](read restReader[Req], m unaryMethod[Req, Resp]) restMethod {
	return func(b *restBinding, rc *restCall) {
		req, e := restRequest(b, rc, read)
		if e != nil {
			restFail(rc, e)
			return
		}
		resp, e := invoke(rc.r.Context(), b.core, &rc.call, req, m)
		if e != nil {
			restFail(rc, e)
			return
		}
		buf := b.bodies.get()
		defer b.bodies.put(buf)
		var out []byte
		var err error
		if _, empty := any(resp).(struct{}); empty {
			out = append(buf.AvailableBuffer(), "{}"...) // google.protobuf.Empty
		} else if out, err = appendValue(buf.AvailableBuffer(), resp); err != nil {
			b.core.log.ErrorContext(rc.r.Context(), "a2asrv: encode result", "err", err)
			restFail(rc, a2a.NewError(a2a.CodeInternalError, "could not encode the result"))
			return
		}
		hd := rc.w.Header()
		hd.Set("Content-Type", answerType(rc.r))
		hd.Set("Content-Length", itoa(len(out)))
		_, _ = rc.w.Write(out)
	}
}

func restStream[Req any](read restReader[Req], m streamMethod[Req]) restMethod {
	return func(b *restBinding, rc *restCall) {
		req, e := restRequest(b, rc, read)
		if e != nil {
			restFail(rc, e)
			return
		}
		sink := newSSESink(rc.w, b.core.log, appendRESTFrame)
		_, e = invoke(rc.r.Context(), b.core, &rc.call, req, countFrames(sink, m))
		// No REST convention exists for an error inside a stream: it goes
		// as an "error" event holding the error body.
		sink.end(e, func(e *a2a.Error) (a2a.Event, error) {
			body, err := e.MarshalStatus()
			return a2a.Event{Event: "error", Data: body}, err
		}, func(e *a2a.Error) { restFail(rc, e) })
	}
}

// restRequest reads a method's request and sets the tenant of the path.
func restRequest[Req any](b *restBinding, rc *restCall, read restReader[Req]) (*Req, *a2a.Error) {
	req, e := read(b, rc)
	if e != nil {
		return nil, e
	}
	if t := tenantField(req); t != nil && rc.route.tenant != "" {
		if e := pathField("tenant", t, rc.route.tenant); e != nil {
			return nil, e
		}
	}
	return req, nil
}

// tenantField returns the address of a request's tenant.
func tenantField(req any) *string {
	switch r := req.(type) {
	case *a2a.SendMessageRequest:
		return &r.Tenant
	case *a2a.GetTaskRequest:
		return &r.Tenant
	case *a2a.ListTasksRequest:
		return &r.Tenant
	case *a2a.CancelTaskRequest:
		return &r.Tenant
	case *a2a.SubscribeToTaskRequest:
		return &r.Tenant
	case *a2a.TaskPushNotificationConfig:
		return &r.Tenant
	case *a2a.GetTaskPushNotificationConfigRequest:
		return &r.Tenant
	case *a2a.ListTaskPushNotificationConfigsRequest:
		return &r.Tenant
	case *a2a.GetExtendedAgentCardRequest:
		return &r.Tenant
	}
	return nil
}

// appendRESTFrame writes one SSE event whose data is the StreamResponse.
func appendRESTFrame(b []byte, v Version, resp *a2a.StreamResponse) ([]byte, error) {
	b = appendEventID(b, v)
	b = append(b, "data: "...)
	b, err := a2a.AppendStreamResponse(b, resp)
	if err != nil {
		return nil, err
	}
	return append(b, "\n\n"...), nil
}

// serve answers an HTTP+JSON request; ok is false when the path names no
// resource of the binding.
func (b *restBinding) serve(w http.ResponseWriter, r *http.Request) (ok bool) {
	route, allowed, ok := parseRESTPath(r.Method, r.URL.EscapedPath())
	if !ok {
		if len(allowed) == 0 {
			return false
		}
		slices.Sort(allowed)
		w.Header().Set("Allow", strings.Join(allowed, ", "))
		writeRESTError(w, r, a2a.NewError(a2a.CodeMethodNotFound, "%s is not allowed here", r.Method), http.StatusMethodNotAllowed)
		return true
	}
	leave := b.core.execs.shut.enter()
	defer leave()
	header := r.Header
	if v := r.URL.Query().Get(a2a.HeaderVersion); v != "" && header.Get(a2a.HeaderVersion) == "" && r.Method == http.MethodGet {
		// A GET has no body to carry service parameters beside its
		// headers; spec §3.2.6 lets the version ride in the query. Reads
		// only: a cross-site page can send a GET, but not read its answer.
		header = header.Clone()
		header.Set(a2a.HeaderVersion, v)
	}
	rc := &restCall{w: w, r: r, route: route, call: Call{Method: route.method, Binding: a2a.BindingHTTPJSON, Header: header}}
	if e := b.core.negotiate(&rc.call); e != nil {
		restFail(rc, e)
		return true
	}
	if active := rc.call.Extensions; len(active) > 0 {
		w.Header().Set(a2a.HeaderExtensions, strings.Join(active, ", "))
	}
	b.methods[route.method](b, rc)
	return true
}

// restFail answers with the error body and the code's HTTP status.
func restFail(rc *restCall, e *a2a.Error) {
	status := rc.status
	if status == 0 {
		status = e.HTTPStatus()
	}
	writeRESTError(rc.w, rc.r, e, status)
}

func writeRESTError(w http.ResponseWriter, r *http.Request, e *a2a.Error, status int) {
	body, err := e.MarshalStatusAs(status)
	if err != nil {
		body = []byte(`{"error":{"code":500,"status":"INTERNAL","message":"internal error","details":[]}}`)
		status = http.StatusInternalServerError
	}
	w.Header().Set("Content-Type", answerType(r))
	w.Header().Set("Content-Length", itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
