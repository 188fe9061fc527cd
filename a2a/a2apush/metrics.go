package a2apush

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"

	"novaos.dev/novaos/a2a/a2asrv"
)

// ScopeName is the instrumentation scope of the deliverer's spans.
const ScopeName = "novaos.dev/novaos/a2a/a2apush"

// The span of one attempt, and its attributes.
const spanName = "a2a.push.deliver"

var (
	attrTaskID   = attribute.Key("a2a.task.id")
	attrConfigID = attribute.Key("a2a.push.config.id")
	attrAttempt  = attribute.Key("a2a.push.attempt")
	attrOutcome  = attribute.Key("a2a.push.outcome")
)

// Metric names.
const (
	MetricQueueDepth  = "novaos_push_queue_depth"
	MetricDeliveries  = "novaos_push_deliveries_total"
	MetricDeadLetters = "novaos_push_dead_letters_total"
)

// queueTimeout bounds the outbox read a scrape makes.
const queueTimeout = 2 * time.Second

// metrics are what the deliverer counts.
type metrics struct {
	deliveries *prometheus.CounterVec
	delivered  prometheus.Counter
	failed     prometheus.Counter
	dead       prometheus.Counter
}

func newMetrics() *metrics {
	m := &metrics{
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricDeliveries,
			Help: "Push notification attempts, by outcome: delivered, or failed (retried later or given up)."}, []string{"outcome"}),
		dead: prometheus.NewCounter(prometheus.CounterOpts{Name: MetricDeadLetters,
			Help: "Push configs whose delivery was given up (dead-lettered)."}),
	}
	m.delivered = m.deliveries.WithLabelValues("delivered")
	m.failed = m.deliveries.WithLabelValues("failed")
	return m
}

func (m *metrics) settled(o a2asrv.PushOutcome) {
	switch o {
	case a2asrv.PushDelivered:
		m.delivered.Inc()
	case a2asrv.PushDead:
		m.failed.Inc()
		m.dead.Inc()
	default:
		m.failed.Inc()
	}
}

func outcomeName(o a2asrv.PushOutcome) string {
	switch o {
	case a2asrv.PushDelivered:
		return "delivered"
	case a2asrv.PushDead:
		return "dead"
	}
	return "retry"
}

// Collector returns the deliverer's metrics, to register where they are
// exported: MetricDeliveries{outcome} (delivered or failed) and
// MetricDeadLetters count this deliverer's attempts, and
// MetricQueueDepth is what waits in the outbox, read from it at each
// scrape when it is an a2asrv.PushQueue (every replica reports the
// shared outbox's depth). A scrape whose read fails leaves the depth out
// rather than report a false one.
func (d *Deliverer) Collector() prometheus.Collector {
	c := &collector{m: d.metrics, log: d.opts.Logger}
	if q, ok := d.outbox.(a2asrv.PushQueue); ok {
		c.queue = q
	}
	return c
}

var depthDesc = prometheus.NewDesc(MetricQueueDepth, "Push notifications waiting to be delivered, in flight included.", nil, nil)

type collector struct {
	m     *metrics
	queue a2asrv.PushQueue
	log   interface {
		Warn(msg string, args ...any)
	}
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	c.m.deliveries.Describe(ch)
	c.m.dead.Describe(ch)
	if c.queue != nil {
		ch <- depthDesc
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	c.m.deliveries.Collect(ch)
	c.m.dead.Collect(ch)
	if c.queue == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), queueTimeout)
	defer cancel()
	n, err := c.queue.PushQueued(ctx)
	if err != nil {
		c.log.Warn("a2apush: read the queue depth", "err", err)
		return
	}
	ch <- prometheus.MustNewConstMetric(depthDesc, prometheus.GaugeValue, float64(n))
}
