package telemetry_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"novaos.dev/novaos/internal/telemetry"
)

func TestRoutes(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "novaos_test_total", Help: "A counter."})
	reg.MustRegister(c)
	c.Add(3)
	// The guard lets through requests that carry X-Operator.
	guard := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("X-Operator") == "" {
				http.Error(w, "operators only", http.StatusForbidden)
				return
			}
			h.ServeHTTP(w, r)
		})
	}
	mux := http.NewServeMux()
	for _, r := range telemetry.Routes(reg, nil, guard) {
		mux.Handle(r.Pattern, r.Handler)
	}
	srv := httptest.NewServer(mux)
	defer srv.Close()
	tests := []struct {
		name, method, path string
		operator           bool
		status             int
		body               string
	}{
		{"metrics", "GET", "/metrics", true, 200, "novaos_test_total 3"},
		{"metrics guarded", "GET", "/metrics", false, 403, ""},
		{"pprof index", "GET", "/debug/pprof/", true, 200, "goroutine"},
		{"a profile", "GET", "/debug/pprof/goroutine?debug=1", true, 200, "goroutine profile"},
		{"pprof guarded", "GET", "/debug/pprof/heap", false, 403, ""},
		{"no command line", "GET", "/debug/pprof/cmdline", true, 404, ""},
		{"metrics is read-only", "POST", "/metrics", true, 405, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, srv.URL+tc.path, nil)
			if tc.operator {
				req.Header.Set("X-Operator", "yes")
			}
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status || !strings.Contains(string(b), tc.body) {
				t.Errorf("%s %s: %d %.200q, want %d with %q", tc.method, tc.path, resp.StatusCode, b, tc.status, tc.body)
			}
		})
	}
}
