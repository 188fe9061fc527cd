package cli

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"text/tabwriter"
	"time"

	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/app"
	"novaos.dev/novaos/internal/bench"
	"novaos.dev/novaos/secret"
	"novaos.dev/novaos/tools"
)

// The tool gateway's performance goals, which bench tools holds its
// figures against.
const (
	toolsGoalAddedP50      = time.Millisecond
	toolsGoalAddedP99      = 3 * time.Millisecond
	toolsGoalRatio         = 0.5
	toolsGoalWriteAddedP99 = 10 * time.Millisecond
)

// toolsBenchTenant is the tenant prefix of bench tools; each run adds a
// random suffix, so that runs sharing a PostgreSQL database never see one
// another's servers or gate records.
const toolsBenchTenant = "bench-tools-"

// toolsBenchServer is the name the upstream is registered under.
const toolsBenchServer = "echo"

// toolsBenchReport is bench tools's result, and its --json output.
type toolsBenchReport struct {
	benchHeader
	*bench.ToolsResult
	Goals []runsGoal `json:"goals"`
}

func runBenchTools(ctx context.Context, args []string, e *env) int {
	b := newPhasesBench("bench tools", "call", "direct calls, gateway reads, gateway writes", "upstream", e)
	if code, ok := b.parse(args); !ok {
		return code
	}
	return b.run(func() (any, func(io.Writer), []string, error) {
		res, err := benchTools(ctx, *b.db, int32(*b.maxConns), b.phasesOptions(), e)
		if err != nil {
			return nil, nil, nil, err
		}
		report := &toolsBenchReport{benchHeader: b.header("tools"), ToolsResult: res, Goals: toolsGoals(res)}
		var failures []string
		for _, ph := range []bench.ToolsPhase{res.Latency, res.Load} {
			for _, s := range []bench.ToolsSide{ph.Direct, ph.Read, ph.Write} {
				failures = failure(failures, fmt.Sprintf("%s (%d clients)", s.Scenario, ph.Clients), s.Errors, "calls", s.FirstError)
			}
		}
		return report, func(w io.Writer) { printToolsBench(w, report) }, failures, nil
	})
}

// benchTools serves novaos on loopback (SQLite in a temporary directory,
// or the PostgreSQL database at db) and the benchmark's upstream MCP
// server beside it, registers the upstream for a fresh tenant through the
// API, and measures.
func benchTools(ctx context.Context, db string, maxConns int32, o *bench.PhasesOptions, e *env) (*bench.ToolsResult, error) {
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("upstream: %w", err)
	}
	up := &http.Server{Handler: bench.ToolsUpstreamHandler(), ReadHeaderTimeout: 10 * time.Second}
	go up.Serve(ln) // ends with Close below
	defer up.Close()
	upstreamURL := "http://" + ln.Addr().String() + "/mcp"

	appOpts := &app.Options{Database: app.DatabaseOptions{URL: db, MaxConns: maxConns}}
	// The upstream is on loopback, which a server refuses to dial by
	// default.
	appOpts.BuiltinTools.Upstream.AllowPrivate = true
	srv, stop, err := startBenchServer(ctx, "tools", appOpts, e)
	if err != nil {
		return nil, err
	}
	defer stop()
	tenant := benchTenant(toolsBenchTenant)
	admin, err := mintBenchToken(ctx, srv, identity.Claims{TenantID: tenant, Subject: "bench-admin", Scopes: []string{tools.ScopeAdmin}})
	if err != nil {
		return nil, err
	}
	hc := bench.NewClient(1)
	defer hc.CloseIdleConnections()
	if err := bench.SetUpTools(ctx, hc, srv.URL(), admin, toolsBenchServer, upstreamURL); err != nil {
		return nil, err
	}
	target := &bench.ToolsTarget{Upstream: upstreamURL, Gateway: srv.URL() + tools.Path, Server: toolsBenchServer,
		// Each client is an agent of its own, with its own gate session
		// for its writes.
		Token: func(i int) (secret.Value, error) {
			return mintBenchToken(ctx, srv, identity.Claims{TenantID: tenant, AgentID: fmt.Sprintf("bench-tools-%d", i),
				Scopes: []string{"mcp:tools:" + toolsBenchServer}})
		}}
	fmt.Fprintf(e.stderr, "bench: tools: 1 client, then %d, each for %v warm-up + %v of each side in rounds of %v…\n",
		o.Concurrency, max(o.Warmup, 0), o.Duration, o.Round)
	return bench.RunTools(ctx, target, o)
}

func toolsGoals(r *bench.ToolsResult) []runsGoal {
	d, g := r.Latency.Direct.Latency, r.Latency.Read.Latency
	return []runsGoal{
		{Name: "added p50", Goal: "gateway-read p50 <= direct p50 + " + ms(toolsGoalAddedP50) + " (one client)",
			Measured: fmt.Sprintf("%s vs %s (%+.2fms)", ms(g.P50), ms(d.P50), msf(r.AddedP50)), Met: r.AddedP50 <= toolsGoalAddedP50},
		{Name: "added p99", Goal: "gateway-read p99 <= direct p99 + " + ms(toolsGoalAddedP99) + " (one client)",
			Measured: fmt.Sprintf("%s vs %s (%+.2fms)", ms(g.P99), ms(d.P99), msf(r.AddedP99)), Met: r.AddedP99 <= toolsGoalAddedP99},
		{Name: "throughput", Goal: fmt.Sprintf("gateway-read calls/s >= %.1f× direct (%d clients)", toolsGoalRatio, r.Load.Clients),
			Measured: fmt.Sprintf("%.2f× (%.0f vs %.0f)", r.ThroughputRatio, r.Load.Read.Throughput, r.Load.Direct.Throughput),
			Met:      r.ThroughputRatio >= toolsGoalRatio},
		{Name: "write added p99", Goal: "gateway-write p99 <= gateway-read p99 + " + ms(toolsGoalWriteAddedP99) + " (one client)",
			Measured: fmt.Sprintf("%s vs %s (%+.2fms)", ms(r.Latency.Write.Latency.P99), ms(g.P99), msf(r.WriteAddedP99)),
			Met:      r.WriteAddedP99 <= toolsGoalWriteAddedP99},
	}
}

func msf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func printToolsBench(w io.Writer, r *toolsBenchReport) {
	fmt.Fprintf(w, "novaos bench tools: 1 client, then %d; %s of each side per phase after %s warm-up, in rounds of %s, %s, %d CPUs, loopback, %s store\n\n",
		r.Concurrency, r.Duration, r.Warmup, r.Round, r.GoVersion, r.CPUs, r.Store)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "clients\tscenario\tcalls/s\tp50\tp90\tp99\tmax\tcalls\terrors\t")
	for _, ph := range []bench.ToolsPhase{r.Latency, r.Load} {
		for _, s := range []bench.ToolsSide{ph.Direct, ph.Read, ph.Write} {
			fmt.Fprintf(tw, "%d\t%s\t%.0f\t%s\t%s\t%s\t%s\t%d\t%d\t\n", ph.Clients, s.Scenario, s.Throughput,
				ms(s.Latency.P50), ms(s.Latency.P90), ms(s.Latency.P99), ms(s.Latency.Max), s.Calls, s.Errors)
		}
	}
	tw.Flush()
	fmt.Fprintln(w)
	fmt.Fprintf(w, "one client: gateway-read − direct: p50 %+.2fms, p99 %+.2fms; gateway-write − gateway-read: p99 %+.2fms\n",
		msf(r.AddedP50), msf(r.AddedP99), msf(r.WriteAddedP99))
	fmt.Fprintf(w, "%d clients: gateway-read %.2f× direct calls/s; gateway-write %.2f× gateway-read\n\n",
		r.Load.Clients, r.ThroughputRatio, r.WriteThroughputRatio)
	printGoals(w, r.Goals)
	fmt.Fprintln(w)
	fmt.Fprintln(w, "direct: tools/call of the upstream's read-only echo tool, at the upstream (an official Go SDK server over Streamable")
	fmt.Fprintln(w, "HTTP with its defaults); gateway-read: the same tool through the tool gateway (novaos.echo.echo), read-class;")
	fmt.Fprintln(w, "gateway-write: its destructive twin (novaos.echo.write), write-class, through the governance gate, whose rules pass it")
	fmt.Fprintln(w, "(claim, call, acknowledge). Every client holds a session of the official Go SDK client on each side and sends each")
	fmt.Fprintln(w, "call new arguments; a call counts only when its result is its own text back. Latency is from CallTool to its result.")
}
