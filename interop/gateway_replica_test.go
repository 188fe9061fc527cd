package interop

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"iter"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/internal/app"
	"novaos.dev/novaos/internal/pgtest"
	"novaos.dev/novaos/secret"
)

// Two NovaOS replicas on one PostgreSQL database, the agent an a2a-go
// agent in this process: a replica that dies mid-run leaves the run to the
// other, and a client's event stream moves between replicas without a gap
// or a duplicate. Skipped without NOVAOS_TEST_POSTGRES_URL (CI sets it).

// gwReplicaOptions are the options of both replicas: a short lease, so that a
// takeover comes soon after a replica dies, and a quick sweep.
var gwReplicaOptions = app.GatewayOptions{Lease: 2 * time.Second, SweepEvery: 50 * time.Millisecond,
	RetryBackoff: 10 * time.Millisecond, MaxAttempts: 5}

// startReplica starts a server on the database at dbURL with the admin
// token admin; it is shut down with the test unless the test stops it
// first.
func startReplica(t *testing.T, dbURL string, admin secret.Value) *app.Server {
	t.Helper()
	srv, err := app.New(context.Background(), &app.Options{Addr: "127.0.0.1:0", DataDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler),
		AdminToken: admin, Database: app.DatabaseOptions{URL: dbURL}, Gateway: gwReplicaOptions})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	return srv
}

// killReplica stops srv hard: its shutdown is given no time at all, so
// its deliveries are cut off and settle nothing, as when a process dies.
func killReplica(t *testing.T, srv *app.Server) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	srv.Shutdown(ctx)
}

// gwAdminClient is a client of srv acting, with the operator's token, for
// the tenant acme.
func gwAdminClient(t *testing.T, srv *app.Server, admin secret.Value) *gateway.Client {
	t.Helper()
	c, err := gateway.NewClient(srv.URL(), &gateway.ClientOptions{Token: admin, Tenant: gwTenant})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func newAdminToken(t *testing.T) secret.Value {
	t.Helper()
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return secret.New("interop-admin-" + hex.EncodeToString(b))
}

// A replica that dies while it delivers a run: the other takes the run
// over once the lease lapses, delivers it again under the same idempotency
// key, and completes it; a client that follows the run on the survivor,
// from before the other died, sees every event once, in order.
func TestGatewayReplicaKilledPostgres(t *testing.T) {
	dbURL := pgtest.URL(t)
	admin := newAdminToken(t)
	agent, agentURL := startGWGoAgent(t)
	a := startReplica(t, dbURL, admin)
	ca := gwAdminClient(t, a, admin)
	inst, err := ca.Install(t.Context(), gateway.InstallRequest{Name: "held", URL: agentURL})
	if err != nil {
		t.Fatal(err)
	}
	// B starts only once A delivers the run, so A is the one that does.
	runID := gwExecute(t, ca, inst, "hold")
	first := waitDelivery(t, agent.deliveries, runID, "delivery by replica A")
	if first.ctx("gateway_url") != a.URL() {
		t.Fatalf("the run was delivered by %q, want replica A %s", first.ctx("gateway_url"), a.URL())
	}
	mid := gwEvents(t, ca, runID, "", func(ev gateway.StreamEvent) bool {
		return ev.WireType == gateway.EventStatus && ev.Content == "working" || ev.IsTerminal()
	})
	if mid[len(mid)-1].IsTerminal() {
		t.Fatalf("the held run ended:%s", gwKinds(mid))
	}

	// The client follows the run on B from before A dies to the end, on
	// one stream.
	b := startReplica(t, dbURL, admin)
	cb := gwAdminClient(t, b, admin)
	ctx, cancel := context.WithTimeout(t.Context(), gwTimeout)
	defer cancel()
	next, stop := iter.Pull2(cb.EventsWithReconnect(ctx, runID, nil))
	defer stop()
	var evs []gateway.StreamEvent
	read := func(until func(gateway.StreamEvent) bool) {
		t.Helper()
		for {
			ev, err, ok := next()
			if !ok {
				t.Fatalf("the stream on B ended before the run did:%s", gwKinds(evs))
			}
			if err != nil {
				t.Fatalf("the stream on B: %v; read:%s", err, gwKinds(evs))
			}
			evs = append(evs, ev)
			if until(ev) || ev.IsTerminal() {
				return
			}
		}
	}
	read(func(ev gateway.StreamEvent) bool { return ev.Content == "working" })
	killReplica(t, a)
	read(func(gateway.StreamEvent) bool { return false })
	gwExactlyOnce(t, runID, evs)
	if last := evs[len(evs)-1]; last.IsFailure() || last.Status != gateway.StatusCompleted {
		t.Fatalf("the run ended on %s:%s %q; events:%s", last.WireType, last.Status, last.Content, gwKinds(evs))
	}
	second := waitDelivery(t, agent.deliveries, runID, "delivery by replica B")
	if second.ctx("gateway_url") != b.URL() {
		t.Errorf("the run was delivered again by %q, want replica B %s", second.ctx("gateway_url"), b.URL())
	}
	if second.MessageID != first.MessageID || second.ctx("idempotency_key") != first.ctx("idempotency_key") {
		t.Errorf("delivered again with message id %q, first %q", second.MessageID, first.MessageID)
	}
	// A settled nothing as it died: the run went from A's delivery
	// straight to B's second attempt.
	var again bool
	for _, ev := range evs {
		if strings.Contains(ev.Content, "retrying") {
			t.Errorf("the dead replica recorded a retry: %q", ev.Content)
		}
		again = again || ev.Status == gateway.StatusRunning && strings.Contains(ev.Content, "delivering again: attempt 2 of 5")
	}
	if !again {
		t.Errorf("no record of the second attempt; events:%s", gwKinds(evs))
	}
	if diff := cmp.Diff(gwIndex(t, cb, runID), append(gwWireTypes(evs), gateway.EventDone)); diff != "" {
		t.Errorf("event index and stream differ (-index +stream):\n%s", diff)
	}
	run, err := cb.GetRun(t.Context(), runID)
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != gateway.StatusCompleted || run.Output != "echo: hold" || run.Attempt != 2 {
		t.Errorf("run = status %s output %q attempt %d", run.Status, run.Output, run.Attempt)
	}
}

// A stream read partly on one replica and resumed with Last-Event-ID on
// the other: no gap, no duplicate, whether the run is still live when the
// stream moves or has ended.
func TestGatewayEventsResumedAcrossReplicasPostgres(t *testing.T) {
	dbURL := pgtest.URL(t)
	admin := newAdminToken(t)
	agent, agentURL := startGWGoAgent(t)
	a, b := startReplica(t, dbURL, admin), startReplica(t, dbURL, admin)
	ca, cb := gwAdminClient(t, a, admin), gwAdminClient(t, b, admin)
	inst, err := ca.Install(t.Context(), gateway.InstallRequest{Name: "steps", URL: agentURL})
	if err != nil {
		t.Fatal(err)
	}
	runID := gwExecute(t, ca, inst, "steps")

	// Live: read on A up to the agent's third step (it then waits), let
	// it go on, and resume on B after the last id A gave.
	onA := gwEvents(t, ca, runID, "", func(ev gateway.StreamEvent) bool {
		return ev.Content == "step 3" || ev.IsTerminal()
	})
	if onA[len(onA)-1].IsTerminal() {
		t.Fatalf("the run ended before its third step:%s", gwKinds(onA))
	}
	agent.releaseAll()
	onB := gwEvents(t, cb, runID, onA[len(onA)-1].ID, nil)
	all := append(onA, onB...)
	gwExactlyOnce(t, runID, all)
	if last := all[len(all)-1]; !last.IsTerminal() || last.IsFailure() {
		t.Fatalf("the run ended on %s:%s; events:%s", last.WireType, last.Status, gwKinds(all))
	}
	var steps []string
	for _, ev := range all {
		if strings.HasPrefix(ev.Content, "step ") {
			steps = append(steps, ev.Content)
		}
	}
	if diff := cmp.Diff([]string{"step 1", "step 2", "step 3", "step 4", "step 5", "step 6"}, steps); diff != "" {
		t.Errorf("the agent's steps (-want +got):\n%s", diff)
	}

	// Ended: resuming after every event in turn, alternately on either
	// replica, gives exactly the events after it; after the ending's
	// status event comes only done.
	clients := []*gateway.Client{ca, cb}
	for i := range all {
		tail := gwEvents(t, clients[i%2], runID, all[i].ID, nil)
		if i == len(all)-1 {
			if len(tail) != 1 || tail[0].WireType != gateway.EventDone || tail[0].Sequence != all[i].Sequence+1 {
				t.Fatalf("resumed after the ending on replica %c:%s, want done alone", "AB"[i%2], gwKinds(tail))
			}
			continue
		}
		if diff := cmp.Diff(gwIDs(all[i+1:]), gwIDs(tail)); diff != "" {
			t.Fatalf("resumed after id %s on replica %c (-want +got):\n%s", all[i].ID, "AB"[i%2], diff)
		}
	}
}

// gwIDs are the events' SSE ids.
func gwIDs(evs []gateway.StreamEvent) []string {
	var out []string
	for _, ev := range evs {
		out = append(out, ev.ID)
	}
	return out
}
