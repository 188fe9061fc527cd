package a2aclient_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"

	"novaos.dev/novaos/a2a"
)

// restBridge is the HTTP+JSON binding in front of a test agent: it maps
// each REST request (A2A v1.0.1 §11) onto the JSON-RPC call it stands for,
// forwards it to the agent's a2asrv handler, and writes the answer back
// the REST way: the result as the body, errors as google.rpc.Status bodies
// with the §5.4 status, stream frames as SSE events whose data is the
// StreamResponse (the agent's SSE ids kept). The client under test sees a
// complete REST server with the agent's real semantics.
type restBridge struct {
	a   *agent
	srv *httptest.Server
	// refusePOSTSubscribe answers POST :subscribe with 405, as a server
	// that follows the proto's GET would.
	refusePOSTSubscribe bool
	// cutAfter, when positive, closes the first stream's connection after
	// that many frames.
	cutAfter int
	// onSubscribe runs before a SubscribeToTask is forwarded, and
	// afterSnapshot once its first frame is written.
	onSubscribe, afterSnapshot func()

	mu   sync.Mutex
	cut  bool
	reqs []string // "VERB path?query" of every request
}

func newRESTBridge(t testing.TB, a *agent, configure func(*restBridge)) *restBridge {
	t.Helper()
	b := &restBridge{a: a}
	if configure != nil {
		configure(b)
	}
	b.srv = httptest.NewServer(b)
	t.Cleanup(b.srv.Close)
	return b
}

// card is the agent's card with the bridge as its preferred interface.
func (b *restBridge) card(tenant string) *a2a.AgentCard {
	c := *b.a.card
	c.SupportedInterfaces = append([]a2a.AgentInterface{{URL: b.srv.URL, ProtocolBinding: a2a.BindingHTTPJSON, ProtocolVersion: a2a.ProtocolVersion, Tenant: tenant}}, c.SupportedInterfaces...)
	return &c
}

func (b *restBridge) requests() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.reqs...)
}

func (b *restBridge) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	line := r.Method + " " + r.URL.EscapedPath()
	if r.URL.RawQuery != "" {
		line += "?" + r.URL.RawQuery
	}
	b.mu.Lock()
	b.reqs = append(b.reqs, line)
	b.mu.Unlock()
	body, _ := io.ReadAll(r.Body)
	method, params, status := b.rpc(r, body)
	if status != 0 {
		http.Error(w, http.StatusText(status), status)
		return
	}
	if method == a2a.MethodSubscribeToTask && b.onSubscribe != nil {
		b.onSubscribe()
	}
	env, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	req, _ := http.NewRequestWithContext(r.Context(), http.MethodPost, b.a.srv.URL, bytes.NewReader(env))
	for k, v := range r.Header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	if resp.Header.Get("Content-Type") == "text/event-stream" {
		b.stream(w, resp.Body, method == a2a.MethodSubscribeToTask)
		return
	}
	out, _ := io.ReadAll(resp.Body)
	res, err := a2a.DecodeResponse(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	w.Header().Set("Content-Type", "application/a2a+json")
	switch {
	case res.Error != nil:
		w.WriteHeader(restStatus(res.Error))
		w.Write(statusBody(res.Error))
	case method == a2a.MethodDeleteTaskPushNotificationConfig:
		w.WriteHeader(http.StatusNoContent)
	default:
		w.Write(res.Result)
	}
}

// stream re-frames the agent's JSON-RPC SSE events as REST ones.
func (b *restBridge) stream(w http.ResponseWriter, body io.Reader, subscribe bool) {
	b.mu.Lock()
	left := -1
	if b.cutAfter > 0 && !b.cut {
		b.cut, left = true, b.cutAfter
	}
	b.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
	er := a2a.NewEventReader(body, 0)
	for left != 0 {
		ev, err := er.Next()
		if err != nil {
			return
		}
		res, err := a2a.DecodeResponse(ev.Data)
		if err != nil {
			return
		}
		out := a2a.Event{ID: ev.ID, Data: res.Result}
		if res.Error != nil {
			out = a2a.Event{Event: "error", Data: statusBody(res.Error)}
		}
		w.Write(a2a.AppendEvent(nil, out))
		w.(http.Flusher).Flush()
		if subscribe && b.afterSnapshot != nil {
			b.afterSnapshot()
			subscribe = false
		}
		left--
	}
	if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
		conn.Close()
	}
}

// rpc maps a REST request onto a JSON-RPC method and params; status is
// non-zero for a path or verb the binding does not have.
func (b *restBridge) rpc(r *http.Request, body []byte) (method string, params map[string]any, status int) {
	segs := strings.Split(strings.TrimPrefix(r.URL.EscapedPath(), "/"), "/")
	for i, s := range segs {
		segs[i], _ = url.PathUnescape(s)
	}
	tenant := ""
	switch segs[0] {
	case "message:send", "message:stream", "tasks", "extendedAgentCard":
	default:
		tenant, segs = segs[0], segs[1:]
	}
	params = map[string]any{}
	if len(body) > 0 {
		if err := json.Unmarshal(body, &params); err != nil {
			return "", nil, http.StatusBadRequest
		}
	}
	q := r.URL.Query()
	num := func(name string) {
		if v := q.Get(name); v != "" {
			n, _ := strconv.Atoi(v)
			params[name] = n
		}
	}
	str := func(name string) {
		if v := q.Get(name); v != "" {
			params[name] = v
		}
	}
	verb := func(want string) bool { return r.Method == want }
	switch {
	case len(segs) == 1 && segs[0] == "message:send" && verb("POST"):
		method = a2a.MethodSendMessage
	case len(segs) == 1 && segs[0] == "message:stream" && verb("POST"):
		method = a2a.MethodSendStreamingMessage
	case len(segs) == 1 && segs[0] == "extendedAgentCard" && verb("GET"):
		method = a2a.MethodGetExtendedAgentCard
	case len(segs) == 1 && segs[0] == "tasks" && verb("GET"):
		method = a2a.MethodListTasks
		str("contextId")
		str("status")
		num("pageSize")
		str("pageToken")
		num("historyLength")
		str("statusTimestampAfter")
		if q.Get("includeArtifacts") == "true" {
			params["includeArtifacts"] = true
		}
	case len(segs) == 2 && segs[0] == "tasks" && strings.HasSuffix(segs[1], ":cancel") && verb("POST"):
		method, params["id"] = a2a.MethodCancelTask, strings.TrimSuffix(segs[1], ":cancel")
	case len(segs) == 2 && segs[0] == "tasks" && strings.HasSuffix(segs[1], ":subscribe") && (verb("GET") || verb("POST")):
		if verb("POST") && b.refusePOSTSubscribe {
			return "", nil, http.StatusMethodNotAllowed
		}
		method, params["id"] = a2a.MethodSubscribeToTask, strings.TrimSuffix(segs[1], ":subscribe")
	case len(segs) == 2 && segs[0] == "tasks" && verb("GET"):
		method, params["id"] = a2a.MethodGetTask, segs[1]
		num("historyLength")
	case len(segs) == 3 && segs[0] == "tasks" && segs[2] == "pushNotificationConfigs" && verb("POST"):
		method, params["taskId"] = a2a.MethodCreateTaskPushNotificationConfig, segs[1]
	case len(segs) == 3 && segs[0] == "tasks" && segs[2] == "pushNotificationConfigs" && verb("GET"):
		method, params["taskId"] = a2a.MethodListTaskPushNotificationConfigs, segs[1]
		num("pageSize")
		str("pageToken")
	case len(segs) == 4 && segs[0] == "tasks" && segs[2] == "pushNotificationConfigs" && (verb("GET") || verb("DELETE")):
		method, params["taskId"], params["id"] = a2a.MethodGetTaskPushNotificationConfig, segs[1], segs[3]
		if verb("DELETE") {
			method = a2a.MethodDeleteTaskPushNotificationConfig
		}
	default:
		return "", nil, http.StatusNotFound
	}
	if tenant != "" {
		params["tenant"] = tenant
	}
	return method, params, 0
}

// restStatus is §5.4's HTTP status of an A2A error; -31401 is 401.
func restStatus(e *a2a.Error) int {
	if e.Code == -31401 {
		return http.StatusUnauthorized
	}
	return e.HTTPStatus()
}

// statusBody is the google.rpc.Status body of an A2A error (§11.6).
func statusBody(e *a2a.Error) []byte {
	reason := e.Reason()
	if e.Code == -31401 {
		reason = "UNAUTHENTICATED"
	}
	b, _ := json.Marshal(map[string]any{"error": map[string]any{
		"code": restStatus(e), "status": "FAILED_PRECONDITION", "message": e.Text(),
		"details": []any{map[string]any{"@type": a2a.ErrorInfoType, "reason": reason, "domain": a2a.ErrorDomain}},
	}})
	return b
}
