package instrumenttest_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/httpapi"
	"novaos.dev/novaos/internal/instrument"
	"novaos.dev/novaos/internal/instrument/instrumenttest"
)

func TestSpanSink(t *testing.T) {
	sink := instrumenttest.NewSpanSink()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sink))
	tr := tp.Tracer("t")

	ctx, parent := tr.Start(context.Background(), "call", trace.WithSpanKind(trace.SpanKindServer))
	_, child := tr.Start(ctx, "step")
	child.SetAttributes(instrument.AttrTenant.String("acme"), instrument.AttrRun.String("run-1"))
	child.End()
	if got := sink.Next(t); got.Name() != "step" {
		t.Fatalf("next span %q, want step", got.Name())
	}
	parent.End()
	_, other := tr.Start(context.Background(), "other", trace.WithSpanKind(trace.SpanKindClient))
	other.SetAttributes(instrument.AttrTenant.String("acme"))
	other.End()

	spans := sink.Await(t, "client other", "server call")
	if spans["server call"] == nil || spans["client other"] == nil {
		t.Fatalf("awaited %v", spans)
	}
	if got := instrumenttest.Attrs(spans["client other"]); len(got) != 1 || got["novaos.tenant_id"] != "acme" {
		t.Errorf("attributes %v", got)
	}
	instrumenttest.WantAttrs(t, spans["client other"], map[string]string{"novaos.tenant_id": "acme"})

	// WantAttrs reports what differs, and only that.
	var rec recorder
	instrumenttest.WantAttrs(&rec, spans["client other"], map[string]string{"novaos.tenant_id": "other", "novaos.run_id": ""})
	if rec.errors != 1 {
		t.Errorf("WantAttrs reported %d differences, want 1", rec.errors)
	}
}

// recorder counts what a helper reports, in place of a failing test.
type recorder struct {
	testing.TB
	errors int
}

func (r *recorder) Helper()               {}
func (r *recorder) Errorf(string, ...any) { r.errors++ }

func TestNotedTenant(t *testing.T) {
	claims := &identity.Claims{TenantID: "acme"}
	tests := []struct {
		name   string
		caller *httpapi.Caller
		want   string
	}{
		{"execution token", &httpapi.Caller{Scheme: httpapi.SchemeExecutionToken, Claims: claims}, "acme"},
		{"another scheme", &httpapi.Caller{Scheme: "admin", Claims: claims}, ""},
		{"no caller", nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				httpapi.NoteCaller(r.Context(), tc.caller)
				w.WriteHeader(http.StatusTeapot)
			})
			tenant, status := instrumenttest.NotedTenant(h, httptest.NewRequest(http.MethodGet, "/", nil))
			if tenant != tc.want || status != http.StatusTeapot {
				t.Errorf("noted %q (%d), want %q (%d)", tenant, status, tc.want, http.StatusTeapot)
			}
		})
	}
}
