// Package otlptest is an OTLP/HTTP trace receiver for tests to wait for spans on.
//
// Start serves POST /v1/traces (protobuf, as OpenTelemetry's otlptracehttp
// exporter sends it) on loopback; give its URL to the exporter, then wait
// for the spans the code under test ends:
//
//	rcv := otlptest.Start(t)
//	srv := startServer(t, rcv.URL()) // --otlp-endpoint
//	span := rcv.WaitSpan(t, func(s otlptest.Span) bool { return s.Name == "POST /agents/echo" })
//	if span.ParentSpanID != inboundSpanID { … }
package otlptest
