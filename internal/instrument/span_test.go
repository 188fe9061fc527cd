package instrument

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

func TestFailed(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	_, span := tp.Tracer("t").Start(context.Background(), "call")
	Failed(span, "timeout", "the call timed out")
	span.End()
	got := rec.Ended()[0]
	if got.Status().Code != codes.Error || got.Status().Description != "the call timed out" {
		t.Errorf("status %+v", got.Status())
	}
	var errType string
	for _, kv := range got.Attributes() {
		if kv.Key == AttrErrorType {
			errType = kv.Value.AsString()
		}
	}
	if errType != "timeout" {
		t.Errorf("error.type %q, want timeout", errType)
	}
}
