package a2aotel

import (
	"context"
	"errors"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"novaos.dev/novaos/a2a"
)

// Span attributes, after OpenTelemetry's proposed A2A conventions
// (a2a.*), its GenAI agent spans (gen_ai.operation.name) and its error
// and RPC attributes.
const (
	AttrMethod    = attribute.Key("a2a.method.name")
	AttrBinding   = attribute.Key("a2a.protocol.binding")
	AttrTenant    = attribute.Key("a2a.tenant")
	AttrTaskID    = attribute.Key("a2a.task.id")
	AttrContextID = attribute.Key("a2a.context.id")
	AttrMessageID = attribute.Key("a2a.message.id")
	AttrTaskState = attribute.Key("a2a.task.state")
	AttrOperation = attribute.Key("gen_ai.operation.name")
	AttrErrorType = attribute.Key("error.type")
	AttrRPCStatus = attribute.Key("rpc.response.status_code")
)

// invokeAgent is gen_ai.operation.name of the methods that run the agent.
var invokeAgent = AttrOperation.String("invoke_agent")

// requestAttrs sets on span what req (a method's typed request) names.
func requestAttrs(span trace.Span, method, binding, tenant string, req any) {
	attrs := make([]attribute.KeyValue, 0, 7)
	attrs = append(attrs, AttrMethod.String(method), AttrBinding.String(binding))
	if tenant != "" {
		attrs = append(attrs, AttrTenant.String(tenant))
	}
	task, ctxID := "", ""
	switch r := req.(type) {
	case *a2a.SendMessageRequest:
		attrs = append(attrs, invokeAgent)
		if m := r.Message; m != nil {
			task, ctxID = m.TaskID, m.ContextID
			if m.MessageID != "" {
				attrs = append(attrs, AttrMessageID.String(m.MessageID))
			}
		}
	case *a2a.GetTaskRequest:
		task = r.ID
	case *a2a.CancelTaskRequest:
		task = r.ID
	case *a2a.SubscribeToTaskRequest:
		task = r.ID
	case *a2a.ListTasksRequest:
		ctxID = r.ContextID
	case *a2a.TaskPushNotificationConfig:
		task = r.TaskID
	case *a2a.GetTaskPushNotificationConfigRequest:
		task = r.TaskID
	case *a2a.ListTaskPushNotificationConfigsRequest:
		task = r.TaskID
	}
	if task != "" {
		attrs = append(attrs, AttrTaskID.String(task))
	}
	if ctxID != "" {
		attrs = append(attrs, AttrContextID.String(ctxID))
	}
	span.SetAttributes(attrs...)
}

// resultAttrs sets on span the task a result (a method's typed response,
// or one stream frame) names, and its state.
func resultAttrs(span trace.Span, res any) {
	var t *a2a.Task
	switch r := res.(type) {
	case *a2a.SendMessageResponse:
		t = r.Task
		if t == nil && r.Message != nil {
			setIDs(span, r.Message.TaskID, r.Message.ContextID)
		}
	case *a2a.Task:
		t = r
	case *a2a.StreamResponse:
		switch {
		case r.Task != nil:
			t = r.Task
		case r.StatusUpdate != nil:
			u := r.StatusUpdate
			setIDs(span, u.TaskID, u.ContextID)
			span.SetAttributes(AttrTaskState.String(u.Status.State.String()))
		case r.Message != nil:
			setIDs(span, r.Message.TaskID, r.Message.ContextID)
		}
	}
	if t != nil {
		setIDs(span, t.ID, t.ContextID)
		span.SetAttributes(AttrTaskState.String(t.Status.State.String()))
	}
}

func setIDs(span trace.Span, task, ctxID string) {
	if task != "" {
		span.SetAttributes(AttrTaskID.String(task))
	}
	if ctxID != "" {
		span.SetAttributes(AttrContextID.String(ctxID))
	}
}

// errorType is the bounded name of what failed a call: the A2A error's
// reason (TASK_NOT_FOUND, …), "canceled" or "timeout" for the caller's
// context, else "_OTHER".
func errorType(err error) string {
	var e *a2a.Error
	switch {
	case errors.As(err, &e):
		return e.Reason()
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	}
	return "_OTHER"
}

// endSpan records err on span, if any, and ends it.
func endSpan(span trace.Span, err error) {
	if err != nil && span.IsRecording() {
		attrs := []attribute.KeyValue{AttrErrorType.String(errorType(err))}
		var e *a2a.Error
		msg := "the call failed"
		if errors.As(err, &e) {
			attrs = append(attrs, AttrRPCStatus.String(strconv.Itoa(e.Code)))
			msg = e.Text()
		}
		span.SetAttributes(attrs...)
		span.SetStatus(codes.Error, msg)
	}
	span.End()
}
