package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/app"
	"novaos.dev/novaos/internal/bench"
	"novaos.dev/novaos/llm"
	"novaos.dev/novaos/llm/llmtest"
	"novaos.dev/novaos/secret"
)

// The LLM gateway's performance goal, which bench llm holds its figures
// against: the latency it adds to a stream's first token.
const llmGoalAddedP99 = 2 * time.Millisecond

// llmBenchTenant is the tenant prefix of bench llm; each run adds a
// random suffix, so that runs sharing a PostgreSQL database never see one
// another's budgets.
const llmBenchTenant = "bench-llm-"

// llmBenchProvider is the name the provider is registered under.
const llmBenchProvider = "llmtest"

// llmBenchReport is bench llm's result, and its --json output.
type llmBenchReport struct {
	benchHeader
	*bench.LLMResult
	Goals []runsGoal `json:"goals"`
}

func runBenchLLM(ctx context.Context, args []string, e *env) int {
	b := newPhasesBench("bench llm", "stream", "direct, and through the gateway", "provider", e)
	if code, ok := b.parse(args); !ok {
		return code
	}
	return b.run(func() (any, func(io.Writer), []string, error) {
		res, err := benchLLM(ctx, *b.db, int32(*b.maxConns), b.phasesOptions(), e)
		if err != nil {
			return nil, nil, nil, err
		}
		report := &llmBenchReport{benchHeader: b.header("llm"), LLMResult: res, Goals: llmGoals(res)}
		var failures []string
		for _, ph := range []bench.LLMPhase{res.Latency, res.Load} {
			for _, s := range []bench.LLMSide{ph.Direct, ph.Gateway} {
				failures = failure(failures, fmt.Sprintf("%s (%d clients)", s.Scenario, ph.Clients), s.Errors, "streams", s.FirstError)
			}
		}
		return report, func(w io.Writer) { printLLMBench(w, report) }, failures, nil
	})
}

// benchLLM serves novaos on loopback (SQLite in a temporary directory,
// or the PostgreSQL database at db) and an llm/llmtest provider beside
// it; registers the provider and its model through the administration,
// sets a budget for a fresh tenant, so that every call is held to one,
// starts a run for the clients' execution tokens, and measures.
func benchLLM(ctx context.Context, db string, maxConns int32, o *bench.PhasesOptions, e *env) (*bench.LLMResult, error) {
	provider := llmtest.NewServer(nil)
	defer provider.Close()

	admin := secret.New(newBenchSecret())
	appOpts := &app.Options{AdminToken: admin, Database: app.DatabaseOptions{URL: db, MaxConns: maxConns},
		// The clients' run is the pause agent's, which waits for its user:
		// live, so its tokens are good.
		Agents: app.AgentOptions{Hosted: map[string]app.Agent{bench.PauseAgentName: bench.PauseAgent()}}}
	// The provider is on loopback, which the gateway refuses to dial by
	// default.
	appOpts.LLM.AllowPrivate = true
	srv, stop, err := startBenchServer(ctx, "llm", appOpts, e)
	if err != nil {
		return nil, err
	}
	defer stop()
	tenant := benchTenant(llmBenchTenant)
	hc := bench.NewClient(1)
	defer hc.CloseIdleConnections()
	for _, p := range []struct {
		path string
		body any
	}{
		{llm.ProvidersPath + "/" + llmBenchProvider, llm.ProviderRequest{BaseURL: provider.BaseURL()}},
		{llm.ModelsPath + "/" + llmtest.ModelChat, llm.RouteRequest{Targets: []llm.Target{{Provider: llmBenchProvider, Model: llmtest.ModelChat}},
			InputUSDPerMillion: 2.5, OutputUSDPerMillion: 10}},
		// Far more than the benchmark spends: held to, never reached.
		{llm.BudgetsPath + "/" + tenant, llm.BudgetRequest{DailyTokens: 1 << 40, DailyCostUSD: 1e6}},
	} {
		b, _ := json.Marshal(p.body)
		if err := bench.Put(ctx, hc, srv.URL()+p.path, admin, b); err != nil {
			return nil, err
		}
	}
	user, err := mintBenchToken(ctx, srv, identity.Claims{TenantID: tenant, UserID: "bench", AgentID: "bench-llm", Scopes: []string{"runs:*", "instances:*"}})
	if err != nil {
		return nil, err
	}
	gw, err := gateway.NewClient(srv.URL(), &gateway.ClientOptions{HTTPClient: hc, Token: user})
	if err != nil {
		return nil, err
	}
	inst, err := gw.Install(ctx, gateway.InstallRequest{Name: bench.PauseAgentName, Hosted: bench.PauseAgentName})
	if err != nil {
		return nil, fmt.Errorf("install %s: %w", bench.PauseAgentName, err)
	}
	run, err := gw.Execute(ctx, gateway.ExecuteRequest{InstanceID: inst.ID, Input: "bench llm"})
	if err != nil {
		return nil, fmt.Errorf("start a run: %w", err)
	}
	target := &bench.LLMTarget{Direct: provider.BaseURL(), Gateway: srv.URL() + "/v1", Model: llmtest.ModelChat,
		// Each client is a call of the run's agent, with the run's token.
		Token: func(int) (secret.Value, error) {
			return mintBenchToken(ctx, srv, identity.Claims{TenantID: tenant, AgentID: bench.PauseAgentName, InstanceID: inst.ID, RunID: run.RunID,
				Scopes: []string{llm.ModelScopePrefix + llmtest.ModelChat}})
		}}
	fmt.Fprintf(e.stderr, "bench: llm: 1 client, then %d, each for %v warm-up + %v of each side in rounds of %v…\n",
		o.Concurrency, max(o.Warmup, 0), o.Duration, o.Round)
	return bench.RunLLM(ctx, target, o)
}

func llmGoals(r *bench.LLMResult) []runsGoal {
	d, g := r.Latency.Direct.FirstToken, r.Latency.Gateway.FirstToken
	return []runsGoal{
		{Name: "added first-token p99", Goal: "gateway first-token p99 <= direct p99 + " + ms(llmGoalAddedP99) + " (one client)",
			Measured: fmt.Sprintf("%s vs %s (%+.2fms)", ms(g.P99), ms(d.P99), msf(r.AddedP99)), Met: r.AddedP99 <= llmGoalAddedP99},
	}
}

func printLLMBench(w io.Writer, r *llmBenchReport) {
	fmt.Fprintf(w, "novaos bench llm: 1 client, then %d; %s of each side per phase after %s warm-up, in rounds of %s, %s, %d CPUs, loopback, %s store\n\n",
		r.Concurrency, r.Duration, r.Warmup, r.Round, r.GoVersion, r.CPUs, r.Store)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "clients\tscenario\tstreams/s\tfirst p50\tfirst p90\tfirst p99\tfirst max\tstream p50\tstream p99\tstreams\terrors\t")
	for _, ph := range []bench.LLMPhase{r.Latency, r.Load} {
		for _, s := range []bench.LLMSide{ph.Direct, ph.Gateway} {
			f := s.FirstToken
			fmt.Fprintf(tw, "%d\t%s\t%.0f\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t\n", ph.Clients, s.Scenario, s.Throughput,
				ms(f.P50), ms(f.P90), ms(f.P99), ms(f.Max), ms(s.Latency.P50), ms(s.Latency.P99), s.Calls, s.Errors)
		}
	}
	tw.Flush()
	fmt.Fprintln(w)
	fmt.Fprintf(w, "one client: gateway − direct, time to the first streamed token: p50 %+.2fms, p99 %+.2fms\n", msf(r.AddedP50), msf(r.AddedP99))
	fmt.Fprintf(w, "%d clients: gateway %.2f× direct streams/s\n\n", r.Load.Clients, r.ThroughputRatio)
	printGoals(w, r.Goals)
	fmt.Fprintln(w)
	fmt.Fprintln(w, "direct: a streamed chat completion (stream_options.include_usage) of an llm/llmtest provider in this process, over")
	fmt.Fprintln(w, "loopback; gateway: the same through the LLM gateway of a novaos server, with an execution token of a live run")
	fmt.Fprintln(w, "granting the model, under a tenant budget (held from the replica's lease; usage written in batches). Every call")
	fmt.Fprintln(w, "sends a new prompt and counts only when the stream answers it back whole, with its usage and [DONE]. The first")
	fmt.Fprintln(w, "token is the first chunk read, from sending the request; a stream ends at its [DONE].")
}
