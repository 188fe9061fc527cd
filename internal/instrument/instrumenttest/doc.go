// Package instrumenttest reads the spans and noted callers of services under test.
//
// A test hands a SpanSink (or an otel SpanRecorder) to the service as its
// span processor and checks what ended:
//
//	sink := instrumenttest.NewSpanSink()
//	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sink))
//	…
//	spans := sink.Await(t, "internal invoke_agent my-echo")
//	instrumenttest.WantAttrs(t, spans["internal invoke_agent my-echo"], map[string]string{"novaos.tenant_id": "acme"})
//
// NotedTenant serves a request the way the platform's access log does and
// says which tenant the handler noted as its caller.
package instrumenttest
