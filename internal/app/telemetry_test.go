package app_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/app"
	"novaos.dev/novaos/internal/telemetry"
	"novaos.dev/novaos/internal/telemetry/otlptest"
	"novaos.dev/novaos/secret"
)

// logLines collects a JSON log's lines and lets a test wait for one.
type logLines struct {
	mu      sync.Mutex
	raw     bytes.Buffer
	lines   []map[string]any
	changed chan struct{}
}

func newLogLines() *logLines { return &logLines{changed: make(chan struct{})} }

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.raw.Write(p)
	var m map[string]any
	if json.Unmarshal(p, &m) == nil { // slog's JSON handler writes one line per call
		l.lines = append(l.lines, m)
		close(l.changed)
		l.changed = make(chan struct{})
	}
	return len(p), nil
}

func (l *logLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.raw.String()
}

// wait returns the first line match accepts, waiting for it.
func (l *logLines) wait(t *testing.T, match func(map[string]any) bool) map[string]any {
	t.Helper()
	timeout := time.After(time.Minute) // a failure bound, not a measure
	seen := 0
	for {
		l.mu.Lock()
		lines, changed := l.lines[seen:], l.changed
		seen = len(l.lines)
		l.mu.Unlock()
		for _, m := range lines {
			if match(m) {
				return m
			}
		}
		select {
		case <-changed:
		case <-timeout:
			t.Fatalf("no matching log line in:\n%s", l.String())
		}
	}
}

func (l *logLines) logger() *slog.Logger {
	return slog.New(telemetry.LogHandler(slog.NewJSONHandler(l, nil)))
}

// sendTraced sends SendMessage to url with a token and a traceparent.
func sendTraced(t *testing.T, url string, tok secret.Value, traceparent string) {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"` + a2a.MethodSendMessage + `","params":{"message":{"messageId":"m-1","role":"ROLE_USER","parts":[{"text":"hi"}]}}}`
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url+"?api_key=q-secret", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(a2a.HeaderVersion, "1.0")
	req.Header.Set("Authorization", "Bearer "+tok.Reveal())
	req.Header.Set("Traceparent", traceparent)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"result"`) {
		t.Fatalf("SendMessage: %d %s", resp.StatusCode, b)
	}
}

// An inbound traceparent becomes the parent of the server span the
// collector receives, and the access log line carries the same trace.
func TestTracesAndLogsCarryTheInboundTrace(t *testing.T) {
	const traceID, parentID = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
	rcv := otlptest.Start(t)
	logs := newLogLines()
	srv := start(t, &app.Options{DataDir: t.TempDir(), OTLPEndpoint: rcv.URL(), AccessLog: true, Logger: logs.logger(),
		Version: "v0.0.0-test"})
	tok := mint(t, srv, identity.Claims{TenantID: "acme", AgentID: "console", Subject: "ops"})
	sendTraced(t, srv.URL()+"/agents/echo", tok, "00-"+traceID+"-"+parentID+"-01")

	// The HTTP layer's span is the inbound span's child; the A2A call's
	// own server span (SendMessage) is the HTTP span's.
	span := rcv.WaitSpan(t, func(s otlptest.Span) bool {
		return s.Kind == "SERVER" && s.TraceID == traceID && s.Name == "POST /agents/echo"
	})
	if span.ParentSpanID != parentID {
		t.Errorf("server span %q parent %s, want %s", span.Name, span.ParentSpanID, parentID)
	}
	call := rcv.WaitSpan(t, func(s otlptest.Span) bool { return s.TraceID == traceID && s.Name == "SendMessage" })
	if call.ParentSpanID != span.SpanID {
		t.Errorf("the SendMessage span's parent is %s, want the HTTP span %s", call.ParentSpanID, span.SpanID)
	}
	wantAttrs := map[string]any{"http.route": "/agents/echo", "http.request.method": "POST", "http.response.status_code": int64(200),
		"novaos.service": "agents", "novaos.tenant_id": "acme", "url.path": "/agents/echo"}
	for k, v := range wantAttrs {
		if span.Attributes[k] != v {
			t.Errorf("span attribute %s = %v, want %v", k, span.Attributes[k], v)
		}
	}
	if span.Resource["service.name"] != "novaos" || span.Resource["service.version"] != "v0.0.0-test" {
		t.Errorf("span resource %v", span.Resource)
	}

	line := logs.wait(t, func(m map[string]any) bool { return m["msg"] == "http request" && m["route"] == "/agents/echo" })
	want := map[string]any{"method": "POST", "status": 200.0, "tenant": "acme", "service": "agents", "path": "/agents/echo",
		telemetry.LogTraceID: traceID, telemetry.LogSpanID: span.SpanID}
	for k, v := range want {
		if line[k] != v {
			t.Errorf("access log %s = %v, want %v", k, line[k], v)
		}
	}
	if out := logs.String(); strings.Contains(out, tok.Reveal()) || strings.Contains(out, "q-secret") {
		t.Errorf("the log holds the token or the query:\n%s", out)
	}

	// Not sampled by the caller: no span is exported, but the log still
	// names the caller's trace. Shutdown flushes every span first.
	const unsampled = "1af7651916cd43dd8448eb211c80319c"
	sendTraced(t, srv.URL()+"/agents/echo", tok, "00-"+unsampled+"-"+parentID+"-00")
	logs.wait(t, func(m map[string]any) bool { return m["msg"] == "http request" && m[telemetry.LogTraceID] == unsampled })
	if err := srv.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, s := range rcv.Spans() {
		if s.TraceID == unsampled {
			t.Errorf("span %q of a trace its caller did not sample was exported", s.Name)
		}
	}
}

// Without an endpoint nothing is exported, and the inbound trace still
// reaches the log.
func TestInboundTraceWithoutExport(t *testing.T) {
	const traceID = "2af7651916cd43dd8448eb211c80319c"
	logs := newLogLines()
	srv := start(t, &app.Options{DataDir: t.TempDir(), AccessLog: true, Logger: logs.logger()})
	req, _ := http.NewRequest(http.MethodGet, srv.URL()+"/healthz", nil)
	req.Header.Set("Traceparent", "00-"+traceID+"-b7ad6b7169203331-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	line := logs.wait(t, func(m map[string]any) bool { return m["msg"] == "http request" && m["route"] == "/healthz" })
	if line[telemetry.LogTraceID] != traceID || line[telemetry.LogSpanID] != "b7ad6b7169203331" {
		t.Errorf("access log %v, want the inbound trace and span", line)
	}
	if _, ok := line["tenant"]; ok {
		t.Errorf("an anonymous request logged a tenant: %v", line)
	}
}

func TestMetricsEndpoint(t *testing.T) {
	const adminToken = "adm-7c1e5b3a9d2f4e6a"
	type probe struct {
		url    func(srv *app.Server) string
		auth   string
		status int
		body   string
	}
	main := func(p string) func(*app.Server) string { return func(s *app.Server) string { return s.URL() + p } }
	own := func(p string) func(*app.Server) string {
		return func(s *app.Server) string { return s.MetricsURL() + p }
	}
	tests := []struct {
		name   string
		opts   app.Options
		probes []probe
	}{
		{"loopback operator", app.Options{}, []probe{
			{main("/metrics"), "", 200, "novaos_tasks{state=\"completed\"}"},
			{main("/debug/pprof/"), "", 200, "goroutine"},
			{main("/debug/pprof/cmdline"), "", 404, ""},
		}},
		{"admin token", app.Options{AdminToken: secret.New(adminToken)}, []probe{
			{main("/metrics"), "", 401, ""},
			{main("/metrics"), "Bearer wrong-token-0000000", 401, ""},
			{main("/metrics"), "Bearer " + adminToken, 200, "go_goroutines"},
			{main("/debug/pprof/heap?debug=1"), "", 401, ""},
			{main("/debug/pprof/heap?debug=1"), "Bearer " + adminToken, 200, "heap profile"},
		}},
		{"a listener of their own", app.Options{AdminToken: secret.New(adminToken), MetricsAddr: "127.0.0.1:0"}, []probe{
			{own("/metrics"), "", 200, "novaos_db_connections{pool=\"read\",state=\"idle\"}"},
			{own("/debug/pprof/goroutine?debug=1"), "", 200, "goroutine profile"},
			{own("/debug/pprof/cmdline"), "", 404, ""},
			{own("/healthz"), "", 404, ""},
			{main("/metrics"), "Bearer " + adminToken, 404, ""},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := tc.opts
			opts.DataDir = t.TempDir()
			srv := start(t, &opts)
			if (srv.MetricsURL() != "") != (opts.MetricsAddr != "") {
				t.Fatalf("MetricsURL() = %q with MetricsAddr %q", srv.MetricsURL(), opts.MetricsAddr)
			}
			for _, p := range tc.probes {
				req, _ := http.NewRequest(http.MethodGet, p.url(srv), nil)
				if p.auth != "" {
					req.Header.Set("Authorization", p.auth)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != p.status || !strings.Contains(string(b), p.body) {
					t.Errorf("GET %s (%q): %d %.300s; want %d with %q", req.URL.Path, p.auth, resp.StatusCode, b, p.status, p.body)
				}
			}
		})
	}
}

func TestMetricsAddrNeedsTLSOffLoopback(t *testing.T) {
	_, err := app.New(t.Context(), &app.Options{DataDir: t.TempDir(), Addr: "127.0.0.1:0", MetricsAddr: "0.0.0.0:9090"})
	if !errors.Is(err, app.ErrPlaintextListen) {
		t.Fatalf("New with a plaintext metrics listener on every interface: %v, want ErrPlaintextListen", err)
	}
}

func TestTelemetryOptionsChecked(t *testing.T) {
	tests := []struct {
		name string
		opts app.Options
	}{
		{"endpoint", app.Options{OTLPEndpoint: "collector:4318"}},
		{"ratio", app.Options{OTLPEndpoint: "http://127.0.0.1:4318", TraceSampleRatio: 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := tc.opts
			opts.DataDir = t.TempDir()
			if _, err := app.New(t.Context(), &opts); err == nil {
				t.Fatal("New accepted the options")
			}
		})
	}
}
