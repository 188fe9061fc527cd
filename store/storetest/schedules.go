package storetest

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/heartbeat"
)

// TestScheduleStore runs the heartbeat.Store contract. newStore must
// return a new, empty store each time it is called.
func TestScheduleStore(t *testing.T, newStore func(t *testing.T) heartbeat.Store) {
	t.Run("CreateGet", func(t *testing.T) { testHBCreateGet(t, newStore(t)) })
	t.Run("CreateTaken", func(t *testing.T) { testHBCreateTaken(t, newStore(t)) })
	t.Run("CreateOncePerInstance", func(t *testing.T) {
		s := newStore(t)
		testHBCreateConcurrent(t, func(int) heartbeat.Store { return s })
	})
	t.Run("Invalid", func(t *testing.T) { testHBInvalid(t, newStore(t)) })
	t.Run("Tenants", func(t *testing.T) { testHBTenants(t, newStore(t)) })
	t.Run("List", func(t *testing.T) { testHBList(t, newStore(t)) })
	t.Run("SetStatus", func(t *testing.T) { testHBSetStatus(t, newStore(t)) })
	t.Run("Delete", func(t *testing.T) { testHBDelete(t, newStore(t)) })
	t.Run("DueAndNextRun", func(t *testing.T) { testHBDue(t, newStore(t)) })
	t.Run("Claim", func(t *testing.T) { testHBClaim(t, newStore(t)) })
	t.Run("ClaimRefused", func(t *testing.T) { testHBClaimRefused(t, newStore(t)) })
	t.Run("ClaimBudget", func(t *testing.T) { testHBClaimBudget(t, newStore(t)) })
	t.Run("ClaimMissed", func(t *testing.T) { testHBClaimMissed(t, newStore(t)) })
	t.Run("ClaimOnce", func(t *testing.T) {
		s := newStore(t)
		testHBClaimConcurrent(t, func(int) heartbeat.Store { return s })
	})
	t.Run("Settle", func(t *testing.T) { testHBSettle(t, newStore(t)) })
	t.Run("StaleAndReclaim", func(t *testing.T) { testHBReclaim(t, newStore(t)) })
	t.Run("ReclaimOnce", func(t *testing.T) {
		s := newStore(t)
		testHBReclaimConcurrent(t, func(int) heartbeat.Store { return s })
	})
	t.Run("Fires", func(t *testing.T) { testHBFires(t, newStore(t)) })
}

// TestScheduleReplicas runs the races of the contract across handles of
// one database: newDatabase makes a database and returns a function that
// opens another handle on it.
func TestScheduleReplicas(t *testing.T, newDatabase func(t *testing.T) (newReplica func() heartbeat.Store)) {
	pick := func(t *testing.T) func(i int) heartbeat.Store {
		newReplica := newDatabase(t)
		replicas := []heartbeat.Store{newReplica(), newReplica(), newReplica()}
		return func(i int) heartbeat.Store { return replicas[i%len(replicas)] }
	}
	t.Run("CreateOncePerInstance", func(t *testing.T) { testHBCreateConcurrent(t, pick(t)) })
	t.Run("ClaimOnce", func(t *testing.T) { testHBClaimConcurrent(t, pick(t)) })
	t.Run("ReclaimOnce", func(t *testing.T) { testHBReclaimConcurrent(t, pick(t)) })
}

// TestScheduleReopen checks durability across restarts: open must return
// a fresh handle on the same database at every call, and the function
// that closes it.
func TestScheduleReopen(t *testing.T, open func(t *testing.T) (heartbeat.Store, func())) {
	ctx := ctxT(t)
	s, closeDB := open(t)
	r := mustCreateHB(t, s, hbRecord("acme", "c1", "i1"))
	f, err := s.Claim(ctx, hbClaim(&r, hbAt(time.Hour), "owner-a"))
	if err != nil {
		t.Fatal(err)
	}
	r, err = s.Get(ctx, "acme", "c1")
	if err != nil {
		t.Fatal(err)
	}
	closeDB()
	s, closeDB = open(t)
	defer closeDB()
	got, err := s.Get(ctx, "acme", "c1")
	if err != nil {
		t.Fatalf("after reopening: Get: %v", err)
	}
	if d := gocmp.Diff(r, got); d != "" {
		t.Errorf("after reopening (-want +got):\n%s", d)
	}
	fires, err := s.Fires(ctx, "acme", "c1", heartbeat.FireFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if d := gocmp.Diff([]heartbeat.Fire{f}, fires); d != "" {
		t.Errorf("fires after reopening (-want +got):\n%s", d)
	}
}

// hbT0 is the suite's clock: nanoseconds the stores drop, in a zone other
// than UTC, which reads back as UTC.
var hbT0 = time.Date(2026, 7, 1, 9, 0, 0, 123456789, time.UTC).In(gateZone)

func hbAt(d time.Duration) time.Time { return hbT0.Add(d) }

// hbRecord is an active config with every field set, due at hbAt(1h).
func hbRecord(tenant, id, instance string) heartbeat.Record {
	return heartbeat.Record{
		ID: id, TenantID: tenant, AgentID: "agent-" + instance, InstanceID: instance, Status: heartbeat.StatusActive,
		CronExpression: "0 * * * *", Timezone: "Europe/Berlin", TaskContent: "Check in on \"pending\" tasks ✓\n\ttoday.",
		AgentImage: "registry.example.com/agents/joke", AgentImageTag: "1.1.10",
		Budget:    heartbeat.Budget{MaxDailyRuns: 24, MaxDailyTokens: 100_000, MaxDailyCostUSD: 5.25},
		Creator:   heartbeat.Creator{Subject: "alice@example.com", UserID: "alice", Service: true},
		NextRunAt: hbAt(time.Hour), LastRunAt: hbAt(-time.Hour),
		Missed:  heartbeat.Missed{Total: 3, Count: 2, From: hbAt(-3 * time.Hour), To: hbAt(-2 * time.Hour), DetectedAt: hbAt(-90 * time.Minute)},
		Version: 7, CreatedAt: hbT0, UpdatedAt: hbAt(time.Minute), // the store's to set
	}
}

// hbStored is r as a store returns it after its creation.
func hbStored(r heartbeat.Record) heartbeat.Record {
	r.NextRunAt, r.LastRunAt = gwStored(r.NextRunAt), gwStored(r.LastRunAt)
	r.Missed.From, r.Missed.To, r.Missed.DetectedAt = gwStored(r.Missed.From), gwStored(r.Missed.To), gwStored(r.Missed.DetectedAt)
	r.CreatedAt = gwStored(r.CreatedAt)
	r.UpdatedAt, r.Version = r.CreatedAt, 1
	return r
}

// hbClaim claims r's next run for owner, moving it on by an hour.
func hbClaim(r *heartbeat.Record, now time.Time, owner string) heartbeat.Claim {
	return heartbeat.Claim{TenantID: r.TenantID, ConfigID: r.ID, Expect: r.NextRunAt, Next: r.NextRunAt.Add(time.Hour),
		Tick: r.NextRunAt, Owner: owner, LeaseUntil: now.Add(time.Minute), Now: now}
}

func mustCreateHB(t *testing.T, s heartbeat.Store, r heartbeat.Record) heartbeat.Record {
	t.Helper()
	got, err := s.Create(ctxT(t), r)
	if err != nil {
		t.Fatalf("Create(%s): %v", r.ID, err)
	}
	return got
}

func testHBCreateGet(t *testing.T, s heartbeat.Store) {
	ctx := ctxT(t)
	in := hbRecord("acme", "c1", "i1")
	got := mustCreateHB(t, s, in)
	want := hbStored(in)
	if d := gocmp.Diff(want, got); d != "" {
		t.Errorf("Create returned (-want +got):\n%s", d)
	}
	if got.CreatedAt.Location() != time.UTC || got.NextRunAt.Location() != time.UTC {
		t.Errorf("times come back in %v, %v; want UTC", got.CreatedAt.Location(), got.NextRunAt.Location())
	}
	read, err := s.Get(ctx, "acme", "c1")
	if err != nil {
		t.Fatal(err)
	}
	if d := gocmp.Diff(want, read); d != "" {
		t.Errorf("Get (-want +got):\n%s", d)
	}
	// A paused config with zero times and an empty creator reads back
	// with them zero.
	p := heartbeat.Record{ID: "c2", TenantID: "acme", AgentID: "a", InstanceID: "i2", Status: heartbeat.StatusPaused,
		CronExpression: "@daily", Timezone: "UTC", TaskContent: "x", AgentImage: "img", AgentImageTag: "t",
		Budget: heartbeat.Budget{MaxDailyRuns: 1}, CreatedAt: hbT0}
	got = mustCreateHB(t, s, p)
	if d := gocmp.Diff(hbStored(p), got); d != "" {
		t.Errorf("a minimal config (-want +got):\n%s", d)
	}
}

func testHBCreateTaken(t *testing.T, s heartbeat.Store) {
	ctx := ctxT(t)
	mustCreateHB(t, s, hbRecord("acme", "c1", "i1"))
	for name, r := range map[string]heartbeat.Record{
		"the same id":                 hbRecord("acme", "c1", "i2"),
		"the same id, another tenant": hbRecord("globex", "c1", "i9"),
		"the same instance":           hbRecord("acme", "c2", "i1"),
	} {
		if _, err := s.Create(ctx, r); !errors.Is(err, heartbeat.ErrExists) {
			t.Errorf("Create with %s: %v, want ErrExists", name, err)
		}
	}
	// Another tenant's instance of the same id is another instance.
	mustCreateHB(t, s, hbRecord("globex", "c3", "i1"))
}

// Of many creators of a config for one instance, on any handle, exactly
// one wins; the rest get ErrExists.
func testHBCreateConcurrent(t *testing.T, store func(i int) heartbeat.Store) {
	ctx := ctxT(t)
	oneWins(t, "Create", 12, heartbeat.ErrExists, func(i int) error {
		_, err := store(i).Create(ctx, hbRecord("acme", fmt.Sprintf("c%d", i), "i1"))
		return err
	})
	list, err := store(0).List(ctx, "acme", "i1")
	if err != nil || len(list) != 1 {
		t.Errorf("List = %d configs, %v; want 1", len(list), err)
	}
}

func testHBInvalid(t *testing.T, s heartbeat.Store) {
	ctx := ctxT(t)
	for name, change := range map[string]func(r *heartbeat.Record){
		"no id":               func(r *heartbeat.Record) { r.ID = "" },
		"no tenant":           func(r *heartbeat.Record) { r.TenantID = "" },
		"NUL in the task":     func(r *heartbeat.Record) { r.TaskContent = "a\x00b" },
		"invalid UTF-8":       func(r *heartbeat.Record) { r.TaskContent = "a\xffb" },
		"NUL in the tenant":   func(r *heartbeat.Record) { r.TenantID = "a\x00" },
		"an unknown status":   func(r *heartbeat.Record) { r.Status = "running" },
		"active without next": func(r *heartbeat.Record) { r.NextRunAt = time.Time{} },
		"no run budget":       func(r *heartbeat.Record) { r.Budget.MaxDailyRuns = 0 },
		"a negative cost":     func(r *heartbeat.Record) { r.Budget.MaxDailyCostUSD = -1 },
		"no cron expression":  func(r *heartbeat.Record) { r.CronExpression = "" },
	} {
		r := hbRecord("acme", "c1", "i1")
		change(&r)
		if _, err := s.Create(ctx, r); !errors.Is(err, heartbeat.ErrInvalid) {
			t.Errorf("Create with %s: %v, want ErrInvalid", name, err)
		}
	}
	if list, err := s.List(ctx, "acme", ""); err != nil || len(list) != 0 {
		t.Errorf("List after refused creates = %d, %v; want none", len(list), err)
	}
}

func testHBTenants(t *testing.T, s heartbeat.Store) {
	ctx := ctxT(t)
	r := mustCreateHB(t, s, hbRecord("acme", "c1", "i1"))
	if _, err := s.Get(ctx, "globex", "c1"); !errors.Is(err, heartbeat.ErrNotFound) {
		t.Errorf("Get from another tenant: %v, want ErrNotFound", err)
	}
	if _, _, err := s.SetStatus(ctx, "globex", "c1", heartbeat.StatusPaused, time.Time{}, hbT0); !errors.Is(err, heartbeat.ErrNotFound) {
		t.Errorf("SetStatus from another tenant: %v, want ErrNotFound", err)
	}
	if err := s.Delete(ctx, "globex", "c1"); !errors.Is(err, heartbeat.ErrNotFound) {
		t.Errorf("Delete from another tenant: %v, want ErrNotFound", err)
	}
	c := hbClaim(&r, hbT0, "o")
	c.TenantID = "globex"
	if _, err := s.Claim(ctx, c); !errors.Is(err, heartbeat.ErrNotFound) {
		t.Errorf("Claim in another tenant: %v, want ErrNotFound", err)
	}
	if list, err := s.List(ctx, "globex", ""); err != nil || len(list) != 0 {
		t.Errorf("List of another tenant = %d, %v; want none", len(list), err)
	}
	if fires, err := s.Fires(ctx, "globex", "c1", heartbeat.FireFilter{}); err != nil || len(fires) != 0 {
		t.Errorf("Fires of another tenant = %d, %v; want none", len(fires), err)
	}
	if _, err := s.Get(ctx, "acme", "c1"); err != nil {
		t.Errorf("Get in its tenant: %v", err)
	}
}

func testHBList(t *testing.T, s heartbeat.Store) {
	ctx := ctxT(t)
	var want []string
	for i, inst := range []string{"i3", "i1", "i2"} {
		r := hbRecord("acme", "c"+inst, inst)
		r.CreatedAt = hbAt(time.Duration(i) * time.Minute)
		mustCreateHB(t, s, r)
		want = append(want, r.ID)
	}
	mustCreateHB(t, s, hbRecord("globex", "cx", "i1"))
	list, err := s.List(ctx, "acme", "")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range list {
		got = append(got, r.ID)
	}
	if d := gocmp.Diff(want, got); d != "" {
		t.Errorf("List order (-want +got):\n%s", d)
	}
	one, err := s.List(ctx, "acme", "i1")
	if err != nil || len(one) != 1 || one[0].ID != "ci1" {
		t.Errorf("List of instance i1 = %v, %v", one, err)
	}
	none, err := s.List(ctx, "acme", "nope")
	if err != nil || none == nil || len(none) != 0 {
		t.Errorf("List of an instance without configs = %#v, %v; want an empty list", none, err)
	}
}

func testHBSetStatus(t *testing.T, s heartbeat.Store) {
	ctx := ctxT(t)
	mustCreateHB(t, s, hbRecord("acme", "c1", "i1"))
	r, changed, err := s.SetStatus(ctx, "acme", "c1", heartbeat.StatusPaused, time.Time{}, hbAt(time.Minute))
	if err != nil || !changed {
		t.Fatalf("pause: changed %v, %v", changed, err)
	}
	if r.Status != heartbeat.StatusPaused || !r.NextRunAt.IsZero() || r.Version != 2 || !r.UpdatedAt.Equal(gwStored(hbAt(time.Minute))) {
		t.Errorf("paused: status %s, next %v, version %d, updated %v", r.Status, r.NextRunAt, r.Version, r.UpdatedAt)
	}
	again, changed, err := s.SetStatus(ctx, "acme", "c1", heartbeat.StatusPaused, time.Time{}, hbAt(2*time.Minute))
	if err != nil || changed {
		t.Fatalf("pause again: changed %v, %v", changed, err)
	}
	if d := gocmp.Diff(r, again); d != "" {
		t.Errorf("a second pause changed the config (-want +got):\n%s", d)
	}
	if _, _, err := s.SetStatus(ctx, "acme", "c1", heartbeat.StatusActive, time.Time{}, hbT0); !errors.Is(err, heartbeat.ErrInvalid) {
		t.Errorf("resume without a next run: %v, want ErrInvalid", err)
	}
	next := hbAt(5 * time.Hour)
	r, changed, err = s.SetStatus(ctx, "acme", "c1", heartbeat.StatusActive, next, hbAt(3*time.Minute))
	if err != nil || !changed || r.Status != heartbeat.StatusActive || !r.NextRunAt.Equal(gwStored(next)) || r.Version != 3 {
		t.Errorf("resume: %+v, changed %v, %v", r, changed, err)
	}
	if _, changed, _ := s.SetStatus(ctx, "acme", "c1", heartbeat.StatusActive, hbAt(9*time.Hour), hbAt(4*time.Minute)); changed {
		t.Error("resuming an active config changed it")
	}
	got, _ := s.Get(ctx, "acme", "c1")
	if !got.NextRunAt.Equal(gwStored(next)) {
		t.Errorf("next run after a second resume = %v, want %v kept", got.NextRunAt, next)
	}
	if _, _, err := s.SetStatus(ctx, "acme", "nope", heartbeat.StatusPaused, time.Time{}, hbT0); !errors.Is(err, heartbeat.ErrNotFound) {
		t.Errorf("SetStatus of an unknown config: %v, want ErrNotFound", err)
	}
	mustCreateHB(t, s, hbRecord("globex", "c2", "i1"))
	p := hbRecord("acme", "c3", "i3")
	p.Status, p.NextRunAt = heartbeat.StatusPaused, time.Time{}
	mustCreateHB(t, s, p)
	counts, err := s.Count(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := gocmp.Diff(map[heartbeat.Status]int64{heartbeat.StatusActive: 2, heartbeat.StatusPaused: 1}, counts); d != "" {
		t.Errorf("Count (-want +got):\n%s", d)
	}
}

func testHBDelete(t *testing.T, s heartbeat.Store) {
	ctx := ctxT(t)
	r := mustCreateHB(t, s, hbRecord("acme", "c1", "i1"))
	if _, err := s.Claim(ctx, hbClaim(&r, hbT0, "o")); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "acme", "c1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "acme", "c1"); !errors.Is(err, heartbeat.ErrNotFound) {
		t.Errorf("Get after Delete: %v", err)
	}
	if err := s.Delete(ctx, "acme", "c1"); !errors.Is(err, heartbeat.ErrNotFound) {
		t.Errorf("a second Delete: %v, want ErrNotFound", err)
	}
	if stale, err := s.Stale(ctx, hbAt(time.Hour), 10); err != nil || len(stale) != 0 {
		t.Errorf("Stale after Delete = %v, %v; want the fire gone", stale, err)
	}
	// The instance may have a config again.
	mustCreateHB(t, s, hbRecord("acme", "c2", "i1"))
}

func testHBDue(t *testing.T, s heartbeat.Store) {
	ctx := ctxT(t)
	if _, ok, err := s.NextRun(ctx); err != nil || ok {
		t.Errorf("NextRun of an empty store: %v, %v", ok, err)
	}
	for i, d := range []time.Duration{30 * time.Minute, 10 * time.Minute, 20 * time.Minute, 2 * time.Hour} {
		r := hbRecord("t"+fmt.Sprint(i%2), fmt.Sprintf("c%d", i), fmt.Sprintf("i%d", i))
		r.NextRunAt = hbAt(d)
		mustCreateHB(t, s, r)
	}
	p := hbRecord("acme", "paused", "ip")
	p.Status, p.NextRunAt = heartbeat.StatusPaused, time.Time{}
	mustCreateHB(t, s, p)

	next, ok, err := s.NextRun(ctx)
	if err != nil || !ok || !next.Equal(gwStored(hbAt(10*time.Minute))) {
		t.Errorf("NextRun = %v, %v, %v; want %v", next, ok, err, hbAt(10*time.Minute))
	}
	due, err := s.Due(ctx, hbAt(30*time.Minute), 10)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range due {
		got = append(got, r.ID)
	}
	if d := gocmp.Diff([]string{"c1", "c2", "c0"}, got); d != "" {
		t.Errorf("Due (-want +got):\n%s", d)
	}
	if due, _ := s.Due(ctx, hbAt(30*time.Minute), 2); len(due) != 2 {
		t.Errorf("Due with limit 2 = %d configs", len(due))
	}
	if due, _ := s.Due(ctx, hbAt(5*time.Minute), 10); len(due) != 0 {
		t.Errorf("Due before any is due = %d configs", len(due))
	}
}

func testHBClaim(t *testing.T, s heartbeat.Store) {
	ctx := ctxT(t)
	r := mustCreateHB(t, s, hbRecord("acme", "c1", "i1"))
	now := hbAt(time.Hour + time.Second)
	c := hbClaim(&r, now, "owner-a")
	f, err := s.Claim(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	want := heartbeat.Fire{TenantID: "acme", ConfigID: "c1", Tick: gwStored(r.NextRunAt), Outcome: heartbeat.OutcomeClaimed,
		Owner: "owner-a", LeaseUntil: gwStored(c.LeaseUntil), Attempts: 1, CreatedAt: gwStored(now), UpdatedAt: gwStored(now)}
	if d := gocmp.Diff(want, f); d != "" {
		t.Errorf("the claimed fire (-want +got):\n%s", d)
	}
	got, err := s.Get(ctx, "acme", "c1")
	if err != nil {
		t.Fatal(err)
	}
	moved := r
	moved.NextRunAt, moved.LastRunAt, moved.Version, moved.UpdatedAt = gwStored(c.Next), gwStored(c.Tick), 2, gwStored(now)
	if d := gocmp.Diff(moved, got); d != "" {
		t.Errorf("the config after the claim (-want +got):\n%s", d)
	}
	// A claim that handles no tick moves the config on and records none.
	c2 := heartbeat.Claim{TenantID: "acme", ConfigID: "c1", Expect: got.NextRunAt, Next: got.NextRunAt.Add(time.Hour), Now: now}
	if f, err := s.Claim(ctx, c2); err != nil || f.ConfigID != "" {
		t.Errorf("a claim without a tick: %+v, %v", f, err)
	}
	// A skip records the tick skipped and leaves LastRunAt.
	got, _ = s.Get(ctx, "acme", "c1")
	c3 := hbClaim(&got, now, "owner-a")
	c3.Skip = "the day's token budget of 100000 is spent"
	f, err = s.Claim(ctx, c3)
	if err != nil || f.Outcome != heartbeat.OutcomeSkippedBudget || f.Reason != c3.Skip || f.Owner != "" {
		t.Errorf("a skipped claim: %+v, %v", f, err)
	}
	after, _ := s.Get(ctx, "acme", "c1")
	if !after.LastRunAt.Equal(gwStored(c.Tick)) {
		t.Errorf("LastRunAt after a skip = %v, want %v kept", after.LastRunAt, c.Tick)
	}
	fires, err := s.Fires(ctx, "acme", "c1", heartbeat.FireFilter{})
	if err != nil || len(fires) != 2 {
		t.Errorf("Fires = %d, %v; want 2", len(fires), err)
	}
}

func testHBClaimRefused(t *testing.T, s heartbeat.Store) {
	ctx := ctxT(t)
	r := mustCreateHB(t, s, hbRecord("acme", "c1", "i1"))
	stale := hbClaim(&r, hbT0, "o")
	stale.Expect = r.NextRunAt.Add(-time.Hour)
	if _, err := s.Claim(ctx, stale); !errors.Is(err, heartbeat.ErrConflict) {
		t.Errorf("a claim from another next run: %v, want ErrConflict", err)
	}
	if _, err := s.Claim(ctx, hbClaim(&r, hbT0, "o")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Claim(ctx, hbClaim(&r, hbT0, "p")); !errors.Is(err, heartbeat.ErrConflict) {
		t.Errorf("a second claim of one tick: %v, want ErrConflict", err)
	}
	paused, _, err := s.SetStatus(ctx, "acme", "c1", heartbeat.StatusPaused, time.Time{}, hbT0)
	if err != nil {
		t.Fatal(err)
	}
	c := hbClaim(&paused, hbT0, "o")
	c.Expect = paused.NextRunAt
	if _, err := s.Claim(ctx, c); !errors.Is(err, heartbeat.ErrConflict) {
		t.Errorf("a claim of a paused config: %v, want ErrConflict", err)
	}
	c.ConfigID = "nope"
	if _, err := s.Claim(ctx, c); !errors.Is(err, heartbeat.ErrNotFound) {
		t.Errorf("a claim of an unknown config: %v, want ErrNotFound", err)
	}
	if got, _ := s.Get(ctx, "acme", "c1"); got.Version != paused.Version {
		t.Errorf("refused claims changed the config: version %d, want %d", got.Version, paused.Version)
	}
}

// The run budget counts claimed and fired ticks of the day, not skipped
// or failed ones, nor those before Since.
func testHBClaimBudget(t *testing.T, s heartbeat.Store) {
	ctx := ctxT(t)
	r := mustCreateHB(t, s, hbRecord("acme", "c1", "i1"))
	day := r.NextRunAt.Add(time.Hour) // the first tick is the day before
	var outcomes []heartbeat.Outcome
	for i := range 6 {
		c := hbClaim(&r, r.NextRunAt, "o")
		c.MaxRuns, c.Since = 2, day
		if i == 2 {
			c.Skip = "the day's cost budget is spent"
		}
		f, err := s.Claim(ctx, c)
		if err != nil {
			t.Fatalf("claim %d: %v", i, err)
		}
		outcomes = append(outcomes, f.Outcome)
		if i == 1 {
			// A failed run is no run: it leaves the budget.
			if err := s.Settle(ctx, heartbeat.Settlement{TenantID: "acme", ConfigID: "c1", Tick: f.Tick, Owner: "o",
				Outcome: heartbeat.OutcomeFailed, Reason: "no such instance", Now: f.Tick}); err != nil {
				t.Fatal(err)
			}
		}
		if i == 3 {
			if err := s.Settle(ctx, heartbeat.Settlement{TenantID: "acme", ConfigID: "c1", Tick: f.Tick, Owner: "o",
				Outcome: heartbeat.OutcomeFired, RunID: "run-3", Now: f.Tick}); err != nil {
				t.Fatal(err)
			}
		}
		if r, err = s.Get(ctx, "acme", "c1"); err != nil {
			t.Fatal(err)
		}
	}
	want := []heartbeat.Outcome{
		heartbeat.OutcomeClaimed,       // the day before: not counted
		heartbeat.OutcomeClaimed,       // 1 of 2, then failed
		heartbeat.OutcomeSkippedBudget, // skipped by the caller
		heartbeat.OutcomeClaimed,       // 1 of 2, fired
		heartbeat.OutcomeClaimed,       // 2 of 2
		heartbeat.OutcomeSkippedBudget, // over
	}
	if d := gocmp.Diff(want, outcomes); d != "" {
		t.Errorf("outcomes (-want +got):\n%s", d)
	}
	fires, _ := s.Fires(ctx, "acme", "c1", heartbeat.FireFilter{Newest: true, Limit: 1})
	if len(fires) != 1 || fires[0].Reason == "" {
		t.Errorf("the skipped fire = %+v, want a reason", fires)
	}
}

func testHBClaimMissed(t *testing.T, s heartbeat.Store) {
	ctx := ctxT(t)
	r := mustCreateHB(t, s, hbRecord("acme", "c1", "i1"))
	now := hbAt(10 * time.Hour)
	m := heartbeat.Missed{Count: 8, From: hbAt(time.Hour), To: hbAt(8 * time.Hour), DetectedAt: now}
	c := heartbeat.Claim{TenantID: "acme", ConfigID: "c1", Expect: r.NextRunAt, Next: hbAt(11 * time.Hour), Missed: m, Now: now}
	if _, err := s.Claim(ctx, c); err != nil {
		t.Fatal(err)
	}
	got, _ := s.Get(ctx, "acme", "c1")
	want := heartbeat.Missed{Total: r.Missed.Total + 8, Count: 8, From: gwStored(m.From), To: gwStored(m.To), DetectedAt: gwStored(now)}
	if d := gocmp.Diff(want, got.Missed); d != "" {
		t.Errorf("Missed (-want +got):\n%s", d)
	}
	if !got.LastRunAt.Equal(r.LastRunAt) {
		t.Errorf("LastRunAt = %v after missed ticks only, want %v kept", got.LastRunAt, r.LastRunAt)
	}
}

// Of many claimers of one tick, on any handle, exactly one wins and one
// fire is recorded.
func testHBClaimConcurrent(t *testing.T, store func(i int) heartbeat.Store) {
	ctx := ctxT(t)
	r := mustCreateHB(t, store(0), hbRecord("acme", "c1", "i1"))
	oneWins(t, "Claim", 12, heartbeat.ErrConflict, func(i int) error {
		_, err := store(i).Claim(ctx, hbClaim(&r, hbT0, fmt.Sprintf("owner-%d", i)))
		return err
	})
	fires, err := store(1).Fires(ctx, "acme", "c1", heartbeat.FireFilter{})
	if err != nil || len(fires) != 1 {
		t.Errorf("Fires = %d, %v; want 1", len(fires), err)
	}
	got, _ := store(2).Get(ctx, "acme", "c1")
	if got.Version != 2 {
		t.Errorf("version after the race = %d, want 2", got.Version)
	}
}

func testHBSettle(t *testing.T, s heartbeat.Store) {
	ctx := ctxT(t)
	r := mustCreateHB(t, s, hbRecord("acme", "c1", "i1"))
	f, err := s.Claim(ctx, hbClaim(&r, hbT0, "owner-a"))
	if err != nil {
		t.Fatal(err)
	}
	settle := heartbeat.Settlement{TenantID: "acme", ConfigID: "c1", Tick: f.Tick, Owner: "owner-b",
		Outcome: heartbeat.OutcomeFired, RunID: "run-1", Now: hbAt(time.Minute)}
	if err := s.Settle(ctx, settle); !errors.Is(err, heartbeat.ErrConflict) {
		t.Errorf("Settle by another owner: %v, want ErrConflict", err)
	}
	settle.Owner = "owner-a"
	bad := settle
	bad.Outcome = heartbeat.OutcomeClaimed
	if err := s.Settle(ctx, bad); !errors.Is(err, heartbeat.ErrInvalid) {
		t.Errorf("Settle as claimed: %v, want ErrInvalid", err)
	}
	if err := s.Settle(ctx, settle); err != nil {
		t.Fatal(err)
	}
	if err := s.Settle(ctx, settle); !errors.Is(err, heartbeat.ErrConflict) {
		t.Errorf("a second Settle: %v, want ErrConflict", err)
	}
	unknown := settle
	unknown.Tick = f.Tick.Add(time.Minute)
	if err := s.Settle(ctx, unknown); !errors.Is(err, heartbeat.ErrNotFound) {
		t.Errorf("Settle of an unknown tick: %v, want ErrNotFound", err)
	}
	fires, _ := s.Fires(ctx, "acme", "c1", heartbeat.FireFilter{})
	want := f
	want.Outcome, want.RunID, want.UpdatedAt = heartbeat.OutcomeFired, "run-1", gwStored(settle.Now)
	if d := gocmp.Diff([]heartbeat.Fire{want}, fires); d != "" {
		t.Errorf("the settled fire (-want +got):\n%s", d)
	}
}

func testHBReclaim(t *testing.T, s heartbeat.Store) {
	ctx := ctxT(t)
	r := mustCreateHB(t, s, hbRecord("acme", "c1", "i1"))
	f, err := s.Claim(ctx, hbClaim(&r, hbT0, "owner-a")) // lease until hbT0+1m
	if err != nil {
		t.Fatal(err)
	}
	if stale, _ := s.Stale(ctx, hbAt(30*time.Second), 10); len(stale) != 0 {
		t.Errorf("Stale before the lease lapsed = %v", stale)
	}
	if _, err := s.Reclaim(ctx, "acme", "c1", f.Tick, "owner-b", hbAt(30*time.Second), hbAt(2*time.Minute)); !errors.Is(err, heartbeat.ErrConflict) {
		t.Errorf("Reclaim of a live lease: %v, want ErrConflict", err)
	}
	stale, err := s.Stale(ctx, hbAt(time.Minute), 10)
	if err != nil || len(stale) != 1 || !stale[0].Tick.Equal(f.Tick) {
		t.Fatalf("Stale once the lease lapsed = %v, %v", stale, err)
	}
	got, err := s.Reclaim(ctx, "acme", "c1", f.Tick, "owner-b", hbAt(time.Minute), hbAt(2*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if got.Owner != "owner-b" || got.Attempts != 2 || !got.LeaseUntil.Equal(gwStored(hbAt(2*time.Minute))) {
		t.Errorf("reclaimed: %+v", got)
	}
	if err := s.Settle(ctx, heartbeat.Settlement{TenantID: "acme", ConfigID: "c1", Tick: f.Tick, Owner: "owner-a",
		Outcome: heartbeat.OutcomeFired, Now: hbAt(time.Minute)}); !errors.Is(err, heartbeat.ErrConflict) {
		t.Errorf("Settle by the owner who lost it: %v, want ErrConflict", err)
	}
	if err := s.Settle(ctx, heartbeat.Settlement{TenantID: "acme", ConfigID: "c1", Tick: f.Tick, Owner: "owner-b",
		Outcome: heartbeat.OutcomeFired, RunID: "r", Now: hbAt(time.Minute)}); err != nil {
		t.Errorf("Settle by the new owner: %v", err)
	}
	if stale, _ := s.Stale(ctx, hbAt(time.Hour), 10); len(stale) != 0 {
		t.Errorf("Stale after the settlement = %v", stale)
	}
	if _, err := s.Reclaim(ctx, "acme", "c1", f.Tick, "owner-c", hbAt(time.Hour), hbAt(2*time.Hour)); !errors.Is(err, heartbeat.ErrConflict) {
		t.Errorf("Reclaim of a settled fire: %v, want ErrConflict", err)
	}
}

// Of many servers taking over one lapsed fire, exactly one does.
func testHBReclaimConcurrent(t *testing.T, store func(i int) heartbeat.Store) {
	ctx := ctxT(t)
	r := mustCreateHB(t, store(0), hbRecord("acme", "c1", "i1"))
	f, err := store(0).Claim(ctx, hbClaim(&r, hbT0, "dead"))
	if err != nil {
		t.Fatal(err)
	}
	oneWins(t, "Reclaim", 12, heartbeat.ErrConflict, func(i int) error {
		_, err := store(i).Reclaim(ctx, "acme", "c1", f.Tick, fmt.Sprintf("o%d", i), hbAt(time.Hour), hbAt(2*time.Hour))
		return err
	})
}

// oneWins runs try(i) for every i below n at once, and checks that
// exactly one succeeds and every other fails with an error matching
// lose.
func oneWins(t *testing.T, what string, n int, lose error, try func(i int) error) {
	t.Helper()
	var wins atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			switch err := try(i); {
			case err == nil:
				wins.Add(1)
			case !errors.Is(err, lose):
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("a losing %s: %v, want %v", what, err, lose)
	}
	if w := wins.Load(); w != 1 {
		t.Errorf("%d of %d calls of %s won, want 1", w, n, what)
	}
}

func testHBFires(t *testing.T, s heartbeat.Store) {
	ctx := ctxT(t)
	r := mustCreateHB(t, s, hbRecord("acme", "c1", "i1"))
	var ticks []time.Time
	for range 5 {
		f, err := s.Claim(ctx, hbClaim(&r, hbT0, "o"))
		if err != nil {
			t.Fatal(err)
		}
		ticks = append(ticks, f.Tick)
		r, _ = s.Get(ctx, "acme", "c1")
	}
	tickList := func(fs []heartbeat.Fire) []time.Time {
		var out []time.Time
		for _, f := range fs {
			out = append(out, f.Tick)
		}
		return out
	}
	all, err := s.Fires(ctx, "acme", "c1", heartbeat.FireFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if d := gocmp.Diff(ticks, tickList(all)); d != "" {
		t.Errorf("Fires oldest first (-want +got):\n%s", d)
	}
	since, _ := s.Fires(ctx, "acme", "c1", heartbeat.FireFilter{Since: ticks[2]})
	if d := gocmp.Diff(ticks[2:], tickList(since)); d != "" {
		t.Errorf("Fires since the third (-want +got):\n%s", d)
	}
	newest, _ := s.Fires(ctx, "acme", "c1", heartbeat.FireFilter{Newest: true, Limit: 2})
	if d := gocmp.Diff([]time.Time{ticks[4], ticks[3]}, tickList(newest)); d != "" {
		t.Errorf("Fires newest first, two (-want +got):\n%s", d)
	}
	if none, err := s.Fires(ctx, "acme", "nope", heartbeat.FireFilter{}); err != nil || len(none) != 0 {
		t.Errorf("Fires of an unknown config = %v, %v", none, err)
	}
}
