// Package a2aotel traces and counts A2A calls with OpenTelemetry and Prometheus.
//
// A ServerInterceptor hangs off an a2asrv server's interceptors, so it
// sees every call on every binding (JSON-RPC, HTTP+JSON, gRPC) once the
// server admitted it; a ClientInterceptor hangs off an a2aclient.Client.
//
//	m := a2aotel.NewMetrics()
//	registry.MustRegister(m)
//	srv := a2asrv.NewHandler(card, exec, &a2asrv.Options{Interceptors: []a2asrv.Interceptor{
//		a2aotel.NewServerInterceptor(&a2aotel.Options{TracerProvider: tp, Metrics: m}),
//	}})
//	client, _ := a2aclient.NewFromURL(ctx, url, &a2aclient.Options{Interceptors: []a2aclient.Interceptor{
//		a2aotel.NewClientInterceptor(&a2aotel.Options{TracerProvider: tp}),
//	}})
//
// # Spans
//
// One span per call, named by the A2A method ("SendMessage"), as
// OpenTelemetry's proposed A2A conventions name them: SERVER on the
// server, CLIENT on the client. Attributes: a2a.method.name,
// a2a.protocol.binding, a2a.tenant, a2a.task.id, a2a.context.id,
// a2a.message.id and a2a.task.state, when the request or its answer names
// them; gen_ai.operation.name "invoke_agent" on SendMessage and
// SendStreamingMessage, which run the agent; on failure error.type (the
// A2A error's reason, such as TASK_NOT_FOUND) and rpc.response.status_code
// (its JSON-RPC code), with the span's status an error. Nothing of a
// message's content is recorded.
//
// The client span's trace context travels with the request (W3C
// traceparent, in the HTTP headers or the gRPC metadata). The server span
// is a child of the span already in the call's context (an HTTP
// middleware's), else of the trace context the call carries. A stream's
// spans last until it ends; a client span ends when the stream's
// connection closes, including when the consumer stops reading
// (a2aclient.Finisher).
//
// # Metrics
//
// Metrics is a prometheus.Collector of two series: MetricRequests
// (novaos_a2a_requests_total{method,binding,outcome}) and MetricDuration
// (novaos_a2a_request_duration_seconds{method,binding}). method is the A2A
// method ("other" for another); binding is jsonrpc, rest or grpc; outcome
// is ok or the A2A error's reason. No label carries an id.
//
// A call the server refused before its interceptors ran (an unsupported
// A2A-Version, an unauthenticated caller) is neither traced nor counted
// here: the HTTP layer sees it.
//
// # Cost
//
// A call the sampler drops costs the span the provider makes for it and
// one small allocation of the interceptor's; the labels of a successful
// call are looked up once, when Metrics is made. With the no-op provider
// and no Metrics the interceptors do nothing (BenchmarkServerInterceptor).
package a2aotel
