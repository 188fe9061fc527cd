package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"text/tabwriter"
	"time"

	"novaos.dev/novaos/a2a/a2aclient"
	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/app"
	"novaos.dev/novaos/internal/auth"
	"novaos.dev/novaos/internal/bench"
	"novaos.dev/novaos/internal/httpapi"
)

// The execution gateway's performance goals, which bench runs holds its
// figures against.
const (
	runsGoalRatio       = 0.5
	runsGoalFirstExcess = 5 * time.Millisecond
	runsGoalResumeP99   = 50 * time.Millisecond
	runsGoalMBPer1000   = 50.0
)

// runsBenchTenant is the tenant prefix of bench runs; each run adds a
// random suffix, so that runs sharing a PostgreSQL database never see one
// another's instances or runs.
const runsBenchTenant = "bench-runs-"

// runsBenchReport is bench runs's result, and its --json output.
type runsBenchReport struct {
	benchHeader
	*bench.RunsResult
	Goals []runsGoal `json:"goals"`
}

// printGoals writes one line a goal: met or not, and what was measured.
func printGoals(w io.Writer, goals []runsGoal) {
	for _, g := range goals {
		met := "met"
		if !g.Met {
			met = "not met"
		}
		fmt.Fprintf(w, "goal %s: %s: %s (%s)\n", g.Name, g.Goal, met, g.Measured)
	}
}

// runsGoal is one goal and whether the run met it.
type runsGoal struct {
	Name     string `json:"name"`
	Goal     string `json:"goal"`
	Measured string `json:"measured"`
	Met      bool   `json:"met"`
}

func runBenchRuns(ctx context.Context, args []string, e *env) int {
	b := newTurnsBench("bench runs", turnsFlags{
		clients: 32, clientsHelp: "concurrent clients, each with one run (or direct call) in flight",
		sides:  ": gateway runs, and direct calls",
		warmup: 2 * time.Second, round: bench.DefaultRunsRound, order: "A B B A …, so that the machine's noise falls on both",
		profiled: "server and load generator", roundFile: "<scenario>",
	}, e)
	streams := b.fs.Int("streams", bench.DefaultRunsStreams, "paused runs whose streams are cut and resumed, then held open at once for the memory reading")
	tokenAlg := b.fs.String("token-alg", auth.RS256, "`algorithm` the server signs execution tokens with: RS256 (its default) or EdDSA")
	memProfile := b.fs.String("memprofile", "", "write a heap profile to `file` while the event streams are held open")
	if code, ok := b.parse(args); !ok {
		return code
	}
	switch {
	case *streams < 1 || *streams > 100_000:
		return usageError(b.fs, "--streams must be from 1 to 100000")
	case *tokenAlg != auth.RS256 && *tokenAlg != auth.EdDSA:
		return usageError(b.fs, "unknown --token-alg %q (want %s or %s)", *tokenAlg, auth.RS256, auth.EdDSA)
	}
	// Each held stream takes two descriptors of this process, its client
	// end and the server's: warn before the dials fail with EMFILE.
	// DefaultMaxConns is three quarters of the open-file limit, capped.
	if need, limit := 2**streams+8**b.c+256, httpapi.DefaultMaxConns()/3*4; need > limit {
		fmt.Fprintf(e.stderr, "novaos bench runs: warning: %d streams need about %d open files, and the limit may be %d (ulimit -n)\n", *streams, need, limit)
	}
	opts := &bench.RunsOptions{Concurrency: *b.c, Duration: *b.d, Warmup: b.warmup(), Round: *b.round, Streams: *streams}
	var heapErr error
	if *memProfile != "" {
		opts.StreamsHeld = func() { heapErr = writeHeapProfile(*memProfile) }
	}
	if b.profilesRounds() {
		opts.MeasuredRound = func(scenario string, n int) func() { return b.profileRound(n, scenario) }
	}
	return b.run(func() (any, func(io.Writer), []string, error) {
		res, err := benchRuns(ctx, runsServer{db: *b.db, maxConns: int32(*b.maxConns), tokenAlg: *tokenAlg}, opts, e)
		if err = errors.Join(err, heapErr); err != nil {
			return nil, nil, nil, err
		}
		report := &runsBenchReport{benchHeader: b.header("runs"), RunsResult: res, Goals: runsGoals(res)}
		report.TokenAlgorithm = *tokenAlg
		var failures []string
		failures = failure(failures, res.Gateway.Scenario, res.Gateway.Errors, "", res.Gateway.FirstError)
		failures = failure(failures, res.Direct.Scenario, res.Direct.Errors, "", res.Direct.FirstError)
		failures = failure(failures, "resume", res.Resume.Errors, "", res.Resume.FirstError)
		return report, func(w io.Writer) { printRunsBench(w, report) }, failures, nil
	})
}

// runsServer is what bench runs's server under test is given.
type runsServer struct {
	db       string // PostgreSQL URL; "" for SQLite
	maxConns int32
	tokenAlg string
}

// benchRuns serves novaos on loopback with the pause agent hosted beside
// echo, installs both as instances of a fresh tenant through the API, and
// measures.
func benchRuns(ctx context.Context, so runsServer, o *bench.RunsOptions, e *env) (*bench.RunsResult, error) {
	// Every held stream is two connections of this process, the client's
	// and the server's; the clients' own connections come on top.
	conns := o.Streams + 8*o.Concurrency + 256
	appOpts := &app.Options{
		Database: app.DatabaseOptions{URL: so.db, MaxConns: so.maxConns},
		Token:    app.TokenOptions{Algorithm: so.tokenAlg},
		Gateway:  app.GatewayOptions{MaxStreams: conns},
		Agents:   app.AgentOptions{Hosted: map[string]app.Agent{bench.PauseAgentName: bench.PauseAgent()}},
	}
	appOpts.HTTP.Limits.MaxConns = conns
	srv, stop, err := startBenchServer(ctx, "runs", appOpts, e)
	if err != nil {
		return nil, err
	}
	defer stop()
	token, err := mintBenchToken(ctx, srv, identity.Claims{TenantID: benchTenant(runsBenchTenant), UserID: "bench", AgentID: "bench-runs",
		Scopes: []string{"runs:*", "instances:*"}})
	if err != nil {
		return nil, err
	}
	hc := bench.NewClient(2 * o.Concurrency)
	defer hc.CloseIdleConnections()
	gw, err := gateway.NewClient(srv.URL(), &gateway.ClientOptions{HTTPClient: hc, Token: token})
	if err != nil {
		return nil, err
	}
	echo, err := gw.Install(ctx, gateway.InstallRequest{Name: "echo", Hosted: "echo"})
	if err != nil {
		return nil, fmt.Errorf("install echo: %w", err)
	}
	pause, err := gw.Install(ctx, gateway.InstallRequest{Name: bench.PauseAgentName, Hosted: bench.PauseAgentName})
	if err != nil {
		return nil, fmt.Errorf("install %s: %w", bench.PauseAgentName, err)
	}
	dc := bench.NewClient(o.Concurrency)
	defer dc.CloseIdleConnections()
	// A dropped stream is the measurement's failure, not something to
	// resume behind its back.
	direct, err := a2aclient.NewForURL(srv.URL()+"/agents/echo", &a2aclient.Options{HTTPClient: dc, ResumeAttempts: -1})
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(e.stderr, "bench: runs: %d clients, %v warm-up + %v of each side in rounds of %v, then %d streams cut, resumed and held…\n",
		o.Concurrency, max(o.Warmup, 0), o.Duration, o.Round, o.Streams)
	return bench.RunRuns(ctx, &bench.RunsTarget{Gateway: gw, Instance: echo.ID, PauseInstance: pause.ID, Direct: direct,
		BaseURL: srv.URL(), Token: token}, o)
}

func runsGoals(r *bench.RunsResult) []runsGoal {
	return []runsGoal{
		{Name: "throughput", Goal: fmt.Sprintf("gateway runs/s >= %.1f× direct calls/s", runsGoalRatio),
			Measured: fmt.Sprintf("%.2f×", r.ThroughputRatio), Met: r.ThroughputRatio >= runsGoalRatio},
		{Name: "first event", Goal: "gateway first-event p99 <= direct p99 + " + ms(runsGoalFirstExcess),
			Measured: fmt.Sprintf("%s vs %s (%+.2fms)", ms(r.Gateway.FirstEvent.P99), ms(r.Direct.FirstEvent.P99), float64(r.FirstEventP99Excess)/float64(time.Millisecond)),
			Met:      r.FirstEventP99Excess <= runsGoalFirstExcess},
		{Name: "resume", Goal: "resume after a cut p99 <= " + ms(runsGoalResumeP99),
			Measured: ms(r.Resume.Latency.P99), Met: r.Resume.Resumes > 0 && r.Resume.Latency.P99 <= runsGoalResumeP99},
		{Name: "stream memory", Goal: fmt.Sprintf("RSS per 1,000 open event streams <= %.0f MB", runsGoalMBPer1000),
			Measured: fmt.Sprintf("%.1f MB", r.Streams.MBPer1000), Met: r.Streams.RSSAfter > 0 && r.Streams.MBPer1000 <= runsGoalMBPer1000},
	}
}

func printRunsBench(w io.Writer, r *runsBenchReport) {
	fmt.Fprintf(w, "novaos bench runs: %d clients, %s of each side after %s warm-up, in rounds of %s, %s, %d CPUs, loopback, %s store, %s tokens\n\n",
		r.Concurrency, r.Duration, r.Warmup, r.Round, r.GoVersion, r.CPUs, r.Store, r.TokenAlgorithm)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\truns/s\tp50\tp99\tfirst event p50\tfirst event p99\truns\terrors\t")
	for _, s := range []bench.RunsSide{r.Gateway, r.Direct} {
		fmt.Fprintf(tw, "%s\t%.0f\t%s\t%s\t%s\t%s\t%d\t%d\t\n", s.Scenario, s.Throughput, ms(s.Latency.P50), ms(s.Latency.P99),
			ms(s.FirstEvent.P50), ms(s.FirstEvent.P99), s.Runs, s.Errors)
	}
	tw.Flush()
	fmt.Fprintln(w)
	fmt.Fprintf(w, "resume after a cut: %d resumes, %d errors; p50 %s, p99 %s, max %s; replay once paused: p50 %s, p99 %s, max %s\n",
		r.Resume.Resumes, r.Resume.Errors, ms(r.Resume.Latency.P50), ms(r.Resume.Latency.P99), ms(r.Resume.Latency.Max),
		ms(r.Resume.Replay.P50), ms(r.Resume.Replay.P99), ms(r.Resume.Replay.Max))
	s := r.Streams
	fmt.Fprintf(w, "%d open event streams: RSS %s → %s, %.1f MB per 1,000 (Go heap %.1f MB, stacks %.1f MB per 1,000; %d goroutines more)\n\n",
		s.Streams, mib(s.RSSBefore), mib(s.RSSAfter), s.MBPer1000, s.HeapMBPer1000, s.StackMBPer1000, s.Goroutines)
	printGoals(w, r.Goals)
	fmt.Fprintln(w)
	fmt.Fprintln(w, "gateway-run: POST /api/v1/execute on the echo instance, then GET /api/v1/events/{runId} read to its terminal")
	fmt.Fprintln(w, "event; direct-stream: SendStreamingMessage to /agents/echo read to its final frame. First event: from the request")
	fmt.Fprintln(w, "(execute, for a run) to the first event read. Resume: a run of the bench-pause agent whose stream is closed after")
	fmt.Fprintln(w, "its first event, from the reconnect with Last-Event-ID, sent at once, to the first event it yields (replay: the same")
	fmt.Fprintln(w, "reconnect once the run paused, every event stored). Streams are then held on those runs (WAITING_USER), each on a")
	fmt.Fprintln(w, "bare client connection: the memory is the server's, with the few bytes of the client's sockets.")
}

func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("heap profile: %w", err)
	}
	if err := pprof.WriteHeapProfile(f); err != nil {
		f.Close()
		return fmt.Errorf("heap profile: %w", err)
	}
	return f.Close()
}
