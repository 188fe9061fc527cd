package delivery

import (
	"context"
	"path/filepath"
	"strconv"
	"testing"

	"novaos.dev/novaos/delivery"
	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/store/sqlite"
)

// BenchmarkHeartbeat measures a heartbeat's cost by the runs it lists
// (Service.Heartbeat, no HTTP): none; 100 started runs whose leases are
// fresh (the steady state: every run was written less than a quarter
// window ago, and the heartbeat reads none); and 100 whose leases are
// all due (each heartbeat reads and writes every run: the worst case,
// about every second heartbeat at the default window and interval), on
// the memory store and on SQLite (synchronous=FULL). Compare each with
// runs=0 on the same store.
func BenchmarkHeartbeat(b *testing.B) {
	stores := []struct {
		name string
		open func(b *testing.B) gateway.Store
	}{
		{"memory", func(*testing.B) gateway.Store { return gateway.NewMemoryStore() }},
		{"sqlite", func(b *testing.B) gateway.Store {
			db, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "novaos.db"), nil)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = db.Close() })
			return db.Stores().Gateway
		}},
	}
	cases := []struct {
		name string
		runs int
		due  bool
	}{
		{"runs=0", 0, false},
		{"runs=100/fresh", 100, false},
		{"runs=100/due", 100, true},
	}
	for _, st := range stores {
		for _, c := range cases {
			b.Run(st.name+"/"+c.name, func(b *testing.B) {
				h := newHarnessOver(b, &Options{RunStaleAfter: staleWindow, HeartbeatInterval: staleBeat}, st.open(b), nil)
				ctx := context.Background()
				ids := make([]string, c.runs)
				for i := range ids {
					ids[i] = "run-" + strconv.Itoa(i)
					now := h.clock.Now()
					if _, _, err := h.runs.CreateRun(ctx, gateway.RunWrite{Run: gateway.Run{ID: ids[i], TenantID: testTenant, InstanceID: h.inst.ID,
						ThreadID: ids[i], Status: gateway.StatusRunning, Input: "hello", Turn: 1, LeaseOwner: gateway.PullLeaseOwner,
						LeaseUntil: now.Add(staleWindow), Pull: &gateway.PullState{OfferedTurn: 1, Starts: 1}}, Now: now}); err != nil {
						b.Fatal(err)
					}
				}
				a := Agent{ID: h.inst.ID, TenantID: testTenant, Instance: h.inst}
				hb := delivery.Heartbeat{Status: delivery.HeartbeatOK, Details: delivery.HeartbeatDetails{ActiveRuns: ids}}
				if _, err := h.svc.Heartbeat(ctx, a, hb); err != nil { // the leases are noted
					b.Fatal(err)
				}
				for b.Loop() {
					if c.due {
						h.clock.Advance(staleWindow / 2)
					}
					if _, err := h.svc.Heartbeat(ctx, a, hb); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				for _, id := range ids {
					if r := h.run(id); r.Status != gateway.StatusRunning || r.LeaseUntil.Sub(h.clock.Now()) < h.svc.refreshBelow() {
						b.Fatalf("run %s is %s, leased until %s at %s", id, r.Status, r.LeaseUntil, h.clock.Now())
					}
				}
			})
		}
	}
}
