package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/internal/app"
	"novaos.dev/novaos/internal/bench"
)

var benchScenarios = []string{bench.ScenarioSend, bench.ScenarioStream, bench.ScenarioBaseline}

// The bindings bench a2a runs send and stream over.
const (
	benchBindingJSONRPC = "jsonrpc"
	benchBindingREST    = "rest"
	benchBindingGRPC    = "grpc"
)

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
	}
	fmt.Fprintf(e.stderr, "novaos bench: unknown target %q\n", args[0])
	benchUsage(e.stderr)
	return exitUsage
}

func benchUsage(w io.Writer) {
	fmt.Fprintln(w, "Usage: novaos bench <target> [flags]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Targets:")
	fmt.Fprintln(w, "  a2a     A2A SendMessage and SendStreamingMessage to the echo agent, against a bare net/http JSON echo")
	fmt.Fprintln(w, "  memory  memory writes, queries and assembles over MCP on SQLite at growing corpus sizes, against the same echo;")
	fmt.Fprintln(w, "          --locomo FILE scores retrieval quality on LoCoMo")
	fmt.Fprintln(w, "  gate    gated writes through the SDK (rules only, 500 sessions, 1000/s) against the same function ungated and a bare")
	fmt.Fprintln(w, "          loopback round trip pair; --judge fake adds the judge path's overhead")
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
	// VsBaseline is this scenario's throughput over the baseline's; absent
	// when the baseline did not run.
	VsBaseline *float64 `json:"vsBaseline,omitempty"`
}

func runBenchA2A(ctx context.Context, args []string, e *env) int {
	fs := newFlags("bench a2a", "bench a2a [flags]", e)
	c := fs.Int("c", 32, "concurrent keep-alive clients")
	d := fs.Duration("d", 20*time.Second, "measured `duration` of each scenario")
	warm := fs.Duration("warmup", 2*time.Second, "unmeasured warm-up before each scenario")
	only := fs.String("scenario", "", "run only this `scenario`: "+strings.Join(benchScenarios, ", "))
	bindings := fs.String("binding", "jsonrpc,rest,grpc", "A2A `bindings` to run send and stream over, comma-separated: jsonrpc, rest, grpc")
	asJSON := fs.Bool("json", false, "print results as JSON")
	store := fs.String("store", "memory", "task `store` of the server under test: memory, or sqlite (a file in a temporary directory); --db selects postgres")
	db := fs.String("db", "", "PostgreSQL `URL` (postgres://…) whose database the server under test stores its tasks in")
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
	if *db != "" {
		if !isPostgresURL(*db) {
			return usageError(fs, "--db must be a postgres:// or postgresql:// URL")
		}
		*store = "postgres"
	}
	var binds []string
	for b := range strings.SplitSeq(*bindings, ",") {
		b = strings.TrimSpace(b)
		if b != benchBindingJSONRPC && b != benchBindingREST && b != benchBindingGRPC {
			return usageError(fs, "unknown binding %q (want jsonrpc, rest or grpc)", b)
		}
		if !slices.Contains(binds, b) {
			binds = append(binds, b)
		}
	}
	scenarios := benchScenarios
	if *only != "" {
		if !slices.Contains(benchScenarios, *only) {
			return usageError(fs, "unknown scenario %q (want one of %s)", *only, strings.Join(benchScenarios, ", "))
		}
		scenarios = []string{*only}
	}

	if *cpuProfile != "" {
		stop, err := startCPUProfile(*cpuProfile)
		if err != nil {
			fmt.Fprintf(e.stderr, "novaos bench a2a: %v\n", err)
			return exitFail
		}
		defer stop()
	}
	warmup := *warm
	if warmup == 0 {
		warmup = -1 // bench.Options reads 0 as its default
	}
	report, err := benchA2A(ctx, scenarios, binds, *store, *db, &bench.Options{Concurrency: *c, Duration: *d, Warmup: warmup}, e)
	if err != nil {
		fmt.Fprintf(e.stderr, "novaos bench a2a: %v\n", err)
		return exitFail
	}
	report.Duration, report.Warmup = d.String(), warm.String()
	return reportBench(e, "a2a", *asJSON, report, report.Results, func(w io.Writer) { printBenchTable(w, report) })
}

// reportBench prints a bench's report, as JSON or with table, and fails
// when any request of results failed.
func reportBench(e *env, target string, asJSON bool, report any, results []benchResult, table func(io.Writer)) int {
	if asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(report); err != nil {
			fmt.Fprintf(e.stderr, "novaos bench %s: %v\n", target, err)
			return exitFail
		}
	} else {
		table(e.stdout)
	}
	for _, r := range results {
		if r.Errors > 0 {
			fmt.Fprintf(e.stderr, "novaos bench %s: %s: %d requests failed; first: %s\n", target, r.Scenario, r.Errors, r.FirstError)
			return exitFail
		}
	}
	return exitOK
}

// benchA2A starts the server under test and the baseline in this process,
// both on loopback, and runs the scenarios one after the other.
func benchA2A(ctx context.Context, scenarios, bindings []string, store, db string, opts *bench.Options, e *env) (*benchReport, error) {
	log := slog.New(slog.NewJSONHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	appOpts := &app.Options{Addr: "127.0.0.1:0", Logger: log}
	if slices.Contains(bindings, benchBindingGRPC) {
		appOpts.GRPCAddr = "127.0.0.1:0"
	}
	// Every store gets a throwaway data directory: it holds the SQLite file
	// and, for all stores, the token keys, which must never land in the
	// working directory.
	dir, err := os.MkdirTemp("", "novaos-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	appOpts.DataDir = dir
	switch store {
	case "postgres":
		appOpts.DatabaseURL = db
	case "sqlite":
	default:
		appOpts.TaskStore = a2asrv.NewMemoryTaskStore(nil)
	}
	srv, err := app.New(ctx, appOpts)
	if err != nil {
		return nil, err
	}
	defer srv.Shutdown(context.Background())
	if err := srv.Start(ctx); err != nil {
		return nil, err
	}

	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("baseline: %w", err)
	}
	base := &http.Server{Handler: bench.EchoHandler(), ReadHeaderTimeout: 10 * time.Second}
	go base.Serve(ln) // ends with base.Close below
	defer base.Close()
	baseURL := "http://" + ln.Addr().String()

	echoURL := srv.URL() + "/agents/echo"
	// Each run is an HTTP scenario or, for gRPC, an operation of the
	// generated client: one connection, which HTTP/2 multiplexes.
	type run struct {
		name string
		http *bench.Scenario
		op   *bench.Op
	}
	byBinding := map[string]map[string]run{
		benchBindingJSONRPC: {bench.ScenarioSend: {http: ptr(bench.SendMessage(echoURL))}, bench.ScenarioStream: {http: ptr(bench.SendStreamingMessage(echoURL))}},
		benchBindingREST:    {bench.ScenarioSend: {http: ptr(bench.SendMessageREST(echoURL))}, bench.ScenarioStream: {http: ptr(bench.SendStreamingMessageREST(echoURL))}},
	}
	if addr := srv.GRPCAddr(); addr != "" {
		conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return nil, fmt.Errorf("gRPC: %w", err)
		}
		defer conn.Close()
		byBinding[benchBindingGRPC] = map[string]run{
			bench.ScenarioSend:   {op: ptr(bench.GRPCSendMessage(conn, "echo"))},
			bench.ScenarioStream: {op: ptr(bench.GRPCSendStreamingMessage(conn, "echo"))},
		}
	}
	var runs []run
	for _, name := range scenarios {
		if name == bench.ScenarioBaseline {
			runs = append(runs, run{name: name, http: ptr(bench.Baseline(baseURL))})
			continue
		}
		for _, b := range bindings {
			r := byBinding[b][name]
			r.name = name + "/" + b
			runs = append(runs, r)
		}
	}
	report := &benchReport{
		Target: "a2a", Store: store, Concurrency: opts.Concurrency,
		GoVersion: runtime.Version(), CPUs: runtime.GOMAXPROCS(0),
	}
	for _, r := range runs {
		fmt.Fprintf(e.stderr, "bench: %s: %d clients, %v warm-up + %v…\n", r.name, opts.Concurrency, max(opts.Warmup, 0), opts.Duration)
		// Start every scenario from the same heap, so one's garbage does
		// not count against the next one's memory.
		runtime.GC()
		debug.FreeOSMemory()
		var res *bench.Result
		var err error
		if r.http != nil {
			r.http.Name = r.name
			res, err = bench.Run(ctx, *r.http, opts)
		} else {
			r.op.Name = r.name
			res, err = bench.RunOp(ctx, *r.op, &bench.PaceOptions{Options: *opts})
		}
		if err != nil {
			return nil, err
		}
		report.Results = append(report.Results, benchResult{Result: res})
	}
	if i := slices.IndexFunc(report.Results, func(r benchResult) bool { return r.Scenario == bench.ScenarioBaseline }); i >= 0 {
		baseTP := report.Results[i].Throughput
		for j := range report.Results {
			if baseTP > 0 {
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
	fmt.Fprintf(w, "novaos bench %s: %d clients, %s each after %s warm-up, %s, %d CPUs, loopback, %s store\n\n",
		r.Target, r.Concurrency, r.Duration, r.Warmup, r.GoVersion, r.CPUs, storeLabel(r.Store))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\treq/s\tp50\tp99\tmax\terrors\tpeak RSS\tvs baseline\t")
	for _, res := range r.Results {
		ratio := "-"
		if res.VsBaseline != nil {
			ratio = fmt.Sprintf("%.2f", *res.VsBaseline)
		}
		fmt.Fprintf(tw, "%s\t%.0f\t%s\t%s\t%s\t%d\t%s\t%s\t\n",
			res.Scenario, res.Throughput, ms(res.Latency.P50), ms(res.Latency.P99), ms(res.Latency.Max),
			res.Errors, mib(res.Memory.Peak), ratio)
	}
	tw.Flush()
	fmt.Fprintln(w)
	if r.Target == "a2a" {
		fmt.Fprintln(w, "send: SendMessage to /agents/echo; stream: SendStreamingMessage read to its end; /jsonrpc and /rest name the")
		fmt.Fprintln(w, "binding (JSON-RPC at the agent's URL, HTTP+JSON at /message:send and /message:stream below it, gRPC on its own")
		fmt.Fprintln(w, "listener over one HTTP/2 connection);")
	}
	fmt.Fprintln(w, "baseline: the same body through a bare net/http JSON echo. RSS is the whole process (servers and load generator).")
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
