package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path"
	"reflect"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"novaos.dev/novaos/internal/httpapi"
	"novaos.dev/novaos/internal/telemetry"
	"novaos.dev/novaos/store"
)

// serverTelemetry is what the server traces and measures with.
type serverTelemetry struct {
	provider trace.TracerProvider
	own      *telemetry.Tracing // nil: the provider is the caller's
	registry *prometheus.Registry
	db       *telemetry.Database
}

// check refuses telemetry options that cannot work, before a database is
// opened.
func (t *serverTelemetry) check(o *Options) error {
	if o.NoTelemetry {
		for _, unused := range []struct {
			set  bool
			name string
		}{
			{o.TracerProvider != nil, "TracerProvider"}, {o.OTLPEndpoint != "", "OTLPEndpoint"},
			{len(o.OTLPHeaders) > 0, "OTLPHeaders"}, {o.TraceSampleRatio != 0, "TraceSampleRatio"},
			{o.Metrics != nil, "Metrics"}, {o.MetricsAddr != "", "MetricsAddr"}, {o.AccessLog, "AccessLog"},
		} {
			if unused.set {
				return fmt.Errorf("app: telemetry is off (NoTelemetry), yet Options set %s", unused.name)
			}
		}
		return nil
	}
	if o.TracerProvider != nil {
		return nil
	}
	if err := telemetry.CheckOptions(t.options(o, nil)); err != nil {
		return fmt.Errorf("app: %w", err)
	}
	return nil
}

func (t *serverTelemetry) options(o *Options, log *slog.Logger) *telemetry.Options {
	return &telemetry.Options{OTLPEndpoint: o.OTLPEndpoint, OTLPHeaders: o.OTLPHeaders, SampleRatio: o.TraceSampleRatio,
		ServiceVersion: o.Version, Logger: log}
}

// setup builds the registry, with the database's collector, and the
// tracer provider (Start registers the listener's collectors); with
// telemetry off, only a no-op provider.
func (t *serverTelemetry) setup(o *Options, st *store.Stores, log *slog.Logger) error {
	if o.NoTelemetry {
		// The database collector is never attached, so its Run returns
		// at once and nothing counts the tasks.
		t.provider = noop.NewTracerProvider()
		return nil
	}
	t.registry = o.Metrics
	if t.registry == nil {
		t.registry = telemetry.NewRegistry()
	}
	t.db.Attach(st)
	if err := t.registry.Register(t.db); err != nil {
		return fmt.Errorf("app: metrics: %w", err)
	}
	t.provider = o.TracerProvider
	if t.provider == nil {
		tr, err := telemetry.NewTracing(t.options(o, log))
		if err != nil {
			return fmt.Errorf("app: %w", err)
		}
		t.own, t.provider = tr, tr.Provider()
	}
	return nil
}

// tracing is the tracer provider the services' spans come from (their
// Deps.Tracing).
func (s *Server) tracing() trace.TracerProvider { return s.tel.provider }

// metrics is the registerer the services' metrics go to (their
// Deps.Metrics): nil, so they register none, with telemetry off.
func (s *Server) metrics() prometheus.Registerer {
	if s.tel.registry == nil {
		return nil // not a nil *Registry, which a service would call
	}
	return s.tel.registry
}

// Metrics is the registry /metrics serves: tests and the bench gather it
// directly. Nil with Options.NoTelemetry.
func (s *Server) Metrics() *prometheus.Registry { return s.tel.registry }

// TracerProvider is the provider the server's spans come from.
func (s *Server) TracerProvider() trace.TracerProvider { return s.tel.provider }

// observed wraps the main listener's handler in the server span, the
// request metrics and the access log of every request, and measures the
// listener's Guard. byPattern names the service of each route.
func (s *Server) observed(h http.Handler, guard *httpapi.Guard, byPattern map[string]string) (http.Handler, error) {
	if s.opts.NoTelemetry {
		return h, nil
	}
	opts := &telemetry.HTTPOptions{Tracing: s.tel.provider, Metrics: s.tel.registry,
		Service: func(pattern string) string { return byPattern[pattern] }}
	if s.opts.AccessLog {
		opts.AccessLog = s.log
	}
	obs, err := telemetry.NewHTTP(opts)
	if err != nil {
		return nil, fmt.Errorf("app: metrics: %w", err)
	}
	for _, c := range []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "novaos_http_connections_open",
			Help: "Connections open on the main listener and the gRPC one, against --max-conns."},
			func() float64 { return float64(guard.Stats().OpenConns) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "novaos_http_connections_shed_total",
			Help: "Connections closed at accept, beyond --max-conns and its reserve."},
			func() float64 { return float64(guard.Stats().ShedConns) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "novaos_http_inflight_body_bytes",
			Help: "Request body bytes admitted and held, against --max-inflight-bytes."},
			func() float64 { return float64(guard.Stats().InflightBytes) }),
	} {
		if err := s.tel.registry.Register(c); err != nil && !errors.As(err, new(prometheus.AlreadyRegisteredError)) {
			return nil, fmt.Errorf("app: metrics: %w", err)
		}
	}
	return obs.Wrap(h), nil
}

// operatorRoutes are /metrics and /debug/pprof/ on the main listener,
// behind the admin rule; none when they have a listener of their own, or
// with telemetry off.
func (s *Server) operatorRoutes() []httpapi.Route {
	if s.opts.MetricsAddr != "" || s.opts.NoTelemetry {
		return nil
	}
	api := &httpapi.API{Name: "metrics", Logger: s.log, Auth: httpapi.AdminRule{Token: s.opts.AdminToken}}
	return telemetry.Routes(s.tel.registry, s.log, api.Handler)
}

// listenMetrics opens the metrics listener, if Options name one.
func (s *Server) listenMetrics(ctx context.Context) (net.Listener, *http.Server, error) {
	if s.opts.MetricsAddr == "" {
		return nil, nil, nil
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", s.opts.MetricsAddr)
	if err != nil {
		return nil, nil, fmt.Errorf("app: listen for metrics: %w", err)
	}
	if err := s.checkPlaintext(ln.Addr()); err != nil {
		ln.Close()
		return nil, nil, err
	}
	guard, err := httpapi.NewGuard(&httpapi.Options{Addr: ln.Addr(), Limits: s.opts.HTTP.Limits})
	if err != nil {
		ln.Close()
		return nil, nil, fmt.Errorf("app: %w", err)
	}
	mux := http.NewServeMux()
	for _, r := range telemetry.Routes(s.tel.registry, s.log, nil) {
		mux.Handle(r.Pattern, r.Handler)
	}
	srv := guard.Server(mux)
	srv.ErrorLog = slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)
	if s.tls != nil {
		srv.TLSConfig = s.tls.Config()
	}
	return guard.Listener(ln), srv, nil
}

// serveMetrics serves the metrics listener until Shutdown.
func (s *Server) serveMetrics() {
	if s.metricsSv == nil {
		return
	}
	srv, ln := s.metricsSv, s.metricsLn
	go func() {
		var err error
		if s.tls != nil {
			err = srv.ServeTLS(ln, "", "")
		} else {
			err = srv.Serve(ln)
		}
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("app: metrics listener stopped", "err", err)
		}
	}()
}

// serviceNames are the services' names in metrics and spans, by package;
// a package not listed is named after itself.
var serviceNames = map[string]string{
	"memorysvc":   "memory",
	"gatesvc":     "gate",
	"execgw":      "gateway",
	"toolgw":      "tools",
	"registrysvc": "registry",
	"agenthost":   "agents",
	"llmgw":       "llm",
}

// serviceName is svc's name in metrics and spans: that of the package
// that built it (the server's own routes are "app").
func serviceName(svc service) string {
	t := reflect.TypeOf(svc)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	pkg := path.Base(t.PkgPath())
	if n, ok := serviceNames[pkg]; ok {
		return n
	}
	return strings.TrimSuffix(pkg, "svc")
}

// flushTimeout bounds the export of the last spans at Shutdown: a
// collector that does not answer must not hold the process for the whole
// shutdown grace, nor an expired one cut the export short at once.
const flushTimeout = 5 * time.Second

// shutdownTelemetry exports the spans not yet exported, for at most
// flushTimeout whatever is left of ctx.
func (s *Server) shutdownTelemetry(ctx context.Context) error {
	if s.tel.own == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), flushTimeout)
	defer cancel()
	return s.tel.own.Shutdown(ctx)
}

// Paths of the operator's endpoints: Prometheus metrics and the runtime
// profiles.
const (
	MetricsPath = telemetry.MetricsPath
	PprofPath   = telemetry.PprofPath
)

// MetricsURL is the base URL of the metrics listener ("" when /metrics is
// on the main listener, or before Start).
func (s *Server) MetricsURL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.metricsLn == nil {
		return ""
	}
	return s.scheme() + strings.TrimPrefix(httpapi.ListenURL(s.opts.MetricsAddr, s.metricsLn.Addr()), "http://")
}

// logTelemetry says where traces and metrics go.
func (s *Server) logTelemetry() {
	if s.opts.NoTelemetry {
		s.log.Info("app: telemetry off: no metrics, spans or access log")
		return
	}
	exporting := s.tel.own != nil && s.tel.own.Exporting()
	where := "main listener (admin rule)"
	if s.metricsLn != nil {
		where = s.metricsLn.Addr().String()
	}
	attrs := []any{"metrics", where, "exportingSpans", exporting, "accessLog", s.opts.AccessLog}
	if exporting {
		// The endpoint's host only: a URL may carry more than it should,
		// and header values are secrets.
		if u, err := telemetry.TracesURL(s.opts.OTLPEndpoint); err == nil {
			if host, _, ok := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(u, "https://"), "http://"), "/"); ok {
				attrs = append(attrs, "otlpHost", host)
			}
		}
		names := make([]string, 0, len(s.opts.OTLPHeaders))
		for k := range s.opts.OTLPHeaders {
			names = append(names, k)
		}
		attrs = append(attrs, "otlpHeaders", names)
	}
	s.log.Info("app: telemetry", attrs...)
}
