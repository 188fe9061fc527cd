package a2aotel

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"novaos.dev/novaos/a2a"
)

// Metric names.
const (
	MetricRequests = "novaos_a2a_requests_total"
	MetricDuration = "novaos_a2a_request_duration_seconds"
)

// methods are the A2A methods, in the order of their label children;
// another method is counted as "other".
var methods = [...]string{
	a2a.MethodSendMessage, a2a.MethodSendStreamingMessage, a2a.MethodGetTask, a2a.MethodListTasks,
	a2a.MethodCancelTask, a2a.MethodSubscribeToTask, a2a.MethodCreateTaskPushNotificationConfig,
	a2a.MethodGetTaskPushNotificationConfig, a2a.MethodListTaskPushNotificationConfigs,
	a2a.MethodDeleteTaskPushNotificationConfig, a2a.MethodGetExtendedAgentCard, "other",
}

// bindings are the binding label values, by binding: short, lower-case.
var bindings = [...]struct{ name, label string }{
	{a2a.BindingJSONRPC, "jsonrpc"}, {a2a.BindingHTTPJSON, "rest"}, {a2a.BindingGRPC, "grpc"}, {"", "other"},
}

func methodIndex(m string) int {
	for i, name := range methods[:len(methods)-1] {
		if name == m {
			return i
		}
	}
	return len(methods) - 1
}

func bindingIndex(b string) int {
	for i, x := range bindings[:len(bindings)-1] {
		if x.name == b {
			return i
		}
	}
	return len(bindings) - 1
}

// durationBuckets, in seconds: 1 ms to about 20 minutes, since a stream
// lasts as long as its task runs.
var durationBuckets = prometheus.ExponentialBuckets(0.001, 4, 11)

// Metrics counts the A2A calls of one server or several: make one,
// register it (it is a prometheus.Collector) and give it to every
// ServerInterceptor that should count into it. The children of the
// successful calls are made once, so a call counts without a label
// lookup.
type Metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	ok       [len(methods)][len(bindings)]prometheus.Counter
	took     [len(methods)][len(bindings)]prometheus.Observer
}

var _ prometheus.Collector = (*Metrics)(nil)

// NewMetrics returns the A2A server metrics: MetricRequests by method,
// binding and outcome, MetricDuration by method and binding.
func NewMetrics() *Metrics {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricRequests,
			Help: "A2A calls served, by method, binding and outcome (ok, or the A2A error's reason)."},
			[]string{"method", "binding", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: MetricDuration,
			Help: "Time to answer an A2A call (a stream: until it ended), by method and binding.", Buckets: durationBuckets},
			[]string{"method", "binding"}),
	}
	for i, method := range methods {
		for j, b := range bindings {
			m.ok[i][j] = m.requests.WithLabelValues(method, b.label, "ok")
			m.took[i][j] = m.duration.WithLabelValues(method, b.label)
		}
	}
	return m
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	m.requests.Describe(ch)
	m.duration.Describe(ch)
}

// Collect implements prometheus.Collector.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	m.requests.Collect(ch)
	m.duration.Collect(ch)
}

// observe counts one call.
func (m *Metrics) observe(method, binding int, start time.Time, err error) {
	m.took[method][binding].Observe(time.Since(start).Seconds())
	if err == nil {
		m.ok[method][binding].Inc()
		return
	}
	m.requests.WithLabelValues(methods[method], bindings[binding].label, errorType(err)).Inc()
}
