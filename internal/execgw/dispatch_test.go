package execgw_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/internal/execgw"
)

// claimStore records the limit of every claim.
type claimStore struct {
	gateway.Store
	mu     sync.Mutex
	limits []int
}

func (c *claimStore) ClaimRuns(ctx context.Context, owner string, now, until time.Time, limit int) ([]gateway.Run, error) {
	c.mu.Lock()
	c.limits = append(c.limits, limit)
	c.mu.Unlock()
	return c.Store.ClaimRuns(ctx, owner, now, until, limit)
}

func (c *claimStore) claims() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]int(nil), c.limits...)
}

// A dispatcher claims no more runs than it has free delivery slots, asks
// again only when a claim came back full, and when its slots were all
// taken, claims the runs left waiting as soon as a delivery ends: no
// sweep is needed (its interval here is an hour).
func TestClaimsFitTheSlots(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 8)
	hold := func(_ *a2a.SendMessageRequest, w *frameWriter) {
		started <- struct{}{}
		select {
		case <-release:
		case <-w.ctx.Done():
			return
		}
		w.status(a2a.TaskStateCompleted, a2a.NewMessage(a2a.RoleAgent, a2a.TextPart("done")))
	}
	sc := &script{steps: []func(*a2a.SendMessageRequest, *frameWriter){hold, hold, hold, hold}}
	st := &claimStore{Store: gateway.NewMemoryStore()}
	e := newEnvOn(t, st, hostedAgents{"a": sc}, &execgw.Options{MaxConcurrentRuns: 2, SweepEvery: time.Hour})
	inst := e.install("a", "a", nil)
	run := func() string { return e.execute(userTok, gateway.ExecuteRequest{InstanceID: inst, Input: "q"}) }

	a := run()
	<-started
	b := run()
	<-started
	// Both slots are taken: these wait, unclaimed.
	c, d := run(), run()
	close(release)
	for _, id := range []string{a, b, c, d} {
		e.waitStatus(id, gateway.StatusCompleted)
	}
	limits := st.claims()
	sawOne := false
	for _, l := range limits {
		if l < 1 || l > 2 {
			t.Errorf("a claim of %d runs with 2 slots: %v", l, limits)
		}
		sawOne = sawOne || l == 1
	}
	if !sawOne {
		t.Errorf("no claim for the one slot left while a run was delivered: %v", limits)
	}
	// One claim at the start and one per run queued or slot freed, give
	// or take the claims that found nothing: never a claim in a loop.
	if len(limits) > 10 {
		t.Errorf("%d claims for four runs: %v", len(limits), limits)
	}
}
