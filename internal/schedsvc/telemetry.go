package schedsvc

import (
	"errors"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"novaos.dev/novaos/heartbeat"
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

func newTelemetry(tp trace.TracerProvider, reg prometheus.Registerer, log *slog.Logger) *telemetry {
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	t := &telemetry{
		tracer: tp.Tracer("novaos.dev/novaos/internal/schedsvc"),
		fires: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "novaos_schedule_fires_total",
			Help: "Ticks of heartbeat schedules, by outcome: fired (a run started), skipped_budget, missed (no server ran when it was due), failed.",
		}, []string{"outcome"}),
		configs: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "novaos_schedules",
			Help: "Heartbeat configs of every tenant, by status (active, paused).",
		}, []string{"status"}),
	}
	// Every series exists from the start, at zero.
	for _, o := range []string{outcomeFired, outcomeSkippedBudget, outcomeMissed, outcomeFailed} {
		t.fires.WithLabelValues(o)
	}
	for _, st := range []heartbeat.Status{heartbeat.StatusActive, heartbeat.StatusPaused} {
		t.configs.WithLabelValues(string(st))
	}
	if reg != nil {
		t.fires = register(reg, t.fires, log)
		t.configs = register(reg, t.configs, log)
	}
	return t
}

// register registers c, or takes the collector registered under its name
// already (a second service on one registry counts into the first's).
func register[C prometheus.Collector](reg prometheus.Registerer, c C, log *slog.Logger) C {
	err := reg.Register(c)
	var are prometheus.AlreadyRegisteredError
	switch {
	case err == nil:
	case errors.As(err, &are):
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing
		}
		log.Warn("schedules: a metric of another kind is registered under the same name", "err", err)
	default:
		log.Warn("schedules: register a metric", "err", err)
	}
	return c
}

func (t *telemetry) fired(outcome string, n int64) {
	if n > 0 {
		t.fires.WithLabelValues(outcome).Add(float64(n))
	}
}

func (t *telemetry) setCounts(counts map[heartbeat.Status]int64) {
	for _, st := range []heartbeat.Status{heartbeat.StatusActive, heartbeat.StatusPaused} {
		t.configs.WithLabelValues(string(st)).Set(float64(counts[st]))
	}
}
