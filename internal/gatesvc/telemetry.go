package gatesvc

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"novaos.dev/novaos/gate"
	"novaos.dev/novaos/internal/instrument"
)

// Metric names.
const (
	MetricVerdicts      = "novaos_gate_verdicts_total"
	MetricHoldsPending  = "novaos_gate_holds_pending"
	MetricOldestHoldAge = "novaos_gate_oldest_hold_age_seconds"
	MetricHoldAge       = "novaos_gate_hold_age_seconds"
)

// Span attributes of a decision: what was decided and why, never the
// action's arguments.
const (
	attrVerdict    = attribute.Key("gate.verdict")
	attrReason     = attribute.Key("gate.reason")
	attrRule       = attribute.Key("gate.rule_id")
	attrRuleCount  = attribute.Key("gate.rule_count")
	attrActionType = attribute.Key("gate.action_type")
	attrStanding   = attribute.Key("gate.standing")
	attrShadow     = attribute.Key("gate.shadow")
	attrJudgeModel = attribute.Key("gen_ai.request.model")
)

// verdicts are the verdict label's values.
var verdicts = []gate.Outcome{gate.Pass, gate.Hold, gate.Kill, gate.ExecutionUnconfirmed, gate.AlreadyExecuted}

// holdDecisions are the ways a hold ends, the hold age histogram's
// decision label.
var holdDecisions = []string{"approved", "denied", "expired"}

var internalSpan = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindInternal)}

// telemetry traces and counts the gate's decisions.
type telemetry struct {
	tracer   trace.Tracer
	verdicts map[gate.Outcome]prometheus.Counter
	holdAge  map[string]prometheus.Observer // by decision
}

// holdAgeBuckets, in seconds: a second to about a day.
var holdAgeBuckets = prometheus.ExponentialBuckets(1, 3, 11)

func newTelemetry(tp trace.TracerProvider, reg prometheus.Registerer, store gate.Store, now func() time.Time, log *slog.Logger) *telemetry {
	vs := instrument.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricVerdicts,
		Help: "Verdicts the gate answered submitted actions with."}, []string{"verdict"}), log)
	ages := instrument.Register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: MetricHoldAge,
		Help:    "How long holds waited, from the action's judgement to its decision, by decision (approved, denied, expired).",
		Buckets: holdAgeBuckets}, []string{"decision"}), log)
	instrument.Register(reg, instrument.Scraped(log, pendingHolds{store: store, now: now}.collect, pendingDesc, oldestDesc), log)
	return &telemetry{tracer: instrument.Tracer(tp, "novaos.dev/novaos/internal/gatesvc"),
		verdicts: instrument.Series(vs, verdicts...), holdAge: instrument.Series(ages, holdDecisions...)}
}

// startDecision starts the span of a submit.
func (t *telemetry) startDecision(ctx context.Context, c *Caller) (context.Context, trace.Span) {
	ctx, span := t.tracer.Start(ctx, "gate.decide", internalSpan...)
	if span.IsRecording() && c != nil {
		span.SetAttributes(instrument.AttrTenant.String(c.Tenant), instrument.AttrAgent.String(c.Agent))
	}
	return ctx, span
}

// decided counts the verdict a submit answered and ends its span.
func (t *telemetry) decided(span trace.Span, v gate.Verdict, err error) {
	if err == nil {
		if c := t.verdicts[v.Verdict]; c != nil {
			c.Inc()
		}
	}
	if span.IsRecording() {
		if err != nil {
			instrument.Failed(span, "refused", "the submit was refused")
		} else {
			attrs := []attribute.KeyValue{attrVerdict.String(string(v.Verdict)), attrShadow.Bool(v.Shadow)}
			if v.Reason != "" {
				attrs = append(attrs, attrReason.String(string(v.Reason)))
			}
			if v.RuleIDCited != "" {
				attrs = append(attrs, attrRule.String(v.RuleIDCited))
			}
			span.SetAttributes(attrs...)
		}
	}
	span.End()
}

// holdEnded observes the age of a hold decided at decidedAt.
func (t *telemetry) holdEnded(r gate.ActionRecord, decision string) {
	if o := t.holdAge[decision]; o != nil && !r.CreatedAt.IsZero() && !r.DecidedAt.IsZero() {
		o.Observe(r.DecidedAt.Sub(r.CreatedAt).Seconds())
	}
}

// startJudge starts the span of a call to the judge, a child of the
// decision's.
func (t *telemetry) startJudge(ctx context.Context, model string) (context.Context, trace.Span) {
	ctx, span := t.tracer.Start(ctx, "gate.judge", internalSpan...)
	if span.IsRecording() && model != "" {
		span.SetAttributes(attrJudgeModel.String(model))
	}
	return ctx, span
}

// endJudge records the judge's answer, or why it gave none.
func endJudge(span trace.Span, verdict gate.Outcome, failure gate.Reason) {
	if span.IsRecording() {
		if failure != "" {
			instrument.Failed(span, string(failure), string(failure))
		} else {
			span.SetAttributes(attrVerdict.String(string(verdict)))
		}
	}
	span.End()
}

// pendingHolds reports the holds waiting for a person and how long the
// oldest has waited, read from the store at each scrape (every replica
// reports the shared database's).
type pendingHolds struct {
	store gate.Store
	now   func() time.Time
}

var (
	pendingDesc = prometheus.NewDesc(MetricHoldsPending, "Holds waiting for a person's decision, over every tenant.", nil, nil)
	oldestDesc  = prometheus.NewDesc(MetricOldestHoldAge, "How long the oldest pending hold has waited (0 without one).", nil, nil)
)

func (p pendingHolds) collect(ctx context.Context, ch chan<- prometheus.Metric) error {
	n, oldest, err := p.store.CountActions(ctx, gate.ActionHeld)
	if err != nil {
		return fmt.Errorf("gate: count pending holds: %w", err)
	}
	age := 0.0
	if !oldest.IsZero() {
		age = max(0, p.now().Sub(oldest).Seconds())
	}
	ch <- prometheus.MustNewConstMetric(pendingDesc, prometheus.GaugeValue, float64(n))
	ch <- prometheus.MustNewConstMetric(oldestDesc, prometheus.GaugeValue, age)
	return nil
}
