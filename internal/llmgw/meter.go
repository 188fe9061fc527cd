package llmgw

import (
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"novaos.dev/novaos/internal/instrument"
	"novaos.dev/novaos/llm"
)

// meter holds the gateway's metrics. Labels are bounded: model is a
// configured route's name ("" for a call refused before one was found),
// tenant is per the platform's tenants, outcome one of the outcomes.
type meter struct {
	requests *prometheus.CounterVec
	tokens   *prometheus.CounterVec
	cost     *prometheus.CounterVec
	duration *prometheus.HistogramVec
	ttft     *prometheus.HistogramVec
}

// latencyBuckets span a cached answer to a long generation.
var latencyBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}

func newMeter(reg prometheus.Registerer, log *slog.Logger) *meter {
	return &meter{
		requests: instrument.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{Name: "novaos_llm_requests_total",
			Help: "Calls to the LLM gateway, by model and outcome."}, []string{"model", "outcome"}), log),
		tokens: instrument.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{Name: "novaos_llm_tokens_total",
			Help: "Tokens the LLM gateway's calls used, by tenant and direction (input or output)."}, []string{"tenant", "direction"}), log),
		cost: instrument.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{Name: "novaos_llm_cost_usd_total",
			Help: "What the LLM gateway's calls cost, in US dollars, by tenant."}, []string{"tenant"}), log),
		duration: instrument.Register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "novaos_llm_request_duration_seconds",
			Help: "Time an LLM gateway call took, to its last byte, by model.", Buckets: latencyBuckets}, []string{"model"}), log),
		ttft: instrument.Register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "novaos_llm_time_to_first_token_seconds",
			Help: "Time to the first event of a streamed LLM gateway call, by model.", Buckets: latencyBuckets}, []string{"model"}), log),
	}
}

// request counts a call refused before a provider was asked.
func (m *meter) request(model, outcome string) {
	m.requests.WithLabelValues(model, outcome).Inc()
}

// call meters a call a provider was asked for.
func (m *meter) call(tenant, model, outcome string, input, output int64, cost llm.Cost, d, ttft time.Duration, streamed bool) {
	m.requests.WithLabelValues(model, outcome).Inc()
	m.tokens.WithLabelValues(tenant, "input").Add(float64(input))
	m.tokens.WithLabelValues(tenant, "output").Add(float64(output))
	m.cost.WithLabelValues(tenant).Add(cost.USD())
	m.duration.WithLabelValues(model).Observe(d.Seconds())
	if streamed {
		m.ttft.WithLabelValues(model).Observe(ttft.Seconds())
	}
}
