package execgw

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"novaos.dev/novaos/a2a/a2aclient"
	"novaos.dev/novaos/a2a/a2aotel"
	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/internal/instrument"
)

// Metric names.
const (
	MetricRunsStarted  = "novaos_runs_started_total"
	MetricRunsFinished = "novaos_runs_finished_total"
	MetricRuns         = "novaos_runs"
)

// Span attributes of a delivery.
const (
	attrAgentName = attribute.Key("gen_ai.agent.name")
	attrAttempt   = attribute.Key("novaos.run.attempt")
	attrTurn      = attribute.Key("novaos.run.turn")
	attrStatus    = attribute.Key("novaos.run.status")
)

// statuses are the run statuses, in the order the gauge reports them.
var statuses = []gateway.Status{gateway.StatusQueued, gateway.StatusRunning, gateway.StatusWaitingUser,
	gateway.StatusCompleted, gateway.StatusFailed, gateway.StatusCancelled}

// terminal are the statuses a run ends in: the finished counter's states.
var terminal = slices.DeleteFunc(slices.Clone(statuses), func(st gateway.Status) bool { return !st.Terminal() })

// maxLinks bounds the requests remembered for the deliveries they queued.
const maxLinks = 4096

// telemetry is what the gateway traces and counts with.
type telemetry struct {
	tracer trace.Tracer
	// a2a traces the gateway's calls of agents and carries their trace
	// context to them.
	a2a      []a2aclient.Interceptor
	started  prometheus.Counter
	finished map[gateway.Status]prometheus.Counter
	links    links
}

func newTelemetry(s *Service, deps Deps) *telemetry {
	t := &telemetry{
		tracer: instrument.Tracer(deps.Tracing, "novaos.dev/novaos/internal/execgw"),
		a2a:    []a2aclient.Interceptor{a2aotel.NewClientInterceptor(&a2aotel.Options{TracerProvider: instrument.Provider(deps.Tracing)})},
		links:  links{m: map[string]link{}},
	}
	reg, log := deps.Metrics, s.log
	t.started = instrument.Register(reg, prometheus.NewCounter(prometheus.CounterOpts{Name: MetricRunsStarted,
		Help: "Runs whose first delivery began, in this process."}), log)
	finished := instrument.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricRunsFinished,
		Help: "Runs that ended, by their terminal state, as this process recorded it."}, []string{"state"}), log)
	t.finished = instrument.Series(finished, terminal...)
	instrument.Register(reg, instrument.Scraped(log, runCounts{s.store}.collect, runsDesc), log)
	return t
}

// wrote counts what a write did to a run: its first delivery beginning,
// its ending.
func (t *telemetry) wrote(before, after *gateway.Run) {
	if before.StartedAt.IsZero() && !after.StartedAt.IsZero() {
		t.started.Inc()
	}
	if !before.Status.Terminal() && after.Status.Terminal() {
		if c := t.finished[after.Status]; c != nil {
			c.Inc()
		}
	}
}

// queued remembers the span of the request that queued run (an execute,
// a reply), for the delivery's span to link to.
func (t *telemetry) queued(ctx context.Context, runID string) {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		t.links.put(runID, sc)
	}
}

// startDelivery starts the span of one delivery of run: a root of its own,
// since a turn may run long after the request that queued it ended,
// linked to that request's span when this process took it.
func (t *telemetry) startDelivery(ctx context.Context, run *gateway.Run) (context.Context, trace.Span) {
	opts := []trace.SpanStartOption{trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindInternal)}
	if sc, ok := t.links.take(run.ID); ok {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: sc}))
	}
	ctx, span := t.tracer.Start(ctx, "invoke_agent", opts...)
	if span.IsRecording() {
		span.SetAttributes(instrument.AttrOperation.String("invoke_agent"), instrument.AttrRun.String(run.ID),
			instrument.AttrTenant.String(run.TenantID), instrument.AttrInstance.String(run.InstanceID),
			instrument.AttrAgent.String(run.AgentID), attrTurn.Int(run.Turn))
	}
	return ctx, span
}

// named names a delivery's span after its agent, once the instance is
// read: "invoke_agent <name>", as GenAI's conventions name it.
func named(span trace.Span, name string) {
	if name != "" {
		span.SetName("invoke_agent " + name)
		span.SetAttributes(attrAgentName.String(name))
	}
}

// endDelivery records where the run stands after the delivery and ends
// its span.
func endDelivery(span trace.Span, run gateway.Run) {
	if span.IsRecording() {
		span.SetAttributes(attrStatus.String(string(run.Status)), attrAttempt.Int(run.Attempt))
		if run.Status.Failure() {
			span.SetStatus(codes.Error, "the run "+string(run.Status))
		}
	}
	span.End()
}

// links remembers, for a bounded number of runs, the span of the request
// that queued each; past the bound the oldest are forgotten (their runs
// were likely delivered by another replica).
type links struct {
	mu    sync.Mutex
	m     map[string]link
	order []link // in the order they were put; taken ones left to lapse
	seq   uint64
}

type link struct {
	id  string
	seq uint64 // tells a put from an earlier one of the same run
	sc  trace.SpanContext
}

func (l *links) put(id string, sc trace.SpanContext) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.order) >= maxLinks {
		old := l.order[0]
		l.order = l.order[1:]
		if cur, ok := l.m[old.id]; ok && cur.seq == old.seq {
			delete(l.m, old.id)
		}
	}
	l.seq++
	k := link{id: id, seq: l.seq, sc: sc}
	l.m[id] = k
	l.order = append(l.order, k)
}

func (l *links) take(id string) (trace.SpanContext, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	k, ok := l.m[id]
	delete(l.m, id)
	return k.sc, ok
}

// runCounts reports how many runs are in each status, read from the store
// at each scrape (every replica reports the shared database's counts).
type runCounts struct{ store gateway.Store }

var runsDesc = prometheus.NewDesc(MetricRuns, "Runs in each state, over every tenant.", []string{"state"}, nil)

func (r runCounts) collect(ctx context.Context, ch chan<- prometheus.Metric) error {
	counts, err := r.store.CountRuns(ctx)
	if err != nil {
		return fmt.Errorf("gateway: count runs: %w", err)
	}
	for _, st := range statuses {
		ch <- prometheus.MustNewConstMetric(runsDesc, prometheus.GaugeValue, float64(counts[st]), string(st))
	}
	return nil
}
