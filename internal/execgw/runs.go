package execgw

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/hitl"
	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/internal/httpapi"
	"novaos.dev/novaos/problem"
)

// newEvent is an event of type typ whose payload is v as JSON.
func newEvent(typ string, v any) gateway.Event {
	return gateway.Event{Type: typ, Payload: toJSON(v)}
}

// statusEvent records a lifecycle change.
func statusEvent(st gateway.Status, reason string) gateway.Event {
	return gateway.StatusEvent(st, reason)
}

// endEvents are the events that record a run's ending: the terminal
// status, then the end of a live stream (done or error).
func endEvents(st gateway.Status, reason string) []gateway.Event {
	return gateway.EndEvents(st, reason)
}

// end moves r to the terminal status st with reason, returning the events
// that record it.
func end(r *gateway.Run, st gateway.Status, reason string, now time.Time) []gateway.Event {
	r.Status, r.Reason, r.EndedAt = st, reason, now
	r.LeaseOwner, r.LeaseUntil, r.NotBefore = "", time.Time{}, time.Time{}
	r.PendingInput, r.Pause = nil, nil
	return endEvents(st, reason)
}

// serveRun answers GET /api/v1/runs/{id}.
func (s *Service) serveRun(w http.ResponseWriter, r *http.Request) {
	p, err := principalOf(r, false)
	if err != nil {
		s.api.Fail(w, r, err)
		return
	}
	run, err := s.readableRun(r.Context(), p, r.PathValue("id"))
	if err != nil {
		s.api.Fail(w, r, err)
		return
	}
	httpapi.WriteJSON(w, r, http.StatusOK, run)
}

// serviceRun authenticates a caller of a service route (a service
// account or the operator; a user token is refused with 403) and reads
// the run it names.
func (s *Service) serviceRun(w http.ResponseWriter, r *http.Request) (principal, *gateway.Run, bool) {
	p, err := principalOf(r, false)
	if err == nil && !p.seesAll() {
		err = &problem.Problem{Type: problem.TypeForbidden, Status: http.StatusForbidden, Title: "Forbidden",
			Detail: "this route serves service accounts; a user reads their runs at " + gateway.RunsPath + "/{id}"}
	}
	var run *gateway.Run
	if err == nil {
		run, err = s.readableRun(r.Context(), p, r.PathValue("id"))
	}
	if err != nil {
		s.api.Fail(w, r, err)
		return principal{}, nil, false
	}
	return p, run, true
}

// serveServiceRun answers GET /api/v1/service/runs/{id}.
func (s *Service) serveServiceRun(w http.ResponseWriter, r *http.Request) {
	if _, run, ok := s.serviceRun(w, r); ok {
		httpapi.WriteJSON(w, r, http.StatusOK, run)
	}
}

// serveListRuns answers GET /api/v1/runs: the caller's runs (every run of
// the tenant for a service account or the operator), newest first.
func (s *Service) serveListRuns(w http.ResponseWriter, r *http.Request) {
	p, err := principalOf(r, false)
	if err != nil {
		s.api.Fail(w, r, err)
		return
	}
	q := r.URL.Query()
	f := gateway.RunFilter{InstanceID: q.Get("instance_id"), ThreadID: q.Get("thread_id")}
	for _, v := range q["status"] {
		for st := range strings.SplitSeq(v, ",") {
			if !gateway.Status(st).Valid() {
				s.api.Fail(w, r, httpapi.BadQuery("unknown status "+quote(st)))
				return
			}
			f.Statuses = append(f.Statuses, gateway.Status(st))
		}
	}
	if f.Limit, err = limitParam(q.Get("limit"), defaultRunsPage, gateway.MaxPage); err != nil {
		s.api.Fail(w, r, err)
		return
	}
	if c := q.Get("after"); c != "" {
		key, err := httpapi.ParsePageToken(c, func(k string) bool { _, _, ok := splitRunCursor(k); return ok })
		if err != nil {
			s.api.Fail(w, r, err)
			return
		}
		f.AfterCreated, f.AfterID, _ = splitRunCursor(key)
	}
	runs, err := s.listRuns(r.Context(), p, f)
	if err != nil {
		s.api.Fail(w, r, err)
		return
	}
	out := struct {
		Runs       []gateway.Run `json:"runs"`
		NextCursor string        `json:"next_cursor"`
	}{Runs: runs}
	if out.Runs == nil {
		out.Runs = []gateway.Run{}
	}
	if n := len(runs); n > 0 && n == f.Limit {
		last := runs[n-1]
		out.NextCursor = httpapi.PageToken(strconv.FormatInt(last.CreatedAt.UnixMicro(), 10) + "/" + last.ID)
	}
	httpapi.WriteJSON(w, r, http.StatusOK, out)
}

// defaultRunsPage is a run listing's page without a limit.
const defaultRunsPage = 50

// limitParam reads a "limit" query parameter: def when empty, at most max.
func limitParam(v string, def, max int) (int, error) {
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, httpapi.BadQuery("limit must be a positive integer")
	}
	return min(n, max), nil
}

// listRuns lists the runs p may see that f selects: its tenant's, and
// only its own for a user.
func (s *Service) listRuns(ctx context.Context, p principal, f gateway.RunFilter) ([]gateway.Run, error) {
	if err := p.need(ScopeRead); err != nil {
		return nil, err
	}
	f.TenantID, f.UserID = p.tenant, ""
	if !p.seesAll() {
		if p.userID == "" {
			return nil, &problem.Problem{Type: problem.TypeForbidden, Status: http.StatusForbidden, Title: "Forbidden",
				Detail: "the token names no user and is no service account"}
		}
		f.UserID = p.userID
	}
	return s.store.ListRuns(ctx, f)
}

func splitRunCursor(k string) (time.Time, string, bool) {
	us, id, ok := strings.Cut(k, "/")
	n, err := strconv.ParseInt(us, 10, 64)
	if !ok || err != nil || id == "" {
		return time.Time{}, "", false
	}
	return time.UnixMicro(n).UTC(), id, true
}

// serveCancel answers POST /api/v1/runs/{id}/cancel: the run ends
// CANCELLED at once, and the process delivering it stops the agent.
func (s *Service) serveCancel(w http.ResponseWriter, r *http.Request) {
	p, err := principalOf(r, false)
	var run *gateway.Run
	if err == nil {
		run, err = s.cancel(r.Context(), p, r.PathValue("id"))
	}
	if err != nil {
		s.api.Fail(w, r, err)
		return
	}
	httpapi.WriteJSON(w, r, http.StatusOK, run)
}

// cancel ends the run p may see as CANCELLED.
func (s *Service) cancel(ctx context.Context, p principal, id string) (*gateway.Run, error) {
	if err := p.need(ScopeExecute); err != nil {
		return nil, err
	}
	run, err := s.readableRun(ctx, p, id)
	if err != nil {
		return nil, err
	}
	run, _, err = s.mutate(ctx, run, run.ID, func(x *gateway.Run) ([]gateway.Event, error) {
		if x.Status.Terminal() {
			return nil, conflict(gateway.ProblemRunEnded, "the run has ended: "+string(x.Status))
		}
		return end(x, gateway.StatusCancelled, "cancelled by "+p.subject, s.o.Now()), nil
	})
	if err == nil {
		s.cancelled(ctx, run)
	}
	return run, err
}

// Reply is the body of POST /api/v1/runs/{id}/reply: the person's answer
// to a paused run.
type Reply struct {
	// Input is the answer as text.
	Input string `json:"input,omitempty"`
	// ActionID and InputValue answer a HITL request's action buttons and
	// input fields.
	ActionID   string `json:"action_id,omitempty"`
	InputValue string `json:"input_value,omitempty"`
	// CallID and Approved answer a write confirmation: the call they
	// confirm (it must be the paused one) and the decision.
	CallID   string `json:"call_id,omitempty"`
	Approved *bool  `json:"approved,omitempty"`
}

// pendingInput is what the next delivery of a replied run sends.
type pendingInput struct {
	Message *a2a.Message `json:"message"`
	// CallID is the write the person approved: the resume token is bound
	// to it.
	CallID string `json:"call_id,omitempty"`
}

// pausePayload is what a WAITING_USER run keeps in Run.Pause.
type pausePayload struct {
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload"`
	CallID  string          `json:"call_id,omitempty"`
	Session string          `json:"session_id,omitempty"`
}

// serveReply answers POST /api/v1/runs/{id}/reply: the run is queued again
// with the answer, on the same task, under a new idempotency key.
func (s *Service) serveReply(w http.ResponseWriter, r *http.Request) {
	p, err := principalOf(r, false)
	if err == nil {
		err = p.need(ScopeExecute)
	}
	if err != nil {
		s.api.Fail(w, r, err)
		return
	}
	var in Reply
	if !s.api.Decode(w, r, &in, httpapi.Body{What: "the reply"}) {
		return
	}
	run, err := s.reply(r.Context(), p, r.PathValue("id"), &in)
	if err != nil {
		s.api.Fail(w, r, err)
		return
	}
	httpapi.WriteJSON(w, r, http.StatusAccepted, gateway.ExecuteResult{RunID: run.ID, Status: run.Status, ThreadID: run.ThreadID,
		EventsURL: gateway.EventsPath + run.ID})
}

// reply answers the paused run p may see.
func (s *Service) reply(ctx context.Context, p principal, id string, in *Reply) (*gateway.Run, error) {
	if err := p.need(ScopeExecute); err != nil {
		return nil, err
	}
	if len([]rune(in.Input)) > gateway.MaxInputChars || len(in.InputValue) > gateway.MaxInputChars*4 {
		return nil, badRequest("the reply is longer than " + strconv.Itoa(gateway.MaxInputChars) + " characters")
	}
	if in.Input == "" && in.ActionID == "" && in.InputValue == "" && in.Approved == nil {
		return nil, badRequest("a reply needs input, an action_id, an input_value or approved")
	}
	run, err := s.readableRun(ctx, p, id)
	if err != nil {
		return nil, err
	}
	run, _, err = s.mutate(ctx, run, run.ID, func(x *gateway.Run) ([]gateway.Event, error) {
		if x.Status != gateway.StatusWaitingUser {
			return nil, conflict(gateway.ProblemRunNotWaiting, "the run waits for no answer: it is "+string(x.Status))
		}
		var pause pausePayload
		_ = json.Unmarshal(x.Pause, &pause)
		pi, err := replyMessage(x, &pause, in)
		if err != nil {
			return nil, err
		}
		b, err := json.Marshal(pi)
		if err != nil {
			return nil, err
		}
		x.Status, x.Reason, x.Pause, x.PendingInput = gateway.StatusQueued, "answered by "+p.subject, nil, b
		x.Turn++
		x.Attempt = 0
		x.IdempotencyKey = newIdempotencyKey()
		x.LeaseOwner, x.LeaseUntil, x.NotBefore = "", time.Time{}, time.Time{}
		return []gateway.Event{statusEvent(gateway.StatusQueued, x.Reason)}, nil
	})
	if err != nil {
		return nil, err
	}
	s.tel.queued(ctx, run.ID)
	s.dispatch.kick()
	return run, nil
}

// replyMessage builds the message that carries the answer to the agent:
// the text, and the HITL response or write decision as control data.
func replyMessage(run *gateway.Run, pause *pausePayload, in *Reply) (*pendingInput, error) {
	pi := &pendingInput{}
	var resp *hitl.Response
	switch pause.Type {
	case gateway.EventWriteConfirmationRequired:
		if in.CallID == "" || in.CallID != pause.CallID {
			return nil, badRequest("a write confirmation is answered with the call_id of the paused call")
		}
		if in.Approved == nil {
			return nil, badRequest("a write confirmation is answered with approved true or false")
		}
		if *in.Approved {
			pi.CallID = in.CallID
		}
		resp = &hitl.Response{ActionID: decision(*in.Approved), SessionID: pause.Session,
			Metadata: map[string]any{"call_id": in.CallID, "approved": *in.Approved}}
	default:
		if in.CallID != "" || in.Approved != nil {
			return nil, badRequest("call_id and approved answer a write confirmation; this run waits for another answer")
		}
		if in.ActionID != "" || in.InputValue != "" {
			resp = &hitl.Response{ActionID: in.ActionID, SessionID: pause.Session}
			if in.InputValue != "" {
				v := in.InputValue
				resp.InputValue = &v
			}
		}
	}
	text := in.Input
	for _, alt := range []string{in.InputValue, in.ActionID} {
		if text == "" {
			text = alt
		}
	}
	if text == "" && in.Approved != nil {
		text = decision(*in.Approved)
	}
	var m *a2a.Message
	if resp != nil {
		m = hitl.NewResponseMessage(text, *resp)
	} else {
		m = a2a.NewMessage(a2a.RoleUser, a2a.TextPart(text))
	}
	m.TaskID, m.ContextID = run.TaskID, run.ContextID
	pi.Message = m
	return pi, nil
}

func decision(approved bool) string {
	if approved {
		return "approve"
	}
	return "reject"
}
