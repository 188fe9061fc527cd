package adapter

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"novaos.dev/novaos/delivery"
)

// benchHandler is a Handler that is never called: the benchmarks only
// check and store events.
type benchHandler struct{}

func (benchHandler) Prepare(context.Context, *Invocation) error { return nil }
func (benchHandler) Execute(context.Context, *Run) error        { return nil }

// benchPage is a page of n invocations, each of its own run, with valid
// tokens; k makes its ids and token ids unique.
func benchPage(b *testing.B, k, n int) []delivery.Event {
	page := make([]delivery.Event, n)
	for i := range page {
		id := fmt.Sprintf("%d-%d", k, i)
		c := verifyClaimsMap()
		c["jti"], c["run_id"], c["thread_id"], c["event_id"], c["message_id"] = "jti-"+id, "run-"+id, "thr-"+id, "evt-"+id, "msg-"+id
		payload, err := json.Marshal(delivery.InvocationPayload{TriggerKind: delivery.TriggerMessage, RunID: "run-" + id,
			ThreadID: "thr-" + id, MessageID: "msg-" + id})
		if err != nil {
			b.Fatal(err)
		}
		page[i] = delivery.Event{ID: "evt-" + id, Seq: int64(k*n + i + 1), Type: delivery.EventInvocation, Payload: payload,
			InvocationToken: verifyMint(b, verifyHeaderMap(), c, verifySignEd(verifyPriv))}
	}
	return page
}

// checkPage checks a page's tokens as process does, one after another,
// or at most GOMAXPROCS at once; it returns the deliveries to store, in
// the page's order.
func checkPage(ctx context.Context, a *Adapter, page []delivery.Event, parallel bool) []InboxAccept {
	type result struct {
		acc *InboxAccept
		ok  bool
	}
	res := make([]result, len(page))
	if parallel {
		sem := make(chan struct{}, runtime.GOMAXPROCS(0))
		var wg sync.WaitGroup
		for i, ev := range page {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				res[i].acc, res[i].ok = a.check(ctx, ev)
			})
		}
		wg.Wait()
	} else {
		for i, ev := range page {
			res[i].acc, res[i].ok = a.check(ctx, ev)
		}
	}
	accepts := make([]InboxAccept, 0, len(page))
	for _, r := range res {
		if r.ok && r.acc != nil {
			accepts = append(accepts, *r.acc)
		}
	}
	return accepts
}

// BenchmarkVerifyPage measures how fast the receive loop takes in a
// page of invocations: every token checked (header, key, signature,
// claims, replay against the inbox) and the page stored in one commit,
// with the checks one after another or in parallel. It decides whether
// process should check a page in parallel.
func BenchmarkVerifyPage(b *testing.B) {
	for _, store := range []string{"memory", "sqlite"} {
		for _, size := range []int{16, 100} {
			for _, mode := range []string{"sequential", "parallel"} {
				b.Run(fmt.Sprintf("%s/page=%d/%s", store, size, mode), func(b *testing.B) {
					benchVerifyPage(b, store, size, mode == "parallel")
				})
			}
		}
	}
}

func benchVerifyPage(b *testing.B, store string, size int, parallel bool) {
	ctx := context.Background()
	clock := &verifyClock{now: verifyT0}
	var in InboxStore = NewMemoryInbox(&InboxOptions{Clock: clock})
	if store == "sqlite" {
		s, err := OpenSQLiteInbox(filepath.Join(b.TempDir(), "inbox.sqlite3"), &InboxOptions{Clock: clock})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		in = s
	}
	keys := &verifyKeys{keys: map[string]ed25519.PublicKey{verifyKid: verifyPub}}
	set := DefaultSettings()
	a := &Adapter{cfg: Config{AgentID: verifyAgent}, h: benchHandler{}, set: set, clock: clock, log: slog.New(slog.DiscardHandler),
		inbox: in, issuer: verifyIssuer, runs: map[string]*runTask{},
		verify: NewVerifier(keys, &VerifierOptions{Clock: clock, Settings: &set, JTIs: in})}
	events := 0
	b.ResetTimer()
	for k := 0; k < b.N; k++ {
		b.StopTimer()
		page := benchPage(b, k, size)
		b.StartTimer()
		accepts := checkPage(ctx, a, page, parallel)
		if len(accepts) != size {
			b.Fatalf("%d of %d accepted", len(accepts), size)
		}
		if _, err := in.Accept(ctx, accepts); err != nil {
			b.Fatal(err)
		}
		events += size
	}
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
}
