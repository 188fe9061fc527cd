package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/tools"
)

// TestToolStore runs the tools.Store contract: the tool gateway's sessions
// and tenants' policies. newStore must return a new, empty store each time
// it is called. Every time the suite passes is its own: the stores read no
// clock of their own when given one.
func TestToolStore(t *testing.T, newStore func(t *testing.T) tools.Store) {
	t.Run("SessionCreateTouch", func(t *testing.T) { testToolSessionTouch(t, newStore(t)) })
	t.Run("SessionCreateRefused", func(t *testing.T) { testToolSessionRefused(t, newStore(t)) })
	t.Run("SessionIdle", func(t *testing.T) { testToolSessionIdle(t, newStore(t)) })
	t.Run("SessionDelete", func(t *testing.T) { testToolSessionDelete(t, newStore(t)) })
	t.Run("SessionSweep", func(t *testing.T) { testToolSessionSweep(t, newStore(t)) })
	t.Run("SessionTouchConcurrent", func(t *testing.T) {
		s := newStore(t)
		testToolSessionConcurrent(t, func(int) tools.Store { return s })
	})
	t.Run("Policy", func(t *testing.T) { testToolPolicy(t, newStore(t)) })
	t.Run("PolicyRefused", func(t *testing.T) { testToolPolicyRefused(t, newStore(t)) })
	t.Run("PolicyTenants", func(t *testing.T) { testToolPolicyTenants(t, newStore(t)) })
	t.Run("PolicyPutConcurrent", func(t *testing.T) {
		s := newStore(t)
		testToolPolicyConcurrent(t, func(int) tools.Store { return s })
	})
}

// TestToolReplicas runs the concurrent part of the tools.Store contract
// across several handles on one database, as replicas of a server have:
// newReplica returns a new handle on the same database at every call.
func TestToolReplicas(t *testing.T, newDatabase func(t *testing.T) (newReplica func() tools.Store)) {
	pick := func(t *testing.T) func(i int) tools.Store {
		newReplica := newDatabase(t)
		replicas := []tools.Store{newReplica(), newReplica(), newReplica()}
		return func(i int) tools.Store { return replicas[i%len(replicas)] }
	}
	t.Run("SessionTouchConcurrent", func(t *testing.T) { testToolSessionConcurrent(t, pick(t)) })
	t.Run("PolicyPutConcurrent", func(t *testing.T) { testToolPolicyConcurrent(t, pick(t)) })
}

// toolT0 is the suite's clock: nanoseconds the stores drop, in a zone
// other than UTC, which reads back as UTC.
var toolT0 = time.Date(2026, 7, 1, 9, 0, 0, 123456789, time.UTC).In(gateZone)

func toolAt(d time.Duration) time.Time { return toolT0.Add(d) }

// toolIdle is the idle timeout the suite's touches pass.
const toolIdle = 10 * time.Minute

func toolSession(tenant, id string, at time.Time) tools.Session {
	return tools.Session{ID: id, TenantID: tenant, Subject: "agent:" + id, ProtocolVersion: "2025-06-18", CreatedAt: at, LastSeen: at}
}

// toolStored is s as a store returns it, last seen at lastSeen.
func toolStored(s tools.Session, lastSeen time.Time) tools.Session {
	s.CreatedAt, s.LastSeen = gwStored(s.CreatedAt), gwStored(lastSeen)
	return s
}

func mustCreateSession(t *testing.T, s tools.Store, sess tools.Session) {
	t.Helper()
	if err := s.CreateSession(ctxT(t), sess); err != nil {
		t.Fatalf("CreateSession(%s): %v", sess.ID, err)
	}
}

// mustTouch touches id at now and checks the session that comes back.
func mustTouch(t *testing.T, s tools.Store, id string, now time.Time, want tools.Session) {
	t.Helper()
	got, err := s.TouchSession(ctxT(t), id, now, toolIdle)
	if err != nil {
		t.Fatalf("TouchSession(%s, %v): %v", id, now, err)
	}
	if d := gocmp.Diff(want, got); d != "" {
		t.Fatalf("TouchSession(%s, %v) (-want +got):\n%s", id, now, d)
	}
}

// wantGone checks that id names no session: a touch well within any idle
// timeout of when it was last seen finds nothing, as a delete in its
// tenant does not.
func wantGone(t *testing.T, s tools.Store, tenant, id string) {
	t.Helper()
	if got, err := s.TouchSession(ctxT(t), id, toolT0, 1000*time.Hour); !errors.Is(err, tools.ErrNotFound) {
		t.Fatalf("TouchSession(%s) = %+v, %v; want ErrNotFound", id, got, err)
	}
	if err := s.DeleteSession(ctxT(t), tenant, id); !errors.Is(err, tools.ErrNotFound) {
		t.Fatalf("DeleteSession(%s, %s) = %v; want ErrNotFound", tenant, id, err)
	}
}

func testToolSessionTouch(t *testing.T, s tools.Store) {
	ctx := ctxT(t)
	sess := toolSession("acme", "s1", toolT0)
	sess.LastSeen = toolAt(time.Second)
	mustCreateSession(t, s, sess)
	mustTouch(t, s, "s1", toolAt(time.Second), toolStored(sess, toolAt(time.Second)))
	mustTouch(t, s, "s1", toolAt(time.Minute), toolStored(sess, toolAt(time.Minute)))
	// A touch from a clock behind the last one keeps the later time.
	mustTouch(t, s, "s1", toolAt(30*time.Second), toolStored(sess, toolAt(time.Minute)))
	// The idle timeout runs from the latest touch.
	mustTouch(t, s, "s1", toolAt(time.Minute+toolIdle), toolStored(sess, toolAt(time.Minute+toolIdle)))

	// A LastSeen left zero is the creation time.
	other := toolSession("acme", "s2", toolAt(time.Hour))
	other.LastSeen = time.Time{}
	mustCreateSession(t, s, other)
	mustTouch(t, s, "s2", toolAt(time.Hour), toolStored(other, toolAt(time.Hour)))

	if got, err := s.TouchSession(ctx, "unknown", toolT0, toolIdle); !errors.Is(err, tools.ErrNotFound) {
		t.Errorf("TouchSession(unknown) = %+v, %v; want ErrNotFound", got, err)
	}
	// A timeout that is not positive is refused, and leaves the session
	// as it was.
	for _, idle := range []time.Duration{0, -time.Second} {
		if _, err := s.TouchSession(ctx, "s2", toolAt(2*time.Hour), idle); err == nil || errors.Is(err, tools.ErrNotFound) {
			t.Errorf("TouchSession with idle %v = %v; want an error other than ErrNotFound", idle, err)
		}
	}
	mustTouch(t, s, "s2", toolAt(time.Hour), toolStored(other, toolAt(time.Hour)))
}

func testToolSessionRefused(t *testing.T, s tools.Store) {
	ctx := ctxT(t)
	mustCreateSession(t, s, toolSession("acme", "s1", toolT0))
	// An id is taken in every tenant: a touch names no tenant.
	for _, tenant := range []string{"acme", "globex"} {
		if err := s.CreateSession(ctx, toolSession(tenant, "s1", toolAt(time.Minute))); !errors.Is(err, tools.ErrConflict) {
			t.Errorf("CreateSession of a taken id in %s = %v; want ErrConflict", tenant, err)
		}
	}
	mustTouch(t, s, "s1", toolT0, toolStored(toolSession("acme", "s1", toolT0), toolT0))
	for name, bad := range map[string]tools.Session{
		"no id":                {TenantID: "acme", CreatedAt: toolT0},
		"no tenant":            {ID: "s2", CreatedAt: toolT0},
		"NUL in the id":        toolSession("acme", "s\x002", toolT0),
		"invalid UTF-8 tenant": toolSession("ac\xffme", "s2", toolT0),
		"NUL in the subject":   {ID: "s2", TenantID: "acme", Subject: "a\x00b", CreatedAt: toolT0},
		"NUL in the version":   {ID: "s2", TenantID: "acme", ProtocolVersion: "\x00", CreatedAt: toolT0},
	} {
		if err := s.CreateSession(ctx, bad); err == nil {
			t.Errorf("CreateSession with %s succeeded", name)
		}
	}
	wantGone(t, s, "acme", "s2")
	wantGone(t, s, "acme", "s\x002")
	wantGone(t, s, "ac\xffme", "s2")
}

func testToolSessionIdle(t *testing.T, s tools.Store) {
	sess := toolSession("acme", "s1", toolT0)
	mustCreateSession(t, s, sess)
	// Last seen exactly the timeout before now is still live.
	mustTouch(t, s, "s1", toolT0.Add(toolIdle), toolStored(sess, toolT0.Add(toolIdle)))
	// A microsecond later it is gone, and stays gone: a later touch with
	// a clock that would have found it live does not bring it back.
	late := toolT0.Add(2*toolIdle + time.Microsecond)
	if got, err := s.TouchSession(ctxT(t), "s1", late, toolIdle); !errors.Is(err, tools.ErrNotFound) {
		t.Fatalf("TouchSession past the idle timeout = %+v, %v; want ErrNotFound", got, err)
	}
	wantGone(t, s, "acme", "s1")
}

func testToolSessionDelete(t *testing.T, s tools.Store) {
	ctx := ctxT(t)
	a, b := toolSession("acme", "s1", toolT0), toolSession("acme", "s2", toolT0)
	mustCreateSession(t, s, a)
	mustCreateSession(t, s, b)
	// Another tenant's delete finds nothing and leaves the session.
	if err := s.DeleteSession(ctx, "globex", "s1"); !errors.Is(err, tools.ErrNotFound) {
		t.Errorf("DeleteSession in another tenant = %v; want ErrNotFound", err)
	}
	mustTouch(t, s, "s1", toolT0, toolStored(a, toolT0))
	if err := s.DeleteSession(ctx, "acme", "s1"); err != nil {
		t.Fatalf("DeleteSession: %v", err)
	}
	wantGone(t, s, "acme", "s1")
	mustTouch(t, s, "s2", toolT0, toolStored(b, toolT0))
	if err := s.DeleteSession(ctx, "acme", "unknown"); !errors.Is(err, tools.ErrNotFound) {
		t.Errorf("DeleteSession(unknown) = %v; want ErrNotFound", err)
	}
}

func testToolSessionSweep(t *testing.T, s tools.Store) {
	ctx := ctxT(t)
	cutoff := toolAt(time.Hour)
	live, gone := map[string]tools.Session{}, map[string]tools.Session{}
	for i, at := range []time.Duration{-time.Hour, 0, time.Hour - time.Microsecond, time.Hour, time.Hour + time.Microsecond, 2 * time.Hour} {
		sess := toolSession([]string{"acme", "globex"}[i%2], fmt.Sprintf("s%d", i), toolAt(at))
		mustCreateSession(t, s, sess)
		if at >= time.Hour {
			live[sess.ID] = sess
		} else {
			gone[sess.ID] = sess
		}
	}
	// A session created before the cutoff and touched since is live.
	touched := toolSession("acme", "touched", toolAt(time.Hour-toolIdle/2))
	mustCreateSession(t, s, touched)
	mustTouch(t, s, "touched", toolAt(time.Hour+time.Minute), toolStored(touched, toolAt(time.Hour+time.Minute)))
	live["touched"] = touched

	if n, err := s.SweepSessions(ctx, cutoff); err != nil || n != len(gone) {
		t.Fatalf("SweepSessions = %d, %v; want %d (the sessions last seen before the cutoff)", n, err, len(gone))
	}
	for id, sess := range gone {
		wantGone(t, s, sess.TenantID, id)
	}
	for id, sess := range live {
		got, err := s.TouchSession(ctx, id, toolAt(2*time.Hour), 2*time.Hour)
		if err != nil {
			t.Fatalf("TouchSession(%s) after the sweep: %v", id, err)
		}
		if d := gocmp.Diff(toolStored(sess, toolAt(2*time.Hour)), got); d != "" {
			t.Errorf("TouchSession(%s) after the sweep (-want +got):\n%s", id, d)
		}
	}
	if n, err := s.SweepSessions(ctx, cutoff); err != nil || n != 0 {
		t.Errorf("a second SweepSessions = %d, %v; want 0", n, err)
	}
	if _, err := s.SweepSessions(ctx, time.Time{}); err == nil {
		t.Error("SweepSessions with no cutoff succeeded")
	}
}

// Touches are one step in the store: concurrent touches leave the latest
// time, whatever their order; once a session is gone, by a delete or an
// expired touch, no touch racing it brings it back.
func testToolSessionConcurrent(t *testing.T, handle func(i int) tools.Store) {
	s := handle(0)
	ctx := ctxT(t)
	const touchers = 12
	sess := toolSession("acme", "s1", toolT0)
	mustCreateSession(t, s, sess)
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make([]error, touchers)
	for i := range touchers {
		wg.Go(func() {
			<-start
			_, errs[i] = handle(i).TouchSession(ctx, "s1", toolAt(time.Duration(i)*time.Second), toolIdle)
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("toucher %d: %v", i, err)
		}
	}
	mustTouch(t, s, "s1", toolT0, toolStored(sess, toolAt((touchers-1)*time.Second)))

	// A delete among touches: it succeeds, each touch sees the session or
	// ErrNotFound, and the session stays gone.
	for round := range 4 {
		id := fmt.Sprintf("d%d", round)
		mustCreateSession(t, s, toolSession("acme", id, toolT0))
		start := make(chan struct{})
		var delErr error
		for i := range touchers {
			wg.Go(func() {
				<-start
				_, errs[i] = handle(i).TouchSession(ctx, id, toolAt(time.Duration(i)*time.Second), toolIdle)
			})
		}
		wg.Go(func() {
			<-start
			delErr = handle(touchers).DeleteSession(ctx, "acme", id)
		})
		close(start)
		wg.Wait()
		if delErr != nil {
			t.Fatalf("round %d: DeleteSession: %v", round, delErr)
		}
		for i, err := range errs {
			if err != nil && !errors.Is(err, tools.ErrNotFound) {
				t.Fatalf("round %d toucher %d: %v; want success or ErrNotFound", round, i, err)
			}
		}
		wantGone(t, s, "acme", id)
	}

	// Touches of an expired session all find it gone, and it stays gone.
	expired := toolSession("acme", "x1", toolT0)
	mustCreateSession(t, s, expired)
	start = make(chan struct{})
	for i := range touchers {
		wg.Go(func() {
			<-start
			_, errs[i] = handle(i).TouchSession(ctx, "x1", toolAt(toolIdle+time.Duration(i+1)*time.Second), toolIdle)
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if !errors.Is(err, tools.ErrNotFound) {
			t.Fatalf("toucher %d of an expired session: %v; want ErrNotFound", i, err)
		}
	}
	wantGone(t, s, "acme", "x1")
}

func testToolPolicy(t *testing.T, s tools.Store) {
	ctx := ctxT(t)
	if got, err := s.GetPolicy(ctx, "acme"); !errors.Is(err, tools.ErrNotFound) {
		t.Fatalf("GetPolicy with none = %+v, %v; want ErrNotFound", got, err)
	}
	// A policy put over a version before any is stored conflicts.
	p := tools.Policy{TenantID: "acme", Expr: `tool.name.startsWith("novaos.memory.")`, Version: 99, UpdatedAt: toolT0, UpdatedBy: "admin:alice"}
	if _, err := s.PutPolicy(ctx, p, 1); !errors.Is(err, tools.ErrConflict) {
		t.Fatalf("PutPolicy over version 1 with none stored = %v; want ErrConflict", err)
	}
	want := p
	want.Version, want.UpdatedAt = 1, gwStored(toolT0)
	mustPutPolicy(t, s, p, 0, want)

	for _, stale := range []int64{0, 2, 7} {
		q := p
		q.Expr = "false"
		if _, err := s.PutPolicy(ctx, q, stale); !errors.Is(err, tools.ErrConflict) {
			t.Errorf("PutPolicy over version %d with 1 stored = %v; want ErrConflict", stale, err)
		}
	}
	wantPolicy(t, s, want)

	next := tools.Policy{TenantID: "acme", Expr: "true", UpdatedAt: toolAt(time.Minute), UpdatedBy: "admin:bob"}
	want = next
	want.Version, want.UpdatedAt = 2, gwStored(toolAt(time.Minute))
	mustPutPolicy(t, s, next, 1, want)
	if _, err := s.PutPolicy(ctx, p, 1); !errors.Is(err, tools.ErrConflict) {
		t.Errorf("PutPolicy over the stale version 1 = %v; want ErrConflict", err)
	}
	wantPolicy(t, s, want)

	// A policy with no update time is stamped by the store.
	unstamped := tools.Policy{TenantID: "acme", Expr: "true"}
	got, err := s.PutPolicy(ctx, unstamped, 2)
	if err != nil || got.Version != 3 || got.UpdatedAt.IsZero() || got.UpdatedAt.Location() != time.UTC {
		t.Fatalf("PutPolicy without UpdatedAt = %+v, %v; want version 3 stamped in UTC", got, err)
	}
	wantPolicy(t, s, got)

	if err := s.DeletePolicy(ctx, "acme"); err != nil {
		t.Fatalf("DeletePolicy: %v", err)
	}
	if got, err := s.GetPolicy(ctx, "acme"); !errors.Is(err, tools.ErrNotFound) {
		t.Fatalf("GetPolicy after DeletePolicy = %+v, %v; want ErrNotFound", got, err)
	}
	if err := s.DeletePolicy(ctx, "acme"); !errors.Is(err, tools.ErrNotFound) {
		t.Errorf("a second DeletePolicy = %v; want ErrNotFound", err)
	}
	// Deleted, the tenant starts again from version 0.
	if _, err := s.PutPolicy(ctx, p, 3); !errors.Is(err, tools.ErrConflict) {
		t.Errorf("PutPolicy over the deleted version 3 = %v; want ErrConflict", err)
	}
	want = p
	want.Version, want.UpdatedAt = 1, gwStored(toolT0)
	mustPutPolicy(t, s, p, 0, want)
}

func mustPutPolicy(t *testing.T, s tools.Store, p tools.Policy, expect int64, want tools.Policy) {
	t.Helper()
	got, err := s.PutPolicy(ctxT(t), p, expect)
	if err != nil {
		t.Fatalf("PutPolicy(%s) over version %d: %v", p.TenantID, expect, err)
	}
	if d := gocmp.Diff(want, got); d != "" {
		t.Fatalf("PutPolicy(%s) over version %d (-want +got):\n%s", p.TenantID, expect, d)
	}
	wantPolicy(t, s, want)
}

func wantPolicy(t *testing.T, s tools.Store, want tools.Policy) {
	t.Helper()
	got, err := s.GetPolicy(ctxT(t), want.TenantID)
	if err != nil {
		t.Fatalf("GetPolicy(%s): %v", want.TenantID, err)
	}
	if d := gocmp.Diff(want, got); d != "" {
		t.Fatalf("GetPolicy(%s) (-want +got):\n%s", want.TenantID, d)
	}
}

func testToolPolicyRefused(t *testing.T, s tools.Store) {
	ctx := ctxT(t)
	good := tools.Policy{TenantID: "acme", Expr: "true", UpdatedAt: toolT0}
	for _, c := range []struct {
		name   string
		p      tools.Policy
		expect int64
	}{
		{"no tenant", tools.Policy{Expr: "true", UpdatedAt: toolT0}, 0},
		{"no expression", tools.Policy{TenantID: "acme", UpdatedAt: toolT0}, 0},
		{"a negative version", good, -1},
		{"NUL in the expression", tools.Policy{TenantID: "acme", Expr: "a\x00b", UpdatedAt: toolT0}, 0},
		{"invalid UTF-8 in the tenant", tools.Policy{TenantID: "ac\xffme", Expr: "true", UpdatedAt: toolT0}, 0},
		{"NUL in the author", tools.Policy{TenantID: "acme", Expr: "true", UpdatedAt: toolT0, UpdatedBy: "\x00"}, 0},
	} {
		if got, err := s.PutPolicy(ctx, c.p, c.expect); err == nil || errors.Is(err, tools.ErrConflict) {
			t.Errorf("PutPolicy with %s = %+v, %v; want an error other than ErrConflict", c.name, got, err)
		}
	}
	for _, tenant := range []string{"acme", "ac\xffme", "a\x00"} {
		if got, err := s.GetPolicy(ctx, tenant); !errors.Is(err, tools.ErrNotFound) {
			t.Errorf("GetPolicy(%q) after refused puts = %+v, %v; want ErrNotFound", tenant, got, err)
		}
		if err := s.DeletePolicy(ctx, tenant); !errors.Is(err, tools.ErrNotFound) {
			t.Errorf("DeletePolicy(%q) = %v; want ErrNotFound", tenant, err)
		}
	}
}

func testToolPolicyTenants(t *testing.T, s tools.Store) {
	ctx := ctxT(t)
	acme := tools.Policy{TenantID: "acme", Expr: "true", UpdatedAt: toolT0, UpdatedBy: "a"}
	globex := tools.Policy{TenantID: "globex", Expr: "false", UpdatedAt: toolAt(time.Second), UpdatedBy: "g"}
	wantAcme, wantGlobex := acme, globex
	wantAcme.Version, wantAcme.UpdatedAt = 1, gwStored(acme.UpdatedAt)
	wantGlobex.Version, wantGlobex.UpdatedAt = 1, gwStored(globex.UpdatedAt)
	mustPutPolicy(t, s, acme, 0, wantAcme)
	mustPutPolicy(t, s, globex, 0, wantGlobex)
	// Versions count per tenant.
	wantGlobex.Version = 2
	mustPutPolicy(t, s, globex, 1, wantGlobex)
	wantPolicy(t, s, wantAcme)
	if err := s.DeletePolicy(ctx, "globex"); err != nil {
		t.Fatalf("DeletePolicy(globex): %v", err)
	}
	wantPolicy(t, s, wantAcme)
	if got, err := s.GetPolicy(ctx, "initech"); !errors.Is(err, tools.ErrNotFound) {
		t.Errorf("GetPolicy of a tenant with none = %+v, %v; want ErrNotFound", got, err)
	}
}

// Of concurrent puts over one version, exactly one wins, the first put of
// a tenant's policy included, and what is stored is the winner's.
func testToolPolicyConcurrent(t *testing.T, handle func(i int) tools.Store) {
	s := handle(0)
	ctx := ctxT(t)
	const rounds, writers = 6, 12
	var cur int64
	for round := range rounds {
		start := make(chan struct{})
		results := make([]tools.Policy, writers)
		errs := make([]error, writers)
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				p := tools.Policy{TenantID: "acme", Expr: fmt.Sprintf("writer == %d", w), UpdatedAt: toolAt(time.Duration(round) * time.Second),
					UpdatedBy: fmt.Sprintf("writer-%d", w)}
				<-start
				results[w], errs[w] = handle(w).PutPolicy(ctx, p, cur)
			})
		}
		// Another tenant's put at the same time neither blocks nor is
		// blocked.
		var otherErr error
		wg.Go(func() {
			<-start
			_, otherErr = handle(writers).PutPolicy(ctx, tools.Policy{TenantID: "globex", Expr: "true", UpdatedAt: toolT0}, int64(round))
		})
		close(start)
		wg.Wait()
		if otherErr != nil {
			t.Fatalf("round %d: the other tenant's put: %v", round, otherErr)
		}
		var won []tools.Policy
		for w, err := range errs {
			switch {
			case err == nil:
				won = append(won, results[w])
			case !errors.Is(err, tools.ErrConflict):
				t.Fatalf("round %d writer %d: %v; want success or ErrConflict", round, w, err)
			}
		}
		if len(won) != 1 {
			t.Fatalf("round %d: %d puts won, want exactly 1", round, len(won))
		}
		if won[0].Version != cur+1 {
			t.Fatalf("round %d: the winner at version %d, want %d", round, won[0].Version, cur+1)
		}
		wantPolicy(t, s, won[0])
		cur = won[0].Version
	}
}

// TestToolReopen checks durability across restarts: a session and a
// policy written through one handle read back unchanged through a new
// handle on the same database. open must return a fresh handle on the
// same database at every call, and the function that closes it.
func TestToolReopen(t *testing.T, open func(t *testing.T) (tools.Store, func())) {
	ctx := ctxT(t)
	s, closeDB := open(t)
	sess := toolSession("acme", "s1", toolT0)
	mustCreateSession(t, s, sess)
	mustTouch(t, s, "s1", toolAt(time.Minute), toolStored(sess, toolAt(time.Minute)))
	p, err := s.PutPolicy(ctx, tools.Policy{TenantID: "acme", Expr: "true", UpdatedAt: toolT0, UpdatedBy: "admin"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	closeDB()

	s, closeDB = open(t)
	defer closeDB()
	mustTouch(t, s, "s1", toolAt(time.Minute), toolStored(sess, toolAt(time.Minute)))
	wantPolicy(t, s, p)
}
