package delivery

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"novaos.dev/novaos/delivery"
	"novaos.dev/novaos/gateway"
)

func TestOfferAndPoll(t *testing.T) {
	h := newHarness(t, nil)
	a := h.agent(h.inst, false)
	a.open("alpha")
	run := h.trigger(h.inst, "hello")
	// An offer made again stores nothing more.
	if err := h.svc.Offer(t.Context(), run, h.inst); err != nil {
		t.Fatal(err)
	}
	page := a.poll("alpha")
	if len(page.Events) != 1 || page.HeadSeq != 1 {
		t.Fatalf("page = %+v", page)
	}
	e := page.Events[0]
	if e.Type != delivery.EventInvocation || e.Seq != 1 || e.Redelivered || e.InvocationToken == "" {
		t.Fatalf("event = %v", e)
	}
	var p delivery.InvocationPayload
	if err := json.Unmarshal(e.Payload, &p); err != nil || p.RunID != run.ID || p.ThreadID != "thread-1" ||
		p.TriggerKind != delivery.TriggerMessage || p.MessageID != run.ID+"/1" {
		t.Fatalf("payload %s: %v", e.Payload, err)
	}
	c, err := h.svc.verifyToken(t.Context(), e.InvocationToken, h.inst.ID, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := delivery.Claims{Issuer: h.srv.URL, Audience: h.inst.ID, Subject: "alex", TenantID: testTenant, RunID: run.ID,
		ThreadID: "thread-1", EventID: e.ID, TriggerKind: delivery.TriggerMessage, MessageID: run.ID + "/1",
		BillingMode: delivery.BillingPlatform, ToolClass: delivery.ToolScoped, PermissionVersion: h.inst.Version,
		IssuedAt: h.clock.Now().Unix(), ExpiresAt: h.clock.Now().Add(DefaultTokenTTL).Unix(), ID: c.ID}
	if c != want {
		t.Errorf("claims\n got %+v\nwant %+v", c, want)
	}
	rec, err := h.st.NewestToken(t.Context(), run.ID)
	if err != nil || rec.JTI != c.ID || rec.Consumer != "alpha" || rec.EventID != e.ID {
		t.Errorf("newest token %+v: %v", rec, err)
	}
	// Sent, not acknowledged, not yet due: nothing.
	if page := a.poll("alpha"); len(page.Events) != 0 {
		t.Fatalf("sent again before the ack timeout: %+v", page)
	}
	if err := h.svc.Cancelled(t.Context(), run); err != nil {
		t.Fatal(err)
	}
	if err := h.svc.Cancelled(t.Context(), run); err != nil {
		t.Fatal(err)
	}
	page = a.poll("alpha")
	if len(page.Events) != 1 || page.Events[0].Type != delivery.EventCancelRequested || page.Events[0].InvocationToken != "" {
		t.Fatalf("cancel = %+v", page)
	}
	if page.HeadSeq != 2 {
		t.Errorf("head %d after a cancel offered twice", page.HeadSeq)
	}
}

func TestFollowupOffer(t *testing.T) {
	h := newHarness(t, nil)
	run := h.trigger(h.inst, "hello")
	run.Turn = 2
	if err := h.svc.Offer(t.Context(), run, h.inst); err != nil {
		t.Fatal(err)
	}
	events, _ := h.st.ReadEvents(t.Context(), h.inst.ID, 0, 10)
	if len(events) != 2 || events[1].Type != delivery.EventFollowup || events[1].Grant.MessageID != run.ID+"/2" {
		t.Fatalf("events = %+v", events)
	}
	if err := h.svc.Offer(t.Context(), run, h.other); err == nil {
		t.Error("an offer to another instance was taken")
	}
}

func TestRedeliveryAfterAckTimeout(t *testing.T) {
	h := newHarness(t, nil)
	a := h.agent(h.inst, false)
	a.open("alpha")
	var runs []gateway.Run
	for range 3 {
		runs = append(runs, h.trigger(h.inst, "x"))
	}
	first := a.poll("alpha")
	if len(first.Events) != 3 {
		t.Fatalf("%d events", len(first.Events))
	}
	calls := h.st.recordCalls
	if ans := a.ack("alpha", 1); ans.status != http.StatusOK {
		t.Fatalf("ack: %d %s", ans.status, ans.body)
	}
	h.clock.Advance(DefaultAckTimeout - time.Second)
	if page := a.poll("alpha"); len(page.Events) != 0 {
		t.Fatal("redelivered before the ack timeout")
	}
	h.clock.Advance(time.Second)
	again := a.poll("alpha")
	if len(again.Events) != 2 || again.Events[0].Seq != 2 || !again.Events[0].Redelivered || !again.Events[1].Redelivered {
		t.Fatalf("redelivery = %+v", again)
	}
	if h.st.recordCalls != calls+1 {
		t.Errorf("%d token writes for one page", h.st.recordCalls-calls)
	}
	for i, e := range again.Events {
		if e.ID != first.Events[i+1].ID || e.InvocationToken == first.Events[i+1].InvocationToken {
			t.Errorf("event %d: same id %v, fresh token %v", e.Seq, e.ID == first.Events[i+1].ID, e.InvocationToken != first.Events[i+1].InvocationToken)
		}
		c, err := h.svc.verifyToken(t.Context(), e.InvocationToken, h.inst.ID, runs[i+1].ID)
		if err != nil {
			t.Fatal(err)
		}
		if rec, _ := h.st.NewestToken(t.Context(), runs[i+1].ID); rec.JTI != c.ID {
			t.Errorf("the redelivered token is not the run's newest")
		}
	}
	// The first delivery's token is superseded now.
	ans := a.call("POST", delivery.StartRunPath(runs[1].ID), startBody(), first.Events[1].InvocationToken, "")
	if ans.status != http.StatusForbidden || ans.problem(t).Reason != delivery.TokenSuperseded {
		t.Fatalf("start with the first token: %d %s", ans.status, ans.body)
	}
	if ans := a.ack("alpha", 3); ans.status != http.StatusOK {
		t.Fatal(ans.status)
	}
	h.clock.Advance(2 * DefaultAckTimeout)
	if page := a.poll("alpha"); len(page.Events) != 0 {
		t.Fatal("acknowledged events were sent again")
	}
	// The consumer acknowledged the redelivered events: no delivery will
	// bring their tokens again (they may have been lost on the way). While
	// the newest token can be used, the first stays superseded; once it
	// expired, the first of the same event counts: it renews, and the
	// renewal starts the run.
	start := func(run gateway.Run, tok string) answer {
		return a.call("POST", delivery.StartRunPath(run.ID), startBody(), tok, "")
	}
	if ans := start(runs[2], first.Events[2].InvocationToken); ans.problem(t).Reason != delivery.TokenSuperseded {
		t.Fatalf("start with the first token while the newest is valid: %d %s", ans.status, ans.body)
	}
	h.clock.Advance(DefaultTokenTTL + DefaultClockLeeway)
	if ans := start(runs[2], first.Events[2].InvocationToken); ans.problem(t).Reason != delivery.TokenExpired {
		t.Fatalf("start with the first token after the newest expired: %d %s", ans.status, ans.body)
	}
	ans = a.call("POST", delivery.RenewTokenPath(runs[2].ID), nil, first.Events[2].InvocationToken, newKey())
	g := decodeAs[delivery.InvocationTokenGrant](t, ans)
	if ans.status != http.StatusOK || g.InvocationToken == "" {
		t.Fatalf("renew with the first token after the newest expired: %d %s", ans.status, ans.body)
	}
	// A renewal's token is never lost that way (a lost answer is answered
	// again): the tokens before it stay superseded.
	for _, tok := range []string{first.Events[2].InvocationToken, again.Events[1].InvocationToken} {
		if ans := start(runs[2], tok); ans.problem(t).Reason != delivery.TokenSuperseded {
			t.Fatalf("start with a token older than the renewal: %d %s", ans.status, ans.body)
		}
	}
	if ans := start(runs[2], g.InvocationToken); ans.status != http.StatusOK {
		t.Fatalf("start with the renewal: %d %s", ans.status, ans.body)
	}
}

func TestAck(t *testing.T) {
	h := newHarness(t, nil)
	a := h.agent(h.inst, false)
	a.open("alpha")
	h.trigger(h.inst, "x")
	h.trigger(h.inst, "y")
	tests := []struct {
		name   string
		body   any
		status int
		acked  int64
	}{
		{"first", delivery.ConsumerAck{Seq: 1}, http.StatusOK, 1},
		{"again", delivery.ConsumerAck{Seq: 1}, http.StatusOK, 1},
		{"older", delivery.ConsumerAck{Seq: 0}, http.StatusOK, 1},
		{"head", delivery.ConsumerAck{Seq: 2}, http.StatusOK, 2},
		{"beyond head", delivery.ConsumerAck{Seq: 3}, http.StatusBadRequest, 2},
		{"negative", delivery.ConsumerAck{Seq: -1}, http.StatusBadRequest, 2},
		{"malformed", []byte(`{"seq":"x"}`), http.StatusBadRequest, 2},
		{"not JSON", []byte(`seq=1`), http.StatusBadRequest, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ans := a.call("POST", delivery.ConsumerAckPath(h.inst.ID, "alpha"), tc.body, "", "")
			if ans.status != tc.status {
				t.Fatalf("status %d, want %d: %s", ans.status, tc.status, ans.body)
			}
			if tc.status != http.StatusOK {
				if p := ans.problem(t); p.Code != delivery.CodeValidationFailed {
					t.Errorf("code %q", p.Code)
				}
			}
			st := decodeAs[delivery.ConsumerState](t, a.call("GET", delivery.ConsumerPath(h.inst.ID, "alpha"), nil, "", ""))
			if st.AckedSeq != tc.acked || st.HeadSeq != 2 || st.Consumer != "alpha" {
				t.Errorf("state %+v, want acked %d", st, tc.acked)
			}
		})
	}
	t.Run("unknown consumer", func(t *testing.T) {
		if ans := a.call("GET", delivery.ConsumerPath(h.inst.ID, "never"), nil, "", ""); ans.status != http.StatusNotFound {
			t.Fatalf("status %d", ans.status)
		}
	})
	t.Run("bad name", func(t *testing.T) {
		if ans := a.call("GET", delivery.ConsumerEventsPath(h.inst.ID, "-x"), nil, "", ""); ans.status != http.StatusBadRequest {
			t.Fatalf("status %d", ans.status)
		}
	})
	t.Run("bad limit", func(t *testing.T) {
		if ans := a.call("GET", delivery.ConsumerEventsPath(h.inst.ID, "alpha")+"?limit=0", nil, "", ""); ans.status != http.StatusBadRequest {
			t.Fatalf("status %d", ans.status)
		}
	})
}

func TestPollLimitAndNewConsumerAtHead(t *testing.T) {
	h := newHarness(t, nil)
	a := h.agent(h.inst, false)
	h.trigger(h.inst, "before the consumer")
	a.open("late") // starts at the head: the earlier event is not its
	for range 5 {
		h.trigger(h.inst, "x")
	}
	ans := a.call("GET", delivery.ConsumerEventsPath(h.inst.ID, "late")+"?limit=2", nil, "", "")
	page := decodeAs[delivery.EventPage](t, ans)
	if len(page.Events) != 2 || page.Events[0].Seq != 2 || page.HeadSeq != 6 {
		t.Fatalf("page = %+v", page)
	}
	if page := a.poll("late"); len(page.Events) != 3 || page.Events[0].Seq != 4 {
		t.Fatalf("next page = %+v", page)
	}
}

func TestLongPoll(t *testing.T) {
	h := newHarness(t, nil)
	a := h.agent(h.inst, false)
	a.open("alpha")
	h.trigger(h.inst, "ready")
	// Events ready: answered at once, whatever the wait.
	ready := make(chan delivery.EventPage, 1)
	go func() { ready <- a.poll("alpha") }()
	if page := <-ready; len(page.Events) != 1 {
		t.Fatalf("page = %+v", page)
	}
	// Nothing ready: the poll waits until an event is offered.
	done := make(chan answer, 1)
	entered := make(chan struct{})
	go func() {
		close(entered)
		done <- a.call("GET", delivery.ConsumerEventsPath(h.inst.ID, "alpha")+"?wait=20", nil, "", "")
	}()
	<-entered
	run := h.trigger(h.inst, "later")
	ans := <-done
	page := decodeAs[delivery.EventPage](t, ans)
	// The poll may have taken the offer before it waited, or been woken.
	if len(page.Events) != 1 || page.Events[0].Seq != 2 {
		t.Fatalf("page = %+v", page)
	}
	_ = run
}

func TestLongPollWakesOnStoreNews(t *testing.T) {
	h := newHarness(t, nil)
	a := h.agent(h.inst, false)
	a.open("alpha")
	ag, err := h.svc.AuthenticateAgent(t.Context(), Credentials{Scheme: "Bearer", Token: secretOf(a.token)})
	if err != nil {
		t.Fatal(err)
	}
	waiting := h.svc.watch.wait(ag.ID) // the poll below waits on the same channel
	done := make(chan delivery.EventPage, 1)
	go func() {
		page, _ := h.svc.Poll(context.Background(), ag, "alpha", Batch{}, 20*time.Second)
		done <- page
	}()
	// Another process's append: only the store's news wakes the poll.
	<-h.st.watched
	if _, err := h.st.AppendEvents(t.Context(), []delivery.StoredEvent{{AgentID: ag.ID, TenantID: testTenant, ID: "e1",
		Type: delivery.EventAccessChanged, Payload: json.RawMessage(`{"permission_version":2}`)}}); err != nil {
		t.Fatal(err)
	}
	<-waiting
	if page := <-done; len(page.Events) != 1 || page.Events[0].Type != delivery.EventAccessChanged {
		t.Fatalf("page = %+v", page)
	}
}

func TestHeartbeat(t *testing.T) {
	h := newHarness(t, nil)
	a := h.agent(h.inst, false)
	path := delivery.HeartbeatPath(h.inst.ID)
	tests := []struct {
		name    string
		body    string
		status  int
		code    string
		pointer string
	}{
		{"ok", `{"status":"ok","details":{"active_runs":["r1"],"adapter":{"name":"lotse","version":"1.2.0"},"capabilities":{"followups":"steer"}}}`, 200, "", ""},
		{"degraded", `{"status":"degraded","details":{"degraded_reasons":["model_slow"]}}`, 200, "", ""},
		{"unknown detail", `{"status":"ok","details":{"secret":"x"}}`, 400, delivery.CodeUnknownMember, "/details/secret"},
		{"unknown top", `{"status":"ok","details":{},"log":"x"}`, 400, delivery.CodeUnknownMember, "/log"},
		{"unknown capability", `{"status":"ok","details":{"capabilities":{"shell":true}}}`, 400, delivery.CodeUnknownMember, "/details/capabilities/shell"},
		{"case variant", `{"Status":"ok","details":{}}`, 400, delivery.CodeUnknownMember, "/Status"},
		{"bad status", `{"status":"fine","details":{}}`, 400, delivery.CodeInvalidValue, "/status"},
		{"path as name", `{"status":"ok","details":{"adapter":{"name":"/home/alex/agent"}}}`, 400, delivery.CodeInvalidValue, "/details/adapter/name"},
		{"bad followups", `{"status":"ok","details":{"capabilities":{"followups":"yes"}}}`, 400, delivery.CodeInvalidValue, "/details/capabilities/followups"},
		{"wrong type", `{"status":"ok","details":{"active_runs":"r1"}}`, 400, delivery.CodeInvalidValue, "/details/active_runs"},
		{"repeated", `{"status":"ok","status":"degraded","details":{}}`, 400, delivery.CodeMalformed, "/status"},
		{"not JSON", `status=ok`, 400, delivery.CodeMalformed, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ans := a.call("POST", path, []byte(tc.body), "", "")
			if ans.status != tc.status {
				t.Fatalf("status %d, want %d: %s", ans.status, tc.status, ans.body)
			}
			if tc.status == 200 {
				if ack := decodeAs[delivery.HeartbeatAck](t, ans); ack.IntervalMS != 30000 {
					t.Errorf("interval %d", ack.IntervalMS)
				}
				return
			}
			p := ans.problem(t)
			if p.Code != delivery.CodeValidationFailed || len(p.Errors) == 0 || p.Errors[0].Code != tc.code || p.Errors[0].Pointer != tc.pointer {
				t.Errorf("problem %+v", p)
			}
		})
	}
	last, ok := h.svc.LastHeartbeatOf(h.inst.ID)
	if !ok || last.Heartbeat.Status != delivery.HeartbeatDegraded || !last.At.Equal(h.clock.Now()) {
		t.Errorf("last heartbeat %+v", last)
	}
}

func TestShutdownEndsLongPolls(t *testing.T) {
	h := newHarness(t, nil)
	a := h.agent(h.inst, false)
	a.open("alpha")
	done := make(chan answer, 1)
	go func() { done <- a.call("GET", delivery.ConsumerEventsPath(h.inst.ID, "alpha")+"?wait=25", nil, "", "") }()
	if err := h.svc.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	if ans := <-done; ans.status != http.StatusOK || len(decodeAs[delivery.EventPage](t, ans).Events) != 0 {
		t.Fatalf("poll: %d %s", ans.status, ans.body)
	}
}

func TestOfferOfAnEndedRun(t *testing.T) {
	h := newHarness(t, nil)
	run := h.trigger(h.inst, "x")
	cancelRun(h, run.ID)
	ended := h.run(run.ID)
	ended.Turn = 2
	if err := h.svc.Offer(t.Context(), ended, h.inst); err != nil {
		t.Fatal(err)
	}
	if head, _ := h.st.HeadSeq(t.Context(), h.inst.ID); head != 1 {
		t.Fatalf("head %d: an ended run was offered", head)
	}
}
