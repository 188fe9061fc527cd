package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"novaos.dev/novaos/gate"
)

// BenchmarkGateStore measures a gate store's writes (BenchmarkGateLedger
// its ledger totals).
//
// "WriteAction" is one gated write's durable steps per op: its creation
// (with its verdict's audit entry and a ledger entry) and one
// compare-and-set (a claim, with its audit entry); serially and from 8 ×
// GOMAXPROCS goroutines, reporting actions/s. "HeartbeatBaseline", one
// single-row durable write per op, is the same run's baseline.
func BenchmarkGateStore(b *testing.B, s gate.Store) {
	ctx := context.Background()
	run := fmt.Sprintf("bench-%d", benchSeq.Add(1))
	action := func(i int64) gate.ActionRecord {
		return gate.ActionRecord{
			TenantID: run, SessionID: fmt.Sprintf("s%d", i%64), ActionID: fmt.Sprintf("a%d", i), ActionType: "refund",
			TeamID: "team", AgentID: "agent", Action: json.RawMessage(`{"type":"refund","amount":12.5,"customer":"c-1"}`),
			Fingerprint: "fp", FingerprintScheme: "jcs-sha256", CommitmentVersion: "v1",
			State: gate.ActionPassed, Verdict: gate.Pass, RuleIDCited: "refund-limit", Rationale: "within limits",
			Decision: json.RawMessage(`{"matched":["refund-limit"],"judge_ms":300}`),
		}
	}
	lifecycle := func(i int64) error {
		now := time.Now()
		r, err := s.WriteAction(ctx, gate.ActionWrite{Record: action(i), Now: now,
			Audit:  &gate.AuditEntry{Kind: "verdict", TenantID: run, Body: json.RawMessage(`{"verdict":"pass"}`)},
			Ledger: []gate.LedgerEntry{{ActionType: "refund", Subject: "c-1", Amount: 12.5}}})
		if err != nil {
			return err
		}
		r.State, r.FencingToken, r.ClaimedAt = gate.ActionClaimed, 1, now
		_, err = s.WriteAction(ctx, gate.ActionWrite{Record: r, ExpectVersion: r.Version, Now: now,
			Audit: &gate.AuditEntry{Kind: "claim", TenantID: run, Body: json.RawMessage(`{"token":1}`)}})
		return err
	}
	perSecond := func(b *testing.B, n int, start time.Time, unit string) {
		b.ReportMetric(float64(n)/time.Since(start).Seconds(), unit)
	}
	b.Run("WriteAction", func(b *testing.B) {
		start, n := time.Now(), 0
		for b.Loop() {
			if err := lifecycle(benchSeq.Add(1)); err != nil {
				b.Fatal(err)
			}
			n++
		}
		perSecond(b, n, start, "actions/s")
	})
	b.Run("WriteActionParallel", func(b *testing.B) {
		var mu sync.Mutex
		start, n := time.Now(), 0
		b.SetParallelism(8)
		b.RunParallel(func(pb *testing.PB) {
			mine := 0
			for pb.Next() {
				if err := lifecycle(benchSeq.Add(1)); err != nil {
					b.Error(err)
					return
				}
				mine++
			}
			mu.Lock()
			n += mine
			mu.Unlock()
		})
		perSecond(b, n, start, "actions/s")
	})
	b.Run("HeartbeatBaseline", func(b *testing.B) {
		start, n := time.Now(), 0
		for b.Loop() {
			if _, err := s.Heartbeat(ctx, time.Now()); err != nil {
				b.Fatal(err)
			}
			n++
		}
		perSecond(b, n, start, "writes/s")
	})
}

// BenchmarkGateLedger measures gate.Store.Aggregate over a ledger of 1,000
// entries and again over one of 100,000, each filed oldest first as a
// gate files them: a tenant's refunds to 1,000 customers (three in five
// entries; 60 per customer at 100k), its payments and another tenant's
// refunds, spread evenly over the 8 days before the run. Each size has its own tenant, so its windows
// hold only its own entries while the table holds every entry filed so
// far. The queries, at each size:
//
//   - "Batch5": the five aggregates of `novaos bench gate`'s rule set in
//     one call: a customer's refunds over 168 h, 1 h and 24 h (sum), and
//     the tenant's over 1 h and 24 h (sum);
//   - "Tenant24h": the tenant's refunds over 24 h (7,500 entries at 100k);
//   - "AllTime": every refund of the tenant (60,000 at 100k);
//   - "Small": a customer's refunds over the last 10 minutes (an entry or
//     none), where counting was cheap already.
//
// Each runs as "totals", the store's Aggregate, and, with opts.Recount
// set, as "recount", the same run's baseline (see GateLedgerOptions).
func BenchmarkGateLedger(b *testing.B, s gate.Store, opts *GateLedgerOptions) {
	var o GateLedgerOptions
	if opts != nil {
		o = *opts
	}
	recount := o.Recount
	ctx := context.Background()
	run := fmt.Sprintf("ledger-%d", benchSeq.Add(1))
	now := time.Now()
	const (
		customers = 1000
		span      = 8 * 24 * time.Hour
	)
	filled := 0
	for _, size := range []int{1_000, 100_000} {
		tenant := fmt.Sprintf("%s-%dk", run, size/1000)
		es := make([]gate.LedgerEntry, size-filled)
		step := span / time.Duration(len(es))
		for k := range es {
			// Five consecutive entries share a customer, so every
			// customer has refunds.
			e := gate.LedgerEntry{TenantID: tenant, ActionType: "refund", Subject: fmt.Sprintf("c-%d", (k/5*7919)%customers),
				Amount: float64(1+(k*31)%50000) / 100, At: now.Add(-span + time.Duration(k)*step)}
			switch k % 5 {
			case 3:
				e.ActionType = "payment"
			case 4:
				e.TenantID += "-other"
			}
			es[k] = e
		}
		for i := 0; i < len(es); i += 500 {
			r := gate.ActionRecord{TenantID: tenant, SessionID: "seed", ActionID: fmt.Sprintf("seed-%d", i), ActionType: "refund",
				State: gate.ActionExecuted, Verdict: gate.Pass}
			if _, err := s.WriteAction(ctx, gate.ActionWrite{Record: r, Now: now, Ledger: es[i:min(i+500, len(es))]}); err != nil {
				b.Fatal(err)
			}
		}
		filled = size
		if o.Settle != nil {
			if err := o.Settle(ctx); err != nil {
				b.Fatal(err)
			}
		}
		// The customer of the latest refunds, as a rule set asks about
		// the customer of the write it judges.
		hot := es[len(es)/5*5-5].Subject
		customer := func(window time.Duration) gate.LedgerQuery {
			return gate.LedgerQuery{TenantID: tenant, ActionType: "refund", Subject: hot, Since: now.Add(-window)}
		}
		tenantWide := func(window time.Duration) gate.LedgerQuery {
			return gate.LedgerQuery{TenantID: tenant, ActionType: "refund", Since: now.Add(-window)}
		}
		for _, bq := range []struct {
			name string
			qs   []gate.LedgerQuery
		}{
			{"Batch5", []gate.LedgerQuery{customer(168 * time.Hour), customer(time.Hour), customer(24 * time.Hour),
				tenantWide(time.Hour), tenantWide(24 * time.Hour)}},
			{"Tenant24h", []gate.LedgerQuery{tenantWide(24 * time.Hour)}},
			{"AllTime", []gate.LedgerQuery{{TenantID: tenant, ActionType: "refund"}}},
			{"Small", []gate.LedgerQuery{customer(10 * time.Minute)}},
		} {
			totals, err := s.Aggregate(ctx, bq.qs)
			if err != nil {
				b.Fatal(err)
			}
			if recount != nil {
				for i, q := range bq.qs {
					want, err := recount(ctx, q)
					if err != nil {
						b.Fatal(err)
					}
					if totals[i].Count != want.Count || math.Abs(totals[i].Sum-want.Sum) > 1e-6*(1+math.Abs(want.Sum)) {
						b.Fatalf("%s query %d: Aggregate %+v, recount %+v", bq.name, i, totals[i], want)
					}
				}
			}
			b.Run(fmt.Sprintf("%s/ledger=%dk/totals", bq.name, size/1000), func(b *testing.B) {
				for b.Loop() {
					if _, err := s.Aggregate(ctx, bq.qs); err != nil {
						b.Fatal(err)
					}
				}
			})
			if recount == nil {
				continue
			}
			b.Run(fmt.Sprintf("%s/ledger=%dk/recount", bq.name, size/1000), func(b *testing.B) {
				for b.Loop() {
					for _, q := range bq.qs {
						if _, err := recount(ctx, q); err != nil {
							b.Fatal(err)
						}
					}
				}
			})
		}
	}
}

// GateLedgerOptions tunes BenchmarkGateLedger. Nil means none.
type GateLedgerOptions struct {
	// Recount totals one query the way stores did before running totals:
	// a count and sum over the window's entries, read from that schema's
	// covering indexes. Set, each query also runs as "recount", and every
	// total is checked against recount's before timing.
	Recount func(ctx context.Context, q gate.LedgerQuery) (gate.LedgerTotal, error)
	// Settle, when set, runs after each fill, before any timing: a
	// PostgreSQL store vacuums and analyzes there, as autovacuum would
	// in time, so that both ways read a settled table.
	Settle func(ctx context.Context) error
}
