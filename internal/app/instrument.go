package app

import (
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// tracing is the provider the services trace with: Options.TracerProvider,
// or one that records nothing.
func (s *Server) tracing() trace.TracerProvider {
	if s.opts.TracerProvider == nil {
		return noop.NewTracerProvider()
	}
	return s.opts.TracerProvider
}

// metrics is where the services register their metrics: Options.Metrics,
// or nil, which registers none.
func (s *Server) metrics() prometheus.Registerer {
	if s.opts.Metrics == nil {
		return nil // not a typed nil: the services test for nil
	}
	return s.opts.Metrics
}
