package instrumenttest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/httpapi"
)

// Attrs are span's attributes, each value as otel emits it ("1", "true",
// "[a b]").
func Attrs(span sdktrace.ReadOnlySpan) map[string]string {
	attrs := map[string]string{}
	for _, kv := range span.Attributes() {
		attrs[string(kv.Key)] = kv.Value.Emit()
	}
	return attrs
}

// WantAttrs reports each attribute of want that span lacks or holds
// another value in.
func WantAttrs(t testing.TB, span sdktrace.ReadOnlySpan, want map[string]string) {
	t.Helper()
	got := Attrs(span)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("span %q: %s = %q, want %q", span.Name(), k, got[k], v)
		}
	}
}

// sinkBuffer bounds the ended spans a SpanSink holds for the test; a span
// past it would block the code under test in End.
const sinkBuffer = 1024

// hangGuard fails a wait for a span that never ends: a guard against a
// hang, never a wait the test relies on.
const hangGuard = 30 * time.Second

// A SpanSink is a span processor that hands each ended span to the test,
// which waits for the spans it expects rather than polling.
type SpanSink struct{ ended chan sdktrace.ReadOnlySpan }

// NewSpanSink returns an empty sink.
func NewSpanSink() *SpanSink { return &SpanSink{ended: make(chan sdktrace.ReadOnlySpan, sinkBuffer)} }

// OnStart, OnEnd, Shutdown and ForceFlush make a SpanSink an
// sdktrace.SpanProcessor.
func (s *SpanSink) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (s *SpanSink) OnEnd(sp sdktrace.ReadOnlySpan)                  { s.ended <- sp }
func (s *SpanSink) Shutdown(context.Context) error                  { return nil }
func (s *SpanSink) ForceFlush(context.Context) error                { return nil }

// Next waits for the next span to end.
func (s *SpanSink) Next(t testing.TB) sdktrace.ReadOnlySpan {
	t.Helper()
	select {
	case sp := <-s.ended:
		return sp
	case <-time.After(hangGuard):
		t.Fatal("no span ended")
		return nil
	}
}

// Await takes ended spans until one of each of names has ended, and
// returns them by name; a span's name here is its kind and its name
// ("server tools/call echo"), the latest of each.
func (s *SpanSink) Await(t testing.TB, names ...string) map[string]sdktrace.ReadOnlySpan {
	t.Helper()
	got := map[string]sdktrace.ReadOnlySpan{}
	guard := time.NewTimer(hangGuard)
	defer guard.Stop()
	for {
		missing := ""
		for _, n := range names {
			if got[n] == nil {
				missing = n
			}
		}
		if missing == "" {
			return got
		}
		select {
		case sp := <-s.ended:
			got[sp.SpanKind().String()+" "+sp.Name()] = sp
		case <-guard.C:
			t.Fatalf("span %q never ended; ended: %v", missing, got)
		}
	}
}

// NotedTenant serves r with h under a caller slot, as the platform's
// access log does, and returns the tenant of the execution token the
// handler noted as its caller ("" when it noted none) and the answer's
// status.
func NotedTenant(h http.Handler, r *http.Request) (tenant string, status int) {
	var slot httpapi.CallerSlot
	r = r.WithContext(httpapi.WithCallerSlot(r.Context(), &slot))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	if c := slot.Caller(); c != nil {
		if claims, ok := c.Claims.(*identity.Claims); ok && c.Scheme == httpapi.SchemeExecutionToken {
			tenant = claims.TenantID
		}
	}
	return tenant, rec.Code
}
