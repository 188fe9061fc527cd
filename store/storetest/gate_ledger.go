package storetest

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"novaos.dev/novaos/gate"
)

// The ledger's contract beyond single totals (testGateAggregate): totals
// against a brute-force recount, their precision, concurrent writers,
// refused amounts and the time an entry is filed at.

// ledgerModel is the ledger as gate.Store's contract defines it, kept in
// Go and recounted by brute force: an entry is filed at the later of its
// time and the latest time of either of its series.
type ledgerModel struct {
	filed   []gate.LedgerEntry // At is the time filed at
	subject map[[3]string]time.Time
	wide    map[[2]string]time.Time
}

func newLedgerModel() *ledgerModel {
	return &ledgerModel{subject: map[[3]string]time.Time{}, wide: map[[2]string]time.Time{}}
}

func (m *ledgerModel) keys(e gate.LedgerEntry) ([3]string, [2]string) {
	return [3]string{e.TenantID, e.ActionType, e.Subject}, [2]string{e.TenantID, e.ActionType}
}

// file records e as a store files it.
func (m *ledgerModel) file(e gate.LedgerEntry) {
	sk, wk := m.keys(e)
	e.At = maxTime(e.At, m.subject[sk], m.wide[wk])
	m.subject[sk], m.wide[wk] = e.At, e.At
	m.filed = append(m.filed, e)
}

// load records e as stored before the ledger kept running totals: at its
// own time, whatever came before it.
func (m *ledgerModel) load(e gate.LedgerEntry) {
	sk, wk := m.keys(e)
	m.subject[sk], m.wide[wk] = maxTime(e.At, m.subject[sk]), maxTime(e.At, m.wide[wk])
	m.filed = append(m.filed, e)
}

func maxTime(ts ...time.Time) time.Time {
	return slices.MaxFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
}

// total recounts q: its count, its sum (exact, then rounded once) and
// the sum of the magnitudes of its series' amounts, what a store's
// rounding scales with.
func (m *ledgerModel) total(q gate.LedgerQuery) (gate.LedgerTotal, float64) {
	var t gate.LedgerTotal
	sum, scale := new(big.Float).SetPrec(2048), 0.0
	for _, e := range m.filed {
		if e.TenantID != q.TenantID || e.ActionType != q.ActionType || (q.Subject != "" && e.Subject != q.Subject) {
			continue
		}
		scale += math.Abs(e.Amount)
		if !e.At.Before(q.Since) {
			t.Count++
			sum.Add(sum, big.NewFloat(e.Amount))
		}
	}
	t.Sum, _ = sum.Float64()
	return t, scale
}

// checkLedger asks the store for qs in one batch and compares each total
// with the model's: counts exactly, sums within tol times the series'
// magnitude (plus tol).
func checkLedger(t *testing.T, s gate.Store, m *ledgerModel, qs []gate.LedgerQuery, tol float64) {
	t.Helper()
	got, err := s.Aggregate(ctxT(t), qs)
	if err != nil {
		t.Fatalf("Aggregate of %d queries: %v", len(qs), err)
	}
	if len(got) != len(qs) {
		t.Fatalf("Aggregate of %d queries returned %d totals", len(qs), len(got))
	}
	bad := 0
	for i, q := range qs {
		want, scale := m.total(q)
		if got[i].Count != want.Count || math.Abs(got[i].Sum-want.Sum) > tol*(1+scale) {
			if bad++; bad <= 10 {
				t.Errorf("query %d %s/%s/%q since %s: got %+v, recount %+v", i, q.TenantID, q.ActionType, q.Subject,
					q.Since.UTC().Format(time.RFC3339Nano), got[i], want)
			}
		}
	}
	if bad > 10 {
		t.Errorf("... %d totals differ from the recount in all", bad)
	}
}

// randomLedger returns n entries over a few tenants, action types and
// subjects (with "", no subject), at times drawn from a few dozen so that
// many are equal, with amounts in cents, some negative, in time order.
func randomLedger(rng *rand.Rand, n int) []gate.LedgerEntry {
	times := make([]time.Time, 30)
	for i := range times {
		times[i] = gateAt(time.Duration(i)*time.Minute + time.Duration(rng.IntN(1000))*time.Microsecond)
	}
	tenants, types, subjects := []string{"acme", "globex"}, []string{"refund", "payment"}, []string{"c-1", "c-2", "c-3", ""}
	es := make([]gate.LedgerEntry, n)
	for i := range es {
		es[i] = gate.LedgerEntry{TenantID: tenants[rng.IntN(2)], ActionType: types[rng.IntN(2)], Subject: subjects[rng.IntN(4)],
			Amount: float64(rng.IntN(2_000_000)-500_000) / 100, At: times[rng.IntN(len(times))],
			SessionID: "s1", ActionID: fmt.Sprintf("e%d", i)}
	}
	slices.SortStableFunc(es, func(a, b gate.LedgerEntry) int { return a.At.Compare(b.At) })
	return es
}

// randomWindows returns queries of every series the entries of
// randomLedger fall in (and of some they do not), each from several
// times: none, entries' times and a microsecond either side, before the
// first and after the last.
func randomWindows(rng *rand.Rand, es []gate.LedgerEntry) []gate.LedgerQuery {
	var qs []gate.LedgerQuery
	for _, tenant := range []string{"acme", "globex", "initech"} {
		for _, typ := range []string{"refund", "payment", "transfer"} {
			for _, subject := range []string{"", "c-1", "c-2", "c-3", "c-9"} {
				for range 3 {
					var since time.Time
					switch k := rng.IntN(6); k {
					case 0: // all time
					case 1:
						since = gateAt(-time.Hour)
					case 2:
						since = gateAt(time.Hour)
					default:
						since = es[rng.IntN(len(es))].At.Add(time.Duration(k-4) * time.Microsecond)
					}
					qs = append(qs, gate.LedgerQuery{TenantID: tenant, ActionType: typ, Subject: subject, Since: since})
				}
			}
		}
	}
	rng.Shuffle(len(qs), func(i, j int) { qs[i], qs[j] = qs[j], qs[i] })
	return qs
}

// writeLedger files es through action writes of one to six entries each.
func writeLedger(t *testing.T, s gate.Store, rng *rand.Rand, prefix string, es []gate.LedgerEntry) {
	t.Helper()
	for i := 0; i < len(es); {
		n := min(1+rng.IntN(6), len(es)-i)
		mustWrite(t, s, gate.ActionWrite{Record: gateAction("acme", "s1", fmt.Sprintf("%s%d", prefix, i)), Now: gateT0, Ledger: es[i : i+n]})
		i += n
	}
}

func newRand(t *testing.T) *rand.Rand {
	seed := uint64(time.Now().UnixNano())
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("random seed %d", seed)
		}
	})
	return rand.New(rand.NewPCG(seed, 0x6c6564676572))
}

// testGateLedgerRecount: random entries, some out of time order, and
// random windows; every total equals the recount's.
func testGateLedgerRecount(t *testing.T, s gate.Store) {
	rng := newRand(t)
	es := randomLedger(rng, 400)
	// A gate files entries nearly in time order; some come late.
	for range 40 {
		i := rng.IntN(len(es) - 3)
		es[i], es[i+3] = es[i+3], es[i]
	}
	writeLedger(t, s, rng, "w", es)
	m := newLedgerModel()
	for _, e := range es {
		m.file(e)
	}
	qs := randomWindows(rng, es)
	checkLedger(t, s, m, qs, 1e-12)
	// One query at a time, and a batch longer than any rule set's.
	for _, q := range qs[:20] {
		checkLedger(t, s, m, []gate.LedgerQuery{q}, 1e-12)
	}
	checkLedger(t, s, m, slices.Concat(qs, qs, qs, qs, qs), 1e-12)
}

// testGateLedgerPrecision: after a lifetime of a trillion, a window of a
// few cents comes back to the cent (float64 alone resolves only 10^-4
// there, so running sums without compensation would not).
func testGateLedgerPrecision(t *testing.T, s gate.Store) {
	entry := func(subject string, amount float64, at time.Duration) gate.LedgerEntry {
		return gate.LedgerEntry{TenantID: "acme", ActionType: "refund", Subject: subject, Amount: amount, At: gateAt(at)}
	}
	write := func(id string, es ...gate.LedgerEntry) {
		t.Helper()
		mustWrite(t, s, gate.ActionWrite{Record: gateAction("acme", "s1", id), Now: gateT0, Ledger: es})
	}
	write("whale", entry("whale", 333_333_333_333.33, 0), entry("whale", 333_333_333_333.33, 0), entry("whale", 333_333_333_333.34, time.Minute))
	for i := range 1000 {
		write(fmt.Sprintf("w%d", i), entry("whale", 1_000_000+float64(i%100)/100, 2*time.Minute))
	}
	write("c1", entry("whale", 0.01, time.Hour))
	write("c2", entry("whale", 0.02, time.Hour), entry("whale", 0.07, time.Hour+time.Second))
	cents := []gate.LedgerQuery{
		{TenantID: "acme", ActionType: "refund", Subject: "whale", Since: gateAt(time.Hour)},
		{TenantID: "acme", ActionType: "refund", Since: gateAt(time.Hour)},
		{TenantID: "acme", ActionType: "refund", Subject: "whale", Since: gateAt(time.Hour + time.Second)},
	}
	check := func(want []float64, counts []int64) {
		t.Helper()
		got, err := s.Aggregate(ctxT(t), cents)
		if err != nil {
			t.Fatal(err)
		}
		for i := range cents {
			if got[i].Count != counts[i] || math.Abs(got[i].Sum-want[i]) > 1e-9 {
				t.Errorf("window %d after a lifetime of 10^12: %+v, want %d entries summing %v", i, got[i], counts[i], want[i])
			}
		}
	}
	check([]float64{0.10, 0.10, 0.07}, []int64{3, 3, 1})
	// A refund reversed counts negatively, to the cent as well.
	write("c3", entry("other", -0.03, 2*time.Hour))
	check([]float64{0.10, 0.07, 0.07}, []int64{3, 4, 1})
	all := total(t, s, gate.LedgerQuery{TenantID: "acme", ActionType: "refund"})
	if want := 1e12 + 1e9 + 495 + 0.07; all.Count != 1007 || math.Abs(all.Sum-want) > 1e-3 {
		t.Errorf("lifetime total %+v, want 1007 entries summing %.2f", all, want)
	}
}

// testGateLedgerTimeOrder: an entry dated before its series' latest is
// filed at that latest time; either series of an entry holds it back.
func testGateLedgerTimeOrder(t *testing.T, s gate.Store) {
	write := func(id, subject, typ string, amount float64, at time.Duration) {
		t.Helper()
		mustWrite(t, s, gate.ActionWrite{Record: gateAction("acme", "s1", id), Now: gateT0,
			Ledger: []gate.LedgerEntry{{TenantID: "acme", ActionType: typ, Subject: subject, Amount: amount, At: gateAt(at)}}})
	}
	write("a1", "c-1", "refund", 1, time.Hour)
	write("a2", "c-1", "refund", 2, 0)                  // behind its subject's latest: filed at 1h
	write("a3", "c-2", "refund", 4, 30*time.Minute)     // behind the action type's latest: filed at 1h
	write("a4", "c-3", "payment", 8, 0)                 // another action type's series: filed at its own time
	write("a5", "c-1", "refund", 16, 2*time.Hour)       // ahead: filed at its own time
	write("a6", "c-2", "refund", 32, 2*time.Hour-1000)  // behind again: at 2h
	write("a7", "c-1", "refund", 64, 2*time.Hour+10000) // ahead
	tests := []struct {
		name string
		q    gate.LedgerQuery
		want gate.LedgerTotal
	}{
		{"late entry counted from its subject's latest", gate.LedgerQuery{TenantID: "acme", ActionType: "refund", Subject: "c-1", Since: gateAt(time.Hour)}, gate.LedgerTotal{Count: 4, Sum: 83}},
		{"not before it", gate.LedgerQuery{TenantID: "acme", ActionType: "refund", Subject: "c-1", Since: gateAt(time.Hour + time.Microsecond)}, gate.LedgerTotal{Count: 2, Sum: 80}},
		{"late entry counted from its action type's latest", gate.LedgerQuery{TenantID: "acme", ActionType: "refund", Subject: "c-2", Since: gateAt(time.Hour)}, gate.LedgerTotal{Count: 2, Sum: 36}},
		{"and from the latest again", gate.LedgerQuery{TenantID: "acme", ActionType: "refund", Subject: "c-2", Since: gateAt(2 * time.Hour)}, gate.LedgerTotal{Count: 1, Sum: 32}},
		{"action type", gate.LedgerQuery{TenantID: "acme", ActionType: "refund", Since: gateAt(time.Hour)}, gate.LedgerTotal{Count: 6, Sum: 119}},
		{"action type after the first", gate.LedgerQuery{TenantID: "acme", ActionType: "refund", Since: gateAt(time.Hour + time.Microsecond)}, gate.LedgerTotal{Count: 3, Sum: 112}},
		{"another action type keeps its time", gate.LedgerQuery{TenantID: "acme", ActionType: "payment", Since: gateAt(time.Microsecond)}, gate.LedgerTotal{}},
		{"another action type from its time", gate.LedgerQuery{TenantID: "acme", ActionType: "payment", Subject: "c-3", Since: gateAt(0)}, gate.LedgerTotal{Count: 1, Sum: 8}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := total(t, s, tt.q); got != tt.want {
				t.Errorf("Aggregate = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// testGateLedgerRefused: an amount that is not finite, or that takes a
// series' sum past float64's range, refuses the whole write with
// gate.ErrLedgerAmount: no action, audit entry or ledger entry is
// recorded.
func testGateLedgerRefused(t *testing.T, s gate.Store) {
	ctx := ctxT(t)
	entry := func(typ, subject string, amount float64) gate.LedgerEntry {
		return gate.LedgerEntry{TenantID: "acme", ActionType: typ, Subject: subject, Amount: amount, At: gateT0}
	}
	// Series that already hold most of float64's range.
	mustWrite(t, s, gate.ActionWrite{Record: gateAction("acme", "s1", "huge"), Now: gateT0,
		Ledger: []gate.LedgerEntry{entry("big", "c-1", 1e308), entry("small", "c-1", -1e308)}})
	v1 := mustWrite(t, s, gate.ActionWrite{Record: gateAction("acme", "s1", "held"), Now: gateT0,
		Ledger: []gate.LedgerEntry{entry("refund", "c-1", 5)}})
	tests := []struct {
		name   string
		ledger []gate.LedgerEntry
		update bool // a compare-and-set of "held" rather than a creation
	}{
		{"NaN", []gate.LedgerEntry{entry("refund", "c-1", math.NaN())}, false},
		{"+Inf", []gate.LedgerEntry{entry("refund", "c-1", math.Inf(1))}, false},
		{"-Inf", []gate.LedgerEntry{entry("refund", "c-2", math.Inf(-1))}, false},
		{"NaN after a good entry", []gate.LedgerEntry{entry("refund", "c-1", 5), entry("refund", "c-2", math.NaN())}, false},
		{"NaN in an update", []gate.LedgerEntry{entry("refund", "c-1", math.NaN())}, true},
		{"overflow within the write", []gate.LedgerEntry{entry("refund", "c-3", 1.7e308), entry("refund", "c-3", 1.7e308)}, false},
		{"overflow of a subject's lifetime", []gate.LedgerEntry{entry("big", "c-1", 1e308)}, false},
		{"overflow of an action type's lifetime", []gate.LedgerEntry{entry("big", "c-2", 1e308)}, false},
		{"negative overflow", []gate.LedgerEntry{entry("small", "c-2", -1e308)}, true},
	}
	series := []gate.LedgerQuery{
		{TenantID: "acme", ActionType: "refund"}, {TenantID: "acme", ActionType: "refund", Subject: "c-1"},
		{TenantID: "acme", ActionType: "big"}, {TenantID: "acme", ActionType: "small"},
	}
	before, err := s.Aggregate(ctx, series)
	if err != nil {
		t.Fatal(err)
	}
	seq, hash := auditHead(t, s)
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := gate.ActionWrite{Record: gateAction("acme", "s1", fmt.Sprintf("r%d", i)), Now: gateAt(time.Minute), Ledger: tt.ledger,
				Audit: &gate.AuditEntry{Kind: "verdict", TenantID: "acme", Body: []byte(`{}`)}}
			if tt.update {
				w.Record, w.ExpectVersion = v1, v1.Version
				w.Record.State = gate.ActionClaimed
			}
			if _, err := s.WriteAction(ctx, w); !errors.Is(err, gate.ErrLedgerAmount) {
				t.Fatalf("WriteAction = %v, want ErrLedgerAmount", err)
			}
			if tt.update {
				if got, err := s.GetAction(ctx, "acme", "s1", "held"); err != nil || got.Version != v1.Version || got.State != v1.State {
					t.Errorf("the refused update was stored: %+v, %v", got, err)
				}
			} else if _, err := s.GetAction(ctx, "acme", "s1", w.Record.ActionID); !errors.Is(err, gate.ErrNotFound) {
				t.Errorf("the refused action was stored: %v", err)
			}
			if s2, h2 := auditHead(t, s); s2 != seq || h2 != hash {
				t.Errorf("a refused write moved the audit head to %d %s", s2, h2)
			}
			if after, err := s.Aggregate(ctx, series); err != nil || !slices.Equal(before, after) {
				t.Errorf("a refused write changed the ledger: %v → %v, %v", before, after, err)
			}
		})
	}
	// The series take entries as before.
	mustWrite(t, s, gate.ActionWrite{Record: gateAction("acme", "s1", "after"), Now: gateT0,
		Ledger: []gate.LedgerEntry{entry("refund", "c-1", 7), entry("big", "c-1", -1e308)}})
	after, err := s.Aggregate(ctx, series)
	if err != nil {
		t.Fatal(err)
	}
	if want := (gate.LedgerTotal{Count: 2, Sum: 12}); after[1] != want {
		t.Errorf("c-1 after the refusals = %+v, want %+v", after[1], want)
	}
	if want := (gate.LedgerTotal{Count: 2, Sum: 0}); after[2] != want {
		t.Errorf("big after the refusals = %+v, want %+v", after[2], want)
	}
}

// testGateLedgerConcurrent: writers that file entries of the same series
// in every order, each with an audit entry, all complete (no deadlock
// between their locks), and the totals are the recount's. Readers
// meanwhile see each batch from one snapshot: an action type's count is
// its subjects' counts' sum.
func testGateLedgerConcurrent(t *testing.T, s gate.Store) {
	ctx := ctxT(t)
	series := []gate.LedgerEntry{
		{TenantID: "acme", ActionType: "refund", Subject: "c-1"}, {TenantID: "acme", ActionType: "refund", Subject: "c-2"},
		{TenantID: "acme", ActionType: "payment", Subject: "c-1"}, {TenantID: "globex", ActionType: "refund", Subject: "c-1"},
	}
	snapshot := []gate.LedgerQuery{
		{TenantID: "acme", ActionType: "refund"}, {TenantID: "acme", ActionType: "refund", Subject: "c-1"},
		{TenantID: "acme", ActionType: "refund", Subject: "c-2"},
	}
	const writers, writes = 8, 15
	var mu sync.Mutex
	var written []gate.LedgerEntry
	var wg, readers sync.WaitGroup
	done := make(chan struct{})
	for range 2 {
		readers.Go(func() {
			var last int64
			for {
				select {
				case <-done:
					return
				default:
				}
				got, err := s.Aggregate(ctx, snapshot)
				if err != nil {
					t.Errorf("Aggregate during writes: %v", err)
					return
				}
				if got[0].Count != got[1].Count+got[2].Count || got[0].Count < last {
					t.Errorf("a batch read during writes is not one snapshot: %+v (earlier count %d)", got, last)
					return
				}
				last = got[0].Count
			}
		})
	}
	for w := range writers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for i := range writes {
				var es []gate.LedgerEntry
				for _, k := range rng.Perm(len(series))[:1+rng.IntN(len(series))] {
					e := series[k]
					e.Amount, e.At = float64(1+rng.IntN(100)), gateAt(time.Duration(rng.IntN(60))*time.Second)
					es = append(es, e)
				}
				_, err := s.WriteAction(ctx, gate.ActionWrite{Record: gateAction("acme", fmt.Sprintf("s%d", w), fmt.Sprintf("a%d", i)),
					Now: gateT0, Ledger: es, Audit: &gate.AuditEntry{Kind: "verdict", TenantID: "acme", Body: []byte(`{}`)}})
				if err != nil {
					t.Errorf("writer %d, write %d: %v", w, i, err)
					return
				}
				mu.Lock()
				written = append(written, es...)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(done)
	readers.Wait()
	if t.Failed() {
		return
	}
	// Entries were filed in an order only the store knows; the totals
	// from before the first entry do not depend on it, and a window
	// counts at least the entries whose own time is in it (a late one
	// is counted from its series' latest time, never dropped).
	m := newLedgerModel()
	for _, e := range written {
		m.load(e)
	}
	var qs []gate.LedgerQuery
	for _, e := range series {
		qs = append(qs, gate.LedgerQuery{TenantID: e.TenantID, ActionType: e.ActionType, Subject: e.Subject},
			gate.LedgerQuery{TenantID: e.TenantID, ActionType: e.ActionType})
	}
	checkLedger(t, s, m, qs, 0)
	for _, since := range []time.Duration{10 * time.Second, 30 * time.Second, 59 * time.Second} {
		q := gate.LedgerQuery{TenantID: "acme", ActionType: "refund", Subject: "c-1", Since: gateAt(since)}
		got, want := total(t, s, q), 0
		for _, e := range written {
			if e.TenantID == "acme" && e.ActionType == "refund" && e.Subject == "c-1" && !e.At.Before(q.Since) {
				want++
			}
		}
		if got.Count < int64(want) {
			t.Errorf("since %v: %d entries, fewer than the %d whose own time is in the window", since, got.Count, want)
		}
	}
	if n := len(readAudit(t, s)); n != writers*writes {
		t.Errorf("%d audit entries, want %d", n, writers*writes)
	}
}

// TestGateLedgerBackfill checks the migration that gave the ledger its
// running totals, on a database that held entries before it. migrate must
// store old as a store of the schema before running totals did (in that
// order, each at its own time), migrate the database to the current
// schema and return its gate store. The totals of random windows must
// then equal a recount, before and after further writes.
func TestGateLedgerBackfill(t *testing.T, migrate func(t *testing.T, old []gate.LedgerEntry) gate.Store) {
	rng := newRand(t)
	old := randomLedger(rng, 500)
	// Stored in any order: the backfill numbers each series by time.
	rng.Shuffle(len(old), func(i, j int) { old[i], old[j] = old[j], old[i] })
	s := migrate(t, old)
	m := newLedgerModel()
	for _, e := range old {
		m.load(e)
	}
	// The backfill's sums are plain sums (see the migration): a looser
	// tolerance than the compensated ones', still far below a cent.
	const tol = 1e-10
	checkLedger(t, s, m, randomWindows(rng, old), tol)
	more := randomLedger(rng, 200)
	for i := range more {
		more[i].At = more[i].At.Add(time.Duration(rng.IntN(40)) * time.Minute)
	}
	slices.SortStableFunc(more, func(a, b gate.LedgerEntry) int { return a.At.Compare(b.At) })
	writeLedger(t, s, rng, "new", more)
	for _, e := range more {
		m.file(e)
	}
	checkLedger(t, s, m, randomWindows(rng, slices.Concat(old, more)), tol)
}
