package gatesvc

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"novaos.dev/novaos/gate"
	"novaos.dev/novaos/internal/gatesvc/judge"
	"novaos.dev/novaos/internal/instrument/instrumenttest"
)

// Every submit is a "gate.decide" span with its verdict, reason, rule and
// rule count, never the action's arguments; verdicts are counted, pending
// holds and the oldest one's age read at each scrape, and a decided
// hold's age observed.
func TestDecisionsTracedAndCounted(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	reg := prometheus.NewRegistry()
	f := newFixture(t, nil)
	f.svc.tel = newTelemetry(tp, reg, f.store, f.clk.now, f.svc.log)
	f.rules(refundRules)
	f.open("s1", -1, false)

	pass := f.submit(action("s1", "a1", "refund", 20, "c1", false), true)
	held := f.submit(action("s1", "a2", "refund", 900, "customer-secret-77", false), false)
	if pass.Verdict != gate.Pass || held.Verdict != gate.Hold {
		t.Fatalf("verdicts %s, %s", pass.Verdict, held.Verdict)
	}
	var decide []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == "gate.decide" {
			decide = append(decide, s)
		}
	}
	if len(decide) != 2 {
		t.Fatalf("%d gate.decide spans, want 2", len(decide))
	}
	for k, v := range instrumenttest.Attrs(decide[1]) {
		if strings.Contains(v, "customer-secret-77") || strings.Contains(v, "900") {
			t.Errorf("attribute %s carries the action's arguments: %s", k, v)
		}
	}
	instrumenttest.WantAttrs(t, decide[1], map[string]string{"gate.verdict": "hold", "gate.rule_id": "big-refund", "gate.rule_count": "3",
		"gate.action_type": "refund", "novaos.tenant_id": "acme", "gen_ai.agent.id": "refund-bot"})

	f.clk.add(90 * time.Second)
	want := `
# HELP novaos_gate_holds_pending Holds waiting for a person's decision, over every tenant.
# TYPE novaos_gate_holds_pending gauge
novaos_gate_holds_pending 1
# HELP novaos_gate_oldest_hold_age_seconds How long the oldest pending hold has waited (0 without one).
# TYPE novaos_gate_oldest_hold_age_seconds gauge
novaos_gate_oldest_hold_age_seconds 90
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), MetricHoldsPending, MetricOldestHoldAge); err != nil {
		t.Error(err)
	}
	if _, err := f.svc.Decide(context.Background(), "acme", "s1", "a2", gate.OperatorDecision{Decision: gate.DecisionApprove}, "op"); err != nil {
		t.Fatal(err)
	}
	want = `
# HELP novaos_gate_holds_pending Holds waiting for a person's decision, over every tenant.
# TYPE novaos_gate_holds_pending gauge
novaos_gate_holds_pending 0
# HELP novaos_gate_oldest_hold_age_seconds How long the oldest pending hold has waited (0 without one).
# TYPE novaos_gate_oldest_hold_age_seconds gauge
novaos_gate_oldest_hold_age_seconds 0
# HELP novaos_gate_verdicts_total Verdicts the gate answered submitted actions with.
# TYPE novaos_gate_verdicts_total counter
novaos_gate_verdicts_total{verdict="already_executed"} 0
novaos_gate_verdicts_total{verdict="execution_unconfirmed"} 0
novaos_gate_verdicts_total{verdict="hold"} 1
novaos_gate_verdicts_total{verdict="kill"} 0
novaos_gate_verdicts_total{verdict="pass"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), MetricHoldsPending, MetricOldestHoldAge, MetricVerdicts); err != nil {
		t.Error(err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var approved *float64
	for _, fam := range families {
		if fam.GetName() != MetricHoldAge {
			continue
		}
		for _, m := range fam.GetMetric() {
			if m.GetLabel()[0].GetValue() == "approved" && m.GetHistogram().GetSampleCount() == 1 {
				v := m.GetHistogram().GetSampleSum()
				approved = &v
			}
		}
	}
	if approved == nil || *approved != 90 {
		t.Errorf("the approved hold's age: %v, want one observation of 90s", approved)
	}
}

// A judge call is a "gate.judge" span under its decision's, with the
// model and the judge's verdict, or why it gave none.
func TestJudgeTraced(t *testing.T) {
	for _, tc := range []struct {
		name      string
		j         *fakeJudge
		want      string // the judge span's gate.verdict, or error.type
		wantError bool
	}{
		{"verdict", &fakeJudge{v: &judge.Verdict{Verdict: "hold", RuleIDCited: "tone", Rationale: "tone"}}, "hold", false},
		{"failure", &fakeJudge{err: errors.New("model down")}, string(gate.ReasonJudgeError), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
			f := newFixture(t, &Options{Judge: tc.j, JudgeModel: "judge-model"})
			f.svc.tel = newTelemetry(tp, nil, f.store, f.clk.now, f.svc.log)
			f.rules(refundRules)
			f.open("s1", -1, false)
			f.submit(action("s1", "a1", "refund", 20, "c1", false), false)
			spans := map[string]sdktrace.ReadOnlySpan{}
			for _, s := range rec.Ended() {
				spans[s.Name()] = s
			}
			j, d := spans["gate.judge"], spans["gate.decide"]
			if j == nil || d == nil || j.Parent().SpanID() != d.SpanContext().SpanID() {
				t.Fatalf("spans %v", spans)
			}
			attrs := instrumenttest.Attrs(j)
			got := attrs["gate.verdict"]
			if tc.wantError {
				got = attrs["error.type"]
			}
			if got != tc.want || attrs["gen_ai.request.model"] != "judge-model" || (j.Status().Code == codes.Error) != tc.wantError {
				t.Errorf("judge span: attributes %v, status %v", attrs, j.Status())
			}
		})
	}
}
