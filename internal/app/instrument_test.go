package app_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/app"
	"novaos.dev/novaos/secret"
)

// spanSink hands every ended span to the test.
type spanSink struct{ ended chan sdktrace.ReadOnlySpan }

func (s *spanSink) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (s *spanSink) OnEnd(sp sdktrace.ReadOnlySpan) {
	select {
	case s.ended <- sp:
	default: // the test has what it waits for
	}
}
func (s *spanSink) Shutdown(context.Context) error   { return nil }
func (s *spanSink) ForceFlush(context.Context) error { return nil }

// The server's tracer provider and registry reach every service: a run
// of the hosted echo agent is one trace from its delivery down to the
// skill, and each service's metrics are registered.
func TestServicesTraceAndMeasure(t *testing.T) {
	sink := &spanSink{ended: make(chan sdktrace.ReadOnlySpan, 256)}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sink))
	reg := prometheus.NewRegistry()
	srv := start(t, &app.Options{DataDir: t.TempDir(), TracerProvider: tp, Metrics: reg})
	ctx := context.Background()
	tok, err := srv.Issuer().Mint(ctx, identity.Claims{TenantID: "acme", UserID: "alice", AgentID: "console",
		Scopes: []string{"runs:*", "instances:*"}}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	c, err := gateway.NewClient(srv.URL(), &gateway.ClientOptions{Token: secret.New(tok)})
	if err != nil {
		t.Fatal(err)
	}
	inst, err := c.Install(ctx, gateway.InstallRequest{Name: "my-echo", Hosted: "echo"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Execute(ctx, gateway.ExecuteRequest{InstanceID: inst.ID, Input: "hello"})
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range c.EventsWithReconnect(ctx, res.RunID, nil) {
		if err != nil {
			t.Fatal(err)
		}
	}

	want := []string{"invoke_agent my-echo", "SendStreamingMessage client", "SendStreamingMessage server", "skill echo"}
	got := map[string]sdktrace.ReadOnlySpan{}
	guard := time.NewTimer(30 * time.Second) // against a hang, not a wait
	defer guard.Stop()
	for len(got) < len(want) {
		select {
		case sp := <-sink.ended:
			key := sp.Name()
			if sp.Name() == "SendStreamingMessage" {
				key += " " + sp.SpanKind().String()
			}
			for _, w := range want {
				if w == key {
					got[key] = sp
				}
			}
		case <-guard.C:
			t.Fatalf("spans ended: %v, want %v", got, want)
		}
	}
	traceID := got["invoke_agent my-echo"].SpanContext().TraceID()
	for i := 1; i < len(want); i++ {
		child, parent := got[want[i]], got[want[i-1]]
		if child.SpanContext().TraceID() != traceID || child.Parent().SpanID() != parent.SpanContext().SpanID() {
			t.Errorf("%q is not the child of %q", want[i], want[i-1])
		}
	}

	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, f := range families {
		have[f.GetName()] = true
	}
	for _, name := range []string{
		"novaos_a2a_requests_total", "novaos_a2a_request_duration_seconds",
		"novaos_runs", "novaos_runs_started_total", "novaos_runs_finished_total",
		"novaos_tool_call_duration_seconds",
		"novaos_memory_operations_total", "novaos_memory_operation_duration_seconds", "novaos_memory_index_size", "novaos_memory_index_bytes",
		"novaos_gate_verdicts_total", "novaos_gate_holds_pending", "novaos_gate_oldest_hold_age_seconds", "novaos_gate_hold_age_seconds",
		"novaos_push_deliveries_total", "novaos_push_dead_letters_total", "novaos_push_queue_depth",
	} {
		if !have[name] {
			t.Errorf("metric %s is not registered", name)
		}
	}
}
