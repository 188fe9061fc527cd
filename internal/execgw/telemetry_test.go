package execgw_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"novaos.dev/novaos/a2a/a2aotel"
	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/agent"
	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/internal/execgw"
	"novaos.dev/novaos/internal/instrument/instrumenttest"
)

// A run is one trace: its delivery's span, linked to the execute request,
// over the agent call's client span, the agent's server span and its
// skill's span; the run is counted as started and finished, and in the
// gauge of runs by state.
func TestRunTracedAndCounted(t *testing.T) {
	sink := instrumenttest.NewSpanSink()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sink))
	reg := prometheus.NewRegistry()

	a := agent.New("echo", "1.0.0", &agent.Options{TracerProvider: tp})
	a.MustRegister(agent.Skill{ID: "echo", Handler: func(c *agent.Context) (agent.Result, error) {
		return agent.Result{Output: "echo: " + c.Input()}, nil
	}})
	hosted := a.Handler("http://gateway.test/agents/echo", &a2asrv.Options{Interceptors: []a2asrv.Interceptor{
		a2aotel.NewServerInterceptor(&a2aotel.Options{TracerProvider: tp})}})
	var execute trace.SpanContext
	middleware := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ctx, span := tp.Tracer("http").Start(r.Context(), r.Method+" "+r.URL.Path, trace.WithSpanKind(trace.SpanKindServer))
			if r.URL.Path == gateway.ExecutePath {
				execute = span.SpanContext()
			}
			next.ServeHTTP(w, r.WithContext(ctx))
			span.End()
		})
	}
	e := newEnvWith(t, gateway.NewMemoryStore(), hostedAgents{"echo": hosted}, nil, func(d *execgw.Deps) {
		d.Tracing, d.Metrics = tp, reg
	}, middleware)
	inst := e.install("my-echo", "echo", nil)
	run := e.execute(userTok, gateway.ExecuteRequest{InstanceID: inst, Input: "hello"})
	e.events(userTok, run, "", nil)

	spans := sink.Await(t, "internal invoke_agent my-echo", "client SendStreamingMessage", "server SendStreamingMessage", "internal skill echo")
	delivery := spans["internal invoke_agent my-echo"]
	if delivery.Parent().IsValid() {
		t.Errorf("the delivery's span has parent %v: a turn outlives the request that queued it", delivery.Parent())
	}
	if l := delivery.Links(); len(l) != 1 || l[0].SpanContext.SpanID() != execute.SpanID() {
		t.Errorf("the delivery's links %v, want the execute request's span %v", l, execute)
	}
	instrumenttest.WantAttrs(t, delivery, map[string]string{"novaos.run_id": run, "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "my-echo",
		"novaos.run.status": "COMPLETED", "novaos.run.attempt": "1", "novaos.tenant_id": "acme"})
	for child, parent := range map[string]string{
		"client SendStreamingMessage": "internal invoke_agent my-echo",
		"server SendStreamingMessage": "client SendStreamingMessage",
		"internal skill echo":         "server SendStreamingMessage",
	} {
		if spans[child].Parent().SpanID() != spans[parent].SpanContext().SpanID() {
			t.Errorf("%s's parent is not %s", child, parent)
		}
	}

	want := `
# HELP novaos_runs Runs in each state, over every tenant.
# TYPE novaos_runs gauge
novaos_runs{state="CANCELLED"} 0
novaos_runs{state="COMPLETED"} 1
novaos_runs{state="FAILED"} 0
novaos_runs{state="QUEUED"} 0
novaos_runs{state="RUNNING"} 0
novaos_runs{state="WAITING_USER"} 0
# HELP novaos_runs_finished_total Runs that ended, by their terminal state, as this process recorded it.
# TYPE novaos_runs_finished_total counter
novaos_runs_finished_total{state="CANCELLED"} 0
novaos_runs_finished_total{state="COMPLETED"} 1
novaos_runs_finished_total{state="FAILED"} 0
# HELP novaos_runs_started_total Runs whose first delivery began, in this process.
# TYPE novaos_runs_started_total counter
novaos_runs_started_total 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), execgw.MetricRuns, execgw.MetricRunsFinished, execgw.MetricRunsStarted); err != nil {
		t.Error(err)
	}
}
