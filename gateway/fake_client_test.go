package gateway

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/problem"
	"novaos.dev/novaos/strictjson"
)

// fakeGateway speaks the execution gateway's REST API (the contract the
// real service serves) from memory, strictly: unknown or duplicate
// members, a wrong content type, a missing or foreign token, and a
// Last-Event-ID the run never issued are refused as the API says. It is
// an http.Handler, so every test of the client runs as well against the
// real service mounted in its place.
type fakeGateway struct {
	adminToken string
	// callers maps a platform token to who it names.
	callers map[string]fakeCaller

	mu        sync.Mutex
	instances map[string]*fakeInstance
	runs      map[string]*fakeRun
	runOrder  []string // creation order
	changed   chan struct{}
	nextID    int
	healthy   bool
	// userPage is the user route's fixed page size (the API's 100).
	userPage int
	// onExecute records a new run's first events; nil records a run that
	// completes at once, echoing its input.
	onExecute func(run *Run) []Event
	// seen records every request: method, path and the headers the
	// client is to send.
	seen []seenRequest
	now  func() time.Time
}

type fakeCaller struct {
	tenant, userID string
	service        bool
	admin          bool
}

type fakeInstance struct {
	Instance
	secrets map[string]string
}

type fakeRun struct {
	run    Run
	events []Event
}

type seenRequest struct {
	Method, Path, Query string
	Auth, Tenant        string
	Accept, LastEventID string
	ContentType         string
}

func newFakeGateway() *fakeGateway {
	return &fakeGateway{
		adminToken: "admin-token-0001",
		callers: map[string]fakeCaller{
			"user-token-0001":  {tenant: "t1", userID: "alice"},
			"user-token-0002":  {tenant: "t1", userID: "bob"},
			"svc-token-0001":   {tenant: "t1", service: true},
			"other-tenant-tok": {tenant: "t2", userID: "carol"},
		},
		instances: map[string]*fakeInstance{},
		runs:      map[string]*fakeRun{},
		changed:   make(chan struct{}),
		healthy:   true,
		userPage:  100,
		now:       func() time.Time { return time.UnixMilli(1733371200000).UTC() },
	}
}

func (f *fakeGateway) id(prefix string) string {
	f.nextID++
	return fmt.Sprintf("%s-%04d", prefix, f.nextID)
}

// addRun stores a run with its events as if it had been executed.
func (f *fakeGateway) addRun(run Run, events []Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if run.TenantID == "" {
		run.TenantID = "t1"
	}
	f.runs[run.ID] = &fakeRun{run: run}
	f.runOrder = append(f.runOrder, run.ID)
	f.appendLocked(run.ID, events...)
}

// appendEvents records events of a run and wakes its streams; a status
// event with a lifecycle status moves the run there.
func (f *fakeGateway) appendEvents(runID string, events ...Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.appendLocked(runID, events...)
}

func (f *fakeGateway) appendLocked(runID string, events ...Event) {
	r := f.runs[runID]
	for _, ev := range events {
		ev.RunID = runID
		ev.Sequence = int64(len(r.events)) + 1
		if ev.At.IsZero() {
			ev.At = f.now().Add(time.Duration(ev.Sequence) * time.Millisecond)
		}
		r.events = append(r.events, ev)
		r.run.LastSequence = ev.Sequence
		if ev.Type == EventStatus {
			var p StatusPayload
			if json.Unmarshal(ev.Payload, &p) == nil && p.Status.Valid() {
				r.run.Status, r.run.Reason = p.Status, p.Reason
			}
		}
	}
	close(f.changed)
	f.changed = make(chan struct{})
}

func (f *fakeGateway) requests() []seenRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.seen)
}

func statusEvent(s Status, reason string) Event {
	p, _ := json.Marshal(StatusPayload{Status: s, Reason: reason})
	return Event{Type: EventStatus, Payload: p}
}

func endEvent(s Status, reason string) Event {
	typ := EventDone
	if s != StatusCompleted {
		typ = EventError
	}
	p, _ := json.Marshal(EndPayload{Status: s, Reason: reason, Content: reason})
	return Event{Type: typ, Payload: p}
}

func deltaEvent(text string) Event {
	p, _ := json.Marshal(map[string]string{"content": text})
	return Event{Type: EventMessageDelta, Payload: p}
}

func (f *fakeGateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.seen = append(f.seen, seenRequest{
		Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery,
		Auth: r.Header.Get("Authorization"), Tenant: r.Header.Get(TenantHeader),
		Accept: r.Header.Get("Accept"), LastEventID: r.Header.Get("Last-Event-ID"),
		ContentType: r.Header.Get("Content-Type"),
	})
	f.mu.Unlock()
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+StreamingHealthPath, f.health)
	mux.HandleFunc("POST "+InstancesPath, f.authed(f.install))
	mux.HandleFunc("GET "+InstancesPath, f.authed(f.listInstances))
	mux.HandleFunc("GET "+InstancesPath+"/{id}", f.authed(f.getInstance))
	mux.HandleFunc("PATCH "+InstancesPath+"/{id}", f.authed(f.updateInstance))
	mux.HandleFunc("DELETE "+InstancesPath+"/{id}", f.authed(f.removeInstance))
	mux.HandleFunc("POST "+ExecutePath, f.authed(f.execute))
	mux.HandleFunc("GET "+EventsPath+"{id}", f.authed(f.events))
	mux.HandleFunc("GET "+RunsPath, f.authed(f.listRuns))
	mux.HandleFunc("GET "+RunsPath+"/{id}", f.authed(f.getRun))
	mux.HandleFunc("GET "+ServiceRunsPath+"{id}", f.authed(f.getServiceRun))
	mux.HandleFunc("POST "+RunsPath+"/{id}/cancel", f.authed(f.cancel))
	mux.HandleFunc("POST "+RunsPath+"/{id}/reply", f.authed(f.reply))
	mux.HandleFunc("GET "+ServiceRunsPath+"{id}/events", f.authed(f.serviceRunEvents))
	mux.HandleFunc("GET "+RunsPath+"/{id}/events", f.authed(f.userRunEvents))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeProblem(w, http.StatusNotFound, problem.TypeNotFound, "Not Found", "no route")
	})
	mux.ServeHTTP(w, r)
}

func writeProblem(w http.ResponseWriter, status int, typ, title, detail string) {
	w.Header().Set("Content-Type", problem.ContentType)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(problem.Problem{Type: typ, Title: title, Status: status, Detail: detail})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

type authedHandler func(w http.ResponseWriter, r *http.Request, c fakeCaller)

// authed checks the bearer token and the tenant header as the API says.
func (f *fakeGateway) authed(h authedHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || tok == "" {
			w.Header().Set("WWW-Authenticate", "Bearer")
			writeProblem(w, http.StatusUnauthorized, problem.TypeUnauthorized, "Unauthorized", "no bearer token")
			return
		}
		tenant := r.Header.Get(TenantHeader)
		var c fakeCaller
		switch {
		case tok == f.adminToken:
			if tenant == "" {
				writeProblem(w, http.StatusBadRequest, problemInvalidRequest, "Bad Request", "the admin token names its tenant with X-Tenant-ID")
				return
			}
			c = fakeCaller{tenant: tenant, admin: true}
		default:
			var known bool
			if c, known = f.callers[tok]; !known {
				w.Header().Set("WWW-Authenticate", "Bearer")
				// A careless server echoes what it refused; the client
				// must not carry it into its error.
				writeProblem(w, http.StatusUnauthorized, problem.TypeUnauthorized, "Unauthorized", "token "+tok+" is not known")
				return
			}
			if tenant != "" && tenant != c.tenant {
				writeProblem(w, http.StatusForbidden, problem.TypeForbidden, "Forbidden", "the token is for another tenant")
				return
			}
		}
		h(w, r, c)
	}
}

// Problem types the fake answers with: the API's.
const (
	problemInvalidRequest   = "https://novaos.dev/problems/invalid-request"
	problemInvalidCursor    = "https://novaos.dev/problems/invalid-event-id"
	problemRunNotFound      = "https://novaos.dev/problems/run-not-found"
	problemInstanceNotFound = "https://novaos.dev/problems/instance-not-found"
	problemInstanceExists   = "https://novaos.dev/problems/instance-exists"
	problemRunNotWaiting    = "https://novaos.dev/problems/run-not-waiting"
	problemRunEnded         = "https://novaos.dev/problems/run-ended"
)

// decodeBody reads a JSON body strictly: application/json, one object,
// no member twice, none unknown.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		writeProblem(w, http.StatusUnsupportedMediaType, problem.TypeUnsupportedMedia, "Unsupported Media Type", "want application/json")
		return false
	}
	data, err := io.ReadAll(io.LimitReader(r.Body, 1<<20+1))
	if err != nil {
		writeProblem(w, http.StatusBadRequest, problem.TypeMalformedJSON, "Bad Request", "unreadable body")
		return false
	}
	if len(data) > 1<<20 {
		writeProblem(w, http.StatusRequestEntityTooLarge, problem.TypeBodyTooLarge, "Content Too Large", "body over 1 MiB")
		return false
	}
	if err := strictjson.Decode(data, v, &strictjson.Options{Object: true, FoldCase: true}, false); err != nil {
		writeProblem(w, http.StatusBadRequest, problem.TypeMalformedJSON, "Bad Request", err.Error())
		return false
	}
	return true
}

func (f *fakeGateway) health(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	ok := f.healthy
	f.mu.Unlock()
	if !ok {
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"healthy": false, "status": "unavailable"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"healthy": true, "status": "ok"})
}

type installBody struct {
	Name          string            `json:"name"`
	Hosted        string            `json:"hosted"`
	URL           string            `json:"url"`
	AgentID       string            `json:"agent_id"`
	Config        map[string]any    `json:"config"`
	Secrets       map[string]string `json:"secrets"`
	Memory        bool              `json:"memory"`
	MemoryBudget  *MemoryBudget     `json:"memory_budget"`
	Scopes        []string          `json:"scopes"`
	CustomHeaders []string          `json:"custom_headers"`
	Published     bool              `json:"published"`
	Delivery      string            `json:"delivery"`
	BillingMode   string            `json:"billing_mode"`
	ToolClass     string            `json:"tool_class"`
}

func (f *fakeGateway) install(w http.ResponseWriter, r *http.Request, c fakeCaller) {
	var b installBody
	if !decodeBody(w, r, &b) {
		return
	}
	want := 1
	if b.Delivery == DeliveryPull {
		want = 0
	}
	if b.Name == "" || targets(b.Hosted != "", b.URL != "", b.AgentID != "") != want {
		writeProblem(w, http.StatusBadRequest, problemInvalidRequest, "Bad Request", "name and exactly one of hosted, url and agent_id")
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, in := range f.instances {
		if in.TenantID == c.tenant && in.Name == b.Name {
			writeProblem(w, http.StatusConflict, problemInstanceExists, "Conflict", "an instance has that name")
			return
		}
	}
	in := &fakeInstance{Instance: Instance{
		ID: f.id("inst"), TenantID: c.tenant, Name: b.Name, Hosted: b.Hosted, URL: b.URL, AgentID: b.AgentID, Config: b.Config,
		Memory: b.Memory, MemoryBudget: b.MemoryBudget, Scopes: b.Scopes, CustomHeaders: b.CustomHeaders,
		Published: b.Published, Delivery: b.Delivery, BillingMode: b.BillingMode, ToolClass: b.ToolClass,
		Version: 1, CreatedAt: f.now(), UpdatedAt: f.now(),
	}, secrets: b.Secrets}
	in.SecretNames = secretNames(in.secrets)
	f.instances[in.ID] = in
	writeJSON(w, http.StatusCreated, in.Instance)
}

func secretNames(m map[string]string) []string {
	var names []string
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

func (f *fakeGateway) listInstances(w http.ResponseWriter, r *http.Request, c fakeCaller) {
	limit := 500
	if s := r.URL.Query().Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			writeProblem(w, http.StatusBadRequest, problem.TypeInvalidQuery, "Bad Request", "limit")
			return
		}
		limit = min(n, 500)
	}
	after := r.URL.Query().Get("after")
	f.mu.Lock()
	var all []Instance
	for _, in := range f.instances {
		if in.TenantID == c.tenant && in.Name > after {
			all = append(all, in.Instance)
		}
	}
	f.mu.Unlock()
	slices.SortFunc(all, func(a, b Instance) int { return strings.Compare(a.Name, b.Name) })
	out := struct {
		Instances  []Instance `json:"instances"`
		NextCursor string     `json:"next_cursor"`
	}{Instances: []Instance{}}
	if len(all) > limit {
		all = all[:limit]
		out.NextCursor = all[limit-1].Name
	}
	out.Instances = append(out.Instances, all...)
	writeJSON(w, http.StatusOK, out)
}

func (f *fakeGateway) instance(w http.ResponseWriter, r *http.Request, c fakeCaller) *fakeInstance {
	in, ok := f.instances[r.PathValue("id")]
	if !ok || in.TenantID != c.tenant {
		writeProblem(w, http.StatusNotFound, problemInstanceNotFound, "Not Found", "no such instance")
		return nil
	}
	return in
}

func (f *fakeGateway) getInstance(w http.ResponseWriter, r *http.Request, c fakeCaller) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if in := f.instance(w, r, c); in != nil {
		writeJSON(w, http.StatusOK, in.Instance)
	}
}

type patchBody struct {
	Name          *string            `json:"name"`
	Hosted        *string            `json:"hosted"`
	URL           *string            `json:"url"`
	AgentID       *string            `json:"agent_id"`
	Config        map[string]any     `json:"config"`
	Secrets       map[string]*string `json:"secrets"`
	Memory        *bool              `json:"memory"`
	MemoryBudget  *MemoryBudget      `json:"memory_budget"`
	Scopes        *[]string          `json:"scopes"`
	CustomHeaders *[]string          `json:"custom_headers"`
	Published     *bool              `json:"published"`
}

func (f *fakeGateway) updateInstance(w http.ResponseWriter, r *http.Request, c fakeCaller) {
	var b patchBody
	if !decodeBody(w, r, &b) {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	in := f.instance(w, r, c)
	if in == nil {
		return
	}
	if b.Name != nil {
		in.Name = *b.Name
	}
	if b.Hosted != nil {
		in.Hosted = *b.Hosted
	}
	if b.URL != nil {
		in.URL = *b.URL
	}
	if b.AgentID != nil {
		in.AgentID = *b.AgentID
	}
	if b.Config != nil {
		in.Config = b.Config
	}
	if b.Memory != nil {
		in.Memory = *b.Memory
	}
	if b.MemoryBudget != nil {
		in.MemoryBudget = b.MemoryBudget
	}
	if b.Scopes != nil {
		in.Scopes = *b.Scopes
	}
	if b.CustomHeaders != nil {
		in.CustomHeaders = *b.CustomHeaders
	}
	if b.Published != nil {
		in.Published = *b.Published
	}
	for k, v := range b.Secrets {
		if v == nil {
			delete(in.secrets, k)
			continue
		}
		if in.secrets == nil {
			in.secrets = map[string]string{}
		}
		in.secrets[k] = *v
	}
	in.SecretNames = secretNames(in.secrets)
	in.Version++
	writeJSON(w, http.StatusOK, in.Instance)
}

func (f *fakeGateway) removeInstance(w http.ResponseWriter, r *http.Request, c fakeCaller) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if in := f.instance(w, r, c); in != nil {
		delete(f.instances, in.ID)
		w.WriteHeader(http.StatusNoContent)
	}
}

func (f *fakeGateway) execute(w http.ResponseWriter, r *http.Request, c fakeCaller) {
	var req ExecuteRequest
	if !decodeBody(w, r, &req) {
		return
	}
	switch {
	case req.Input == "" || len([]rune(req.Input)) > MaxInputChars:
		writeProblem(w, http.StatusBadRequest, problemInvalidRequest, "Bad Request", "input missing or over 100,000 characters")
		return
	case len(req.CustomHeaders) > 0 && !c.service:
		writeProblem(w, http.StatusForbidden, problem.TypeForbidden, "Forbidden", "custom_headers need a service account")
		return
	}
	for _, a := range req.Attachments {
		if a.validate() != nil {
			writeProblem(w, http.StatusBadRequest, problemInvalidRequest, "Bad Request", "bad attachment")
			return
		}
	}
	f.mu.Lock()
	in, ok := f.instances[req.InstanceID]
	if !ok || in.TenantID != c.tenant {
		f.mu.Unlock()
		writeProblem(w, http.StatusNotFound, problemInstanceNotFound, "Not Found", "no such instance")
		return
	}
	run := Run{
		ID: f.id("run"), TenantID: c.tenant, InstanceID: in.ID, ThreadID: req.ThreadID, ConversationID: req.ConversationID,
		Caller: Caller{UserID: c.userID, Service: c.service}, Status: StatusQueued, Input: req.Input,
		Attachments: req.Attachments, CreatedAt: f.now(), UpdatedAt: f.now(),
	}
	f.runs[run.ID] = &fakeRun{run: run}
	f.runOrder = append(f.runOrder, run.ID)
	var events []Event
	if f.onExecute != nil {
		events = f.onExecute(&run)
	} else {
		events = []Event{statusEvent(StatusRunning, ""), deltaEvent("echo: " + req.Input), statusEvent(StatusCompleted, "the agent answered"), endEvent(StatusCompleted, "")}
	}
	f.appendLocked(run.ID, events...)
	f.mu.Unlock()
	writeJSON(w, http.StatusAccepted, ExecuteResult{RunID: run.ID, Status: StatusQueued, ThreadID: run.ThreadID, EventsURL: EventsPath + run.ID})
}

// visible returns the run if c may see it.
func (f *fakeGateway) visible(id string, c fakeCaller) *fakeRun {
	fr, ok := f.runs[id]
	if !ok || fr.run.TenantID != c.tenant {
		return nil
	}
	if !c.admin && !c.service && fr.run.Caller.UserID != c.userID {
		return nil
	}
	return fr
}

func (f *fakeGateway) runOr404(w http.ResponseWriter, r *http.Request, c fakeCaller) *fakeRun {
	fr := f.visible(r.PathValue("id"), c)
	if fr == nil {
		writeProblem(w, http.StatusNotFound, problemRunNotFound, "Not Found", "no such run")
	}
	return fr
}

func (f *fakeGateway) events(w http.ResponseWriter, r *http.Request, c fakeCaller) {
	f.mu.Lock()
	fr := f.runOr404(w, r, c)
	if fr == nil {
		f.mu.Unlock()
		return
	}
	cursor := r.Header.Get("Last-Event-ID")
	if cursor == "" {
		cursor = r.URL.Query().Get("last_event_id")
	}
	var after int64
	if cursor != "" {
		n, err := strconv.ParseInt(cursor, 10, 64)
		if err != nil || n < 0 || n > fr.run.LastSequence || strconv.FormatInt(n, 10) != cursor {
			f.mu.Unlock()
			writeProblem(w, http.StatusBadRequest, problemInvalidCursor, "Bad Request", "Last-Event-ID was not issued by this run")
			return
		}
		after = n
	}
	f.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	fl := w.(http.Flusher)
	_, _ = w.Write([]byte(": keepalive\n\n"))
	fl.Flush()
	for {
		f.mu.Lock()
		pending := slices.Clone(fr.events[after:])
		ended := fr.run.Status.Terminal()
		wake := f.changed
		f.mu.Unlock()
		var buf []byte
		for _, ev := range pending {
			body, _ := json.Marshal(ev.Frame())
			buf = a2a.AppendEvent(buf[:0], a2a.Event{ID: strconv.FormatInt(ev.Sequence, 10), Event: SSEEventName, Data: body})
			if _, err := w.Write(buf); err != nil {
				return
			}
			fl.Flush()
			after = ev.Sequence
			if ev.Type == EventDone || ev.Type == EventError {
				return
			}
		}
		if len(pending) == 0 && ended {
			// A run replayed after its end, whose log has no done or
			// error: the stream ends after its last event.
			return
		}
		if len(pending) > 0 {
			continue
		}
		select {
		case <-wake:
		case <-r.Context().Done():
			return
		}
	}
}

func (f *fakeGateway) getRun(w http.ResponseWriter, r *http.Request, c fakeCaller) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fr := f.runOr404(w, r, c); fr != nil {
		writeJSON(w, http.StatusOK, fr.run)
	}
}

func (f *fakeGateway) getServiceRun(w http.ResponseWriter, r *http.Request, c fakeCaller) {
	if !c.service && !c.admin {
		writeProblem(w, http.StatusForbidden, problem.TypeForbidden, "Forbidden", "a service account's route")
		return
	}
	f.getRun(w, r, c)
}

func (f *fakeGateway) listRuns(w http.ResponseWriter, r *http.Request, c fakeCaller) {
	q := r.URL.Query()
	limit := 500
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			writeProblem(w, http.StatusBadRequest, problem.TypeInvalidQuery, "Bad Request", "limit")
			return
		}
		limit = min(n, 500)
	}
	status, inst, after := Status(q.Get("status")), q.Get("instance_id"), q.Get("after")
	if status != "" && !status.Valid() {
		writeProblem(w, http.StatusBadRequest, problem.TypeInvalidQuery, "Bad Request", "status")
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	out := struct {
		Runs       []Run  `json:"runs"`
		NextCursor string `json:"next_cursor"`
	}{Runs: []Run{}}
	started := after == ""
	for i := len(f.runOrder) - 1; i >= 0; i-- { // newest first
		id := f.runOrder[i]
		if !started {
			started = id == after
			continue
		}
		fr := f.visible(id, c)
		if fr == nil || (status != "" && fr.run.Status != status) || (inst != "" && fr.run.InstanceID != inst) {
			continue
		}
		if len(out.Runs) == limit {
			out.NextCursor = out.Runs[limit-1].ID
			break
		}
		out.Runs = append(out.Runs, fr.run)
	}
	writeJSON(w, http.StatusOK, out)
}

func (f *fakeGateway) cancel(w http.ResponseWriter, r *http.Request, c fakeCaller) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fr := f.runOr404(w, r, c)
	if fr == nil {
		return
	}
	if fr.run.Status.Terminal() {
		writeProblem(w, http.StatusConflict, problemRunEnded, "Conflict", "the run has ended")
		return
	}
	f.appendLocked(fr.run.ID, statusEvent(StatusCancelled, "cancelled by the caller"), endEvent(StatusCancelled, "cancelled by the caller"))
	writeJSON(w, http.StatusOK, fr.run)
}

type replyBody struct {
	Input      string `json:"input"`
	ActionID   string `json:"action_id"`
	InputValue string `json:"input_value"`
	CallID     string `json:"call_id"`
	Approved   *bool  `json:"approved"`
}

func (f *fakeGateway) reply(w http.ResponseWriter, r *http.Request, c fakeCaller) {
	var b replyBody
	if !decodeBody(w, r, &b) {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	fr := f.runOr404(w, r, c)
	if fr == nil {
		return
	}
	if fr.run.Status != StatusWaitingUser {
		writeProblem(w, http.StatusConflict, problemRunNotWaiting, "Conflict", "the run waits for no reply")
		return
	}
	f.appendLocked(fr.run.ID, statusEvent(StatusRunning, ""), deltaEvent("you said: "+b.Input), statusEvent(StatusCompleted, "the agent answered"), endEvent(StatusCompleted, ""))
	writeJSON(w, http.StatusAccepted, ExecuteResult{RunID: fr.run.ID, Status: StatusQueued, ThreadID: fr.run.ThreadID, EventsURL: EventsPath + fr.run.ID})
}

type indexEvent struct {
	EventID   string          `json:"event_id,omitempty"`
	Type      string          `json:"type"`
	Data      json.RawMessage `json:"data"`
	Timestamp string          `json:"timestamp"`
	Sequence  int64           `json:"sequence"`
}

func (f *fakeGateway) serviceRunEvents(w http.ResponseWriter, r *http.Request, c fakeCaller) {
	if !c.service && !c.admin {
		writeProblem(w, http.StatusForbidden, problem.TypeForbidden, "Forbidden", "a service account's route")
		return
	}
	q := r.URL.Query()
	limit := 100
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			writeProblem(w, http.StatusBadRequest, problem.TypeInvalidQuery, "Bad Request", "limit")
			return
		}
		limit = min(n, 500)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	fr := f.runOr404(w, r, c)
	if fr == nil {
		return
	}
	after, ok := parseCursor(q.Get("after"), fr)
	if !ok {
		writeProblem(w, http.StatusBadRequest, problem.TypeInvalidPageToken, "Bad Request", "after")
		return
	}
	page := fr.events[after:min(int(after)+limit, len(fr.events))]
	out := struct {
		Events     []indexEvent `json:"events"`
		NextCursor *string      `json:"next_cursor"`
		RequestID  string       `json:"request_id"`
	}{Events: []indexEvent{}, RequestID: "req-" + strconv.Itoa(len(f.seen))}
	for _, ev := range page {
		out.Events = append(out.Events, indexEvent{EventID: fmt.Sprintf("%s/%d", ev.RunID, ev.Sequence), Type: ev.Type, Data: ev.Payload, Timestamp: ev.At.Format(time.RFC3339Nano), Sequence: ev.Sequence})
	}
	if len(page) == limit && page[len(page)-1].Sequence < fr.run.LastSequence {
		s := strconv.FormatInt(page[len(page)-1].Sequence, 10)
		out.NextCursor = &s
	}
	writeJSON(w, http.StatusOK, out)
}

func parseCursor(s string, fr *fakeRun) (int64, bool) {
	if s == "" {
		return 0, true
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > fr.run.LastSequence {
		return 0, false
	}
	return n, true
}

func (f *fakeGateway) userRunEvents(w http.ResponseWriter, r *http.Request, c fakeCaller) {
	if r.URL.Query().Has("limit") {
		writeProblem(w, http.StatusBadRequest, problem.TypeInvalidQuery, "Bad Request", "the user route's page size is fixed")
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	fr := f.runOr404(w, r, c)
	if fr == nil {
		return
	}
	after, ok := parseCursor(r.URL.Query().Get("after"), fr)
	if !ok {
		writeProblem(w, http.StatusBadRequest, problem.TypeInvalidPageToken, "Bad Request", "after")
		return
	}
	page := fr.events[after:min(int(after)+f.userPage, len(fr.events))]
	out := struct {
		Events []indexEvent `json:"events"`
	}{Events: []indexEvent{}}
	for _, ev := range page {
		out.Events = append(out.Events, indexEvent{Type: ev.Type, Data: ev.Payload, Timestamp: ev.At.Format(time.RFC3339Nano), Sequence: ev.Sequence})
	}
	writeJSON(w, http.StatusOK, out)
}

// cutter wraps any gateway handler and cuts the connection of event
// streams after a number of bytes that budget draws (negative: before the
// answer's headers), until cuts is reached. It counts the cuts it made.
type cutter struct {
	h      http.Handler
	mu     sync.Mutex
	budget func() int
	limit  int
	cuts   int
	conns  int
}

func (c *cutter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !strings.HasPrefix(r.URL.Path, EventsPath) {
		c.h.ServeHTTP(w, r)
		return
	}
	c.mu.Lock()
	c.conns++
	cut := c.cuts < c.limit
	n := 0
	if cut {
		n = c.budget()
	}
	c.mu.Unlock()
	if !cut {
		c.h.ServeHTTP(w, r)
		return
	}
	if n < 0 {
		c.count()
		panic(http.ErrAbortHandler)
	}
	c.h.ServeHTTP(&cutWriter{ResponseWriter: w, left: n, cut: c.count}, r)
}

func (c *cutter) count() {
	c.mu.Lock()
	c.cuts++
	c.mu.Unlock()
}

func (c *cutter) stats() (cuts, conns int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cuts, c.conns
}

type cutWriter struct {
	http.ResponseWriter
	left int
	cut  func()
}

func (w *cutWriter) Write(p []byte) (int, error) {
	if len(p) <= w.left {
		w.left -= len(p)
		return w.ResponseWriter.Write(p)
	}
	_, _ = w.ResponseWriter.Write(p[:w.left])
	w.left = 0
	w.Flush()
	w.cut()
	// Abort: the server drops the connection without ending the body,
	// as a crashing replica or a proxy timing out does.
	panic(http.ErrAbortHandler)
}

func (w *cutWriter) Flush() {
	if fl, ok := w.ResponseWriter.(http.Flusher); ok {
		fl.Flush()
	}
}

var errNoRun = errors.New("no such run")

// lastSequence reports a run's last event sequence.
func (f *fakeGateway) lastSequence(runID string) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fr, ok := f.runs[runID]
	if !ok {
		return 0, errNoRun
	}
	return fr.run.LastSequence, nil
}
