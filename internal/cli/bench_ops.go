package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/internal/app"
	"novaos.dev/novaos/internal/bench"
	"novaos.dev/novaos/internal/execgw"
	"novaos.dev/novaos/internal/telemetry"
	"novaos.dev/novaos/secret"
	"novaos.dev/novaos/store"
	"novaos.dev/novaos/store/postgres"
	"novaos.dev/novaos/store/sqlite"
)

// The operator-facing performance goals, which bench ops holds its
// figures against.
const (
	opsGoalRatio     = 0.95
	opsGoalScrapeP99 = 10 * time.Millisecond
)

// Names of bench ops's sides and parts.
const (
	opsSideOff       = "telemetry-off"
	opsSideOn        = "telemetry-on"
	opsPartOverhead  = "overhead"
	opsPartScrape    = "scrape"
	opsStoreMemory   = "memory"
	opsStoreSQLite   = "sqlite"
	opsStorePostgres = "postgres"
)

// opsBenchReport is bench ops's result, and its --json output.
type opsBenchReport struct {
	benchHeader
	// Overhead is absent when --part scrape left it out, Scrape empty
	// when --part overhead did.
	Overhead *opsOverhead `json:"overhead,omitempty"`
	Scrape   []opsScrape  `json:"scrape"`
	Goals    []runsGoal   `json:"goals"`
}

// opsOverhead is what the telemetry costs SendMessage.
type opsOverhead struct {
	Store       string  `json:"store"`
	TraceRatio  float64 `json:"traceRatio"`
	AccessLog   bool    `json:"accessLog"`
	ScrapeEvery string  `json:"scrapeEvery"`
	// Off is the server without telemetry, On the one with it.
	Off bench.Side `json:"off"`
	On  bench.Side `json:"on"`
	// Ratio is On's throughput over Off's: the median over the turns of
	// the ratio within a turn. CostRatio is Off's CPU per request over
	// On's: the throughput ratio of a process with the CPUs to itself,
	// which other work on the machine sways less (0 where the CPU time
	// cannot be read).
	Ratio     float64 `json:"ratio"`
	CostRatio float64 `json:"costRatio"`
	// Spans are what On exported to the bench's collector, over the whole
	// run (warm-up included, flushed as On shut down); SpansPerRequest and
	// ExportedBytesPerRequest divide them by the requests On served, the
	// scrapes included.
	Spans                   bench.SpanCounts    `json:"spans"`
	SpansPerRequest         float64             `json:"spansPerRequest"`
	ExportedBytesPerRequest float64             `json:"exportedBytesPerRequest"`
	Scrapes                 bench.ScraperResult `json:"scrapes"`
}

// opsScrape is GET /metrics timed on one database.
type opsScrape struct {
	Store string `json:"store"`
	// Tasks and Runs are what the database held, counted once filled.
	Tasks int64         `json:"tasks"`
	Runs  int64         `json:"runs"`
	Fill  time.Duration `json:"fillNs"`
	*bench.ScrapeResult
}

// opsConfig is what bench ops's flags ask for.
type opsConfig struct {
	parts       []string
	store       string // of the overhead servers
	db          string
	maxConns    int32
	traceRatio  float64
	accessLog   bool
	scrapeEvery time.Duration
	tasks, runs int
	scrapes     int
	sides       bench.SidesOptions
	// profileRound, when set, starts a CPU profile of a measured round
	// and returns what stops it.
	profileRound func(side string, n int) (stop func())
}

func runBenchOps(ctx context.Context, args []string, e *env) int {
	b := newTurnsBench("bench ops", turnsFlags{
		clients: 32, maxClients: maxBenchClients,
		clientsHelp: "concurrent clients of the overhead part, each with one SendMessage in flight",
		sides:       " of the overhead part: telemetry off, and on",
		warmup:      time.Second, round: bench.DefaultSidesRound, order: "A B B A …, so that the machine's noise falls on both",
		dbHelp:       "PostgreSQL `URL` (postgres://…): the overhead servers store their tasks there, and the scrape part fills it after SQLite; default: SQLite in temporary directories",
		maxConnsHelp: "with --db: connections in each server's pool",
		profiled:     "servers, collector and clients", rounds: " of the overhead part", roundFile: "<side>",
	}, e)
	fs := b.fs
	traceRatio := fs.Float64("trace-ratio", 0.1, "share of requests the telemetry-on server traces and exports, from 0 (exclusive) to 1")
	accessLog := fs.Bool("access-log", true, "the telemetry-on server formats an access log line per request (as JSON, to nowhere)")
	scrapeEvery := fs.Duration("scrape-every", 15*time.Second, "scrape the telemetry-on server's /metrics every `interval` of its measured time, as Prometheus would (0: never)")
	store := fs.String("store", "", "task `store` of the overhead servers: sqlite, memory (requests cost CPU only, the telemetry's largest share) or postgres; default postgres with --db, else sqlite")
	tasks := fs.Int("tasks", 10_000, "tasks the scrape part fills each database with")
	runs := fs.Int("runs", 1_000, "runs the scrape part fills each database with")
	scrapes := fs.Int("scrapes", 200, "scrapes of /metrics timed one after the other, after the first")
	part := fs.String("part", "", "run only this `part`: overhead or scrape")
	if code, ok := b.parse(args); !ok {
		return code
	}
	switch {
	case !(*traceRatio > 0 && *traceRatio <= 1):
		return usageError(fs, "--trace-ratio must be above 0 and at most 1")
	case *scrapeEvery < 0:
		return usageError(fs, "--scrape-every must not be negative")
	case *tasks < 0 || *tasks > 10_000_000 || *runs < 0 || *runs > 10_000_000:
		return usageError(fs, "--tasks and --runs must be from 0 to 10000000")
	case *scrapes < 1 || *scrapes > 100_000:
		return usageError(fs, "--scrapes must be from 1 to 100000")
	}
	cfg := opsConfig{store: *store, db: *b.db, maxConns: int32(*b.maxConns), traceRatio: *traceRatio, accessLog: *accessLog,
		scrapeEvery: *scrapeEvery, tasks: *tasks, runs: *runs, scrapes: *scrapes,
		sides: bench.SidesOptions{Concurrency: *b.c, Duration: *b.d, Warmup: b.warmup(), Round: *b.round}}
	switch cfg.store {
	case "":
		cfg.store = opsStoreSQLite
		if cfg.db != "" {
			cfg.store = opsStorePostgres
		}
	case opsStoreSQLite, opsStoreMemory:
	case opsStorePostgres:
		if cfg.db == "" {
			return usageError(fs, "--store postgres needs --db")
		}
	default:
		return usageError(fs, "unknown --store %q (want sqlite, memory or postgres)", cfg.store)
	}
	switch *part {
	case "":
		cfg.parts = []string{opsPartScrape, opsPartOverhead}
	case opsPartOverhead, opsPartScrape:
		cfg.parts = []string{*part}
	default:
		return usageError(fs, "unknown --part %q (want overhead or scrape)", *part)
	}
	if b.profilesRounds() {
		cfg.profileRound = func(side string, n int) func() { return b.profileRound(n, side) }
	}
	return b.run(func() (any, func(io.Writer), []string, error) {
		report := &opsBenchReport{benchHeader: b.header("ops"), Scrape: []opsScrape{}}
		report.Store = "" // each part says its servers'
		// The scrape part goes first: the overhead part's tasks would
		// otherwise be counted with the ones it fills a PostgreSQL
		// database with.
		for _, p := range cfg.parts {
			var err error
			if p == opsPartScrape {
				report.Scrape, err = benchScrapes(ctx, &cfg, e)
			} else {
				report.Overhead, err = benchOverhead(ctx, &cfg, e)
			}
			if err != nil {
				return nil, nil, nil, err
			}
		}
		report.Goals = opsGoals(report)
		var failures []string
		if o := report.Overhead; o != nil {
			failures = failure(failures, o.Off.Scenario, o.Off.Errors, "", o.Off.FirstError)
			failures = failure(failures, o.On.Scenario, o.On.Errors, "", o.On.FirstError)
			failures = failure(failures, "scrapes", o.Scrapes.Errors, "", o.Scrapes.FirstError)
			if o.Spans.Refused > 0 {
				failures = append(failures, fmt.Sprintf("the collector refused %d exports", o.Spans.Refused))
			}
		}
		return report, func(w io.Writer) { printOpsBench(w, report) }, failures, nil
	})
}

// opsLogger is what bench ops's servers log to: every record, access log
// lines included, formatted as novaos serve formats them, warnings onto
// stderr and the rest thrown away, so that both sides pay what their logs
// cost in a server.
func opsLogger(e *env) *slog.Logger {
	return slog.New(telemetry.LogHandler(splitHandler{
		quiet: slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo}),
		loud:  slog.NewJSONHandler(e.stderr, &slog.HandlerOptions{Level: benchLogLevel}),
	}))
}

// splitHandler hands each record to loud when loud takes its level, else
// to quiet: one handler formats it, as in a server with one log, where
// slog.MultiHandler would copy it for both.
type splitHandler struct{ quiet, loud slog.Handler }

func (h splitHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.loud.Enabled(ctx, l) || h.quiet.Enabled(ctx, l)
}

func (h splitHandler) Handle(ctx context.Context, r slog.Record) error {
	if h.loud.Enabled(ctx, r.Level) {
		return h.loud.Handle(ctx, r)
	}
	return h.quiet.Handle(ctx, r)
}

func (h splitHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return splitHandler{quiet: h.quiet.WithAttrs(as), loud: h.loud.WithAttrs(as)}
}

func (h splitHandler) WithGroup(name string) slog.Handler {
	return splitHandler{quiet: h.quiet.WithGroup(name), loud: h.loud.WithGroup(name)}
}

// benchOverhead serves two servers in this process, one with the
// telemetry off and one with it on, exporting its spans to a collector
// beside them, and loads them with SendMessage to echo in turns.
func benchOverhead(ctx context.Context, cfg *opsConfig, e *env) (*opsOverhead, error) {
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("collector: %w", err)
	}
	sink := &bench.SpanSink{}
	collector := &http.Server{Handler: sink, ReadHeaderTimeout: 10 * time.Second}
	go collector.Serve(ln) // ends with Close below
	defer collector.Close()

	tok := secret.New(newBenchSecret())
	log := opsLogger(e)
	server := func(o app.Options) (*app.Server, func(), error) {
		o.Logger, o.AdminToken = log, tok
		switch cfg.store {
		case opsStoreMemory:
			o.Stores = &store.Stores{Kind: opsStoreMemory, Tasks: a2asrv.NewMemoryTaskStore(nil)}
		case opsStorePostgres:
			o.Database = app.DatabaseOptions{URL: cfg.db, MaxConns: cfg.maxConns}
		}
		return startBenchServer(ctx, "ops", &o, e)
	}
	off, stopOff, err := server(app.Options{NoTelemetry: true})
	if err != nil {
		return nil, err
	}
	defer stopOff()
	on, stopOn, err := server(app.Options{OTLPEndpoint: "http://" + ln.Addr().String(), TraceSampleRatio: cfg.traceRatio, AccessLog: cfg.accessLog})
	if err != nil {
		return nil, err
	}
	defer stopOn()

	hc := bench.NewClient(1)
	defer hc.CloseIdleConnections()
	scraper := bench.NewScraper(hc, on.URL()+app.MetricsPath, tok, cfg.scrapeEvery)
	offSc, onSc := bench.SendMessage(off.URL()+"/agents/echo"), bench.SendMessage(on.URL()+"/agents/echo")
	offSc.Name, onSc.Name = opsSideOff, opsSideOn
	o := cfg.sides
	o.MeasuredRound = func(side, n int) func() {
		var stops []func()
		if cfg.profileRound != nil {
			stops = append(stops, cfg.profileRound([]string{opsSideOff, opsSideOn}[side], n))
		}
		if side == 1 && cfg.scrapeEvery > 0 {
			scraper.Resume(ctx)
			stops = append(stops, scraper.Pause)
		}
		return func() {
			for _, stop := range stops {
				stop()
			}
		}
	}
	fmt.Fprintf(e.stderr, "bench: ops: telemetry overhead, %s store: %d clients, %v warm-up + %v of each side in rounds of %v…\n",
		cfg.store, o.Concurrency, max(o.Warmup, 0), o.Duration, o.Round)
	sides, err := bench.RunSides(ctx, []bench.Scenario{offSc, onSc}, &o)
	if err != nil {
		return nil, err
	}
	// Shutdown exports the spans still queued, so the collector has them
	// all.
	if err := on.Shutdown(context.Background()); err != nil {
		return nil, err
	}
	res := &opsOverhead{Store: cfg.store, TraceRatio: cfg.traceRatio, AccessLog: cfg.accessLog, ScrapeEvery: cfg.scrapeEvery.String(),
		Off: sides[0], On: sides[1], Ratio: sides[1].VsFirst, Spans: sink.Counts(), Scrapes: scraper.Result()}
	if res.On.CPUPerRequest > 0 {
		res.CostRatio = float64(res.Off.CPUPerRequest) / float64(res.On.CPUPerRequest)
	}
	if served := float64(res.On.Sent + res.Scrapes.Scrapes); served > 0 {
		res.SpansPerRequest = float64(res.Spans.Spans) / served
		res.ExportedBytesPerRequest = float64(res.Spans.Bytes) / served
	}
	return res, nil
}

// benchScrapes times /metrics on SQLite and, with --db, on PostgreSQL.
func benchScrapes(ctx context.Context, cfg *opsConfig, e *env) ([]opsScrape, error) {
	out := []opsScrape{}
	stores := []string{opsStoreSQLite}
	if cfg.db != "" {
		stores = append(stores, opsStorePostgres)
	}
	for _, kind := range stores {
		s, err := benchScrape(ctx, cfg, kind, e)
		if err != nil {
			return nil, fmt.Errorf("scrape on %s: %w", kind, err)
		}
		out = append(out, *s)
	}
	return out, nil
}

// benchScrape fills a database with tasks and runs, serves every service
// on it, and times GET /metrics.
func benchScrape(ctx context.Context, cfg *opsConfig, kind string, e *env) (*opsScrape, error) {
	dir, err := os.MkdirTemp("", "novaos-bench-ops-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	fmt.Fprintf(e.stderr, "bench: ops: /metrics on %s: filling with %d tasks and %d runs…\n", kind, cfg.tasks, cfg.runs)
	res := &opsScrape{Store: kind}
	var st *store.Stores
	if kind == opsStorePostgres {
		db, err := postgres.Open(ctx, cfg.db, &postgres.Options{MaxConns: cfg.maxConns})
		if err != nil {
			return nil, err
		}
		st = db.Stores()
	} else {
		db, err := sqlite.Open(ctx, filepath.Join(dir, app.DatabaseFile), nil)
		if err != nil {
			return nil, err
		}
		st = db.Stores()
	}
	t0 := time.Now()
	err = bench.FillDatabase(ctx, st, cfg.tasks, cfg.runs)
	res.Fill = time.Since(t0)
	if err == nil {
		res.Tasks, res.Runs, err = countTasksAndRuns(ctx, st)
	}
	if cerr := st.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}

	tok := secret.New(newBenchSecret())
	o := &app.Options{DataDir: dir, AdminToken: tok}
	if kind == opsStorePostgres {
		o.Database = app.DatabaseOptions{URL: cfg.db, MaxConns: cfg.maxConns}
	}
	srv, stop, err := startBenchServer(ctx, "ops", o, e)
	if err != nil {
		return nil, err
	}
	defer stop()
	hc := bench.NewClient(1)
	defer hc.CloseIdleConnections()
	fmt.Fprintf(e.stderr, "bench: ops: /metrics on %s: %d scrapes…\n", kind, cfg.scrapes)
	// The task and run counts show the database was read; the HTTP
	// metrics, that every request is measured.
	sr, err := bench.TimeScrapes(ctx, hc, srv.URL()+app.MetricsPath, tok, cfg.scrapes,
		[]string{"novaos_tasks", execgw.MetricRuns, "novaos_http_requests_total"})
	if err != nil {
		return nil, err
	}
	res.ScrapeResult = sr
	return res, nil
}

// countTasksAndRuns is what st holds: tasks and runs in every state.
func countTasksAndRuns(ctx context.Context, st *store.Stores) (tasks, runs int64, err error) {
	if st.TaskStates == nil || st.Gateway == nil {
		return 0, 0, errors.New("the database cannot count its tasks and runs")
	}
	ts, err := st.TaskStates(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("count tasks: %w", err)
	}
	for _, n := range ts {
		tasks += n
	}
	rs, err := st.Gateway.CountRuns(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("count runs: %w", err)
	}
	for _, n := range rs {
		runs += n
	}
	return tasks, runs, nil
}

func opsGoals(r *opsBenchReport) []runsGoal {
	var goals []runsGoal
	if o := r.Overhead; o != nil {
		goals = append(goals, runsGoal{Name: "telemetry overhead",
			Goal:     fmt.Sprintf("SendMessage/s with metrics, access log and traces at %g >= %.2f× without (%s store)", o.TraceRatio, opsGoalRatio, o.Store),
			Measured: fmt.Sprintf("%.3f× (%.0f vs %.0f)", o.Ratio, o.On.Throughput, o.Off.Throughput),
			Met:      o.Ratio >= opsGoalRatio})
	}
	for _, s := range r.Scrape {
		goals = append(goals, runsGoal{Name: "scrape " + s.Store,
			Goal:     fmt.Sprintf("/metrics p99 <= %s with %d tasks and %d runs", ms(opsGoalScrapeP99), s.Tasks, s.Runs),
			Measured: fmt.Sprintf("%s (first %s, p50 %s)", ms(s.Latency.P99), ms(s.First), ms(s.Latency.P50)),
			Met:      s.Latency.P99 <= opsGoalScrapeP99})
	}
	return goals
}

func printOpsBench(w io.Writer, r *opsBenchReport) {
	fmt.Fprintf(w, "novaos bench ops: %s, %d CPUs, loopback\n\n", r.GoVersion, r.CPUs)
	if o := r.Overhead; o != nil {
		fmt.Fprintf(w, "telemetry overhead: SendMessage to echo, %d clients, %s of each side after %s warm-up, in rounds of %s, %s store\n",
			r.Concurrency, r.Duration, r.Warmup, r.Round, o.Store)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "side\treq/s\tp50\tp99\tmax\tCPU/req\trequests\terrors\t")
		for _, s := range []bench.Side{o.Off, o.On} {
			fmt.Fprintf(tw, "%s\t%.0f\t%s\t%s\t%s\t%s\t%d\t%d\t\n", s.Scenario, s.Throughput, ms(s.Latency.P50), ms(s.Latency.P99),
				ms(s.Latency.Max), cpuPerReq(s.CPUPerRequest), s.Requests, s.Errors)
		}
		tw.Flush()
		fmt.Fprintf(w, "on/off: %.3f× req/s (median of %d turns), %.3f× by CPU per request; spans exported: %.3f per request (%d in %d exports, %.0f bytes per request)\n",
			o.Ratio, len(o.On.Rounds), o.CostRatio, o.SpansPerRequest, o.Spans.Spans, o.Spans.Exports, o.ExportedBytesPerRequest)
		if sc := o.Scrapes; sc.Scrapes > 0 {
			fmt.Fprintf(w, "scrapes of /metrics under load (every %s of the on side's time): %d; p50 %s, max %s, %d bytes\n",
				o.ScrapeEvery, sc.Scrapes, ms(sc.Latency.P50), ms(sc.Latency.Max), sc.Bytes)
		}
		fmt.Fprintln(w)
	}
	if len(r.Scrape) > 0 {
		fmt.Fprintln(w, "/metrics scrape, every service mounted, one scrape at a time:")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "store\ttasks\truns\tfill\tfirst\tscrapes\tp50\tp99\tmax\tCPU/scrape\tbytes\t")
		for _, s := range r.Scrape {
			cpu := "n/a"
			if s.CPUPerScrape > 0 {
				cpu = ms(s.CPUPerScrape)
			}
			fmt.Fprintf(tw, "%s\t%d\t%d\t%.1fs\t%s\t%d\t%s\t%s\t%s\t%s\t%d\t\n", s.Store, s.Tasks, s.Runs, s.Fill.Seconds(), ms(s.First),
				s.Scrapes, ms(s.Latency.P50), ms(s.Latency.P99), ms(s.Latency.Max), cpu, s.Bytes)
		}
		tw.Flush()
		fmt.Fprintln(w)
	}
	for _, g := range r.Goals {
		met := "met"
		if !g.Met {
			met = "not met"
		}
		fmt.Fprintf(w, "goal %s: %s: %s (%s)\n", g.Name, g.Goal, met, g.Measured)
	}
	fmt.Fprintln(w)
	if r.Overhead != nil {
		fmt.Fprintln(w, "telemetry-off: a server with Options.NoTelemetry (no request span, metrics or access log, a no-op tracer, no")
		fmt.Fprintln(w, "/metrics); telemetry-on: the same with every metric, the access log (JSON, discarded) and a span per request")
		fmt.Fprintln(w, "sampled at --trace-ratio, exported over OTLP/HTTP to a collector in this process that counts and drops them.")
		fmt.Fprintln(w, "One server is loaded at a time, A B B A …; req/s is the median of a side's rounds, on/off the median of the")
		fmt.Fprintln(w, "ratios within a turn. CPU/req is the whole process's CPU time (servers, clients, collector) per request.")
	}
	if len(r.Scrape) > 0 {
		fmt.Fprintln(w, "scrape: GET /metrics with the admin token, first scrape apart (the task count may be its own), then one after")
		fmt.Fprintln(w, "the other; tasks and runs are what the database held, as counted. CPU/scrape is this process's (server and")
		fmt.Fprintln(w, "client; not PostgreSQL's).")
	}
}

// cpuPerReq prints a CPU time per request in microseconds, "n/a" where
// the platform did not tell.
func cpuPerReq(d time.Duration) string {
	if d == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.0fµs", float64(d)/float64(time.Microsecond))
}
