package execgw_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/internal/execgw"
)

func TestRunEventIndex(t *testing.T) {
	e := newEnv(t, hostedAgents{"echo": echoAgent(t)}, nil)
	run := e.execute(userTok, gateway.ExecuteRequest{InstanceID: e.install("echo", "echo", nil), Input: "x"})
	e.waitStatus(run, gateway.StatusCompleted)
	all := e.events(userTok, run, "", nil)

	type page struct {
		Events []struct {
			EventID   string `json:"event_id"`
			Type      string
			Timestamp string
			Sequence  int64
		}
		NextCursor *string `json:"next_cursor"`
		RequestID  string  `json:"request_id"`
	}
	// The service route pages with its cursor until it says there is no more.
	var seen []int64
	cursor := ""
	for range 10 {
		var p page
		path := gateway.ServiceRunsPath + run + "/events?limit=3"
		if cursor != "" {
			path += "&after=" + cursor
		}
		if st := e.do("GET", path, serviceTok, nil, &p); st != 200 {
			t.Fatalf("service route: %d", st)
		}
		for _, ev := range p.Events {
			if ev.EventID == "" || ev.Timestamp == "" {
				t.Fatalf("event %+v", ev)
			}
			if _, err := time.Parse(time.RFC3339Nano, ev.Timestamp); err != nil {
				t.Fatal(err)
			}
			seen = append(seen, ev.Sequence)
		}
		if p.RequestID == "" {
			t.Fatal("no request_id")
		}
		if p.NextCursor == nil {
			break
		}
		cursor = *p.NextCursor
	}
	if len(seen) != len(all) {
		t.Fatalf("service route gave %v, the stream %d events", seen, len(all))
	}
	for i, s := range seen {
		if s != int64(i+1) {
			t.Fatalf("sequences %v", seen)
		}
	}
	// A page that ends on the run's last event has no next cursor.
	var whole page
	if st := e.do("GET", gateway.ServiceRunsPath+run+"/events?limit="+strconv.Itoa(len(all)), serviceTok, nil, &whole); st != 200 ||
		len(whole.Events) != len(all) || whole.NextCursor != nil {
		t.Fatalf("a page of all %d events: %d, %d events, next cursor %v", len(all), st, len(whole.Events), whole.NextCursor)
	}
	// A user token is refused there, and reads its own run on the user route.
	if st := e.do("GET", gateway.ServiceRunsPath+run+"/events", userTok, nil, nil); st != 403 {
		t.Fatalf("user token on the service route: %d", st)
	}
	var up page
	if st := e.do("GET", gateway.RunsPath+"/"+run+"/events?after=2", userTok, nil, &up); st != 200 || len(up.Events) != len(all)-2 || up.Events[0].Sequence != 3 {
		t.Fatalf("user route: %d %+v", st, up)
	}
	if st := e.do("GET", gateway.RunsPath+"/"+run+"/events", bobTok, nil, nil); st != 404 {
		t.Fatalf("another user's run: %d", st)
	}
}

func TestListRuns(t *testing.T) {
	e := newEnv(t, hostedAgents{"echo": echoAgent(t)}, nil)
	inst := e.install("echo", "echo", nil)
	var alice, bob []string
	for i := range 5 {
		alice = append(alice, e.execute(userTok, gateway.ExecuteRequest{InstanceID: inst, Input: "a" + strconv.Itoa(i)}))
		bob = append(bob, e.execute(bobTok, gateway.ExecuteRequest{InstanceID: inst, Input: "b" + strconv.Itoa(i)}))
	}
	list := func(tok, query string) []string {
		var ids []string
		cursor := ""
		for range 20 {
			var p struct {
				Runs       []gateway.Run
				NextCursor string `json:"next_cursor"`
			}
			path := gateway.RunsPath + "?limit=2" + query
			if cursor != "" {
				path += "&after=" + cursor
			}
			if st := e.do("GET", path, tok, nil, &p); st != 200 {
				t.Fatalf("list: %d", st)
			}
			for _, r := range p.Runs {
				ids = append(ids, r.ID)
			}
			if p.NextCursor == "" {
				return ids
			}
			cursor = p.NextCursor
		}
		t.Fatal("listing does not end")
		return nil
	}
	if got := list(userTok, ""); len(got) != 5 || !subset(got, alice) {
		t.Fatalf("alice sees %v", got)
	}
	if got := list(serviceTok, ""); len(got) != 10 {
		t.Fatalf("the service account sees %d runs", len(got))
	}
	if got := list(otherTok, ""); len(got) != 0 {
		t.Fatalf("another tenant sees %v", got)
	}
	if st := e.do("GET", gateway.RunsPath+"?status=DONE", userTok, nil, nil); st != 400 {
		t.Fatalf("bad status: %d", st)
	}
	if st := e.do("GET", gateway.RunsPath+"?after=forged", userTok, nil, nil); st != 400 {
		t.Fatalf("forged cursor: %d", st)
	}
}

func subset(got, of []string) bool {
	in := map[string]bool{}
	for _, s := range of {
		in[s] = true
	}
	for _, s := range got {
		if !in[s] {
			return false
		}
	}
	return true
}

// A run whose dispatcher dies mid-run is taken over by another when its
// lease lapses, and delivered again under the same idempotency key.
func TestTakeover(t *testing.T) {
	started := make(chan struct{}, 1)
	sc := &script{steps: []func(*a2a.SendMessageRequest, *frameWriter){
		func(_ *a2a.SendMessageRequest, w *frameWriter) {
			w.status(a2a.TaskStateWorking, nil)
			started <- struct{}{}
			<-w.ctx.Done()
		},
		func(_ *a2a.SendMessageRequest, w *frameWriter) {
			w.text("a", "done elsewhere", false)
			w.status(a2a.TaskStateCompleted, nil)
		},
	}}
	ctx := context.Background()
	st := gateway.NewMemoryStore()
	now := time.Now()
	inst, err := st.CreateInstance(ctx, gateway.Instance{ID: "i-1", TenantID: "acme", Name: "slow", Hosted: "slow"}, now)
	if err != nil {
		t.Fatal(err)
	}
	run, _, err := st.CreateRun(ctx, gateway.RunWrite{Now: now, Run: gateway.Run{ID: "r-1", TenantID: "acme", InstanceID: inst.ID,
		Status: gateway.StatusQueued, Input: "q", IdempotencyKey: "k-1", Turn: 1}})
	if err != nil {
		t.Fatal(err)
	}
	opts := &execgw.Options{Lease: 300 * time.Millisecond, SweepEvery: 10 * time.Millisecond, RetryBackoff: time.Millisecond}
	a := startReplica(t, st, hostedAgents{"slow": sc}, opts)
	<-started
	a.kill() // the replica dies: it writes nothing more
	b := startReplica(t, st, hostedAgents{"slow": sc}, opts)
	defer b.kill()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r, err := st.GetRun(ctx, "", run.ID)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status == gateway.StatusCompleted {
			if sc.count() != 2 || platform(t, sc.call(1)).IdempotencyKey != "k-1" || r.Output != "done elsewhere" || r.Attempt != 2 {
				t.Fatalf("%d calls, run %+v", sc.count(), r)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %+v not taken over", r)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// replica is a gateway without an HTTP server: a dispatcher on a store.
type replica struct {
	cancel context.CancelFunc
	done   chan struct{}
}

func startReplica(t *testing.T, st gateway.Store, agents hostedAgents, o *execgw.Options) *replica {
	svc := execgw.New(st, execgw.Deps{Tokens: &fakeTokens{}, Hosted: agents}, o)
	ctx, cancel := context.WithCancel(context.Background())
	r := &replica{cancel: cancel, done: make(chan struct{})}
	go func() { svc.Run(ctx); close(r.done) }()
	t.Cleanup(r.kill)
	return r
}

func (r *replica) kill() {
	r.cancel()
	<-r.done
}

// A server that shuts down hands its runs back at once: another replica
// delivers them without waiting for the lease to lapse.
func TestShutdownHandsRunsBack(t *testing.T) {
	started := make(chan struct{}, 1)
	sc := &script{steps: []func(*a2a.SendMessageRequest, *frameWriter){
		func(_ *a2a.SendMessageRequest, w *frameWriter) {
			w.status(a2a.TaskStateWorking, nil)
			started <- struct{}{}
			<-w.ctx.Done()
		},
		func(_ *a2a.SendMessageRequest, w *frameWriter) { w.status(a2a.TaskStateCompleted, nil) },
	}}
	ctx := context.Background()
	st := gateway.NewMemoryStore()
	now := time.Now()
	if _, err := st.CreateInstance(ctx, gateway.Instance{ID: "i-1", TenantID: "acme", Name: "slow", Hosted: "slow"}, now); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.CreateRun(ctx, gateway.RunWrite{Now: now, Run: gateway.Run{ID: "r-1", TenantID: "acme", InstanceID: "i-1",
		Status: gateway.StatusQueued, Input: "q", IdempotencyKey: "k-1", Turn: 1}}); err != nil {
		t.Fatal(err)
	}
	// A lease far longer than the test: only the hand-back lets b in.
	opts := &execgw.Options{Lease: time.Hour, SweepEvery: 10 * time.Millisecond}
	svcA := execgw.New(st, execgw.Deps{Tokens: &fakeTokens{}, Hosted: hostedAgents{"slow": sc}}, opts)
	actx, acancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { svcA.Run(actx); close(done) }()
	<-started
	_ = svcA.Shutdown(ctx)
	acancel()
	<-done
	b := startReplica(t, st, hostedAgents{"slow": sc}, opts)
	defer b.kill()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r, _ := st.GetRun(ctx, "", "r-1")
		if r.Status == gateway.StatusCompleted {
			if r.Attempt != 1 {
				t.Fatalf("attempt %d: the hand-back counted as an attempt", r.Attempt)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %+v not handed back", r)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A run with more events than one read of the store brings streams whole
// on one connection, without waiting for a keep-alive between pages.
func TestEventsLongerThanAPage(t *testing.T) {
	const chunks = 600
	sc := &script{steps: []func(*a2a.SendMessageRequest, *frameWriter){func(_ *a2a.SendMessageRequest, w *frameWriter) {
		for i := range chunks {
			w.text("a", strconv.Itoa(i)+" ", i > 0)
		}
		w.status(a2a.TaskStateCompleted, nil)
	}}}
	e := newEnv(t, hostedAgents{"a": sc}, &execgw.Options{KeepAlive: time.Hour})
	run := e.execute(userTok, gateway.ExecuteRequest{InstanceID: e.install("a", "a", nil), Input: "q"})
	r := e.waitStatus(run, gateway.StatusCompleted)
	evs := e.events(userTok, run, "", nil)
	if int64(len(evs)) != r.LastSequence || evs[len(evs)-1].Frame.Type != gateway.EventDone {
		t.Fatalf("%d events of %d, the last %q", len(evs), r.LastSequence, evs[len(evs)-1].Frame.Type)
	}
}

// A run whose record ended without a done or error event (one written by
// hand, say) still ends the stream of a client that reads it from the
// middle, rather than holding it open.
func TestStreamOfAnEndedRunWithoutDone(t *testing.T) {
	e := newEnv(t, hostedAgents{"a": &script{}}, &execgw.Options{KeepAlive: time.Hour})
	ctx := context.Background()
	model, err := e.store.GetRun(ctx, "", e.execute(userTok, gateway.ExecuteRequest{InstanceID: e.install("a", "a", nil), Input: "q"}))
	if err != nil {
		t.Fatal(err)
	}
	run := gateway.Run{ID: "r-by-hand", TenantID: model.TenantID, InstanceID: model.InstanceID, Caller: model.Caller,
		Status: gateway.StatusCompleted, Input: "q", Turn: 1}
	ev := func(typ, payload string) gateway.Event { return gateway.Event{Type: typ, Payload: []byte(payload)} }
	if _, _, err := e.store.CreateRun(ctx, gateway.RunWrite{Run: run, Now: time.Now(), Events: []gateway.Event{
		ev(gateway.EventStatus, `{"status":"RUNNING"}`), ev(gateway.EventMessageDelta, `{"content":"hi"}`),
		ev(gateway.EventStatus, `{"status":"COMPLETED"}`)}}); err != nil {
		t.Fatal(err)
	}
	evs := e.events(userTok, run.ID, "1", nil) // returns when the server ends the stream
	if got := types(evs); len(got) != 2 || got[1] != "status:COMPLETED" {
		t.Fatalf("streamed %v", got)
	}
}
