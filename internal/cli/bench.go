package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/internal/app"
	"novaos.dev/novaos/internal/bench"
	"novaos.dev/novaos/store"
)

var benchScenarios = []string{bench.ScenarioSend, bench.ScenarioStream, bench.ScenarioBaseline}

// The bindings bench a2a runs send and stream over.
const (
	benchBindingJSONRPC = "jsonrpc"
	benchBindingREST    = "rest"
	benchBindingGRPC    = "grpc"
)

// maxBenchReplicas bounds --replicas: every replica is a whole server in
// the bench's process.
const maxBenchReplicas = 16

func runBench(ctx context.Context, args []string, e *env) int {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
			benchUsage(e.stderr)
			return exitOK
		}
		fmt.Fprintln(e.stderr, "novaos bench: name a target")
		benchUsage(e.stderr)
		return exitUsage
	}
	switch args[0] {
	case "a2a":
		return runBenchA2A(ctx, args[1:], e)
	case "memory":
		return runBenchMemory(ctx, args[1:], e)
	case "gate":
		return runBenchGate(ctx, args[1:], e)
	case "runs":
		return runBenchRuns(ctx, args[1:], e)
	case "tools":
		return runBenchTools(ctx, args[1:], e)
	case "ops":
		return runBenchOps(ctx, args[1:], e)
	case "llm":
		return runBenchLLM(ctx, args[1:], e)
	case "delivery":
		return runBenchDelivery(ctx, args[1:], e)
	}
	fmt.Fprintf(e.stderr, "novaos bench: unknown target %q\n", args[0])
	benchUsage(e.stderr)
	return exitUsage
}

func benchUsage(w io.Writer) {
	fmt.Fprintln(w, "Usage: novaos bench <target> [flags]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Targets:")
	fmt.Fprintln(w, "  a2a     A2A SendMessage and SendStreamingMessage to the echo agent, against a bare net/http JSON echo;")
	fmt.Fprintln(w, "          with --db on PostgreSQL, --replicas servers at once; --scenario xstream times streams across replicas")
	fmt.Fprintln(w, "  memory  memory writes, queries and assembles over MCP on SQLite at growing corpus sizes, against the same echo;")
	fmt.Fprintln(w, "          --locomo FILE scores retrieval quality on LoCoMo")
	fmt.Fprintln(w, "  gate    gated writes through the SDK (rules only, 500 sessions, 1000/s) against the same function ungated and a bare")
	fmt.Fprintln(w, "          loopback round trip pair; --judge fake adds the judge path's overhead")
	fmt.Fprintln(w, "  runs    execution gateway runs of echo (execute, then its event stream) against direct A2A streaming calls;")
	fmt.Fprintln(w, "          first-event latency, resume after a cut, memory per 1,000 open event streams")
	fmt.Fprintln(w, "  tools   tools/call of an upstream MCP server through the tool gateway against the same call made directly, and")
	fmt.Fprintln(w, "          write-class calls the gate passes; one client, then --c")
	fmt.Fprintln(w, "  ops     SendMessage to echo on a server with metrics, access log and sampled traces against one without any,")
	fmt.Fprintln(w, "          in turns; then GET /metrics on a database of --tasks tasks and --runs runs, every service mounted")
	fmt.Fprintln(w, "  llm     streamed chat completions through the LLM gateway (a token, a budget) against the same stream asked of the")
	fmt.Fprintln(w, "          provider directly; time to the first streamed token, one client, then --c")
	fmt.Fprintln(w, "  delivery invocations stored by an adapter (SDK gateway session, verifier, SQLite inbox) and acknowledged through the")
	fmt.Fprintln(w, "          WebSocket gateway on SQLite, against SendMessage to echo; resume after a disconnect, memory per inbox entry")
}

// benchReport is the --json output.
type benchReport struct {
	Target      string        `json:"target"`
	Store       string        `json:"store"`
	Concurrency int           `json:"concurrency"`
	Duration    string        `json:"duration"`
	Warmup      string        `json:"warmup"`
	GoVersion   string        `json:"goVersion"`
	CPUs        int           `json:"cpus"`
	Results     []benchResult `json:"results"`
}

type benchResult struct {
	*bench.Result
	// Store and Replicas say what served the row when a run has several
	// (bench a2a with --db).
	Store    string `json:"store,omitempty"`
	Replicas int    `json:"replicas,omitempty"`
	// VsBaseline is this scenario's throughput over the baseline's; absent
	// when the baseline did not run.
	VsBaseline *float64 `json:"vsBaseline,omitempty"`
	// TxPerRequest is the transactions the PostgreSQL database committed
	// during the measured window over the requests measured, background
	// work included; absent for other stores.
	TxPerRequest *float64 `json:"txPerRequest,omitempty"`
}

// benchTarget is what serves one set of bench a2a's rows: a store and, on
// PostgreSQL, how many servers share the database.
type benchTarget struct {
	store    string // memory, sqlite or postgres
	replicas int
	label    string // appended to the rows' names, "" when the run has one target
}

// benchA2AConfig is what bench a2a's flags ask for.
type benchA2AConfig struct {
	scenarios []string
	bindings  []string
	targets   []benchTarget
	db        string // PostgreSQL URL of the postgres targets
	maxConns  int32
	opts      *bench.Options
}

func runBenchA2A(ctx context.Context, args []string, e *env) int {
	fs := newFlags("bench a2a", "bench a2a [flags]", e)
	c := fs.Int("c", 32, "concurrent keep-alive clients")
	d := fs.Duration("d", 20*time.Second, "measured `duration` of each scenario")
	warm := fs.Duration("warmup", 2*time.Second, "unmeasured warm-up before each scenario")
	only := fs.String("scenario", "", "run only this `scenario`: "+strings.Join(benchScenarios, ", ")+
		", or xstream (not run otherwise: status updates of a task on one replica timed on a subscription on the next; needs --db and a --replicas count of 2 or more, a count of 1 subscribes on the same server)")
	bindings := fs.String("binding", "jsonrpc,rest,grpc", "A2A `bindings` to run send and stream over, comma-separated: jsonrpc, rest, grpc")
	asJSON := fs.Bool("json", false, "print results as JSON")
	store := fs.String("store", "memory", "task `store` of the server under test: memory, or sqlite (a file in a temporary directory); --db selects postgres")
	db := fs.String("db", "", "PostgreSQL `URL` (postgres://…) whose database the server under test stores its tasks in")
	replicas := fs.String("replicas", "1", "with --db: run the scenarios against each `count` of servers sharing the database in turn (comma-separated, e.g. 1,2), the clients spread over them round-robin")
	withSQLite := fs.Bool("with-sqlite", false, "with --db: run the scenarios against SQLite too, first, in the same run")
	maxConns := fs.Int("db-max-conns", app.DefaultDBMaxConns, "with --db: connections in each server's pool")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run (servers and load generator) to `file`")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if *c < 1 || *d <= 0 || *warm < 0 {
		return usageError(fs, "--c must be at least 1, --d positive and --warmup not negative")
	}
	if *store != "memory" && *store != "sqlite" {
		return usageError(fs, "unknown store %q (want memory or sqlite)", *store)
	}
	cfg := benchA2AConfig{db: *db, opts: &bench.Options{Concurrency: *c, Duration: *d, Warmup: *warm}}
	if *warm == 0 {
		cfg.opts.Warmup = -1 // bench.Options reads 0 as its default
	}
	var counts []int
	if *db == "" {
		var pgOnly []string
		fs.Visit(func(f *flag.Flag) {
			if f.Name == "replicas" || f.Name == "with-sqlite" || f.Name == "db-max-conns" {
				pgOnly = append(pgOnly, "--"+f.Name)
			}
		})
		if len(pgOnly) > 0 {
			return usageError(fs, "%s needs --db: replicas share one PostgreSQL database", pgOnly[0])
		}
		cfg.targets = []benchTarget{{store: *store, replicas: 1}}
	} else {
		if !isPostgresURL(*db) {
			return usageError(fs, "--db must be a postgres:// or postgresql:// URL")
		}
		var err error
		if counts, err = parseReplicas(*replicas); err != nil {
			return usageError(fs, "--replicas: %v", err)
		}
		if *maxConns < 1 || *maxConns > math.MaxInt32 {
			return usageError(fs, "--db-max-conns: want a positive number of connections")
		}
		cfg.maxConns = int32(*maxConns)
		if *withSQLite {
			cfg.targets = append(cfg.targets, benchTarget{store: "sqlite", replicas: 1, label: "sqlite"})
		}
		for _, n := range counts {
			cfg.targets = append(cfg.targets, benchTarget{store: "postgres", replicas: n, label: "pg×" + strconv.Itoa(n)})
		}
	}
	for b := range strings.SplitSeq(*bindings, ",") {
		b = strings.TrimSpace(b)
		if b != benchBindingJSONRPC && b != benchBindingREST && b != benchBindingGRPC {
			return usageError(fs, "unknown binding %q (want jsonrpc, rest or grpc)", b)
		}
		if !slices.Contains(cfg.bindings, b) {
			cfg.bindings = append(cfg.bindings, b)
		}
	}
	cfg.scenarios = benchScenarios
	switch {
	case *only == bench.ScenarioXStream:
		if *db == "" || slices.Max(counts) < 2 {
			return usageError(fs, "--scenario xstream needs --db and a --replicas count of 2 or more: it times streams across replicas")
		}
		cfg.scenarios = []string{*only}
	case *only != "":
		if !slices.Contains(benchScenarios, *only) {
			return usageError(fs, "unknown scenario %q (want one of %s, or %s)", *only, strings.Join(benchScenarios, ", "), bench.ScenarioXStream)
		}
		cfg.scenarios = []string{*only}
	}

	if *cpuProfile != "" {
		stop, err := startCPUProfile(*cpuProfile)
		if err != nil {
			fmt.Fprintf(e.stderr, "novaos bench a2a: %v\n", err)
			return exitFail
		}
		defer stop()
	}
	report, err := benchA2A(ctx, &cfg, e)
	if err != nil {
		fmt.Fprintf(e.stderr, "novaos bench a2a: %v\n", err)
		return exitFail
	}
	report.Duration, report.Warmup = d.String(), warm.String()
	return reportBench(e, "a2a", *asJSON, report, report.Results, func(w io.Writer) { printBenchTable(w, report) })
}

// parseReplicas reads --replicas: counts of servers, each once.
func parseReplicas(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		switch {
		case err != nil || n < 1 || n > maxBenchReplicas:
			return nil, fmt.Errorf("want counts from 1 to %d, comma-separated, not %q", maxBenchReplicas, strings.TrimSpace(f))
		case slices.Contains(out, n):
			return nil, fmt.Errorf("%d is listed twice", n)
		}
		out = append(out, n)
	}
	return out, nil
}

// reportBench prints a bench's report, as JSON or with table, and fails
// when any request of results failed.
func reportBench(e *env, target string, asJSON bool, report any, results []benchResult, table func(io.Writer)) int {
	var failures []string
	for _, r := range results {
		if r.Errors > 0 {
			failures = failure(failures, r.Scenario, r.Errors, "requests", r.FirstError)
			break
		}
	}
	return printBenchReport(e, "bench "+target, asJSON, report, table, failures)
}

// benchA2A starts, for each target in turn, its servers under test in
// this process on loopback and runs the scenarios against them; then the
// baseline, a bare echo, once.
func benchA2A(ctx context.Context, cfg *benchA2AConfig, e *env) (*benchReport, error) {
	log := slog.New(slog.NewJSONHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	report := &benchReport{
		Target: "a2a", Store: cfg.targets[len(cfg.targets)-1].store, Concurrency: cfg.opts.Concurrency,
		GoVersion: runtime.Version(), CPUs: runtime.GOMAXPROCS(0),
	}
	var commits *bench.Commits
	if cfg.db != "" {
		var err error
		if commits, err = bench.OpenCommits(ctx, cfg.db); err != nil {
			return nil, err
		}
		defer commits.Close()
	}
	for _, t := range cfg.targets {
		rows, err := benchTargetRows(ctx, cfg, t, commits, log, e)
		if err != nil {
			return nil, err
		}
		report.Results = append(report.Results, rows...)
	}
	if slices.Contains(cfg.scenarios, bench.ScenarioBaseline) {
		ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("baseline: %w", err)
		}
		base := &http.Server{Handler: bench.EchoHandler(), ReadHeaderTimeout: 10 * time.Second}
		go base.Serve(ln) // ends with base.Close below
		defer base.Close()
		sc := bench.Baseline("http://" + ln.Addr().String())
		res, err := runBenchRow(ctx, benchRow{name: bench.ScenarioBaseline, http: &sc}, cfg.opts, nil, e)
		if err != nil {
			return nil, err
		}
		report.Results = append(report.Results, res)
	}
	if i := slices.IndexFunc(report.Results, func(r benchResult) bool { return r.Scenario == bench.ScenarioBaseline }); i >= 0 {
		baseTP := report.Results[i].Throughput
		for j := range report.Results {
			if baseTP > 0 && report.Results[j].Frames == nil {
				ratio := report.Results[j].Throughput / baseTP
				report.Results[j].VsBaseline = &ratio
			}
		}
	}
	if len(report.Results) == 0 {
		return nil, errors.New("no scenario ran")
	}
	return report, nil
}

// benchRow is one row of bench a2a: an HTTP scenario, an operation of the
// generated gRPC client, or the xstream scenario.
type benchRow struct {
	name    string
	http    *bench.Scenario
	op      *bench.Op
	xstream *bench.XStream
}

// benchTargetRows starts target's servers, runs the scenarios against
// them and stops them.
func benchTargetRows(ctx context.Context, cfg *benchA2AConfig, t benchTarget, commits *bench.Commits, log *slog.Logger, e *env) ([]benchResult, error) {
	servers, stop, err := startBenchServers(ctx, cfg, t, log)
	if err != nil {
		return nil, err
	}
	defer stop()
	suffix := ""
	if t.label != "" {
		suffix = " " + t.label
	}
	agentURLs := func(agent string) []string {
		out := make([]string, len(servers))
		for i, srv := range servers {
			out[i] = srv.URL() + "/agents/" + agent
		}
		return out
	}
	echo := agentURLs("echo")
	spread := func(mk func(string) bench.Scenario) *bench.Scenario {
		sc := mk(echo[0])
		for _, u := range echo[1:] {
			sc.Replicas = append(sc.Replicas, mk(u).URL)
		}
		return &sc
	}
	byBinding := map[string]map[string]benchRow{
		benchBindingJSONRPC: {bench.ScenarioSend: {http: spread(bench.SendMessage)}, bench.ScenarioStream: {http: spread(bench.SendStreamingMessage)}},
		benchBindingREST:    {bench.ScenarioSend: {http: spread(bench.SendMessageREST)}, bench.ScenarioStream: {http: spread(bench.SendStreamingMessageREST)}},
	}
	if slices.Contains(cfg.bindings, benchBindingGRPC) {
		var sends, streams []bench.Op
		for _, srv := range servers {
			// One connection per server, which HTTP/2 multiplexes.
			conn, err := grpc.NewClient(srv.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				return nil, fmt.Errorf("gRPC: %w", err)
			}
			defer conn.Close()
			sends = append(sends, bench.GRPCSendMessage(conn, "echo"))
			streams = append(streams, bench.GRPCSendStreamingMessage(conn, "echo"))
		}
		byBinding[benchBindingGRPC] = map[string]benchRow{
			bench.ScenarioSend:   {op: ptr(bench.RoundRobin(sends...))},
			bench.ScenarioStream: {op: ptr(bench.RoundRobin(streams...))},
		}
	}
	var rows []benchRow
	for _, name := range cfg.scenarios {
		switch name {
		case bench.ScenarioBaseline:
		case bench.ScenarioXStream:
			if t.store != "postgres" {
				continue // one server: nothing crosses a replica
			}
			send := agentURLs(bench.ScenarioXStream)
			// Client i sends to replica i and subscribes on the next one
			// (on the same one when there is only one).
			sub := append(slices.Clone(send[1:]), send[0])
			rows = append(rows, benchRow{name: name + "/" + benchBindingJSONRPC + suffix, xstream: &bench.XStream{Send: send, Subscribe: sub}})
		default:
			for _, b := range cfg.bindings {
				r := byBinding[b][name]
				r.name = name + "/" + b + suffix
				rows = append(rows, r)
			}
		}
	}
	var out []benchResult
	for _, r := range rows {
		c := commits
		if t.store != "postgres" {
			c = nil
		}
		res, err := runBenchRow(ctx, r, cfg.opts, c, e)
		if err != nil {
			return nil, err
		}
		if t.label != "" {
			res.Store, res.Replicas = t.store, t.replicas
		}
		out = append(out, res)
	}
	return out, nil
}

// startBenchServers starts target's servers: each its own instance with a
// throwaway data directory, which holds the SQLite file and, for every
// store, the token keys, which must never land in the working directory.
func startBenchServers(ctx context.Context, cfg *benchA2AConfig, t benchTarget, log *slog.Logger) (servers []*app.Server, stop func(), err error) {
	dir, err := os.MkdirTemp("", "novaos-bench-")
	if err != nil {
		return nil, nil, err
	}
	stop = func() {
		for _, srv := range servers {
			srv.Shutdown(context.Background())
		}
		os.RemoveAll(dir)
	}
	defer func() {
		if err != nil {
			stop()
		}
	}()
	for i := range t.replicas {
		o := &app.Options{Addr: "127.0.0.1:0", Logger: log, DataDir: filepath.Join(dir, strconv.Itoa(i))}
		if slices.Contains(cfg.bindings, benchBindingGRPC) {
			o.Agents.GRPCAddr = "127.0.0.1:0"
		}
		if slices.Contains(cfg.scenarios, bench.ScenarioXStream) {
			o.Agents.Hosted = map[string]app.Agent{bench.ScenarioXStream: bench.NewXStreamAgent(nil)}
		}
		switch t.store {
		case "postgres":
			o.Database.URL, o.Database.MaxConns = cfg.db, cfg.maxConns
		case "sqlite":
		default:
			o.Stores = &store.Stores{Kind: "memory", Tasks: a2asrv.NewMemoryTaskStore(nil)}
		}
		srv, err := app.New(ctx, o)
		if err != nil {
			return nil, nil, err
		}
		servers = append(servers, srv)
		if err := srv.Start(ctx); err != nil {
			return nil, nil, err
		}
	}
	return servers, stop, nil
}

// runBenchRow runs one row. With commits, it also reports the
// transactions the database committed per request measured, read as the
// warm-up ends and again at the end.
func runBenchRow(ctx context.Context, r benchRow, opts *bench.Options, commits *bench.Commits, e *env) (benchResult, error) {
	fmt.Fprintf(e.stderr, "bench: %s: %d clients, %v warm-up + %v…\n", r.name, opts.Concurrency, max(opts.Warmup, 0), opts.Duration)
	// Start every scenario from the same heap, so one's garbage does not
	// count against the next one's memory.
	runtime.GC()
	debug.FreeOSMemory()
	var before <-chan commitReading
	if commits != nil {
		before = readCommitsAfter(ctx, commits, max(opts.Warmup, 0))
	}
	var res *bench.Result
	var err error
	switch {
	case r.http != nil:
		r.http.Name = r.name
		res, err = bench.Run(ctx, *r.http, opts)
	case r.op != nil:
		r.op.Name = r.name
		res, err = bench.RunOp(ctx, *r.op, &bench.PaceOptions{Options: *opts})
	default:
		res, err = bench.RunXStream(ctx, *r.xstream, opts)
		if res != nil {
			res.Scenario = r.name
		}
	}
	if err != nil {
		return benchResult{}, err
	}
	out := benchResult{Result: res}
	if commits != nil {
		start := <-before
		end, err := commits.Read(ctx)
		if err = errors.Join(start.err, err); err != nil {
			return benchResult{}, fmt.Errorf("%s: %w", r.name, err)
		}
		if res.Requests > 0 {
			tx := float64(end-start.n) / float64(res.Requests)
			out.TxPerRequest = &tx
		}
	}
	return out, nil
}

type commitReading struct {
	n   int64
	err error
}

// readCommitsAfter reads commits once d has passed.
func readCommitsAfter(ctx context.Context, commits *bench.Commits, d time.Duration) <-chan commitReading {
	ch := make(chan commitReading, 1)
	time.AfterFunc(d, func() {
		n, err := commits.Read(ctx)
		ch <- commitReading{n, err}
	})
	return ch
}

func ptr[T any](v T) *T { return &v }

func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

func printBenchTable(w io.Writer, r *benchReport) {
	fmt.Fprintf(w, "novaos bench %s: %d clients, %s each after %s warm-up, %s, %d CPUs, loopback, %s\n\n",
		r.Target, r.Concurrency, r.Duration, r.Warmup, r.GoVersion, r.CPUs, storesLabel(r))
	withTx := slices.ContainsFunc(r.Results, func(res benchResult) bool { return res.TxPerRequest != nil })
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	header := "scenario\treq/s\tp50\tp99\tmax\terrors\tpeak RSS\tvs baseline\t"
	if withTx {
		header += "tx/req\t"
	}
	fmt.Fprintln(tw, header)
	for _, res := range r.Results {
		ratio := "-"
		if res.VsBaseline != nil {
			ratio = fmt.Sprintf("%.2f", *res.VsBaseline)
		}
		fmt.Fprintf(tw, "%s\t%.0f\t%s\t%s\t%s\t%d\t%s\t%s\t",
			res.Scenario, res.Throughput, ms(res.Latency.P50), ms(res.Latency.P99), ms(res.Latency.Max),
			res.Errors, mib(res.Memory.Peak), ratio)
		if withTx {
			tx := "-"
			if res.TxPerRequest != nil {
				tx = fmt.Sprintf("%.2f", *res.TxPerRequest)
			}
			fmt.Fprintf(tw, "%s\t", tx)
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	fmt.Fprintln(w)
	for _, res := range r.Results {
		if f := res.Frames; f != nil {
			fmt.Fprintf(w, "%s: %d of %d status updates seen on the subscribing replica, %d subscriptions late\n", res.Scenario, f.Seen, f.Expected, f.Late)
		}
	}
	if r.Target == "a2a" {
		fmt.Fprintln(w, "send: SendMessage to /agents/echo; stream: SendStreamingMessage read to its end; /jsonrpc and /rest name the")
		fmt.Fprintln(w, "binding (JSON-RPC at the agent's URL, HTTP+JSON at /message:send and /message:stream below it, gRPC on its own")
		fmt.Fprintln(w, "listener over one HTTP/2 connection per server); sqlite and pg×N name the store and the servers sharing it,")
		fmt.Fprintln(w, "the clients spread over them round-robin.")
		if withTx {
			fmt.Fprintln(w, "tx/req: transactions PostgreSQL committed in the measured window per request, background work included.")
		}
		if slices.ContainsFunc(r.Results, func(res benchResult) bool { return res.Frames != nil }) {
			fmt.Fprintln(w, "xstream: tasks/s; p50, p99 and max of the status updates, from their emission on one replica to their")
			fmt.Fprintln(w, "receipt on a SubscribeToTask on the next (on the same one with one server).")
		}
	}
	fmt.Fprintln(w, "baseline: the same body through a bare net/http JSON echo. RSS is the whole process (servers and load generator).")
}

// storesLabel names what served a report's rows: "postgres store", or
// "sqlite and postgres stores" when they were several.
func storesLabel(r *benchReport) string {
	var stores []string
	for _, res := range r.Results {
		if res.Store != "" && !slices.Contains(stores, res.Store) {
			stores = append(stores, res.Store)
		}
	}
	if len(stores) < 2 {
		return storeLabel(r.Store) + " store"
	}
	return strings.Join(stores, " and ") + " stores"
}

func storeLabel(store string) string {
	if store == "memory" {
		return "in-memory"
	}
	return store
}

func ms(d time.Duration) string {
	return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
}

func mib(b uint64) string {
	if b == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.1fMiB", float64(b)/(1<<20))
}
