package cli

import (
	"errors"
	"flag"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"novaos.dev/novaos/internal/app"
	"novaos.dev/novaos/internal/telemetry"
	"novaos.dev/novaos/secret"
)

// EnvOTLPHeaders holds --otlp-headers when the flag is not given, so an
// API key need not be on the command line.
const EnvOTLPHeaders = "NOVAOS_OTLP_HEADERS"

// telemetryFlagSet holds serve's flags for metrics, traces and the access
// log (docs/operations.md: Metrics, traces and profiles).
type telemetryFlagSet struct {
	metricsAddr, endpoint *string
	ratio                 *float64
	accessLog             *bool
	headers               headersFlag
}

func telemetryFlags(fs *flag.FlagSet) *telemetryFlagSet {
	t := &telemetryFlagSet{}
	t.metricsAddr = fs.String("metrics-addr", "", "`address` of a listener of their own for /metrics and /debug/pprof/, open to whoever reaches it (e.g. 127.0.0.1:9090); default: on the main listener, to the operator only (admin token, or this machine without one)")
	t.endpoint = fs.String("otlp-endpoint", "", "OTLP/HTTP collector `URL` spans are exported to (http://127.0.0.1:4318, to which /v1/traces is added, or a full traces URL); default none: no span is exported, an inbound traceparent still reaches the logs and outbound calls")
	fs.Var(&t.headers, "otlp-headers", "`name=value` headers sent with every span export, comma-separated (a collector's API key; never logged); default $"+EnvOTLPHeaders)
	t.ratio = fs.Float64("trace-sample-ratio", telemetry.DefaultSampleRatio, "share of new traces recorded and exported, 0 to 1; a request whose traceparent says sampled or not is followed, and so are the runs it queues")
	t.accessLog = fs.Bool("access-log", true, "log a line per request at info (method, route, path, status, bytes, duration, tenant, trace id; never a header, query or body)")
	return t
}

// check says what is wrong with the flags, or "".
func (t *telemetryFlagSet) check(e *env) string {
	if !t.headers.set {
		if v := e.getenv(EnvOTLPHeaders); v != "" {
			if err := t.headers.Set(v); err != nil {
				return "$" + EnvOTLPHeaders + ": " + err.Error()
			}
		}
	}
	if r := *t.ratio; r < 0 || r > 1 || r != r {
		return "--trace-sample-ratio: want a number from 0 to 1"
	}
	if *t.endpoint == "" {
		if len(t.headers.h) > 0 {
			return "--otlp-headers needs --otlp-endpoint"
		}
		return ""
	}
	if _, err := telemetry.TracesURL(*t.endpoint); err != nil {
		return "--otlp-endpoint: " + strings.TrimPrefix(err.Error(), "telemetry: OTLP endpoint: ")
	}
	return ""
}

// apply puts the flags into opts.
func (t *telemetryFlagSet) apply(opts *app.Options) {
	opts.MetricsAddr, opts.OTLPEndpoint, opts.OTLPHeaders = *t.metricsAddr, *t.endpoint, t.headers.h
	opts.TraceSampleRatio = *t.ratio
	if opts.TraceSampleRatio == 0 {
		opts.TraceSampleRatio = -1 // none: zero means the default in app.Options
	}
	opts.AccessLog = *t.accessLog
	opts.Version = versionString()
}

// headersFlag is --otlp-headers: name=value pairs whose values are
// secrets. Its String names the headers only, so neither -h nor an error
// shows a value.
type headersFlag struct {
	h   map[string]secret.Value
	set bool
}

func (f *headersFlag) String() string {
	if f == nil || len(f.h) == 0 {
		return ""
	}
	names := make([]string, 0, len(f.h))
	for k := range f.h {
		names = append(names, k+"=…")
	}
	slices.Sort(names)
	return strings.Join(names, ",")
}

// Set reads "name=value,name2=value2" (OpenTelemetry's OTEL_EXPORTER_OTLP_HEADERS
// form); values may hold '=' but not ','.
func (f *headersFlag) Set(s string) error {
	f.set = true
	h := map[string]secret.Value{}
	for pair := range strings.SplitSeq(s, ",") {
		if strings.TrimSpace(pair) == "" {
			continue
		}
		name, value, ok := strings.Cut(pair, "=")
		name = http.CanonicalHeaderKey(strings.TrimSpace(name))
		if !ok || name == "" || strings.ContainsAny(name, " \t\r\n:\"") {
			// Never the pair: its value may be the secret.
			return errors.New("want name=value pairs, comma-separated")
		}
		if strings.ContainsAny(value, "\r\n") {
			return fmt.Errorf("header %s: a value cannot hold a line break", name)
		}
		h[name] = secret.New(strings.TrimSpace(value))
	}
	f.h = h
	return nil
}
