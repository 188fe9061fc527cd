package instrument

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Vec is a metric vector of one label, or one curried down to one
// (CounterVec.MustCurryWith): what Series takes its series from.
type Vec[M any] interface {
	WithLabelValues(lvs ...string) M
}

// Series returns the series of vec for each of the label's values,
// made at once, so that every one is exported from the start: a rate
// reads zero rather than nothing before the first count.
func Series[K ~string, M any](vec Vec[M], values ...K) map[K]M {
	m := make(map[K]M, len(values))
	for _, v := range values {
		m[v] = vec.WithLabelValues(string(v))
	}
	return m
}

// ScrapeTimeout bounds what a Scraped collector reads at one scrape.
const ScrapeTimeout = 2 * time.Second

// Scraped returns a collector of descs whose metrics collect reads at
// each scrape (from the database every replica shares, say), within
// ScrapeTimeout. When collect fails, the error is logged and the scrape
// gets none of its metrics rather than false zeros, so collect should
// read everything before it sends anything.
func Scraped(log *slog.Logger, collect func(ctx context.Context, ch chan<- prometheus.Metric) error, descs ...*prometheus.Desc) prometheus.Collector {
	return &scraped{descs: descs, collect: collect, log: log}
}

type scraped struct {
	descs   []*prometheus.Desc
	collect func(context.Context, chan<- prometheus.Metric) error
	log     *slog.Logger
}

func (s *scraped) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range s.descs {
		ch <- d
	}
}

func (s *scraped) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), ScrapeTimeout)
	defer cancel()
	if err := s.collect(ctx, ch); err != nil && s.log != nil {
		s.log.Warn("instrument: a metric could not be read for a scrape", "err", err)
	}
}
