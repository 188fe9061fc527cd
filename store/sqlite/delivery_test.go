package sqlite_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"novaos.dev/novaos/delivery"
	"novaos.dev/novaos/store/sqlite"
	"novaos.dev/novaos/store/storetest"
)

func TestDeliveryStoreContract(t *testing.T) {
	storetest.TestDeliveryStore(t, func(t *testing.T) delivery.Store { return tempDB(t).DeliveryStore() })
}

// Handles on one file race as processes sharing it do: each is its own
// process's writer, and the file's write lock orders them. A handle
// watches only its own appends.
func TestDeliveryStoreReplicas(t *testing.T) {
	storetest.TestDeliveryReplicas(t, func(t *testing.T) func() delivery.Store {
		path := filepath.Join(t.TempDir(), "novaos.db")
		return func() delivery.Store { return open(t, path).DeliveryStore() }
	}, false)
}

func TestDeliveryStoreReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "novaos.db")
	storetest.TestDeliveryReopen(t, func(t *testing.T) (delivery.Store, func()) {
		db, err := sqlite.Open(context.Background(), path, nil)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return db.DeliveryStore(), func() { db.Close() }
	})
}

func TestStoresDelivery(t *testing.T) {
	db := tempDB(t)
	if _, ok := db.Stores().Delivery.(*sqlite.DeliveryStore); !ok {
		t.Fatalf("Stores().Delivery = %T, want *sqlite.DeliveryStore", db.Stores().Delivery)
	}
}

// A page of events, a dedupe key, a consumer with its agent's head, a
// thread's newest messages and the requests to prune are each read from
// an index in order: no table scan, no sort.
func TestDeliveryPlans(t *testing.T) {
	path := filepath.Join(t.TempDir(), "novaos.db")
	open(t, path)
	raw := rawOpen(t, path)
	defer raw.Close()
	for _, c := range []struct {
		name string
		q    string
		args []any
		want []string
	}{
		{"events", sqlite.DeliveryEventsSQL, []any{"a", 0, 100}, []string{"SEARCH delivery_events USING PRIMARY KEY (agent_id=? AND seq>?)"}},
		{"a dedupe key", sqlite.DedupedEventSQL, []any{"a", "k"}, []string{"SEARCH delivery_events USING INDEX delivery_events_dedupe (agent_id=? AND dedupe_key=?)"}},
		{"a consumer", sqlite.GetConsumerSQL, []any{"a", "a", "main"}, []string{"SEARCH delivery_consumers USING PRIMARY KEY (agent_id=? AND name=?)",
			"SEARCH delivery_heads USING PRIMARY KEY (agent_id=?)"}},
		{"a thread", sqlite.ThreadMessagesSQL, []any{"acme", "th", 50}, []string{"SEARCH delivery_messages USING INDEX delivery_messages_thread (tenant=? AND thread_id=?)"}},
		{"an API token", sqlite.FindAPITokenSQL, []any{[]byte("h")}, []string{"SEARCH delivery_api_tokens USING INDEX sqlite_autoindex_delivery_api_tokens_2 (hash=?)"}},
		{"requests to prune", `DELETE FROM delivery_requests WHERE created_us < ?`, []any{1}, []string{"SEARCH delivery_requests USING INDEX delivery_requests_created (created_us<?)"}},
	} {
		plan := sqlitePlan(t, raw, c.q, c.args...)
		t.Logf("%s:\n%s", c.name, plan)
		for _, w := range c.want {
			if !strings.Contains(plan, w) {
				t.Errorf("%s: plan\n%s\nwant %s", c.name, plan, w)
			}
		}
		if strings.Contains(plan, "SCAN delivery_") || strings.Contains(plan, "TEMP B-TREE") {
			t.Errorf("%s: plan\n%s\nhas a table scan or a sort", c.name, plan)
		}
	}
}

// BenchmarkDeliveryAppendAck measures events stored and acknowledged per
// second on SQLite with synchronous=FULL (see
// storetest.BenchmarkDeliveryStore).
func BenchmarkDeliveryAppendAck(b *testing.B) {
	storetest.BenchmarkDeliveryStore(b, tempDB(b).DeliveryStore())
}
