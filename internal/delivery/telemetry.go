package delivery

import (
	"context"
	"errors"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"novaos.dev/novaos/delivery"
	"novaos.dev/novaos/internal/instrument"
)

// Kinds of novaos_delivery_events_sent_total.
const (
	sentFirst   = "first"
	sentAgain   = "redelivery"
	outcomeOK   = "started"
	outcomeElse = "other"
)

// startOutcomes are the outcomes of novaos_delivery_run_starts_total:
// started, or the code (or token reason) it was refused with.
var startOutcomes = []string{outcomeOK, delivery.CodeAlreadyStarted, delivery.TokenSuperseded, delivery.TokenExpired,
	delivery.TokenInvalid, delivery.RunInactive, delivery.CodeBillingModeMismatch, delivery.CodeToolClassMismatch, outcomeElse}

// telemetry is the service's spans and metrics.
type telemetry struct {
	tracer  trace.Tracer
	sent    *prometheus.CounterVec
	starts  *prometheus.CounterVec
	refused *prometheus.CounterVec
}

var attrAgent = attribute.Key("novaos.agent_id")

func newTelemetry(tp trace.TracerProvider, reg prometheus.Registerer, log *slog.Logger) *telemetry {
	t := &telemetry{
		tracer: instrument.Tracer(tp, "novaos.dev/novaos/internal/delivery"),
		sent: instrument.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "novaos_delivery_events_sent_total",
			Help: "Events sent to agents' consumers, by kind: first, or redelivery (sent again after the ack timeout or to a new session).",
		}, []string{"kind"}), log),
		starts: instrument.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "novaos_delivery_run_starts_total",
			Help: "startRun calls, by outcome: started, or what refused them (already_started, superseded, expired, invalid, run_inactive, billing_mode_mismatch, tool_class_mismatch, other).",
		}, []string{"outcome"}), log),
		refused: instrument.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "novaos_delivery_requests_refused_total",
			Help: "Agent API requests answered with a problem, by its code.",
		}, []string{"code"}), log),
	}
	instrument.Series(t.sent, sentFirst, sentAgain)
	instrument.Series(t.starts, startOutcomes...)
	return t
}

// span starts the span of one agent API operation.
func (t *telemetry) span(ctx context.Context, op, agentID string) (context.Context, trace.Span) {
	return t.tracer.Start(ctx, "delivery "+op, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrAgent.String(agentID)))
}

// started counts a startRun by its outcome.
func (t *telemetry) started(err error) {
	outcome := outcomeOK
	var p *delivery.Problem
	switch {
	case err == nil:
	case errors.As(err, &p) && p.Code == delivery.CodeInvocationTokenInvalid:
		outcome = p.Reason
	case errors.As(err, &p):
		outcome = p.Code
	default:
		outcome = outcomeElse
	}
	known := false
	for _, o := range startOutcomes {
		known = known || o == outcome
	}
	if !known {
		outcome = outcomeElse
	}
	t.starts.WithLabelValues(outcome).Inc()
}
