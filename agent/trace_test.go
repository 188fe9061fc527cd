package agent

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// Every skill execution is a span: in the caller's trace, carrying the
// run, the skill and the task, with the handler's outcome; the handler's
// context holds it, so what the skill starts is its child.
func TestSkillSpan(t *testing.T) {
	const (
		header   = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
		platform = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	)
	tests := []struct {
		name       string
		header     string
		pc         map[string]any
		inCtx      bool // a span (a server's) is in the execution's context
		handler    HandlerFunc
		wantParent string // trace id
		wantStatus string
		wantError  string // error.type; "" when the span did not fail
	}{
		{"header", header, map[string]any{"run_id": "run-1", "traceparent": platform}, false,
			func(c *Context) (Result, error) { return Result{Output: "ok"}, nil },
			"4bf92f3577b34da6a3ce929d0e0e4736", StatusCompleted, ""},
		{"platform context", "", map[string]any{"run_id": "run-1", "traceparent": platform}, false,
			func(c *Context) (Result, error) { return Result{Status: StatusWaitingUser, Output: "which?"}, nil },
			"0af7651916cd43dd8448eb211c80319c", StatusWaitingUser, ""},
		{"server span wins", header, map[string]any{"run_id": "run-1"}, true,
			func(c *Context) (Result, error) { return Result{Status: StatusFailed, Error: "no"}, nil },
			"", StatusFailed, ""},
		{"error", "", map[string]any{"run_id": "run-1"}, false,
			func(c *Context) (Result, error) { return Result{}, errors.New("secret detail") }, "", StatusFailed, "error"},
		{"panic", "", map[string]any{"run_id": "run-1"}, false,
			func(c *Context) (Result, error) { panic("boom") }, "", StatusFailed, "panic"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
			var inHandler trace.SpanContext
			a := New("greeter", "1.0.0", &Options{TracerProvider: tp})
			a.MustRegister(Skill{ID: "greet", Handler: func(c *Context) (Result, error) {
				inHandler = trace.SpanContextFromContext(c)
				return tc.handler(c)
			}})
			req := request("hi")
			req.Metadata = map[string]any{ContextMetadataKey: tc.pc}
			if tc.header != "" {
				req.Header = http.Header{"Traceparent": {tc.header}}
			}
			ctx := context.Background()
			var server trace.Span
			if tc.inCtx {
				ctx, server = tp.Tracer("server").Start(ctx, "SendMessage")
			}
			if err := a.Execute(ctx, req, &fakeUpdater{}); err != nil {
				t.Fatal(err)
			}
			var skill sdktrace.ReadOnlySpan
			for _, s := range rec.Ended() {
				if s.Name() == "skill greet" {
					skill = s
				}
			}
			if skill == nil {
				t.Fatalf("no skill span among %d", len(rec.Ended()))
			}
			if inHandler.SpanID() != skill.SpanContext().SpanID() {
				t.Error("the handler's context does not hold the skill span")
			}
			switch {
			case tc.inCtx:
				if skill.Parent().SpanID() != server.SpanContext().SpanID() {
					t.Errorf("parent %v, want the server's span", skill.Parent())
				}
			case tc.wantParent != "":
				if got := skill.Parent().TraceID().String(); got != tc.wantParent || !skill.Parent().IsRemote() {
					t.Errorf("parent trace %s (remote %v), want %s", got, skill.Parent().IsRemote(), tc.wantParent)
				}
			default:
				if skill.Parent().IsValid() {
					t.Errorf("a root span has parent %v", skill.Parent())
				}
			}
			attrs := map[attribute.Key]string{}
			for _, kv := range skill.Attributes() {
				attrs[kv.Key] = kv.Value.Emit()
			}
			for k, want := range map[attribute.Key]string{AttrRunID: "run-1", AttrSkill: "greet", AttrTaskID: "task-1",
				AttrContextID: "ctx-1", AttrAgentName: "greeter", AttrSkillStatus: tc.wantStatus, AttrErrorType: tc.wantError} {
				if attrs[k] != want {
					t.Errorf("%s = %q, want %q", k, attrs[k], want)
				}
			}
			if failed := skill.Status().Code == codes.Error; failed != (tc.wantStatus == StatusFailed) {
				t.Errorf("status %v for a skill that ended %s", skill.Status(), tc.wantStatus)
			}
			if d := skill.Status().Description; d != "" && d != "the skill failed" && d != "the skill failed: "+tc.wantError {
				t.Errorf("status description %q tells more than the outcome", d)
			}
		})
	}
}

// Without a provider of its own, an agent traces with its server's: the
// provider of the span the execution arrives in.
func TestSkillSpanTakesTheServersProvider(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	a := oneSkill(func(c *Context) (Result, error) { return Result{Output: "ok"}, nil })
	ctx, server := tp.Tracer("server").Start(context.Background(), "SendMessage")
	if err := a.Execute(ctx, request("hi"), &fakeUpdater{}); err != nil {
		t.Fatal(err)
	}
	server.End()
	var names []string
	for _, s := range rec.Ended() {
		names = append(names, s.Name())
	}
	if len(names) != 2 || names[0] != "skill s" {
		t.Errorf("spans %v, want the skill's under the server's", names)
	}
}
