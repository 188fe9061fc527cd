package delivery_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/adapter"
	"novaos.dev/novaos/delivery"
	"novaos.dev/novaos/dpop"
	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/internal/auth"
	"novaos.dev/novaos/internal/bench"
	deliverysvc "novaos.dev/novaos/internal/delivery"
	"novaos.dev/novaos/secret"
	"novaos.dev/novaos/store/sqlite"
)

const benchAdmin = "bench-admin-token"

// sqlitePlatform serves pull delivery over SQLite (synchronous=FULL,
// group commit) on an httptest server, with one pull instance and a
// DPoP-bound API token for it: the target of bench's delivery
// benchmarks. Invocations are offered as the execution gateway
// dispatches a pull instance's run (Service.Offer).
func sqlitePlatform(tb testing.TB) *bench.DeliveryTarget { return sqlitePlatformOf(tb, false) }

// sqlitePlatformOf is sqlitePlatform, recording DPoP proofs in the
// store when shared, as when other processes served from it.
func sqlitePlatformOf(tb testing.TB, shared bool) *bench.DeliveryTarget {
	tb.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(tb.TempDir(), "novaos.db"), nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	st := db.Stores()
	st.Shared = shared
	stamps := bench.NewDeliveryStamps(st.Delivery)
	st.Delivery = stamps

	srv := httptest.NewUnstartedServer(nil)
	base := "http://" + srv.Listener.Addr().String()
	ring, err := auth.Open("", auth.Options{Issuer: base, Algorithm: auth.EdDSA})
	if err != nil {
		tb.Fatal(err)
	}
	svc, err := deliverysvc.Mount(st, deliverysvc.Deps{Keys: ring, AdminToken: secret.New(benchAdmin), BaseURL: base}, nil)
	if err != nil {
		tb.Fatal(err)
	}
	mux := http.NewServeMux()
	for _, rt := range svc.Routes() {
		mux.Handle(rt.Pattern, rt.Handler)
	}
	srv.Config.Handler = mux
	srv.Start()
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); svc.Run(runCtx) }()
	tb.Cleanup(func() {
		_ = svc.Shutdown(context.Background())
		srv.Close()
		cancel()
		<-done
	})

	inst, err := st.Gateway.CreateInstance(ctx, gateway.Instance{ID: a2a.NewID(), TenantID: "bench", Name: "bench-agent",
		Delivery: gateway.DeliveryPull}, time.Now())
	if err != nil {
		tb.Fatal(err)
	}
	key, err := dpop.GenerateKey()
	if err != nil {
		tb.Fatal(err)
	}
	return &bench.DeliveryTarget{BaseURL: base, AgentID: inst.ID, Stamps: stamps,
		Credentials: adapter.Credentials{APIToken: secret.New(createAgentToken(tb, base, inst.ID, key)), DPoP: key},
		Offer: func(ctx context.Context) error {
			return svc.Offer(ctx, gateway.Run{ID: a2a.NewID(), TenantID: inst.TenantID, InstanceID: inst.ID, Status: gateway.StatusQueued,
				Turn: 1, Caller: gateway.Caller{Subject: "bench", UserID: "bench"}}, inst)
		}}
}

// createAgentToken issues an API token bound to key for agentID as the
// operator.
func createAgentToken(tb testing.TB, base, agentID string, key *dpop.Key) string {
	tb.Helper()
	body, _ := json.Marshal(delivery.TokenCreate{DPoPJKT: key.Thumbprint(), Name: "bench"})
	req, err := http.NewRequest(http.MethodPost, base+delivery.TokensPath(agentID), bytes.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+benchAdmin)
	req.Header.Set("X-Tenant-ID", "bench")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	var g delivery.TokenGrant
	if resp.StatusCode != http.StatusCreated || json.NewDecoder(resp.Body).Decode(&g) != nil {
		tb.Fatalf("createToken: %d", resp.StatusCode)
	}
	return g.Token
}

// BenchmarkGatewaySQLiteStoreAck measures invocations stored durably and
// acknowledged through the WebSocket gateway, end to end on SQLite: b.N
// invocations offered by 32 producers with at most 1,000 outstanding,
// each appended to the agent's stream (group commit), sent with a fresh
// token (recorded in one write per page), verified by the adapter SDK,
// stored in its SQLite inbox (synchronous=FULL, one commit per batch
// received) and acknowledged, the acknowledgement stored by the
// platform. events/s is b.N over the time from the first offer to the
// last acknowledgement; the ack latencies run from an invocation's
// append commit to its acknowledgement's, both at the platform's store.
func BenchmarkGatewaySQLiteStoreAck(b *testing.B) {
	t := sqlitePlatform(b)
	ctx := context.Background()
	d, err := bench.NewDeliveryBench(ctx, t, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	b.ResetTimer()
	res, err := d.Events(ctx, b.N)
	if err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	if tt := d.Totals(); res.Acked != uint64(b.N) || tt.Offered != uint64(b.N) || tt.Stored != uint64(b.N) {
		b.Fatalf("%d acknowledged and %+v of %d", res.Acked, tt, b.N)
	}
	b.ReportMetric(res.Throughput, "events/s")
	b.ReportMetric(ms(res.Latency.P50), "p50-ack-ms")
	b.ReportMetric(ms(res.Latency.P99), "p99-ack-ms")
	b.ReportMetric(ms(res.InAdapter.P99), "p99-adapter-ms")
	b.ReportMetric(res.PerCommit, "events/commit")
	b.ReportMetric(float64(res.CPUPerEvent.Microseconds()), "cpu-µs/event")
}

// BenchmarkGatewaySQLiteResume measures the adapter's resume after a
// dropped connection: b.N times, the socket under the adapter's gateway
// session is closed, an invocation offered, and the session resumed
// after the adapter's reconnect backoff (a random part of 500 ms by
// default). resume-ms runs from the cut to the session resumed, acked-ms
// to the invocation's acknowledgement stored by the platform.
func BenchmarkGatewaySQLiteResume(b *testing.B) {
	t := sqlitePlatform(b)
	ctx := context.Background()
	d, err := bench.NewDeliveryBench(ctx, t, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	b.ResetTimer()
	res, err := d.Resume(ctx, b.N)
	if err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	if res.Resumed != b.N || res.Errors != 0 {
		b.Fatalf("%d of %d resumed, %d errors; first: %s", res.Resumed, b.N, res.Errors, res.FirstError)
	}
	b.ReportMetric(ms(res.Latency.P50), "p50-resume-ms")
	b.ReportMetric(ms(res.Latency.P99), "p99-resume-ms")
	b.ReportMetric(ms(res.Acked.P99), "p99-acked-ms")
	b.ReportMetric(ms(res.BeyondBackoff.P99), "p99-beyond-backoff-ms")
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// BenchmarkSQLiteDPoPRequests measures agent requests over REST with a
// DPoP proof each, on SQLite, with the proofs remembered in the
// process's memory (proofs=memory, the single-process default) and also
// recorded in the store (proofs=store, as replicas sharing a database
// do): triggerers, a read that writes nothing else, from 8 agents'
// clients per core at once (requests/s); poll-ack, one client taking
// b.N invocations, each delivered with a fresh token, by polls of page
// events and acknowledging each page (events/s).
func BenchmarkSQLiteDPoPRequests(b *testing.B) {
	for _, proofs := range []string{"memory", "store"} {
		shared := proofs == "store"
		b.Run("op=triggerers/proofs="+proofs, func(b *testing.B) {
			t := sqlitePlatformOf(b, shared)
			c := benchClient(b, t)
			warmUp(b, c, t)
			b.SetParallelism(8)
			b.ResetTimer()
			start, cpu := time.Now(), cpuMeter()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := c.Triggerers(b.Context(), t.AgentID); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "requests/s")
			cpu(b, b.N, "cpu-µs/request")
		})
		for _, page := range []int{1, 100} {
			b.Run("op=poll-ack/page="+strconv.Itoa(page)+"/proofs="+proofs, func(b *testing.B) {
				t := sqlitePlatformOf(b, shared)
				c := benchClient(b, t)
				warmUp(b, c, t)
				ctx := b.Context()
				if _, err := c.PollEvents(ctx, t.AgentID, "bench", 1, 0); err != nil { // opens the consumer at the head
					b.Fatal(err)
				}
				appendInvocations(b, t, b.N)
				b.ResetTimer()
				start, cpu := time.Now(), cpuMeter()
				for got := 0; got < b.N; {
					p, err := c.PollEvents(ctx, t.AgentID, "bench", page, 0)
					if err != nil || len(p.Events) == 0 {
						b.Fatalf("poll: %d events, %v", len(p.Events), err)
					}
					got += len(p.Events)
					if _, err := c.AckEvents(ctx, t.AgentID, "bench", p.Events[len(p.Events)-1].Seq); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "events/s")
				cpu(b, b.N, "cpu-µs/event")
			})
		}
	}
}

// cpuMeter starts measuring the process's CPU time; the function it
// returns reports it per op of n, where it can be read.
func cpuMeter() func(b *testing.B, n int, unit string) {
	cpu0, ok0 := bench.ProcessCPU()
	return func(b *testing.B, n int, unit string) {
		if cpu1, ok1 := bench.ProcessCPU(); ok0 && ok1 && n > 0 {
			b.ReportMetric(float64((cpu1-cpu0).Microseconds())/float64(n), unit)
		}
	}
}

// benchClient is the adapter SDK's client of t's agent.
func benchClient(tb testing.TB, t *bench.DeliveryTarget) *adapter.Client {
	tb.Helper()
	c, err := adapter.NewClient(t.BaseURL, t.Credentials, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// warmUp sends requests before the timer starts, so that whichever
// case runs first does not pay for the process's start (connections,
// the heap's growth).
func warmUp(tb testing.TB, c *adapter.Client, t *bench.DeliveryTarget) {
	tb.Helper()
	for range 200 {
		if _, err := c.Triggerers(context.Background(), t.AgentID); err != nil {
			tb.Fatal(err)
		}
	}
}

// appendInvocations stores n invocations with grants in t's agent's
// stream, in batches.
func appendInvocations(tb testing.TB, t *bench.DeliveryTarget, n int) {
	tb.Helper()
	for done := 0; done < n; {
		batch := make([]delivery.StoredEvent, 0, min(n-done, delivery.MaxPage))
		for range cap(batch) {
			run, id := a2a.NewID(), a2a.NewID()
			payload, _ := json.Marshal(delivery.InvocationPayload{TriggerKind: delivery.TriggerMessage, RunID: run, ThreadID: run,
				MessageID: run + "/1"})
			batch = append(batch, delivery.StoredEvent{AgentID: t.AgentID, TenantID: "bench", ID: id, Type: delivery.EventInvocation,
				RunID: run, Payload: payload, Grant: &delivery.Claims{Issuer: t.BaseURL, Audience: t.AgentID, Subject: "bench",
					RunID: run, ThreadID: run, EventID: id, MessageID: run + "/1", BillingMode: delivery.BillingPlatform,
					ToolClass: delivery.ToolChat}})
		}
		if _, err := t.Stamps.AppendEvents(context.Background(), batch); err != nil {
			tb.Fatal(err)
		}
		done += len(batch)
	}
}
