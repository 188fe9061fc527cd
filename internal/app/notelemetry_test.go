package app_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace/noop"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/internal/app"
	"novaos.dev/novaos/secret"
)

// With telemetry off every service still mounts and serves, and nothing
// of the telemetry is there: no registry, no operator routes, a tracer
// that records nothing.
func TestNoTelemetry(t *testing.T) {
	srv := start(t, &app.Options{DataDir: t.TempDir(), NoTelemetry: true})
	if srv.Metrics() != nil {
		t.Error("Metrics() is a registry with telemetry off")
	}
	if _, ok := srv.TracerProvider().(noop.TracerProvider); !ok {
		t.Errorf("TracerProvider() is %T, want a no-op one", srv.TracerProvider())
	}
	if task := sendText(t, srv.URL()+"/agents/echo", "hello"); task.Status.State != a2a.TaskStateCompleted {
		t.Errorf("echo task in state %s", task.Status.State)
	}
	for _, path := range []string{app.MetricsPath, app.PprofPath} {
		if status, _ := get(t, srv.URL()+path); status != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404 with telemetry off", path, status)
		}
	}
	if status, _ := get(t, srv.URL()+"/healthz"); status != http.StatusOK {
		t.Errorf("GET /healthz: %d", status)
	}
}

func TestNoTelemetryRefusesTelemetryOptions(t *testing.T) {
	tests := []struct {
		name string
		set  func(*app.Options)
	}{
		{"TracerProvider", func(o *app.Options) { o.TracerProvider = noop.NewTracerProvider() }},
		{"OTLPEndpoint", func(o *app.Options) { o.OTLPEndpoint = "http://127.0.0.1:4318" }},
		{"OTLPHeaders", func(o *app.Options) { o.OTLPHeaders = map[string]secret.Value{"api-key": secret.New("k")} }},
		{"TraceSampleRatio", func(o *app.Options) { o.TraceSampleRatio = 0.1 }},
		{"Metrics", func(o *app.Options) { o.Metrics = prometheus.NewRegistry() }},
		{"MetricsAddr", func(o *app.Options) { o.MetricsAddr = "127.0.0.1:0" }},
		{"AccessLog", func(o *app.Options) { o.AccessLog = true }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := &app.Options{DataDir: t.TempDir(), Addr: "127.0.0.1:0", NoTelemetry: true}
			tc.set(opts)
			srv, err := app.New(t.Context(), opts)
			if err == nil {
				srv.Shutdown(t.Context())
				t.Fatal("New accepted the option with telemetry off")
			}
			if !strings.Contains(err.Error(), tc.name) {
				t.Errorf("error %q does not name %s", err, tc.name)
			}
		})
	}
}
