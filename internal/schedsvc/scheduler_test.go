package schedsvc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/heartbeat"
	"novaos.dev/novaos/heartbeat/cron"
	"novaos.dev/novaos/problem"
)

// faultyStore is a store whose methods named fail, as told.
type faultyStore struct {
	heartbeat.Store
	mu    sync.Mutex
	fails map[string]error
}

func newFaultyStore(st heartbeat.Store) *faultyStore {
	return &faultyStore{Store: st, fails: map[string]error{}}
}

// fail makes method fail with err from now on (nil: work again).
func (f *faultyStore) fail(method string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fails[method] = err
}

func (f *faultyStore) err(method string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fails[method]
}

func (f *faultyStore) Create(ctx context.Context, r heartbeat.Record) (heartbeat.Record, error) {
	if err := f.err("Create"); err != nil {
		return heartbeat.Record{}, err
	}
	return f.Store.Create(ctx, r)
}

func (f *faultyStore) Due(ctx context.Context, now time.Time, limit int) ([]heartbeat.Record, error) {
	if err := f.err("Due"); err != nil {
		return nil, err
	}
	return f.Store.Due(ctx, now, limit)
}

func (f *faultyStore) Stale(ctx context.Context, now time.Time, limit int) ([]heartbeat.Fire, error) {
	if err := f.err("Stale"); err != nil {
		return nil, err
	}
	return f.Store.Stale(ctx, now, limit)
}

func (f *faultyStore) Claim(ctx context.Context, c heartbeat.Claim) (heartbeat.Fire, error) {
	if err := f.err("Claim"); err != nil {
		return heartbeat.Fire{}, err
	}
	return f.Store.Claim(ctx, c)
}

func (f *faultyStore) Reclaim(ctx context.Context, tenantID, configID string, tick time.Time, owner string, now, until time.Time) (heartbeat.Fire, error) {
	if err := f.err("Reclaim"); err != nil {
		return heartbeat.Fire{}, err
	}
	return f.Store.Reclaim(ctx, tenantID, configID, tick, owner, now, until)
}

func (f *faultyStore) Settle(ctx context.Context, s heartbeat.Settlement) error {
	if err := f.err("Settle"); err != nil {
		return err
	}
	return f.Store.Settle(ctx, s)
}

// warnings records the messages logged at warning level and above.
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (w *warnings) WithAttrs([]slog.Attr) slog.Handler           { return w }
func (w *warnings) WithGroup(string) slog.Handler                { return w }

func (w *warnings) Handle(_ context.Context, r slog.Record) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, r.Message)
	return nil
}

func (w *warnings) logged() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.msgs)
}

// waitingFor is the times the clock's waits are for.
func (c *ManualClock) waitingFor() []time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []time.Time
	for w := range c.waits {
		out = append(out, w.at)
	}
	return out
}

// storedConfig is a config of acme's hosted instance inst, every minute
// from 10:01, as the store keeps it; edit changes it.
func storedConfig(inst string, edit func(r *heartbeat.Record)) heartbeat.Record {
	r := heartbeat.Record{ID: "cfg-" + inst, TenantID: "acme", AgentID: "echo", InstanceID: inst, Status: heartbeat.StatusActive,
		CronExpression: "* * * * *", Timezone: "UTC", TaskContent: "Check in.", AgentImage: "i", AgentImageTag: "t",
		Budget: heartbeat.Budget{MaxDailyRuns: 100}, Creator: heartbeat.Creator{Subject: "alice@example.com", UserID: "alice"},
		NextRunAt: time.Date(2026, 7, 1, 10, 1, 0, 0, time.UTC), CreatedAt: t0}
	if edit != nil {
		edit(&r)
	}
	return r
}

// put stores configs as another server would: this one is not woken.
func (h *harness) put(recs ...heartbeat.Record) {
	h.t.Helper()
	for _, r := range recs {
		h.runs.add(gateway.Instance{ID: r.InstanceID, TenantID: r.TenantID, Name: r.InstanceID, Hosted: r.AgentID})
		if _, err := h.store.Create(context.Background(), r); err != nil {
			h.t.Fatal(err)
		}
	}
}

// A pass tells the scheduler to read again at once only when it took a
// full batch and moved some config on; a batch whose claims all failed
// waits for the next poll, so a failing store is not read in a loop.
func TestPassBatches(t *testing.T) {
	tick := time.Date(2026, 7, 1, 10, 1, 0, 0, time.UTC)
	broken := storedConfig("inst-b", func(r *heartbeat.Record) { r.Timezone = "Mars/Olympus_Mons" })
	tests := []struct {
		name     string
		configs  []heartbeat.Record
		batch    int
		claimErr error
		more     bool
		runs     int
		paused   string // a config the pass paused
	}{
		{name: "a full batch moved on", configs: []heartbeat.Record{storedConfig("inst-a", nil), storedConfig("inst-c", nil)},
			batch: 1, more: true, runs: 1},
		{name: "a batch not full", configs: []heartbeat.Record{storedConfig("inst-a", nil)}, batch: 2, runs: 1},
		{name: "a full batch whose claims the store failed", configs: []heartbeat.Record{storedConfig("inst-a", nil)}, batch: 1,
			claimErr: errors.New("disk I/O error")},
		{name: "a full batch another server claimed", configs: []heartbeat.Record{storedConfig("inst-a", nil)}, batch: 1,
			claimErr: fmt.Errorf("claim: %w", heartbeat.ErrConflict), more: true},
		{name: "a full batch of a config that no longer parses", configs: []heartbeat.Record{broken}, batch: 1, more: true,
			paused: broken.ID},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := newFaultyStore(heartbeat.NewMemoryStore())
			h := newHarness(t, harnessOpts{store: st, noStart: true, opts: &Options{Batch: tc.batch}})
			h.put(tc.configs...)
			st.fail("Claim", tc.claimErr)
			h.clock.Set(tick)
			if _, more := h.svc.pass(t.Context()); more != tc.more {
				t.Errorf("more = %v, want %v", more, tc.more)
			}
			if n := len(h.runs.starts()); n != tc.runs {
				t.Errorf("%d runs, want %d", n, tc.runs)
			}
			if tc.paused != "" {
				if rec, err := st.Get(t.Context(), "acme", tc.paused); err != nil || rec.Status != heartbeat.StatusPaused {
					t.Errorf("the config that no longer parses: %+v, %v", rec, err)
				}
			}
		})
	}
}

// Configs due at one tick are all fired at it, whatever the batch.
func TestRunDrainsFullBatches(t *testing.T) {
	h := newHarness(t, harnessOpts{noStart: true, opts: &Options{Batch: 1}})
	h.put(storedConfig("inst-a", nil), storedConfig("inst-b", nil), storedConfig("inst-c", nil))
	h.start()
	h.advance(time.Date(2026, 7, 1, 10, 1, 0, 0, time.UTC))
	if n := len(h.runs.starts()); n != 3 {
		t.Errorf("%d runs at the tick, want 3", n)
	}
}

// The scheduler sleeps until the next run, not a poll later.
func TestRunWakesAtNextRun(t *testing.T) {
	h := newHarness(t, harnessOpts{noStart: true, opts: &Options{PollEvery: time.Hour}})
	h.put(storedConfig("inst-a", nil))
	asleep := h.clock.Asleep()
	h.start()
	<-asleep
	want := []time.Time{time.Date(2026, 7, 1, 10, 1, 0, 0, time.UTC)}
	if got := h.clock.waitingFor(); !cmp.Equal(want, got) {
		t.Errorf("the scheduler waits for %v, want %v", got, want)
	}
}

// countingNexter counts the ticks asked of a schedule.
type countingNexter struct {
	s     nexter
	calls int
}

func (c *countingNexter) Next(after time.Time, loc *time.Location) (time.Time, bool) {
	c.calls++
	return c.s.Next(after, loc)
}

// latestIn finds the latest tick of (lo, hi] asking for about twice the
// log of the gap in minutes, never the gap's ticks one by one.
func TestLatestIn(t *testing.T) {
	day := func(y int, m time.Month, d, h, mi int) time.Time { return time.Date(y, m, d, h, mi, 0, 0, time.UTC) }
	tests := []struct {
		name   string
		cron   string
		lo, hi time.Time
		want   time.Time // zero: none
	}{
		{"every minute, two years", "* * * * *", day(2026, 7, 1, 10, 0), day(2028, 7, 1, 10, 0).Add(20 * time.Second), day(2028, 7, 1, 10, 0)},
		{"yearly, seven years", "0 0 1 1 *", day(2026, 1, 1, 0, 0), day(2033, 6, 1, 0, 0), day(2033, 1, 1, 0, 0)},
		{"hourly, a tick at hi", "0 * * * *", day(2026, 7, 1, 0, 30), day(2026, 7, 9, 12, 0), day(2026, 7, 9, 12, 0)},
		{"yearly, the only tick at lo", "0 0 1 1 *", day(2026, 1, 1, 0, 0), day(2026, 12, 31, 23, 59), time.Time{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := cron.Parse(tc.cron)
			if err != nil {
				t.Fatal(err)
			}
			c := &countingNexter{s: s}
			got, ok := latestIn(c, time.UTC, tc.lo, tc.hi)
			if ok != !tc.want.IsZero() || !got.Equal(tc.want) {
				t.Errorf("latestIn = %v, %v; want %v", got, ok, tc.want)
			}
			if c.calls > 64 {
				t.Errorf("%d ticks asked for", c.calls)
			}
		})
	}
}

// dueTicks counts the ticks of a long gap walking at most scan of them,
// and a short gap exactly.
func TestDueTicks(t *testing.T) {
	every, err := cron.Parse("* * * * *")
	if err != nil {
		t.Fatal(err)
	}
	first := time.Date(2026, 7, 1, 10, 1, 0, 0, time.UTC)
	tests := []struct {
		name     string
		now      time.Time
		scan     int
		want     ticks
		maxCalls int
		slack    int64 // how far the count may be off
	}{
		{"within the scan", first.Add(63*time.Minute + 30*time.Second), 1000,
			ticks{first: first, last: first.Add(63 * time.Minute), prev: first.Add(62 * time.Minute), count: 64, next: first.Add(64 * time.Minute)},
			64, 0},
		{"two years past the scan", time.Date(2028, 7, 1, 10, 0, 20, 0, time.UTC), 1000,
			ticks{first: first, last: time.Date(2028, 7, 1, 10, 0, 0, 0, time.UTC), prev: time.Date(2028, 7, 1, 9, 59, 0, 0, time.UTC),
				count: int64(time.Date(2028, 7, 1, 10, 0, 0, 0, time.UTC).Sub(first)/time.Minute) + 1, next: time.Date(2028, 7, 1, 10, 1, 0, 0, time.UTC)},
			1000 + 2*64 + 1, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &countingNexter{s: every}
			got := dueTicks(c, time.UTC, first, tc.now, tc.scan)
			if d := got.count - tc.want.count; d < -tc.slack || d > tc.slack {
				t.Errorf("count %d, want %d", got.count, tc.want.count)
			}
			got.count = tc.want.count
			if got != tc.want {
				t.Errorf("dueTicks = %+v, want %+v", got, tc.want)
			}
			if c.calls > tc.maxCalls {
				t.Errorf("%d ticks asked for, want at most %d", c.calls, tc.maxCalls)
			}
		})
	}
}

// seedFire records the config's next tick as a server would have
// handled it, with outcome, and moves rec on to the next minute.
func seedFire(t *testing.T, st heartbeat.Store, rec *heartbeat.Record, outcome heartbeat.Outcome) time.Time {
	t.Helper()
	tick := rec.NextRunAt
	cl := heartbeat.Claim{TenantID: rec.TenantID, ConfigID: rec.ID, Expect: tick, Next: tick.Add(time.Minute), Tick: tick,
		Owner: "seed", LeaseUntil: tick.Add(time.Minute), Now: tick}
	if outcome == heartbeat.OutcomeSkippedBudget {
		cl.Skip = "seeded"
	}
	if _, err := st.Claim(t.Context(), cl); err != nil {
		t.Fatal(err)
	}
	if outcome == heartbeat.OutcomeFired || outcome == heartbeat.OutcomeFailed {
		s := heartbeat.Settlement{TenantID: rec.TenantID, ConfigID: rec.ID, Tick: tick, Owner: "seed", Outcome: outcome, Now: tick}
		if outcome == heartbeat.OutcomeFired {
			s.RunID = RunIDFor(rec.ID, tick)
		}
		if err := st.Settle(t.Context(), s); err != nil {
			t.Fatal(err)
		}
	}
	rec.NextRunAt = cl.Next
	return tick
}

// spend asks the meter about the day's runs, fired or still claimed,
// and leaves each cap the run what is left of it; a cap spent to the
// unit, or a meter that cannot tell about runs there are, skips.
func TestSpend(t *testing.T) {
	meter := &fakeSpend{perRun: Usage{Tokens: 100, CostUSD: 0.25}}
	h := newHarness(t, harnessOpts{noStart: true, spend: meter})
	rec := storedConfig("inst-a", nil)
	h.put(rec)
	day := startOfDay(rec.NextRunAt, time.UTC)
	fired := seedFire(t, h.store, &rec, heartbeat.OutcomeFired)
	seedFire(t, h.store, &rec, heartbeat.OutcomeFailed)
	seedFire(t, h.store, &rec, heartbeat.OutcomeSkippedBudget)
	claimed := seedFire(t, h.store, &rec, heartbeat.OutcomeClaimed)
	runs := []string{RunIDFor(rec.ID, fired), RunIDFor(rec.ID, claimed)} // 200 tokens, 0.5 USD
	down := errors.New("meter down")
	tests := []struct {
		name     string
		budget   heartbeat.Budget
		since    time.Time
		noMeter  bool
		meterErr error
		skip     string // in the reason
		limits   Limits
		asked    [][]string
	}{
		{name: "no token or cost cap", budget: heartbeat.Budget{MaxDailyRuns: 10}, since: day},
		{name: "no meter", budget: heartbeat.Budget{MaxDailyRuns: 10, MaxDailyTokens: 1000}, since: day, noMeter: true},
		{name: "a token cap", budget: heartbeat.Budget{MaxDailyRuns: 10, MaxDailyTokens: 1000}, since: day,
			limits: Limits{MaxTokens: 800}, asked: [][]string{runs}},
		{name: "a cost cap", budget: heartbeat.Budget{MaxDailyRuns: 10, MaxDailyCostUSD: 2}, since: day,
			limits: Limits{MaxCostUSD: 1.5}, asked: [][]string{runs}},
		{name: "both caps", budget: heartbeat.Budget{MaxDailyRuns: 10, MaxDailyTokens: 1000, MaxDailyCostUSD: 2}, since: day,
			limits: Limits{MaxTokens: 800, MaxCostUSD: 1.5}, asked: [][]string{runs}},
		{name: "a token cap a token short of spent", budget: heartbeat.Budget{MaxDailyRuns: 10, MaxDailyTokens: 201}, since: day,
			limits: Limits{MaxTokens: 1}, asked: [][]string{runs}},
		{name: "a token cap spent to the token", budget: heartbeat.Budget{MaxDailyRuns: 10, MaxDailyTokens: 200}, since: day,
			skip: "budget of 200 tokens is spent (200 used)", asked: [][]string{runs}},
		{name: "a cost cap spent to the cent", budget: heartbeat.Budget{MaxDailyRuns: 10, MaxDailyCostUSD: 0.5}, since: day,
			skip: "budget of 0.5 USD is spent", asked: [][]string{runs}},
		{name: "the meter is down", budget: heartbeat.Budget{MaxDailyRuns: 10, MaxDailyTokens: 1000}, since: day, meterErr: down,
			skip: "could not be read to check the budget: meter down", asked: [][]string{runs}},
		{name: "the meter is down, no run yet today", budget: heartbeat.Budget{MaxDailyRuns: 10, MaxDailyTokens: 1000},
			since: claimed.Add(time.Minute), meterErr: down, limits: Limits{MaxTokens: 1000}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			meter.mu.Lock()
			meter.asked, meter.err = nil, tc.meterErr
			meter.mu.Unlock()
			h.svc.deps.Spend = meter
			if tc.noMeter {
				h.svc.deps.Spend = nil
			}
			r := rec
			r.Budget = tc.budget
			skip, limits := h.svc.spend(t.Context(), &r, tc.since)
			if tc.skip == "" && skip != "" || !strings.Contains(skip, tc.skip) {
				t.Errorf("skip %q, want %q", skip, tc.skip)
			}
			if limits != tc.limits {
				t.Errorf("limits %+v, want %+v", limits, tc.limits)
			}
			meter.mu.Lock()
			defer meter.mu.Unlock()
			if d := cmp.Diff(tc.asked, meter.asked); d != "" {
				t.Errorf("the meter was asked about (-want +got):\n%s", d)
			}
		})
	}
}

// permanent tells the gateway's refusals from its passing failures.
func TestPermanent(t *testing.T) {
	status := func(code int) error { return &problem.Problem{Status: code, Title: http.StatusText(code)} }
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("start: %w", gateway.ErrNotFound), true},
		{status(http.StatusBadRequest), true},
		{status(http.StatusConflict), true},
		{status(499), true},
		{status(http.StatusTooManyRequests), false},
		{status(http.StatusInternalServerError), false},
		{status(http.StatusServiceUnavailable), false},
		{status(399), false},
		{errors.New("database is locked"), false},
	} {
		if got := permanent(tc.err); got != tc.want {
			t.Errorf("permanent(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// A pass warns of what an operator must look at, and of nothing else:
// not of a tick on time, nor of a store failing as the server stops.
func TestPassWarnings(t *testing.T) {
	tick := time.Date(2026, 7, 1, 10, 1, 0, 0, time.UTC)
	broke := errors.New("disk I/O error")
	tests := []struct {
		name   string
		fail   []string // the store methods that fail
		at     time.Time
		cancel bool
		stale  bool     // a dead server's claim of the tick lapsed
		want   []string // the warnings, in part
	}{
		{name: "a tick on time", at: tick},
		{name: "ticks missed", at: tick.Add(2*time.Minute + 30*time.Second), want: []string{"reported, not run late"}},
		{name: "the stale ticks cannot be read", fail: []string{"Stale"}, at: tick, want: []string{"read the ticks left claimed"}},
		{name: "the due configs cannot be read", fail: []string{"Due"}, at: tick, want: []string{"read the due configs"}},
		{name: "a tick cannot be claimed", fail: []string{"Claim"}, at: tick, want: []string{"claim a tick"}},
		{name: "an outcome cannot be recorded", fail: []string{"Settle"}, at: tick, want: []string{"record a tick's outcome"}},
		{name: "a tick left claimed cannot be taken over", fail: []string{"Reclaim"}, stale: true, at: tick.Add(time.Minute),
			want: []string{"take over a tick"}},
		{name: "the store fails as the server stops", fail: []string{"Stale", "Due"}, at: tick, cancel: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := &warnings{}
			st := newFaultyStore(heartbeat.NewMemoryStore())
			h := newHarness(t, harnessOpts{store: st, noStart: true, opts: &Options{Logger: slog.New(w)}})
			rec := storedConfig("inst-a", nil)
			h.put(rec)
			if tc.stale {
				// Claimed by a server that died; the config moves on to
				// ticks this pass does not reach.
				if _, err := st.Claim(t.Context(), heartbeat.Claim{TenantID: "acme", ConfigID: rec.ID, Expect: tick, Next: tick.Add(time.Hour),
					Tick: tick, Owner: "dead", LeaseUntil: tick.Add(time.Minute), Now: tick}); err != nil {
					t.Fatal(err)
				}
			}
			for _, m := range tc.fail {
				st.fail(m, broke)
			}
			h.clock.Set(tc.at)
			ctx, cancel := context.WithCancel(t.Context())
			if tc.cancel {
				cancel()
			}
			h.svc.pass(ctx)
			cancel()
			got := w.logged()
			if len(got) != len(tc.want) {
				t.Fatalf("warnings %q, want %q", got, tc.want)
			}
			for i := range got {
				if !strings.Contains(got[i], tc.want[i]) {
					t.Errorf("warning %q, want %q", got[i], tc.want[i])
				}
			}
		})
	}
}
