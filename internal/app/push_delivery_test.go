package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2aclient"
	"novaos.dev/novaos/a2a/a2apush"
	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/app"
	"novaos.dev/novaos/internal/pgtest"
	"novaos.dev/novaos/netguard"
	"novaos.dev/novaos/store"
)

// hook is a webhook receiver in the test process that verifies every
// notification against the server's published keys. While held, requests
// wait (and their deliveries stay in flight) until released.
type hook struct {
	t   *testing.T
	srv *httptest.Server

	mu      sync.Mutex
	v       *a2aclient.PushVerifier
	byTask  map[string][]*a2aclient.PushNotification
	tokens  map[string]string // the notification token each task's hook got
	errs    []error
	held    bool
	waiting int
	release chan struct{}
	arrived chan struct{}
}

func newHook(t *testing.T) *hook {
	h := &hook{t: t, byTask: map[string][]*a2aclient.PushNotification{}, tokens: map[string]string{}, release: make(chan struct{}), arrived: make(chan struct{}, 1)}
	h.srv = httptest.NewServer(http.HandlerFunc(h.serve))
	t.Cleanup(func() { h.unhold(); h.srv.Close() })
	return h
}

// trust makes the hook verify notifications from the server at base.
func (h *hook) trust(base string) {
	keys, err := identity.NewJWKS(identity.JWKSURL(base), &identity.JWKSOptions{Policy: &netguard.Policy{AllowLoopback: true}})
	if err != nil {
		h.t.Fatal(err)
	}
	v, err := a2aclient.NewPushVerifier(base, keys, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	h.mu.Lock()
	h.v = v
	h.mu.Unlock()
}

func (h *hook) hold() {
	h.mu.Lock()
	h.held, h.release = true, make(chan struct{})
	h.mu.Unlock()
}

func (h *hook) unhold() {
	h.mu.Lock()
	if h.held {
		h.held = false
		close(h.release)
	}
	h.mu.Unlock()
}

func (h *hook) inFlight() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.waiting
}

func (h *hook) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	h.mu.Lock()
	if h.held {
		h.waiting++
		rel := h.release
		h.mu.Unlock()
		select {
		case <-rel:
		case <-r.Context().Done():
		}
		h.mu.Lock()
		h.waiting--
		h.mu.Unlock()
		http.Error(w, "held", http.StatusServiceUnavailable)
		return
	}
	v := h.v
	h.mu.Unlock()
	r.Body = io.NopCloser(bytes.NewReader(body))
	n, err := v.Verify(r)
	h.mu.Lock()
	if err != nil {
		h.errs = append(h.errs, err)
	} else {
		h.byTask[n.Claims.TaskID] = append(h.byTask[n.Claims.TaskID], n)
		h.tokens[n.Claims.TaskID] = r.Header.Get(a2a.HeaderPushToken)
	}
	h.mu.Unlock()
	select {
	case h.arrived <- struct{}{}:
	default:
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// kinds is what task id was told, one entry per notification after
// repeats of one notification are dropped: at-least-once may repeat one,
// never skip one or reorder them (notification ids grow along a stream).
func (h *hook) kinds(id string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	last := ""
	for _, n := range h.byTask[id] {
		if n.Claims.NotificationID == last {
			continue
		}
		last = n.Claims.NotificationID
		switch ev := n.Event; {
		case ev.Task != nil:
			out = append(out, "task:"+ev.Task.Status.State.String())
		case ev.StatusUpdate != nil:
			out = append(out, "status:"+ev.StatusUpdate.Status.State.String())
		case ev.ArtifactUpdate != nil:
			out = append(out, "artifact:"+ev.ArtifactUpdate.Artifact.Parts[0].Text)
		}
	}
	return out
}

// ids checks that the notification ids of task id never go back.
func (h *hook) ordered(id string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	var prev int64
	for _, n := range h.byTask[id] {
		var seq int64
		fmt.Sscan(n.Claims.NotificationID, &seq)
		if seq < prev {
			return false
		}
		prev = seq
	}
	return true
}

// waitFinal waits until every task in ids was told it completed.
func (h *hook) waitFinal(ids []string) {
	h.t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		done := 0
		for _, id := range ids {
			if k := h.kinds(id); len(k) > 0 && (k[len(k)-1] == "status:TASK_STATE_COMPLETED" || k[len(k)-1] == "task:TASK_STATE_COMPLETED") {
				done++
			}
		}
		h.mu.Lock()
		errs := slices.Clone(h.errs)
		h.mu.Unlock()
		if len(errs) > 0 {
			h.t.Fatalf("the hook refused notifications: %v", errs)
		}
		if done == len(ids) {
			return
		}
		select {
		case <-h.arrived:
		case <-time.After(20 * time.Millisecond):
		case <-deadline:
			h.t.Fatalf("%d of %d tasks told they completed", done, len(ids))
		}
	}
}

// sendWithHook starts a tck scenario on a task that reports to url.
func sendWithHook(t *testing.T, agentURL, messageID, url string) string {
	t.Helper()
	msg := a2a.NewMessage(a2a.RoleUser, a2a.TextPart("go"))
	msg.MessageID = messageID
	res, rerr := rpc(t, agentURL, a2a.MethodSendMessage, a2a.SendMessageRequest{Message: msg, Configuration: &a2a.SendMessageConfiguration{
		ReturnImmediately:          true,
		TaskPushNotificationConfig: &a2a.TaskPushNotificationConfig{URL: url, Token: "tok-" + messageID},
	}})
	if rerr != nil {
		t.Fatalf("SendMessage: %v", rerr)
	}
	var out a2a.SendMessageResponse
	if err := a2a.Unmarshal(res, &out); err != nil || out.Task == nil {
		t.Fatalf("SendMessage: %s (%v)", res, err)
	}
	return out.Task.ID
}

// pushOptions are a server's on dir (SQLite) or at dbURL (PostgreSQL),
// with retries quick enough for a test.
func pushOptions(dir, dbURL, addr string) *app.Options {
	return &app.Options{DataDir: dir, Addr: addr, Database: app.DatabaseOptions{URL: dbURL},
		Agents: app.AgentOptions{PushDelivery: a2apush.Options{
			BackoffBase: 10 * time.Millisecond, BackoffMax: 100 * time.Millisecond, PollInterval: 50 * time.Millisecond,
		}},
	}
}

func TestPushDeliveryThroughTheServerSQLite(t *testing.T) {
	testPushDelivery(t, pushOptions(t.TempDir(), "", ""))
}

func TestPushDeliveryThroughTheServerPostgres(t *testing.T) {
	testPushDelivery(t, pushOptions(t.TempDir(), pgtest.URL(t), ""))
}

func testPushDelivery(t *testing.T, opts *app.Options) {
	srv := start(t, opts)
	code, body := get(t, srv.URL()+"/agents/tck/.well-known/agent-card.json")
	var card a2a.AgentCard
	if err := json.Unmarshal(body, &card); code != http.StatusOK || err != nil || card.Capabilities.PushNotifications == nil || !*card.Capabilities.PushNotifications {
		t.Fatalf("card (%d): pushNotifications not true: %s", code, body)
	}
	h := newHook(t)
	h.trust(srv.URL())
	id := sendWithHook(t, srv.URL()+"/agents/tck", "tck-stream-artifact-chunked-1", h.srv.URL+"/hook")
	h.waitFinal([]string{id})
	got := h.kinds(id)
	want := []string{"task:TASK_STATE_SUBMITTED", "status:TASK_STATE_WORKING", "artifact:chunk-1 ", "artifact:chunk-2", "status:TASK_STATE_COMPLETED"}
	if !slices.Equal(got, want) {
		t.Errorf("notifications %v, want %v", got, want)
	}
	h.mu.Lock()
	first := h.byTask[id][0]
	h.mu.Unlock()
	if first.Claims.Issuer != srv.URL() || first.Claims.ConfigID == "" {
		t.Errorf("claims: %+v", first.Claims)
	}
	// The token was sealed at rest and is sent as the client gave it.
	h.mu.Lock()
	tok := h.tokens[id]
	h.mu.Unlock()
	if tok != "tok-tck-stream-artifact-chunked-1" {
		t.Errorf("token header %q", tok)
	}
}

func TestPushCardsWithoutDelivery(t *testing.T) {
	// A caller's push-config store that keeps no outbox: configs are
	// taken, nothing is sent, and the cards say so.
	srv := start(t, &app.Options{Stores: &store.Stores{Tasks: a2asrv.NewMemoryTaskStore(nil), PushConfigs: a2asrv.NewMemoryPushConfigStore(nil)}})
	_, body := get(t, srv.URL()+"/agents/echo/.well-known/agent-card.json")
	if !bytes.Contains(body, []byte(`"pushNotifications":false`)) {
		t.Errorf("card: %s", body)
	}
	tasks := a2asrv.NewMemoryTaskStore(nil)
	srv = start(t, &app.Options{Stores: &store.Stores{Tasks: tasks, PushConfigs: tasks.PushConfigStore(), PushOutbox: tasks.PushOutbox()}})
	_, body = get(t, srv.URL()+"/agents/echo/.well-known/agent-card.json")
	if !bytes.Contains(body, []byte(`"pushNotifications":true`)) {
		t.Errorf("card with an outbox: %s", body)
	}
}

func TestPushSurvivesRestartSQLite(t *testing.T) {
	dir := t.TempDir()
	testPushRestart(t, func(addr string) *app.Options { return pushOptions(dir, "", addr) })
}

func TestPushSurvivesRestartPostgres(t *testing.T) {
	dir, url := t.TempDir(), pgtest.URL(t)
	testPushRestart(t, func(addr string) *app.Options { return pushOptions(dir, url, addr) })
}

// testPushRestart stops a server while notifications are in flight and
// queued, starts another on the same database, and checks every task's
// receiver is told everything, in order.
func testPushRestart(t *testing.T, opts func(addr string) *app.Options) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // both servers listen here, so both are the same issuer
	h := newHook(t)
	h.trust("http://" + addr)
	want := []string{"task:TASK_STATE_SUBMITTED", "status:TASK_STATE_WORKING", "artifact:chunk-1 ", "artifact:chunk-2", "status:TASK_STATE_COMPLETED"}

	first, err := app.New(t.Context(), opts(addr))
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	// One task delivered whole before the hook starts holding.
	early := sendWithHook(t, first.URL()+"/agents/tck", "tck-stream-artifact-chunked-early", h.srv.URL+"/hook")
	h.waitFinal([]string{early})
	h.hold()
	var ids []string
	for i := range 8 {
		ids = append(ids, sendWithHook(t, first.URL()+"/agents/tck", fmt.Sprintf("tck-stream-artifact-chunked-%d", i), h.srv.URL+"/hook"))
	}
	// Wait until the tasks are done and the hook holds deliveries (the
	// deadline only bounds a failure).
	deadline := time.Now().Add(30 * time.Second)
	for h.inFlight() == 0 || !allCompleted(t, first.URL()+"/agents/tck", ids) {
		if time.Now().After(deadline) {
			t.Fatalf("after 30s, no delivery in flight (%d) or tasks still running", h.inFlight())
		}
		time.Sleep(10 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := first.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	h.unhold()

	start(t, opts(addr))
	h.waitFinal(ids)
	for _, id := range append([]string{early}, ids...) {
		if got := h.kinds(id); !slices.Equal(got, want) {
			t.Errorf("task %s: notifications %v, want %v", id, got, want)
		}
		if !h.ordered(id) {
			t.Errorf("task %s: notifications out of order", id)
		}
	}
}

// claimAtShutdown is an outbox whose first claim is still running when the
// deliverer is told to stop: it claims once the test says the deliverer's
// ctx has ended, and then, as a database whose claim committed after its
// caller gave up would, answers with that ctx's error.
type claimAtShutdown struct {
	a2asrv.PushOutbox
	claiming chan struct{} // closed as the first claim begins
	shutdown chan struct{} // closed once the deliverer's ctx has ended
	once     sync.Once
}

func (o *claimAtShutdown) ClaimPush(ctx context.Context, now time.Time, max int, lease time.Duration) ([]*a2asrv.PushDelivery, error) {
	first := false
	o.once.Do(func() { first = true; close(o.claiming) })
	if !first {
		return o.PushOutbox.ClaimPush(ctx, now, max, lease)
	}
	<-o.shutdown
	ds, err := o.PushOutbox.ClaimPush(context.WithoutCancel(ctx), now, max, lease)
	if err == nil && ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return ds, err
}

// A claim still running when the deliverer stops must not strand the
// streams it leased for a whole lease (at least 30s): the next process
// finds them due at once. Before, the claim's outcome was dropped with the
// ctx's error, and a restarted server sent nothing for that long
// (TestPushSurvivesRestartPostgres, one run in five under load).
func TestPushShutdownReleasesAClaimInFlight(t *testing.T) {
	ctx := context.Background()
	tasks := a2asrv.NewMemoryTaskStore(nil)
	scope := a2asrv.Scope{Tenant: "acme"}
	task := &a2a.Task{ID: "t1", ContextID: "c1", Status: a2a.TaskStatus{State: a2a.TaskStateWorking, Timestamp: time.Now()}}
	if _, err := tasks.Create(ctx, scope, task); err != nil {
		t.Fatal(err)
	}
	// Nothing listens on port 9 (discard); no attempt gets that far.
	cfg := &a2a.TaskPushNotificationConfig{TaskID: "t1", ID: "cfg", URL: "http://127.0.0.1:9/hook"}
	if err := tasks.PushConfigStore().Put(ctx, scope, cfg); err != nil {
		t.Fatal(err)
	}
	out := &claimAtShutdown{PushOutbox: tasks.PushOutbox(), claiming: make(chan struct{}), shutdown: make(chan struct{})}
	d, err := a2apush.New(out, &a2apush.Options{Policy: &netguard.Policy{AllowLoopback: true}, Lease: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- d.Run(runCtx) }()
	<-out.claiming
	stop()
	close(out.shutdown)
	if err := <-ran; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v, want context.Canceled", err)
	}
	ds, err := tasks.PushOutbox().ClaimPush(ctx, time.Now(), 10, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 1 || ds[0].Config.ID != "cfg" {
		t.Fatalf("%d streams due after the shutdown, want the one claimed as it began", len(ds))
	}
}

func allCompleted(t *testing.T, url string, ids []string) bool {
	for _, id := range ids {
		res, rerr := rpc(t, url, a2a.MethodGetTask, a2a.GetTaskRequest{ID: id})
		var task a2a.Task
		if rerr != nil || a2a.Unmarshal(res, &task) != nil || task.Status.State != a2a.TaskStateCompleted {
			return false
		}
	}
	return true
}
