package telemetry

import (
	"log/slog"
	"net/http"
	"net/http/pprof"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"novaos.dev/novaos/internal/httpapi"
)

// Paths of the operator's endpoints.
const (
	MetricsPath = "/metrics"
	PprofPath   = "/debug/pprof/"
)

// Routes are /metrics, serving g's metrics in the Prometheus text format
// (OpenMetrics with exemplars when the scraper asks for it), and the
// runtime profiles under /debug/pprof/, each handler passed through
// guard: the admin rule on the main listener, nothing on a listener of
// their own. /debug/pprof/cmdline is not served (404): a command line may
// hold a database URL with its password.
func Routes(g prometheus.Gatherer, log *slog.Logger, guard func(http.Handler) http.Handler) []httpapi.Route {
	if guard == nil {
		guard = func(h http.Handler) http.Handler { return h }
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	metrics := promhttp.HandlerFor(g, promhttp.HandlerOpts{
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		ErrorHandling:     promhttp.ContinueOnError, // a collector's failure costs its metrics, not the scrape
		EnableOpenMetrics: true,
	})
	return []httpapi.Route{
		{Pattern: "GET " + MetricsPath, Handler: guard(metrics)},
		{Pattern: "GET " + PprofPath, Handler: guard(http.HandlerFunc(pprof.Index))},
		{Pattern: "GET " + PprofPath + "profile", Handler: guard(http.HandlerFunc(pprof.Profile))},
		{Pattern: "GET " + PprofPath + "trace", Handler: guard(http.HandlerFunc(pprof.Trace))},
		{Pattern: "GET " + PprofPath + "symbol", Handler: guard(http.HandlerFunc(pprof.Symbol))},
		{Pattern: "POST " + PprofPath + "symbol", Handler: guard(http.HandlerFunc(pprof.Symbol))},
	}
}
