// Package telemetry sets up the platform's traces, metrics and trace-stamped logs.
//
// NewTracing builds the tracer provider (OTLP/HTTP export with a ratio
// sampler, or, without an endpoint, one that only carries an inbound
// traceparent on). Its spans cost in proportion to what is sampled: a
// span the sampler would drop is not made (a child of an unsampled span is
// that span), and the Exporter encodes a batch straight into protobuf
// without building a message per span. NewRegistry is the Prometheus
// registry with the Go runtime and process collectors. HTTP wraps a listener's handler in a server span,
// the request metrics and the access log of each request; Routes serve
// /metrics and /debug/pprof/; Database collects the database's pools,
// writer batches and tasks by state; LogHandler stamps log lines with the
// trace and span ids of their context.
//
//	tr, err := telemetry.NewTracing(&telemetry.Options{OTLPEndpoint: "http://127.0.0.1:4318", SampleRatio: 0.1})
//	reg := telemetry.NewRegistry()
//	obs, err := telemetry.NewHTTP(&telemetry.HTTPOptions{Tracing: tr.Provider(), Metrics: reg, AccessLog: log})
//	srv := &http.Server{Handler: obs.Wrap(mux)}
//	defer tr.Shutdown(ctx) // exports what is left
//
// Services take the provider and the registry as trace.TracerProvider and
// prometheus.Registerer in their Deps; internal/app wires them.
package telemetry
