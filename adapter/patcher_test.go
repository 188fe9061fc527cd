package adapter

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"novaos.dev/novaos/delivery"
)

// patchServer applies patches as the platform does: on the version they
// name, all or nothing.
type patchServer struct {
	mu       sync.Mutex
	version  int64
	progress delivery.Progress
	patches  []delivery.RunPatch
	ended    bool
	// before runs ahead of each patch (a concurrent writer).
	before func(s *patchServer)
}

type patchConflict struct{ run delivery.Run }

func (e *patchConflict) Error() string                    { return "base_version_conflict" }
func (e *patchConflict) Is(target error) bool             { return target == ErrBaseVersionConflict }
func (e *patchConflict) CurrentRun() (delivery.Run, bool) { return e.run, true }

type patchEnded struct{}

func (patchEnded) Error() string        { return "run_not_active" }
func (patchEnded) Is(target error) bool { return target == ErrRunNotActive }

func (s *patchServer) PatchRun(_ context.Context, runID string, p delivery.RunPatch) (delivery.RunPatchResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.before != nil {
		s.before(s)
	}
	s.patches = append(s.patches, p)
	if s.ended {
		return delivery.RunPatchResult{}, patchEnded{}
	}
	if p.BaseVersion != s.version {
		return delivery.RunPatchResult{}, &patchConflict{delivery.Run{ID: runID, Version: s.version, Progress: s.progress}}
	}
	if errs := delivery.ApplyPatch(&s.progress, p.Ops); errs != nil {
		return delivery.RunPatchResult{}, errors.New(errs[0].Code)
	}
	s.version++
	return delivery.RunPatchResult{Version: s.version}, nil
}

func (s *patchServer) sent() []delivery.RunPatch {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]delivery.RunPatch(nil), s.patches...)
}

// manualClock moves only when told; Sleep waits for it.
type manualClock struct {
	mu      sync.Mutex
	now     time.Time
	waiters []chan struct{}
	until   []time.Time
	asleep  chan struct{}
}

func newManualClock() *manualClock {
	return &manualClock{now: time.Unix(1_800_000_000, 0), asleep: make(chan struct{}, 64)}
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *manualClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	ch := make(chan struct{})
	c.waiters = append(c.waiters, ch)
	c.until = append(c.until, c.now.Add(d))
	c.mu.Unlock()
	c.asleep <- struct{}{}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *manualClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	for i := 0; i < len(c.waiters); {
		if !c.until[i].After(c.now) {
			close(c.waiters[i])
			c.waiters = append(c.waiters[:i], c.waiters[i+1:]...)
			c.until = append(c.until[:i], c.until[i+1:]...)
			continue
		}
		i++
	}
}

func testPatcher(srv *patchServer, clock Clock) *Patcher {
	set := DefaultSettings()
	set.RetryMaxAttempts = 3
	return newPatcher(context.Background(), "run-1", srv.version, srv, clock, set, slog.New(slog.NewTextHandler(io.Discard, nil)))
}

func TestPatcherCoalescesAPath(t *testing.T) {
	srv := &patchServer{version: 4}
	p := testPatcher(srv, newManualClock())
	for _, s := range []string{"reading", "thinking", "writing"} {
		if err := p.SetStatusLine(s); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.SetMetric("tokens", 10); err != nil {
		t.Fatal(err)
	}
	if err := p.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	sent := srv.sent()
	if len(sent) != 1 || len(sent[0].Ops) != 2 || sent[0].Ops[0].Value != "writing" || sent[0].BaseVersion != 4 {
		t.Fatalf("sent %+v", sent)
	}
	if p.Version() != 5 || srv.progress.StatusLine != "writing" || srv.progress.Metrics["tokens"] != 10 {
		t.Fatalf("version %d, progress %+v", p.Version(), srv.progress)
	}
	if err := p.Flush(context.Background()); err != nil || len(srv.sent()) != 1 {
		t.Fatalf("an empty flush sent something: %v", err)
	}
}

func TestPatcherStepAddAndUpdateGoAsOneAdd(t *testing.T) {
	srv := &patchServer{}
	p := testPatcher(srv, newManualClock())
	id, err := p.AddStep(delivery.Step{Kind: "tool", Name: "search"})
	if err != nil {
		t.Fatal(err)
	}
	done := time.Unix(1_800_000_100, 0).UTC()
	if err := p.UpdateStep(id, StepUpdate{Status: delivery.StepSucceeded, FinishedAt: done}); err != nil {
		t.Fatal(err)
	}
	if err := p.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	sent := srv.sent()
	if len(sent) != 1 || len(sent[0].Ops) != 1 || sent[0].Ops[0].Op != "add" {
		t.Fatalf("sent %+v", sent)
	}
	if got := srv.progress.Steps; len(got) != 1 || got[0].ID != id || got[0].Status != delivery.StepSucceeded || !got[0].FinishedAt.Equal(done) || got[0].Ordinal != 1 {
		t.Fatalf("steps %+v", got)
	}
	// Once sent, an update is its own operation.
	if err := p.UpdateStep(id, StepUpdate{Detail: "3 results"}); err != nil {
		t.Fatal(err)
	}
	if err := p.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if last := srv.sent()[1]; len(last.Ops) != 1 || last.Ops[0].Path != "/steps/"+id+"/detail" || srv.progress.Steps[0].Detail != "3 results" {
		t.Fatalf("update sent %+v", last)
	}
}

func TestPatcherRebasesOnAConcurrentChange(t *testing.T) {
	srv := &patchServer{version: 2}
	p := testPatcher(srv, newManualClock())
	srv.before = func(s *patchServer) {
		// Another writer moves the run first, once.
		s.before = nil
		_ = delivery.ApplyPatch(&s.progress, []delivery.PatchOp{{Op: "replace", Path: "/model", Value: "m-2"}})
		s.version++
	}
	if err := p.SetStatusLine("mine"); err != nil {
		t.Fatal(err)
	}
	if err := p.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	sent := srv.sent()
	if len(sent) != 2 || sent[0].BaseVersion != 2 || sent[1].BaseVersion != 3 {
		t.Fatalf("sent %+v", sent)
	}
	if srv.progress.Model != "m-2" || srv.progress.StatusLine != "mine" || p.Version() != 4 {
		t.Fatalf("both changes must stand: %+v, version %d", srv.progress, p.Version())
	}
}

func TestPatcherGivesUpAfterRoundsAndKeepsWhatIsPending(t *testing.T) {
	srv := &patchServer{}
	srv.before = func(s *patchServer) { s.version++ } // always moved on
	p := testPatcher(srv, newManualClock())
	_ = p.SetStatusLine("old")
	err := p.Flush(context.Background())
	if !errors.Is(err, ErrBaseVersionConflict) || len(srv.sent()) != 3 {
		t.Fatalf("err %v after %d sends", err, len(srv.sent()))
	}
	_ = p.SetModel("m-1") // set while failing: kept beside the restored op
	_ = p.SetStatusLine("new")
	srv.before = nil
	srv.version = p.Version()
	if err := p.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	last := srv.sent()[len(srv.sent())-1]
	if len(last.Ops) != 2 || srv.progress.StatusLine != "new" || srv.progress.Model != "m-1" {
		t.Fatalf("last %+v progress %+v", last, srv.progress)
	}
}

func TestPatcherStopsWhenTheRunEnds(t *testing.T) {
	srv := &patchServer{ended: true}
	p := testPatcher(srv, newManualClock())
	_ = p.SetStatusLine("x")
	if err := p.Flush(context.Background()); !errors.Is(err, ErrPatcherStopped) {
		t.Fatalf("flush: %v", err)
	}
	if err := p.SetStatusLine("y"); !errors.Is(err, ErrPatcherStopped) {
		t.Fatalf("set after end: %v", err)
	}
	if _, err := p.AddStep(delivery.Step{Kind: "tool"}); !errors.Is(err, ErrPatcherStopped) {
		t.Fatalf("step after end: %v", err)
	}
}

func TestPatcherRefusesBeforeSending(t *testing.T) {
	srv := &patchServer{}
	p := testPatcher(srv, newManualClock())
	var refused *PatchRefusedError
	err := p.SendOps(context.Background(), []delivery.PatchOp{{Op: "replace", Path: "/state", Value: "completed"}})
	if !errors.As(err, &refused) || refused.Errors[0].Code != delivery.CodePatchPathForbidden || refused.Errors[0].Pointer != "/ops/0" {
		t.Fatalf("send /state: %v", err)
	}
	for _, bad := range []func() error{
		func() error { return p.SetStatusLine(strings.Repeat("x", delivery.MaxStatusLineChars+1)) },
		func() error { return p.SetMetric("Bad Name", 1) },
		func() error { return p.SetCost(-1, "EUR") },
		func() error { return p.SetCost(1, "euro") },
		func() error { return p.UpdateStep("no such/step", StepUpdate{Status: "done"}) },
		func() error { return p.UpdateStep("s1", StepUpdate{Status: "done"}) },
	} {
		if err := bad(); !errors.As(err, &refused) {
			t.Fatalf("a bad value was taken: %v", err)
		}
	}
	if len(srv.sent()) != 0 {
		t.Fatalf("refused patches reached the platform: %+v", srv.sent())
	}
}

func TestPatcherFollowupsMoveForwardOnly(t *testing.T) {
	srv := &patchServer{}
	p := testPatcher(srv, newManualClock())
	_ = p.FollowupAbsorbed("m1")
	_ = p.FollowupDelivered("m1")
	if err := p.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if srv.progress.Followups["m1"] != delivery.FollowupAbsorbed {
		t.Fatalf("followups %+v", srv.progress.Followups)
	}
}

func TestPatcherThrottles(t *testing.T) {
	srv := &patchServer{}
	clock := newManualClock()
	p := testPatcher(srv, clock)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { p.loop(ctx); close(done) }()

	_ = p.SetStatusLine("one")
	waitSends(t, srv, 1) // the first goes at once: nothing was sent before
	_ = p.SetStatusLine("two")
	_ = p.SetStatusLine("three")
	<-clock.asleep // the loop waits out the interval
	if n := len(srv.sent()); n != 1 {
		t.Fatalf("sent %d patches within one interval", n)
	}
	clock.Advance(p.set.RunUpdateMinInterval)
	waitSends(t, srv, 2)
	if got := srv.sent()[1]; len(got.Ops) != 1 || got.Ops[0].Value != "three" {
		t.Fatalf("second patch %+v", got)
	}
	cancel()
	<-done
}

func waitSends(t *testing.T, srv *patchServer, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for len(srv.sent()) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d patches sent, want %d", len(srv.sent()), n)
		}
		time.Sleep(time.Millisecond)
	}
}
