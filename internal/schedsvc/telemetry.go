package schedsvc

import (
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"novaos.dev/novaos/heartbeat"
	"novaos.dev/novaos/internal/instrument"
)

// Outcomes of novaos_schedule_fires_total: a tick's run started
// (fired), or the tick was skipped for the budget, passed while no server
// ran (missed), or could not start its run (failed).
const (
	outcomeFired         = "fired"
	outcomeSkippedBudget = "skipped_budget"
	outcomeMissed        = "missed"
	outcomeFailed        = "failed"
)

// spanFire names the span of one handled tick.
const spanFire = "heartbeat.fire"

// telemetry is the service's spans and metrics.
type telemetry struct {
	tracer  trace.Tracer
	fires   *prometheus.CounterVec
	configs *prometheus.GaugeVec
}

// configStatuses are the statuses of the configs gauge.
var configStatuses = []heartbeat.Status{heartbeat.StatusActive, heartbeat.StatusPaused}

func newTelemetry(tp trace.TracerProvider, reg prometheus.Registerer, log *slog.Logger) *telemetry {
	t := &telemetry{
		tracer: instrument.Tracer(tp, "novaos.dev/novaos/internal/schedsvc"),
		fires: instrument.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "novaos_schedule_fires_total",
			Help: "Ticks of heartbeat schedules, by outcome: fired (a run started), skipped_budget, missed (no server ran when it was due), failed.",
		}, []string{"outcome"}), log),
		configs: instrument.Register(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "novaos_schedules",
			Help: "Heartbeat configs of every tenant, by status (active, paused).",
		}, []string{"status"}), log),
	}
	// Every series exists from the start, at zero.
	instrument.Series(t.fires, outcomeFired, outcomeSkippedBudget, outcomeMissed, outcomeFailed)
	instrument.Series(t.configs, configStatuses...)
	return t
}

func (t *telemetry) fired(outcome string, n int64) {
	if n > 0 {
		t.fires.WithLabelValues(outcome).Add(float64(n))
	}
}

func (t *telemetry) setCounts(counts map[heartbeat.Status]int64) {
	for _, st := range configStatuses {
		t.configs.WithLabelValues(string(st)).Set(float64(counts[st]))
	}
}
