package postgres_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"novaos.dev/novaos/delivery"
	"novaos.dev/novaos/internal/pgtest"
	"novaos.dev/novaos/store/internal/sqlstore"
	"novaos.dev/novaos/store/postgres"
	"novaos.dev/novaos/store/storetest"
)

func TestDeliveryStoreContract(t *testing.T) {
	storetest.TestDeliveryStore(t, func(t *testing.T) delivery.Store { return open(t, pgtest.URL(t)).DeliveryStore() })
}

// Several handles on one database are several replicas: sequences, keys
// and compare-and-sets hold across their connections, and each handle's
// watchers hear of every handle's appends.
func TestDeliveryStoreReplicas(t *testing.T) {
	storetest.TestDeliveryReplicas(t, func(t *testing.T) func() delivery.Store {
		url := pgtest.URL(t)
		return func() delivery.Store { return open(t, url).DeliveryStore() }
	}, true)
}

func TestDeliveryStoreReopen(t *testing.T) {
	url := pgtest.URL(t)
	storetest.TestDeliveryReopen(t, func(t *testing.T) (delivery.Store, func()) {
		db, err := postgres.Open(context.Background(), url, nil)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return db.DeliveryStore(), func() { db.Close() }
	})
}

func TestStoresDelivery(t *testing.T) {
	db := open(t, pgtest.URL(t))
	if _, ok := db.Stores().Delivery.(*postgres.DeliveryStore); !ok {
		t.Fatalf("Stores().Delivery = %T, want *postgres.DeliveryStore", db.Stores().Delivery)
	}
}

func deliveryEvent(agent, id string) delivery.StoredEvent {
	return delivery.StoredEvent{AgentID: agent, TenantID: "acme", ID: id, Type: delivery.EventAccessChanged}
}

// When the listening connection breaks and comes back, every delivery
// watcher is told notifications may have been lost, and hears of the
// other replicas' appends again.
func TestDeliveryWatchAfterListenerDrop(t *testing.T) {
	url := pgtest.URL(t)
	a, b := open(t, url), open(t, url)
	calls := make(chan [2]any, 100)
	if err := b.DeliveryStore().WatchEvents(t.Context(), func(agent string, head int64) { calls <- [2]any{agent, head} }); err != nil {
		t.Fatal(err)
	}
	if err := postgres.DropListener(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	waitCall(t, calls, [2]any{"", int64(0)})
	if _, err := a.DeliveryStore().AppendEvents(t.Context(), []delivery.StoredEvent{deliveryEvent("agent-1", "e1")}); err != nil {
		t.Fatal(err)
	}
	waitCall(t, calls, [2]any{"agent-1", int64(1)})
}

// Text PostgreSQL cannot hold is refused on writes and names nothing on
// reads; an agent id too long to name in a notification is announced as
// a possible loss.
func TestDeliveryText(t *testing.T) {
	url := pgtest.URL(t)
	a, b := open(t, url), open(t, url)
	s := a.DeliveryStore()
	ctx := t.Context()
	for _, e := range []delivery.StoredEvent{deliveryEvent("agent\x00", "e1"), deliveryEvent("agent-1", "e\xff"),
		{AgentID: "agent-1", TenantID: "acme", ID: "e1", Type: "t", DedupeKey: "k\x00"}} {
		if _, err := s.AppendEvents(ctx, []delivery.StoredEvent{e}); err == nil {
			t.Errorf("AppendEvents of %q/%q succeeded", e.AgentID, e.ID)
		}
	}
	if _, err := s.OpenConsumer(ctx, "agent-1", "c\x00", time.Time{}); err == nil {
		t.Error("OpenConsumer of a name holding NUL succeeded")
	}
	if _, err := s.GetConsumer(ctx, "agent\xff", "main"); err == nil {
		t.Error("GetConsumer of an agent with invalid UTF-8 succeeded")
	}
	if evs, err := s.ReadEvents(ctx, "agent\x00", 0, 0); err != nil || len(evs) != 0 {
		t.Errorf("ReadEvents of an agent holding NUL = %v, %v", evs, err)
	}
	if _, _, err := s.BeginRequest(ctx, delivery.IdempotentRequest{Scope: "agent-1", Key: "k\x00"}); err == nil {
		t.Error("BeginRequest of a key holding NUL succeeded")
	}
	if _, _, err := s.CreateMessage(ctx, delivery.StoredMessage{ID: "m1", TenantID: "acme", AgentID: "agent-1", ThreadID: "t\x00",
		ClientMsgID: "c1"}); err == nil {
		t.Error("CreateMessage to a thread holding NUL succeeded")
	}

	calls := make(chan [2]any, 10)
	if err := b.DeliveryStore().WatchEvents(ctx, func(agent string, head int64) { calls <- [2]any{agent, head} }); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendEvents(ctx, []delivery.StoredEvent{deliveryEvent(strings.Repeat("a", 5000), "e1")}); err != nil {
		t.Fatalf("AppendEvents of an agent with a long id: %v", err)
	}
	waitCall(t, calls, [2]any{"", int64(0)})
}

// A page of events, the lookup of an append's dedupe keys and a thread's
// newest messages read an index, never the whole table. The fixture is as
// a server's would be: many agents, many events each.
func TestDeliveryPlans(t *testing.T) {
	url := pgtest.URL(t)
	open(t, url)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// 200 agents with 100 events each, a dedupe key on every other one;
	// 50 threads of 100 messages.
	for _, q := range []string{
		`INSERT INTO delivery_events (` + sqlstore.DeliveryEventCols + `)
			SELECT 'a' || a, s, 'acme', 'e' || a || '-' || s, 'agent.invocation', '', CASE WHEN s % 2 = 0 THEN 'k' || s ELSE '' END,
				s, '{}'::bytea, '{}'::bytea
			FROM generate_series(1, 200) AS a, generate_series(1, 100) AS s`,
		`INSERT INTO delivery_messages (` + sqlstore.MessageCols + `)
			SELECT 'm' || i, 'acme', 'agent', 'th' || (i % 50), 'c' || i, i, NULL, '{}'::bytea FROM generate_series(1, 5000) AS i`,
		`VACUUM ANALYZE delivery_events`,
		`VACUUM ANALYZE delivery_messages`,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	plan := func(q string, args ...any) string {
		t.Helper()
		rows, err := conn.Query(ctx, `EXPLAIN `+q, args...)
		if err != nil {
			t.Fatal(err)
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(lines, "\n")
	}
	for _, c := range []struct {
		name, plan, want string
	}{
		{"events", plan(`SELECT `+sqlstore.DeliveryEventCols+` FROM delivery_events WHERE agent_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`,
			"a7", 3, 100), "delivery_events_pkey"},
		{"dedupe keys", plan(postgres.KnownEventsSQL, []string{"a7", "a9"}, []string{"k4", "k8"}), "delivery_events_dedupe"},
		{"a thread", plan(`SELECT `+sqlstore.MessageCols+` FROM delivery_messages WHERE tenant = $1 AND thread_id = $2
			ORDER BY seq DESC LIMIT $3`, "acme", "th7", 50), "delivery_messages_thread"},
	} {
		t.Logf("%s:\n%s", c.name, c.plan)
		if !strings.Contains(c.plan, c.want) || strings.Contains(c.plan, "Seq Scan on delivery_") {
			t.Errorf("%s: plan\n%s\nwant %s and no sequential scan", c.name, c.plan, c.want)
		}
	}
}

// BenchmarkDeliveryAppendAck measures events stored and acknowledged per
// second on PostgreSQL (see storetest.BenchmarkDeliveryStore).
func BenchmarkDeliveryAppendAck(b *testing.B) {
	storetest.BenchmarkDeliveryStore(b, open(b, pgtest.URL(b)).DeliveryStore())
}
