package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"novaos.dev/novaos/internal/bench"
	"novaos.dev/novaos/internal/memorysvc"
	"novaos.dev/novaos/memory"
	"novaos.dev/novaos/store/sqlite"
)

// memoryBenchReport is bench memory's result.
type memoryBenchReport struct {
	benchReport
	// Corpus sizes the query scenarios ran at, in order.
	Sizes []int `json:"sizes"`
	// RSSPer100k is the growth of resident memory per 100,000 memories
	// seeded, in bytes.
	RSSPer100k uint64                   `json:"rssPer100kBytes,omitempty"`
	BudgetMS   int                      `json:"assembleBudgetMs"`
	LoCoMo     *bench.LoCoMoReport      `json:"locomo,omitempty"`
	SeedTimes  map[string]time.Duration `json:"seedNs,omitempty"`
}

func runBenchMemory(ctx context.Context, args []string, e *env) int {
	fs := newFlags("bench memory", "bench memory [flags]", e)
	c := fs.Int("c", 32, "concurrent keep-alive clients")
	d := fs.Duration("d", 10*time.Second, "measured `duration` of each scenario")
	warm := fs.Duration("warmup", 2*time.Second, "unmeasured warm-up before each scenario")
	sizes := fs.String("sizes", "10000,100000", "comma-separated corpus `sizes` (agent memories of one tenant) to query at")
	budget := fs.Int("budget-ms", 800, "assemble's latency budget in `ms` (the pre-fetch default)")
	locomo := fs.String("locomo", "", "also score retrieval on a LoCoMo `file` (e.g. locomo10.json): turn-level hit@k and MRR, default stack against BM25")
	onlyLoCoMo := fs.Bool("locomo-only", false, "with --locomo, skip the load scenarios")
	asJSON := fs.Bool("json", false, "print results as JSON")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run (servers and load generator) to `file`")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	var corpus []int
	for _, s := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 || (len(corpus) > 0 && n <= corpus[len(corpus)-1]) {
			return usageError(fs, "--sizes must be increasing positive numbers, like 10000,100000")
		}
		corpus = append(corpus, n)
	}
	if *c < 1 || *d <= 0 || *warm < 0 || *budget < 1 {
		return usageError(fs, "--c and --budget-ms must be at least 1, --d positive and --warmup not negative")
	}
	if *onlyLoCoMo && *locomo == "" {
		return usageError(fs, "--locomo-only needs --locomo FILE")
	}
	if *cpuProfile != "" {
		stop, err := startCPUProfile(*cpuProfile)
		if err != nil {
			fmt.Fprintf(e.stderr, "novaos bench memory: %v\n", err)
			return exitFail
		}
		defer stop()
	}
	warmup := *warm
	if warmup == 0 {
		warmup = -1
	}
	report := &memoryBenchReport{benchReport: benchReport{Target: "memory", Store: "sqlite", Concurrency: *c,
		Duration: d.String(), Warmup: warm.String(), GoVersion: runtime.Version(), CPUs: runtime.GOMAXPROCS(0)},
		Sizes: corpus, BudgetMS: *budget, SeedTimes: map[string]time.Duration{}}
	if !*onlyLoCoMo {
		if err := benchMemoryLoad(ctx, report, &bench.Options{Concurrency: *c, Duration: *d, Warmup: warmup}, e); err != nil {
			fmt.Fprintf(e.stderr, "novaos bench memory: %v\n", err)
			return exitFail
		}
	}
	if *locomo != "" {
		rep, err := benchLoCoMo(ctx, *locomo, e)
		if err != nil {
			fmt.Fprintf(e.stderr, "novaos bench memory: locomo: %v\n", err)
			return exitFail
		}
		report.LoCoMo = rep
	}
	return reportBench(e, "memory", *asJSON, report, report.Results, func(w io.Writer) { printMemoryBench(w, report) })
}

// benchToken is the bearer token the bench's requests carry.
const benchToken = "bench"

// benchCaller is the identity of the bench's requests: one tenant, with
// every memory scope.
func benchCaller() *memorysvc.Caller {
	return &memorysvc.Caller{Tenant: "bench", Agent: "bench-agent", User: "bench-user", Run: "bench-run", Conversation: "bench-conv",
		Grants: func(scope string) bool { return strings.HasPrefix(scope, "memory:") }}
}

// benchMemoryLoad serves the memory service on loopback over a SQLite file
// in a temporary directory and runs the scenarios against it and against
// the bare echo baseline.
func benchMemoryLoad(ctx context.Context, report *memoryBenchReport, opts *bench.Options, e *env) error {
	dir, err := os.MkdirTemp("", "novaos-bench-memory-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	log := benchLogger(e)
	db, err := sqlite.Open(ctx, filepath.Join(dir, "novaos.db"), &sqlite.Options{Logger: log})
	if err != nil {
		return err
	}
	defer db.Close()
	store := db.MemoryStore()
	svc := memorysvc.New(store, &memorysvc.Options{Logger: log})
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	go svc.Run(runCtx)
	caller := benchCaller()
	h := svc.Handler(func(*http.Request) (*memorysvc.Caller, bool) { return caller, true }, nil)
	url, closeSrv, err := serveLoopback(ctx, h)
	if err != nil {
		return err
	}
	defer closeSrv()
	baseURL, closeBase, err := serveLoopback(ctx, bench.EchoHandler())
	if err != nil {
		return err
	}
	defer closeBase()

	run := func(sc bench.Scenario) error {
		fmt.Fprintf(e.stderr, "bench: %s: %d clients, %v warm-up + %v…\n", sc.Name, opts.Concurrency, max(opts.Warmup, 0), opts.Duration)
		runtime.GC()
		debug.FreeOSMemory()
		res, err := bench.Run(ctx, sc, opts)
		if err != nil {
			return err
		}
		report.Results = append(report.Results, benchResult{Result: res})
		return nil
	}
	for _, sc := range []bench.Scenario{
		bench.Baseline(baseURL),
		bench.MemoryWrite(bench.ScenarioMemoryWriteRun, url, benchToken, memory.ScopeRun),
		bench.MemoryWrite(bench.ScenarioMemoryWriteAgent, url, benchToken, memory.ScopeAgent),
	} {
		if err := run(sc); err != nil {
			return err
		}
	}
	// The write gate commits the proposals of write-agent in the
	// background; let it finish, so the queries measure reads, not reads
	// racing a flood of commits into the partition they read.
	if err := drainProposals(ctx, store, 5*time.Minute); err != nil {
		return err
	}
	// The query corpus: agent memories of the caller's partition, grown to
	// each size in turn. The writes above added some already.
	p := memory.Partition{Scope: memory.ScopeAgent, Owner: caller.Agent}
	emb := memory.NewHashEmbedder(0)
	runtime.GC()
	debug.FreeOSMemory()
	before, _ := bench.ReadMemory()
	have := 0
	for _, size := range report.Sizes {
		start := time.Now()
		if err := bench.SeedMemories(ctx, store, emb, caller.Tenant, p, have, size-have, 16); err != nil {
			return fmt.Errorf("seed: %w", err)
		}
		report.SeedTimes[strconv.Itoa(size)] = time.Since(start)
		have = size
		if size == report.Sizes[len(report.Sizes)-1] {
			runtime.GC()
			debug.FreeOSMemory()
			if after, err := bench.ReadMemory(); err == nil && after.RSS > before.RSS {
				report.RSSPer100k = (after.RSS - before.RSS) * 100_000 / uint64(size)
			}
		}
		suffix := "-" + strconv.Itoa(size/1000) + "k"
		if err := run(bench.MemoryQuery(bench.ScenarioMemoryQuery+suffix, url, benchToken)); err != nil {
			return err
		}
		if err := run(bench.MemoryAssemble(bench.ScenarioMemoryAssemble+suffix, url, benchToken, report.BudgetMS)); err != nil {
			return err
		}
	}
	if base := report.Results[0].Throughput; base > 0 {
		for j := range report.Results {
			ratio := report.Results[j].Throughput / base
			report.Results[j].VsBaseline = &ratio
		}
	}
	return nil
}

// drainProposals waits until no proposal is pending.
func drainProposals(ctx context.Context, s memory.Store, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		p, err := s.PendingProposals(ctx, 1)
		if err != nil {
			return err
		}
		if len(p) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the write gate left proposals pending after %v", limit)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// serveLoopback serves h on a free loopback port.
func serveLoopback(ctx context.Context, h http.Handler) (url string, closeFn func(), err error) {
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	return "http://" + ln.Addr().String(), func() { srv.Close() }, nil
}

// benchLoCoMo scores retrieval on the LoCoMo file at path, in a fresh
// store.
func benchLoCoMo(ctx context.Context, path string, e *env) (*bench.LoCoMoReport, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	convs, err := bench.ParseLoCoMo(f)
	if err != nil {
		return nil, err
	}
	if len(convs) == 0 {
		return nil, errors.New("the file holds no conversation")
	}
	dir, err := os.MkdirTemp("", "novaos-bench-locomo-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	db, err := sqlite.Open(ctx, filepath.Join(dir, "novaos.db"), nil)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	fmt.Fprintf(e.stderr, "bench: locomo: %d conversations…\n", len(convs))
	return bench.LoCoMo(ctx, db.MemoryStore(), convs, nil)
}

func printMemoryBench(w io.Writer, r *memoryBenchReport) {
	if len(r.Results) > 0 {
		printBenchTable(w, &r.benchReport)
		fmt.Fprintf(w, "write-run/write-agent: novaos.memory.write of run (stored) and agent (a stored proposal) scope, each acknowledged after its\n")
		fmt.Fprintf(w, "SQLite commit; query-N/assemble-N: novaos.memory.query (agent scope) and novaos.memory.assemble (budget %d ms) over N\n", r.BudgetMS)
		fmt.Fprintf(w, "agent memories of one tenant; every call is MCP tools/call over HTTP on loopback.\n")
		if r.RSSPer100k > 0 {
			fmt.Fprintf(w, "Resident memory per 100,000 memories seeded: %s.\n", mib(r.RSSPer100k))
		}
		fmt.Fprintln(w)
	}
	if l := r.LoCoMo; l != nil {
		fmt.Fprintf(w, "LoCoMo (turn-level, categories 1-4, no model): %d memories, %d questions, ingested in %v\n", l.Memories, l.Questions, l.Ingest.Round(time.Millisecond))
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "stack\thit@1\thit@5\thit@10\tMRR\t")
		for _, row := range []struct {
			name string
			s    bench.Scores
		}{{"default (hybrid)", l.Hybrid}, {"BM25 only", l.Keyword}, {"vector only", l.Vector}} {
			fmt.Fprintf(tw, "%s\t%.3f\t%.3f\t%.3f\t%.3f\t\n", row.name, row.s.Hit1, row.s.Hit5, row.s.Hit10, row.s.MRR)
		}
		tw.Flush()
	}
}
