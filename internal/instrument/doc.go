// Package instrument is what the platform's services share to trace and measure.
//
// A service takes a trace.TracerProvider and a prometheus.Registerer in its
// Deps (nil: trace nothing, register nothing) and builds its instruments
// with these helpers:
//
//	tracer := instrument.Tracer(deps.Tracing, "novaos.dev/novaos/internal/execgw")
//	calls := instrument.Register(deps.Metrics, prometheus.NewCounterVec(…), log)
//	byState := instrument.Series(calls, states...)
//	instrument.Register(deps.Metrics, instrument.Scraped(log, readCounts, desc), log)
//	client := &http.Client{Transport: instrument.Transport(base)}
//
// Register shares a collector two services (or two instances of one)
// register on one registry; Series makes a vector's series up front, so
// they are exported at zero; Scraped reads gauges from a store at each
// scrape; Transport sends the W3C trace context of each request's context
// with it. Spans name tenants, runs and agents with the shared Attr keys
// and mark failures with Failed.
package instrument
