package execgw

import (
	"context"

	"go.opentelemetry.io/otel/trace"

	"novaos.dev/novaos/gateway"
)

// stampTrace gives the events that carry no trace context the span
// context of ctx, if it has a valid one: a run's events then name the
// span that recorded them, which the event index returns.
func stampTrace(ctx context.Context, events []gateway.Event) {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return
	}
	traceID, spanID := sc.TraceID().String(), sc.SpanID().String()
	for i := range events {
		if events[i].TraceID == "" {
			events[i].TraceID, events[i].SpanID = traceID, spanID
		}
	}
}
