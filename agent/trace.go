package agent

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"novaos.dev/novaos/a2a"
)

// ScopeName is the instrumentation scope of the skill spans.
const ScopeName = "novaos.dev/novaos/agent"

// Attributes of a skill span.
const (
	AttrRunID       = attribute.Key("novaos.run_id")
	AttrSkill       = attribute.Key("novaos.skill")
	AttrSkillStatus = attribute.Key("novaos.skill.status")
	AttrAgentName   = attribute.Key("gen_ai.agent.name")
	AttrTaskID      = attribute.Key("a2a.task.id")
	AttrContextID   = attribute.Key("a2a.context.id")
	AttrErrorType   = attribute.Key("error.type")
)

var internalSpan = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindInternal)}

// tracerFor is the tracer of an execution in ctx: Options.TracerProvider's,
// else that of the span ctx holds (the server's), else the global one.
func (a *Agent) tracerFor(ctx context.Context) trace.Tracer {
	if a.tracer != nil {
		return a.tracer
	}
	if span := trace.SpanFromContext(ctx); span.SpanContext().IsValid() {
		return span.TracerProvider().Tracer(ScopeName)
	}
	return otel.GetTracerProvider().Tracer(ScopeName)
}

// startSkill starts the span of c's skill execution. Its parent is the
// span in c's context (the A2A server's, package a2aotel), else the trace
// context the request came with (Traceparent: the header, else the
// platform context's), so a skill is in its run's trace even when its
// server traces nothing itself.
func (a *Agent) startSkill(c *Context) (context.Context, trace.Span) {
	ctx := c.Context
	tracer := a.tracerFor(ctx) // before a remote parent hides the server's provider
	if !trace.SpanContextFromContext(ctx).IsValid() {
		if tp := c.Traceparent(); tp != "" {
			ctx = propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier{"traceparent": tp})
		}
	}
	ctx, span := tracer.Start(ctx, "skill", internalSpan...)
	if span.IsRecording() {
		span.SetName("skill " + c.skill.ID) // only a recorded span builds its name
		attrs := []attribute.KeyValue{AttrSkill.String(c.skill.ID), AttrAgentName.String(a.name),
			AttrTaskID.String(c.req.TaskID), AttrContextID.String(c.req.ContextID)}
		if id := c.pc.RunID; id != "" {
			attrs = append(attrs, AttrRunID.String(id))
		}
		span.SetAttributes(attrs...)
	}
	return ctx, span
}

// endSkill records the handler's outcome on span: its Result's status,
// or the error that failed it. The error's text stays out of the trace
// (the task's status message carries it).
func endSkill(span trace.Span, res Result, err error) {
	if !span.IsRecording() {
		return
	}
	if err != nil {
		failSkill(span, err)
		return
	}
	status := res.Status
	if status == "" {
		status = StatusCompleted
	}
	span.SetAttributes(AttrSkillStatus.String(status))
	if state, ok := StatusState(status); !ok || state == a2a.TaskStateFailed {
		span.SetStatus(codes.Error, "the skill failed")
	}
}

// failSkill records that the execution ended in err.
func failSkill(span trace.Span, err error) {
	if !span.IsRecording() {
		return
	}
	typ := "error"
	var p *PanicError
	switch {
	case errors.As(err, &p):
		typ = "panic"
	case errors.Is(err, context.Canceled):
		typ = "canceled"
	}
	span.SetAttributes(AttrSkillStatus.String(StatusFailed), AttrErrorType.String(typ))
	span.SetStatus(codes.Error, "the skill failed: "+typ)
}
