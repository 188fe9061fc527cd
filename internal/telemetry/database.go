package telemetry

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/store"
)

// DefaultTaskStatesEvery is how often, at most, Database counts the tasks
// by state when DatabaseOptions.TaskStatesEvery is zero.
const DefaultTaskStatesEvery = 5 * time.Second

// taskStatesTimeout bounds one count of the tasks.
const taskStatesTimeout = 10 * time.Second

// DatabaseOptions configure NewDatabase; nil means the defaults.
type DatabaseOptions struct {
	// TaskStatesEvery is the least time between two counts of the tasks
	// by state (default DefaultTaskStatesEvery).
	TaskStatesEvery time.Duration
	// Logger receives a count that failed (debug); nil discards it.
	Logger *slog.Logger
}

// Database is the Prometheus collector of the database: its connection
// pools (store.Stores.Pools), the number of writes each group commit of
// the task writer held (ObserveBatch, given to the store's Options), and
// the tasks by state (store.Stores.TaskStates).
//
// Counting the tasks reads the whole table, which a scrape must not wait
// for: a scrape reports the last count and asks Run for a new one, which
// Run makes at most every TaskStatesEvery. Run counts once as it starts;
// a scrape before that count is made counts itself. So the counts are one
// scrape interval old.
type Database struct {
	batches prometheus.Histogram
	every   time.Duration
	log     *slog.Logger

	pools func() []store.PoolStats
	tasks func(ctx context.Context) (map[a2a.TaskState]int64, error)
	want  chan struct{}

	mu     sync.Mutex
	counts map[a2a.TaskState]int64 // nil: never counted
}

var (
	dbConnsDesc = prometheus.NewDesc("novaos_db_connections",
		"Database connections open, by pool and state (in_use, idle).", []string{"pool", "state"}, nil)
	dbMaxConnsDesc = prometheus.NewDesc("novaos_db_connections_max",
		"Most connections a database pool opens (0: no bound).", []string{"pool"}, nil)
	dbWaitsDesc = prometheus.NewDesc("novaos_db_connection_waits_total",
		"Times a connection was asked for when none was free, by pool.", []string{"pool"}, nil)
	dbWaitSecondsDesc = prometheus.NewDesc("novaos_db_connection_wait_seconds_total",
		"Time spent waiting for a free connection, by pool.", []string{"pool"}, nil)
	tasksDesc = prometheus.NewDesc("novaos_tasks",
		"A2A tasks in the database by state, as last counted (every replica's on a shared database: take max, not sum, across replicas).",
		[]string{"state"}, nil)
)

// NewDatabase returns the collector; Attach gives it the stores once they
// are open.
func NewDatabase(opts *DatabaseOptions) *Database {
	var o DatabaseOptions
	if opts != nil {
		o = *opts
	}
	if o.TaskStatesEvery <= 0 {
		o.TaskStatesEvery = DefaultTaskStatesEvery
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Database{
		batches: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "novaos_db_write_batch_size",
			Help:    "Writes committed together by the task writer's group commits.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 9), // 1 to 256, the writers' largest batch
		}),
		every: o.TaskStatesEvery,
		log:   o.Logger,
		want:  make(chan struct{}, 1),
	}
}

// ObserveBatch records one group commit of writes; give it to
// sqlite.Options or postgres.Options as their ObserveBatch.
func (d *Database) ObserveBatch(writes int) { d.batches.Observe(float64(writes)) }

// Attach reads st's pools and task counts from now on; either may be nil.
// Call it before the collector is registered.
func (d *Database) Attach(st *store.Stores) {
	d.pools, d.tasks = st.Pools, st.TaskStates
}

// Describe sends nothing: the pools and states are known only from the
// database, so the collector is unchecked.
func (d *Database) Describe(chan<- *prometheus.Desc) {}

// Collect reports the pools, the batch sizes and the last task counts.
func (d *Database) Collect(ch chan<- prometheus.Metric) {
	d.batches.Collect(ch)
	if d.pools != nil {
		for _, p := range d.pools() {
			ch <- prometheus.MustNewConstMetric(dbConnsDesc, prometheus.GaugeValue, float64(p.InUse), p.Name, "in_use")
			ch <- prometheus.MustNewConstMetric(dbConnsDesc, prometheus.GaugeValue, float64(p.Idle), p.Name, "idle")
			ch <- prometheus.MustNewConstMetric(dbMaxConnsDesc, prometheus.GaugeValue, float64(p.MaxConns), p.Name)
			ch <- prometheus.MustNewConstMetric(dbWaitsDesc, prometheus.CounterValue, float64(p.Waits), p.Name)
			ch <- prometheus.MustNewConstMetric(dbWaitSecondsDesc, prometheus.CounterValue, p.WaitTime.Seconds(), p.Name)
		}
	}
	if d.tasks == nil {
		return
	}
	d.mu.Lock()
	counts := d.counts
	d.mu.Unlock()
	if counts == nil {
		counts = d.Refresh(context.Background())
	} else {
		select {
		case d.want <- struct{}{}:
		default: // a count is asked for already
		}
	}
	if counts == nil {
		return
	}
	// Every state, zero or not, so a state's series does not vanish and
	// come back as tasks move.
	for s := a2a.TaskStateUnspecified; s <= a2a.TaskStateAuthRequired; s++ {
		ch <- prometheus.MustNewConstMetric(tasksDesc, prometheus.GaugeValue, float64(counts[s]), stateLabel(s))
	}
}

// Refresh counts the tasks now and keeps the count for scrapes; nil when
// the count failed and none was made before.
func (d *Database) Refresh(ctx context.Context) map[a2a.TaskState]int64 {
	ctx, cancel := context.WithTimeout(ctx, taskStatesTimeout)
	defer cancel()
	counts, err := d.tasks(ctx)
	d.mu.Lock()
	defer d.mu.Unlock()
	if err != nil {
		d.log.Debug("telemetry: counting the tasks by state failed", "err", err)
		return d.counts
	}
	d.counts = counts
	return counts
}

// Run counts the tasks at once, so the first scrape finds a count, then
// whenever a scrape has asked, at most every TaskStatesEvery, until ctx
// ends.
func (d *Database) Run(ctx context.Context) {
	if d.tasks == nil {
		return
	}
	t := time.NewTimer(0)
	defer t.Stop()
	for first := true; ; first = false {
		if !first {
			select {
			case <-d.want:
			case <-ctx.Done():
				return
			}
		}
		d.Refresh(ctx)
		t.Reset(d.every)
		select {
		case <-t.C:
		case <-ctx.Done():
			return
		}
	}
}

// stateLabel is a state's label: its name without TASK_STATE_, in lower
// case ("input_required").
func stateLabel(s a2a.TaskState) string {
	return strings.ToLower(strings.TrimPrefix(s.String(), "TASK_STATE_"))
}
