package gatesvc

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"novaos.dev/novaos/gate"
	"novaos.dev/novaos/internal/bench"
	"novaos.dev/novaos/internal/gatesvc/rules"
)

// The benchmarks run the rule set of `novaos bench gate` (bench.GateRuleSet:
// 20 CEL rules, five ledger aggregates, three per customer and two
// tenant-wide) on refunds shaped like the bench's, none of which a rule
// stops, so every condition is evaluated in full.

var benchAgent = &Caller{Tenant: "acme", Actor: "bench-agent", Grants: func(string) bool { return true }}

// benchFixture is a service over a fresh SQLite store with the bench rule
// set, one open session, and a ledger holding ledgerN refunds of the last
// 23 hours spread over bench.GateCustomers customers.
func benchFixture(b *testing.B, ledgerN int) (*fixture, string) {
	b.Helper()
	f := newFixture(b, &Options{Now: time.Now})
	f.rules(bench.GateRuleSet)
	ctx := context.Background()
	sid := "bench-session"
	if _, _, err := f.svc.OpenSession(ctx, benchAgent, gate.SessionRequest{TenantID: "acme", TeamID: "support",
		AgentID: "bench-agent", SessionID: sid, MaxHoldS: 300}); err != nil {
		b.Fatal(err)
	}
	if ledgerN > 0 {
		now := time.Now()
		ledger := make([]gate.LedgerEntry, ledgerN)
		for i := range ledger {
			n := uint64(i)
			ledger[i] = gate.LedgerEntry{TenantID: "acme", ActionType: bench.GateActionType, Subject: bench.GateCustomer(n),
				Amount: bench.GateAmount(n), At: now.Add(-time.Duration(n%(23*3600)) * time.Second),
				SessionID: sid, ActionID: "seed-" + strconv.Itoa(i)}
		}
		// Oldest first: a store files an entry no earlier than its
		// series' latest.
		slices.SortStableFunc(ledger, func(a, b gate.LedgerEntry) int { return a.At.Compare(b.At) })
		// One write files them all, as a seed; the service files one
		// entry per granted claim.
		rec := gate.ActionRecord{TenantID: "acme", SessionID: sid, ActionID: "seed", ActionType: bench.GateActionType,
			State: gate.ActionExecuted, Verdict: gate.Pass, Action: json.RawMessage(`{}`)}
		if _, err := f.store.WriteAction(ctx, gate.ActionWrite{Record: rec, Now: now, Ledger: ledger}); err != nil {
			b.Fatal(err)
		}
	}
	return f, sid
}

// benchAction is the raw action of the bench's nth refund.
func benchAction(sid, id string, n uint64) []byte {
	amount := bench.GateAmount(n)
	a := gate.Action{ActionID: id, ActionType: bench.GateActionType, TenantID: "acme", TeamID: "support", AgentID: "bench-agent",
		SessionID: sid, Reasoning: "the customer was charged twice for one order",
		Context: gate.CSContext{CustomerID: bench.GateCustomer(n), Amount: &amount, Currency: "EUR"}}
	raw, err := json.Marshal(a)
	if err != nil {
		panic(err)
	}
	return raw
}

// BenchmarkDecide is one gated write's decision as the HTTP handler asks
// for it: Service.Submit with claim, rules only, recorded durably in
// SQLite (the acknowledgement, a second write, is not in it). serial is
// one writer at a time, so each op waits for its own commit; parallel
// has GOMAXPROCS×8 writers, whose decisions the store commits together.
func BenchmarkDecide(b *testing.B) {
	for _, mode := range []string{"serial", "parallel"} {
		b.Run(mode, func(b *testing.B) {
			f, sid := benchFixture(b, 1000)
			ctx := context.Background()
			var seq atomic.Uint64
			submit := func() {
				n := seq.Add(1)
				v, err := f.svc.Submit(ctx, benchAgent, benchAction(sid, "a-"+strconv.FormatUint(n, 10), n), true)
				if err != nil {
					b.Fatal(err)
				}
				if v.Verdict != gate.Pass || v.Claim == nil {
					b.Fatalf("verdict %+v, want a claimed pass", v)
				}
			}
			b.ReportAllocs()
			if mode == "serial" {
				for b.Loop() {
					submit()
				}
				return
			}
			b.SetParallelism(8)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					submit()
				}
			})
		})
	}
}

// BenchmarkRules20 measures the rule layer of one decision at two ledger
// sizes, in parts: cel is the 20 conditions over ready aggregates (the
// CPU the issue bounds at 10 µs), aggregates the five ledger queries
// alone, and applyRules both with the decision's bookkeeping, as Submit
// runs it.
func BenchmarkRules20(b *testing.B) {
	for _, size := range []int{1_000, 100_000} {
		b.Run(fmt.Sprintf("ledger=%dk", size/1000), func(b *testing.B) {
			f, sid := benchFixture(b, size)
			ctx := context.Background()
			set, err := f.svc.rules.current(ctx, "acme")
			if err != nil || set == nil {
				b.Fatalf("rule set %v: %v", set, err)
			}
			if n := len(set.compiled.Set().Rules); n != 21 {
				b.Fatalf("%d rules, want 20 with a condition and one for the judge", n)
			}
			sess, err := f.store.GetSession(ctx, "acme", sid)
			if err != nil {
				b.Fatal(err)
			}
			n := uint64(42)
			act, err := gate.DecodeAction(benchAction(sid, "a-1", n))
			if err != nil {
				b.Fatal(err)
			}
			var ctxMap map[string]any
			var wire struct{ Context json.RawMessage }
			if err := json.Unmarshal(benchAction(sid, "a-1", n), &wire); err != nil {
				b.Fatal(err)
			}
			if err := json.Unmarshal(wire.Context, &ctxMap); err != nil {
				b.Fatal(err)
			}
			// aggregatesOf runs the rule set's ledger queries whose scope
			// scope selects ("" for all of them).
			aggregatesOf := func(scope string) map[string]float64 {
				agg, err := aggregates(ctx, f.store, set, "acme", time.Now(), func(a gate.AggregateSpec) (string, bool) {
					return bench.GateCustomer(n), scope == "" || (scope == "tenant") == (a.Scope == "tenant")
				})
				if err != nil {
					b.Fatal(err)
				}
				return agg
			}
			agg := aggregatesOf("")
			if agg["tenant_refund_sum_24h"] == 0 || agg["refunds_168h"] == 0 {
				b.Fatalf("aggregates %v do not see the seeded ledger", agg)
			}
			b.Run("cel", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					res := set.compiled.Evaluate(ctx, rules.Activation{
						"action":   map[string]any{"type": act.ActionType, "id": act.ActionID, "context_type": act.Context.ContextType(), "reasoning": act.Reasoning, "resume": act.Resume},
						"ctx":      ctxMap,
						"evidence": evidenceList(act.Evidence),
						"agg":      agg,
						"session":  map[string]string{"tenant": act.TenantID, "team": act.TeamID, "agent": act.AgentID, "id": act.SessionID},
						"now":      time.Now(),
					})
					if res.Verdict != rules.Pass {
						b.Fatalf("verdict %v: %+v", res.Verdict, res.Matched)
					}
				}
			})
			// The per-customer queries read that customer's entries; the
			// tenant-wide ones read every entry of their window.
			for _, scope := range []string{"", "subject", "tenant"} {
				name := "aggregates"
				if scope != "" {
					name += "/" + scope
				}
				b.Run(name, func(b *testing.B) {
					b.ReportAllocs()
					for b.Loop() {
						aggregatesOf(scope)
					}
				})
			}
			b.Run("applyRules", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					var d gate.Decision
					out, err := f.svc.applyRules(ctx, set, sess, &act, ctxMap, time.Now(), &d)
					if err != nil || out.verdict != gate.Pass {
						b.Fatalf("%+v %v: %+v", out, err, d.Matched)
					}
				}
			})
		})
	}
}
