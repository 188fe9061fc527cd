package instrument

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

type verdict string

func TestSeries(t *testing.T) {
	reg := prometheus.NewRegistry()
	calls := Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{Name: "novaos_test_calls_total", Help: "Calls."},
		[]string{"outcome", "class"}), nil)
	took := Register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "novaos_test_call_seconds", Help: "Took."},
		[]string{"class"}), nil)

	ok := Series(calls.MustCurryWith(prometheus.Labels{"outcome": "ok"}), "read", "write")
	byClass := Series(took, []verdict{"read", "write"}...)
	if len(ok) != 2 || len(byClass) != 2 {
		t.Fatalf("series %d and %d, want 2 each", len(ok), len(byClass))
	}
	// Made at once: exported at zero before any count.
	if n, err := testutil.GatherAndCount(reg, "novaos_test_calls_total", "novaos_test_call_seconds"); err != nil || n != 4 {
		t.Fatalf("%d series exported (%v), want 4", n, err)
	}
	// A series is the vector's own: counting either way adds up.
	ok["write"].Inc()
	calls.WithLabelValues("ok", "write").Inc()
	if got := testutil.ToFloat64(calls.WithLabelValues("ok", "write")); got != 2 {
		t.Errorf("ok write = %v, want 2", got)
	}
	byClass["read"].Observe(1)
	want := `
# HELP novaos_test_calls_total Calls.
# TYPE novaos_test_calls_total counter
novaos_test_calls_total{class="read",outcome="ok"} 0
novaos_test_calls_total{class="write",outcome="ok"} 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "novaos_test_calls_total"); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(took); n != 2 {
		t.Errorf("histogram series %d, want 2", n)
	}
}

func TestScraped(t *testing.T) {
	desc := prometheus.NewDesc("novaos_test_items", "Items.", []string{"kind"}, nil)
	other := prometheus.NewDesc("novaos_test_bytes", "Bytes.", nil, nil)
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	fail := errors.New("the store is down")
	var readErr error
	var deadline bool
	c := Scraped(log, func(ctx context.Context, ch chan<- prometheus.Metric) error {
		_, deadline = ctx.Deadline()
		if readErr != nil {
			return readErr
		}
		ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, 3, "a")
		ch <- prometheus.MustNewConstMetric(other, prometheus.GaugeValue, 7)
		return nil
	}, desc, other)

	reg := prometheus.NewRegistry()
	if got := Register(reg, c, log); got != c {
		t.Fatal("the collector was not registered")
	}
	want := `
# HELP novaos_test_bytes Bytes.
# TYPE novaos_test_bytes gauge
novaos_test_bytes 7
# HELP novaos_test_items Items.
# TYPE novaos_test_items gauge
novaos_test_items{kind="a"} 3
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
	if !deadline {
		t.Error("the read had no deadline")
	}

	// A read that fails reports nothing and is logged.
	readErr = fail
	if n, err := testutil.GatherAndCount(reg); err != nil || n != 0 {
		t.Errorf("a failed read exported %d series (%v)", n, err)
	}
	if !strings.Contains(logs.String(), fail.Error()) {
		t.Errorf("the failure was not logged: %q", logs.String())
	}

	// The same collector registered again is shared, not refused.
	if got := Register(reg, Scraped(log, nil, desc, other), log); got != c {
		t.Error("a second registration of the same metrics got a collector of its own")
	}
}
