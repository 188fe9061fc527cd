package a2apush_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2apush"
	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/internal/instrument/instrumenttest"
	"novaos.dev/novaos/netguard"
)

// TestAttemptsTracedAndCounted: every attempt is a client span whose
// trace context the POST carries, and is counted by outcome; a given-up
// stream is a dead letter.
func TestAttemptsTracedAndCounted(t *testing.T) {
	seen := make(chan string, 16)
	status := map[string]int{"/ok": http.StatusOK, "/gone": http.StatusGone}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- r.Header.Get("traceparent")
		w.WriteHeader(status[r.URL.Path])
	}))
	defer srv.Close()
	sink := instrumenttest.NewSpanSink()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sink))
	e := newEnv(t, a2apush.Options{TracerProvider: tp})
	reg := prometheus.NewRegistry()
	reg.MustRegister(e.d.Collector())

	e.start("t-ok", srv.URL+"/ok", nil)
	sp := sink.Next(t)
	tp1 := <-seen
	if want := "00-" + sp.SpanContext().TraceID().String() + "-" + sp.SpanContext().SpanID().String() + "-01"; tp1 != want {
		t.Errorf("the POST's traceparent %q, want the attempt's %q", tp1, want)
	}
	attrs := instrumenttest.Attrs(sp)
	if sp.Name() != "a2a.push.deliver" || attrs["a2a.task.id"] != "t-ok" || attrs["a2a.push.outcome"] != "delivered" || attrs["a2a.push.attempt"] != "1" {
		t.Errorf("span %q with %v", sp.Name(), attrs)
	}

	e.start("t-gone", srv.URL+"/gone", nil)
	if sp := sink.Next(t); sp.Status().Description != "HTTP 410 (not retried)" {
		t.Errorf("a refused attempt's status: %v", sp.Status())
	}
	<-seen
	want := `
# HELP novaos_push_dead_letters_total Push configs whose delivery was given up (dead-lettered).
# TYPE novaos_push_dead_letters_total counter
novaos_push_dead_letters_total 1
# HELP novaos_push_deliveries_total Push notification attempts, by outcome: delivered, or failed (retried later or given up).
# TYPE novaos_push_deliveries_total counter
novaos_push_deliveries_total{outcome="delivered"} 1
novaos_push_deliveries_total{outcome="failed"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), a2apush.MetricDeliveries, a2apush.MetricDeadLetters); err != nil {
		t.Error(err)
	}
}

// TestQueueDepth: a scrape reads what waits in the outbox.
func TestQueueDepth(t *testing.T) {
	tasks := a2asrv.NewMemoryTaskStore(nil)
	d, err := a2apush.New(tasks.PushOutbox(), &a2apush.Options{Policy: &netguard.Policy{AllowLoopback: true}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, id := range []string{"t1", "t2"} {
		if _, err := tasks.Create(ctx, scope, &a2a.Task{ID: id, ContextID: "c", Status: a2a.TaskStatus{State: a2a.TaskStateSubmitted}}); err != nil {
			t.Fatal(err)
		}
		if err := tasks.PushConfigStore().Put(ctx, scope, &a2a.TaskPushNotificationConfig{ID: "h", TaskID: id, URL: "https://hooks.example.com/h"}); err != nil {
			t.Fatal(err)
		}
	}
	want := `
# HELP novaos_push_queue_depth Push notifications waiting to be delivered, in flight included.
# TYPE novaos_push_queue_depth gauge
novaos_push_queue_depth 2
`
	if err := testutil.CollectAndCompare(d.Collector(), strings.NewReader(want), a2apush.MetricQueueDepth); err != nil {
		t.Error(err)
	}
}
