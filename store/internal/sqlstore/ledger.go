package sqlstore

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"novaos.dev/novaos/gate"
)

// The gate ledger's running totals, as both SQL stores keep them (their
// 0009_gate_ledger_totals migrations).
//
// Every entry belongs to two series: its subject's (tenant, action type,
// subject) and its action type's, the wide series (tenant, action type)
// that a gate.LedgerQuery without a subject reads. Each entry is filed
// with both series' count and sum up to and including itself, and a head
// row per series holds its latest values. A window's total is then the
// head minus the last entry before the window: two index lookups, however
// many entries the window or the ledger holds.
//
// Differencing needs each series in time order, so an entry is filed at
// the later of its At and the latest time of either of its series (see
// gate.LedgerEntry).

// RunningTotal is a series' count and sum from its first entry. The sum is
// the unevaluated pair Hi + Lo: Hi is the sum as float64 rounds it and Lo
// what that rounding dropped, kept by TwoSum (Knuth's and Møller's
// error-free addition). A window's sum is a difference of two such sums,
// and with Hi alone it would keep only the digits the lifetime's
// magnitude leaves: after 10^12 in total, float64 resolves 10^-4, after
// 10^15 a tenth. With Lo the difference keeps its cents for any lifetime
// below float64's range.
type RunningTotal struct {
	N      int64
	Hi, Lo float64
}

// twoSum returns a+b rounded and the rounding's error: s+e == a+b exactly
// (for finite a, b and s).
func twoSum(a, b float64) (s, e float64) {
	s = a + b
	bb := s - a
	e = (a - (s - bb)) + (b - bb)
	return s, e
}

// Add counts one entry of amount. A non-finite amount, or one that takes
// the sum past float64's range, is refused with gate.ErrLedgerAmount and
// leaves t as it was.
func (t *RunningTotal) Add(amount float64) error {
	if math.IsNaN(amount) || math.IsInf(amount, 0) {
		return fmt.Errorf("amount %v: %w", amount, gate.ErrLedgerAmount)
	}
	s, e := twoSum(t.Hi, amount)
	// Renormalized, so that Lo stays below half of Hi's last digit and
	// Hi is the pair's sum rounded; TwoSum, not the cheaper Fast2Sum, as
	// a negative amount can cancel Hi down below Lo.
	hi, lo := twoSum(s, e+t.Lo)
	if math.IsInf(hi, 0) || math.IsNaN(hi) || math.IsNaN(lo) {
		return fmt.Errorf("amount %v takes the running sum %v past float64's range: %w", amount, t.Hi, gate.ErrLedgerAmount)
	}
	t.N, t.Hi, t.Lo = t.N+1, hi, lo
	return nil
}

// Sub is the total of the entries after base up to t, both points of one
// series with base the earlier (the zero RunningTotal: before the first
// entry). When the window is small beside the lifetime, Hi's difference is
// exact (Sterbenz) and Lo's brings back what the lifetime's rounding
// dropped.
func (t RunningTotal) Sub(base RunningTotal) gate.LedgerTotal {
	return gate.LedgerTotal{Count: t.N - base.N, Sum: (t.Hi - base.Hi) + (t.Lo - base.Lo)}
}

// Total is every entry's total up to t.
func (t RunningTotal) Total() gate.LedgerTotal { return t.Sub(RunningTotal{}) }

// SubjectSeries names the series of one subject's entries.
type SubjectSeries struct{ TenantID, ActionType, Subject string }

// WideSeries names the series of an action type's entries, whatever
// their subject.
type WideSeries struct{ TenantID, ActionType string }

// LedgerSeriesOf returns the two series e belongs to.
func LedgerSeriesOf(e gate.LedgerEntry) (SubjectSeries, WideSeries) {
	return SubjectSeries{e.TenantID, e.ActionType, e.Subject}, WideSeries{e.TenantID, e.ActionType}
}

// LedgerSeries returns the series es belong to, each once and sorted
// (byte-wise by tenant, action type, subject): the order in which a store
// whose writers run concurrently locks their heads, subjects' before
// action types', so that two writes never wait for each other's locks.
func LedgerSeries(es []gate.LedgerEntry) ([]SubjectSeries, []WideSeries) {
	var subjects []SubjectSeries
	var wides []WideSeries
	for _, e := range es {
		s, w := LedgerSeriesOf(e)
		subjects, wides = append(subjects, s), append(wides, w)
	}
	slices.SortFunc(subjects, func(a, b SubjectSeries) int {
		return cmp.Or(cmp.Compare(a.TenantID, b.TenantID), cmp.Compare(a.ActionType, b.ActionType), cmp.Compare(a.Subject, b.Subject))
	})
	slices.SortFunc(wides, func(a, b WideSeries) int {
		return cmp.Or(cmp.Compare(a.TenantID, b.TenantID), cmp.Compare(a.ActionType, b.ActionType))
	})
	return slices.Compact(subjects), slices.Compact(wides)
}

// LedgerHead is a series' latest values: its running total and the time
// of its latest entry in microseconds (Micros).
type LedgerHead struct {
	RunningTotal
	AtUS int64
}

// LedgerHeads are the heads of the series a write's entries belong to, as
// the write's transaction read them; a series without a head has none yet.
type LedgerHeads struct {
	Subject map[SubjectSeries]LedgerHead
	Wide    map[WideSeries]LedgerHead
}

// NewLedgerHeads returns an empty LedgerHeads to fill in.
func NewLedgerHeads() LedgerHeads {
	return LedgerHeads{Subject: map[SubjectSeries]LedgerHead{}, Wide: map[WideSeries]LedgerHead{}}
}

// FiledEntry is a ledger row: the entry, the time it is filed at
// (microseconds), and both series' running totals including it.
type FiledEntry struct {
	gate.LedgerEntry
	AtUS                    int64
	SubjectTotal, WideTotal RunningTotal
}

// File files es in their order after the heads h and moves h past them,
// so that the store writes the rows and then h's heads. Each entry is
// filed at the later of its At and its two series' latest times, which
// keeps both series in time order. An amount that is not finite, or that
// takes a series' sum past float64's range, fails the whole write with
// gate.ErrLedgerAmount; h is then half-moved and must be dropped with the
// write.
func (h LedgerHeads) File(es []gate.LedgerEntry) ([]FiledEntry, error) {
	out := make([]FiledEntry, len(es))
	for i, e := range es {
		sk, wk := LedgerSeriesOf(e)
		s, w := h.Subject[sk], h.Wide[wk]
		at := max(Micros(e.At), s.AtUS, w.AtUS)
		if err := s.Add(e.Amount); err != nil {
			return nil, fmt.Errorf("ledger entry %d of %s/%s/%s: %w", i, e.TenantID, e.ActionType, e.Subject, err)
		}
		if err := w.Add(e.Amount); err != nil {
			return nil, fmt.Errorf("ledger entry %d of %s/%s: %w", i, e.TenantID, e.ActionType, err)
		}
		s.AtUS, w.AtUS = at, at
		h.Subject[sk], h.Wide[wk] = s, w
		out[i] = FiledEntry{LedgerEntry: e, AtUS: at, SubjectTotal: s.RunningTotal, WideTotal: w.RunningTotal}
	}
	return out, nil
}

// ReadLedgerTotals reads the result of gate.Store.Aggregate's statement
// into out, the totals in the order of the queries. Both stores select,
// for each query: its index in the batch, its series' head (n, hi, lo)
// and the series' last entry before the window (n, hi, lo), zeros for
// either when there is none.
func ReadLedgerTotals(rows Rows, out []gate.LedgerTotal) error {
	for rows.Next() {
		var i int
		var head, base RunningTotal
		if err := rows.Scan(&i, &head.N, &head.Hi, &head.Lo, &base.N, &base.Hi, &base.Lo); err != nil {
			return err
		}
		if i < 0 || i >= len(out) {
			return fmt.Errorf("ledger total for query %d of %d", i, len(out))
		}
		out[i] = head.Sub(base)
	}
	return rows.Err()
}
