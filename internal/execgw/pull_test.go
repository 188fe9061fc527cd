package execgw_test

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"novaos.dev/novaos/delivery"
	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/internal/execgw"
)

// fakePuller records what the gateway hands it; failures fail that many
// offers first.
type fakePuller struct {
	mu        sync.Mutex
	failures  int
	offers    chan gateway.Run
	cancelled chan gateway.Run
	// offered, when set, runs in each offer after it is stored: an
	// agent quick to take the run up.
	offered func(run gateway.Run) error
}

func newFakePuller(failures int) *fakePuller {
	return &fakePuller{failures: failures, offers: make(chan gateway.Run, 16), cancelled: make(chan gateway.Run, 16)}
}

func (f *fakePuller) Offer(_ context.Context, run gateway.Run, inst gateway.Instance) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !inst.Pulls() {
		return errors.New("offered a push instance's run")
	}
	if f.failures > 0 {
		f.failures--
		return errors.New("store unavailable")
	}
	if f.offered != nil {
		if err := f.offered(run); err != nil {
			return err
		}
	}
	f.offers <- run
	return nil
}

func (f *fakePuller) Cancelled(_ context.Context, run gateway.Run) error {
	f.cancelled <- run
	return nil
}

func (f *fakePuller) StaleAfter() time.Duration { return 2 * time.Minute }

func pullEnv(t *testing.T, p execgw.Puller) *env {
	return newEnvWith(t, gateway.NewMemoryStore(), hostedAgents{"echo": &script{}}, nil,
		func(d *execgw.Deps) { d.Pull = p }, nil)
}

func TestInstallPull(t *testing.T) {
	e := pullEnv(t, newFakePuller(0))
	tests := []struct {
		name string
		body map[string]any
		want int
	}{
		{"pull", map[string]any{"name": "laptop", "delivery": "pull"}, http.StatusCreated},
		{"pull with grants", map[string]any{"name": "laptop2", "delivery": "pull", "billing_mode": "agent", "tool_class": "host"}, http.StatusCreated},
		{"pull with a url", map[string]any{"name": "laptop3", "delivery": "pull", "url": "https://agent.example.com"}, http.StatusBadRequest},
		{"pull with hosted", map[string]any{"name": "laptop4", "delivery": "pull", "hosted": "echo"}, http.StatusBadRequest},
		{"unknown delivery", map[string]any{"name": "laptop5", "delivery": "carrier-pigeon"}, http.StatusBadRequest},
		{"unknown billing", map[string]any{"name": "laptop6", "delivery": "pull", "billing_mode": "unknown"}, http.StatusBadRequest},
		{"unknown tool class", map[string]any{"name": "laptop7", "delivery": "pull", "tool_class": "root"}, http.StatusBadRequest},
		{"push needs a target", map[string]any{"name": "laptop8", "delivery": "push"}, http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var inst gateway.Instance
			st := e.do("POST", gateway.InstancesPath, userTok, tt.body, &inst)
			if st != tt.want {
				t.Fatalf("install: %d, want %d", st, tt.want)
			}
			if st == http.StatusCreated && (!inst.Pulls() || inst.URL != "" || inst.Hosted != "") {
				t.Fatalf("installed %+v", inst)
			}
		})
	}
	// A pull instance turned push needs a target; given one, it pushes.
	id := e.install("hosted-then", "echo", nil)
	if st := e.do("PATCH", gateway.InstancesPath+"/"+id, userTok, map[string]any{"delivery": "pull"}, nil); st != http.StatusOK {
		t.Fatalf("push to pull: %d", st)
	}
	var inst gateway.Instance
	if st := e.do("PATCH", gateway.InstancesPath+"/"+id, userTok, map[string]any{"delivery": "push", "hosted": "echo"}, &inst); st != http.StatusOK || inst.Pulls() || inst.Hosted != "echo" {
		t.Fatalf("pull to push: %d %+v", st, inst)
	}
}

func TestPullRunIsOfferedParkedAndOfferedAgain(t *testing.T) {
	p := newFakePuller(2) // two failed offers are retried
	e := pullEnv(t, p)
	var inst gateway.Instance
	if st := e.do("POST", gateway.InstancesPath, userTok, map[string]any{"name": "laptop", "delivery": "pull"}, &inst); st != http.StatusCreated {
		t.Fatal(st)
	}
	id := e.execute(userTok, gateway.ExecuteRequest{InstanceID: inst.ID, Input: "hello"})
	offered := <-p.offers
	if offered.ID != id || offered.Turn != 1 || offered.ThreadID != id || offered.Pull == nil {
		t.Fatalf("offered %+v", offered)
	}
	run := e.waitParked(id, 1)
	if run.Status != gateway.StatusQueued {
		t.Fatalf("a parked run is %s", run.Status)
	}

	// The agent asks for input; a person answers: the next turn is offered.
	if _, _, err := e.store.WriteRun(context.Background(), gateway.RunWrite{Run: func() gateway.Run {
		r := run
		r.Status, r.Reason = gateway.StatusWaitingUser, "asked"
		r.Pause = []byte(`{"type":"hitl"}`)
		return r
	}(), ExpectVersion: run.Version, Now: run.UpdatedAt}); err != nil {
		t.Fatal(err)
	}
	if st := e.do("POST", gateway.RunsPath+"/"+id+"/reply", userTok, map[string]any{"input": "more"}, nil); st != http.StatusAccepted {
		t.Fatalf("reply: %d", st)
	}
	if again := <-p.offers; again.Turn != 2 || len(again.PendingInput) == 0 {
		t.Fatalf("second offer %+v", again)
	}
	e.waitParked(id, 2)

	if st := e.do("POST", gateway.RunsPath+"/"+id+"/cancel", userTok, nil, nil); st != http.StatusOK {
		t.Fatalf("cancel: %d", st)
	}
	if c := <-p.cancelled; c.ID != id || c.Status != gateway.StatusCancelled {
		t.Fatalf("cancelled %+v", c)
	}
}

func TestPullRunWithoutPullerFails(t *testing.T) {
	e := pullEnv(t, nil)
	var inst gateway.Instance
	if st := e.do("POST", gateway.InstancesPath, userTok, map[string]any{"name": "laptop", "delivery": "pull"}, &inst); st != http.StatusCreated {
		t.Fatal(st)
	}
	id := e.execute(userTok, gateway.ExecuteRequest{InstanceID: inst.ID, Input: "hello"})
	if r := e.waitStatus(id, gateway.StatusFailed); r.Reason != "this server delivers no pull runs" {
		t.Fatalf("reason %q", r.Reason)
	}
}

// waitParked waits until run id's turn is offered and the run parked.
func (e *env) waitParked(id string, turn int) gateway.Run {
	e.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r, err := e.store.GetRun(context.Background(), "", id)
		if err != nil {
			e.t.Fatal(err)
		}
		if r.Pull != nil && r.Pull.OfferedTurn == turn && r.LeaseOwner == "pull" {
			return r
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("run %s not parked at turn %d: %+v", id, turn, r)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A claimed pull run whose lease lapsed is ended stale when its agent
// had started it for its turn, and offered (again) otherwise; a run
// whose lease its agent holds, or that waits for a person, is left as
// it is.
func TestPullRunLeaseLapsed(t *testing.T) {
	p := newFakePuller(0)
	e := pullEnv(t, p)
	var inst gateway.Instance
	if st := e.do("POST", gateway.InstancesPath, userTok, map[string]any{"name": "laptop", "delivery": "pull"}, &inst); st != http.StatusCreated {
		t.Fatal(st)
	}
	now := time.Now()
	// The lapsed runs come last: once they ended, a claim passed over
	// the others too.
	tests := []struct {
		name   string
		status gateway.Status
		turn   int
		until  time.Time // the lease, gateway.PullLeaseOwner's when set
		want   gateway.Status
		reason string
		// offered: the run's turn is offered to its agent.
		offered bool
	}{
		{name: "started, leased", status: gateway.StatusRunning, turn: 1, until: now.Add(time.Hour), want: gateway.StatusRunning},
		{name: "waiting, lapsed", status: gateway.StatusWaitingUser, turn: 1, until: now.Add(-time.Second), want: gateway.StatusWaitingUser},
		{name: "answered, not taken up yet", status: gateway.StatusQueued, turn: 2, want: gateway.StatusQueued, offered: true},
		{name: "started, lapsed", status: gateway.StatusRunning, turn: 1, until: now.Add(-time.Second),
			want: gateway.StatusFailed, reason: delivery.ReasonStale},
		{name: "resumed, lapsed", status: gateway.StatusRunning, turn: 2, until: now.Add(-time.Second),
			want: gateway.StatusFailed, reason: delivery.ReasonStale},
	}
	for i, tt := range tests {
		owner := ""
		if !tt.until.IsZero() {
			owner = gateway.PullLeaseOwner
		}
		if _, _, err := e.store.CreateRun(context.Background(), gateway.RunWrite{Run: gateway.Run{ID: "run-" + strconv.Itoa(i), TenantID: inst.TenantID,
			InstanceID: inst.ID, Status: tt.status, Reason: "set up", Input: "hello", Turn: tt.turn, LeaseOwner: owner, LeaseUntil: tt.until,
			Pull: &gateway.PullState{OfferedTurn: 1, Starts: 1}}, Now: now}); err != nil {
			t.Fatal(err)
		}
	}
	told := map[string]gateway.Run{}
	for range 2 {
		c := <-p.cancelled
		told[c.ID] = c
	}
	offered := <-p.offers
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := "run-" + strconv.Itoa(i)
			r := e.waitStatus(id, tt.want)
			if r.Reason != cmp.Or(tt.reason, r.Reason) {
				t.Errorf("reason %q, want %q", r.Reason, tt.reason)
			}
			if tt.offered != (offered.ID == id) {
				t.Errorf("offered %s; want offered %v", offered.ID, tt.offered)
			}
			c, ok := told[id]
			if ok != (tt.want == gateway.StatusFailed) || ok && (c.Status != gateway.StatusFailed || c.Reason != delivery.ReasonStale) {
				t.Errorf("the agent was told %v of %+v; want it told of a stale run only", ok, c)
			}
			if tt.want != gateway.StatusFailed {
				return
			}
			events, err := e.store.Events(context.Background(), id, 0, 10)
			if err != nil || len(events) != 3 || !strings.Contains(string(events[0].Payload), "stopped reporting the run") ||
				events[2].Type != gateway.EventError {
				t.Errorf("events %v (%v); want why, the ending and the error", events, err)
			}
		})
	}
	select {
	case c := <-p.cancelled:
		t.Errorf("the agent was told of run %s %s too", c.ID, c.Status)
	default:
	}
}

// An agent that takes a run up before its offer is written keeps the
// lease its start set: the offer records the turn and parks nothing.
func TestPullRunStartedBeforeItsOfferIsWritten(t *testing.T) {
	p := newFakePuller(0)
	e := pullEnv(t, p)
	until := time.Now().Add(time.Hour).Truncate(time.Microsecond)
	p.offered = func(run gateway.Run) error { // the agent's start, as internal/delivery writes it
		r := run
		r.Status, r.Reason = gateway.StatusRunning, "started by its agent"
		r.Pull = &gateway.PullState{Starts: 1}
		r.LeaseOwner, r.LeaseUntil = gateway.PullLeaseOwner, until
		_, _, err := e.store.WriteRun(context.Background(), gateway.RunWrite{Run: r, ExpectVersion: run.Version, Now: time.Now()})
		return err
	}
	var inst gateway.Instance
	if st := e.do("POST", gateway.InstancesPath, userTok, map[string]any{"name": "laptop", "delivery": "pull"}, &inst); st != http.StatusCreated {
		t.Fatal(st)
	}
	id := e.execute(userTok, gateway.ExecuteRequest{InstanceID: inst.ID, Input: "hello"})
	<-p.offers
	r := e.waitParked(id, 1)
	if r.Status != gateway.StatusRunning || !r.LeaseUntil.Equal(until) {
		t.Fatalf("the run is %s, leased until %s; want running, until %s", r.Status, r.LeaseUntil, until)
	}
	events, err := e.store.Events(context.Background(), id, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range events {
		if strings.Contains(string(ev.Payload), "waiting for its agent") {
			t.Errorf("a started run was said to wait for its agent: %s", ev.Payload)
		}
	}
}
