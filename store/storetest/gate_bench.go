package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"novaos.dev/novaos/gate"
)

// BenchmarkGateStore measures a gate store.
//
// "WriteAction" is one gated write's durable steps per op: its creation
// (with its verdict's audit entry and a ledger entry) and one
// compare-and-set (a claim, with its audit entry); serially and from 8 ×
// GOMAXPROCS goroutines, reporting actions/s. "HeartbeatBaseline", one
// single-row durable write per op, is the same run's baseline.
//
// "Aggregate" totals one subject's entries (and one action type's, for
// "any subject") in a ledger of 1,000 entries and again once it holds
// 100,000; the entries counted are the same 50 each time, the rest are
// other subjects, types, tenants and older times. A store that reads only
// what it counts takes about as long at both sizes.
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
	// The ledger is measured first, so that its sizes are exact.
	since := time.Now().Truncate(time.Second)
	tenant := run + "-ledger"
	// The 50 entries every query counts.
	hot := make([]gate.LedgerEntry, 50)
	for i := range hot {
		hot[i] = gate.LedgerEntry{TenantID: tenant, ActionType: "refund", Subject: "c-hot", Amount: 2,
			At: since.Add(time.Duration(i) * time.Millisecond)}
	}
	filled := 0
	fill := func(b *testing.B, to int) {
		b.Helper()
		const perWrite = 500
		var writes [][]gate.LedgerEntry
		if filled == 0 {
			writes = append(writes, hot)
			filled = len(hot)
		}
		for filled < to {
			n := min(perWrite, to-filled)
			es := make([]gate.LedgerEntry, n)
			for j := range es {
				k := filled + j
				e := gate.LedgerEntry{TenantID: tenant, ActionType: "refund", Subject: fmt.Sprintf("c-%d", k%997), Amount: 1,
					At: since.Add(-time.Hour - time.Duration(k)*time.Microsecond)}
				switch k % 4 {
				case 1: // the hot subject's history, before since
					e.Subject = "c-hot"
				case 2: // another action type, recent
					e.ActionType, e.At = "payment", since.Add(time.Duration(k)*time.Microsecond)
				case 3: // another tenant, recent
					e.TenantID, e.Subject, e.At = tenant+"-other", "c-hot", since.Add(time.Duration(k)*time.Microsecond)
				}
				es[j] = e
			}
			writes = append(writes, es)
			filled += n
		}
		var wg sync.WaitGroup
		jobs := make(chan int)
		for range 8 {
			wg.Go(func() {
				for i := range jobs {
					r := action(benchSeq.Add(1))
					r.TenantID = tenant
					if _, err := s.WriteAction(ctx, gate.ActionWrite{Record: r, Now: since, Ledger: writes[i]}); err != nil {
						b.Error(err)
					}
				}
			})
		}
		for i := range writes {
			jobs <- i
		}
		close(jobs)
		wg.Wait()
	}
	for _, size := range []int{1_000, 100_000} {
		fill(b, size)
		if b.Failed() {
			b.FailNow()
		}
		for _, q := range []struct {
			name string
			q    gate.LedgerQuery
		}{
			{"Subject", gate.LedgerQuery{TenantID: tenant, ActionType: "refund", Subject: "c-hot", Since: since}},
			{"AnySubject", gate.LedgerQuery{TenantID: tenant, ActionType: "refund", Since: since}},
		} {
			b.Run(fmt.Sprintf("Aggregate%s/ledger=%dk", q.name, size/1000), func(b *testing.B) {
				for b.Loop() {
					t, err := s.Aggregate(ctx, q.q)
					if err != nil {
						b.Fatal(err)
					}
					if t.Count != int64(len(hot)) || t.Sum != float64(2*len(hot)) {
						b.Fatalf("Aggregate = %+v, want the %d hot entries", t, len(hot))
					}
				}
			})
		}
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
