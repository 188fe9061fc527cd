package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"novaos.dev/novaos/gate"
	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/app"
	"novaos.dev/novaos/internal/bench"
	"novaos.dev/novaos/internal/gatesvc"
	"novaos.dev/novaos/internal/gatesvc/judge"
	"novaos.dev/novaos/internal/modelapi"
	"novaos.dev/novaos/secret"
)

// Scenario names of bench gate.
const (
	gateScenarioCall    = "call"
	gateScenarioHealthz = "healthz-pair"
	gateScenarioGated   = "gated"
	gateScenarioJudge   = "gated-judge"
)

// The gate's service-level goals, which the report is held against.
const (
	gateGoalP99      = 5 * time.Millisecond
	gateGoalRate     = 1000
	gateGoalJudgeP99 = 2 * time.Millisecond
)

// gateBenchReport is bench gate's result.
type gateBenchReport struct {
	benchReport
	// Rate is the target of every scenario in writes per second, 0 for
	// unthrottled (a closed loop per session).
	Rate       float64 `json:"rate"`
	Rules      int     `json:"rules"`
	Aggregates int     `json:"aggregates"`
	// JudgeDelay is the fake model's delay; absent without --judge fake.
	JudgeDelay string `json:"judgeDelay,omitempty"`
	// Ratios of the gated write's p99 to the baselines' p99.
	P99VsCall    float64 `json:"p99VsCall,omitempty"`
	P99VsHealthz float64 `json:"p99VsHealthz,omitempty"`
	// Server is what the gate recorded of the gated scenarios' decisions.
	Server []gateServerStats `json:"server,omitempty"`
	// JudgeOverhead is the judge path's latency beyond the model's delay:
	// gated-judge − delay − gated, at p50 and p99.
	JudgeOverhead *gateJudgeOverhead `json:"judgeOverhead,omitempty"`
}

// gateServerStats is read back from the decisions the gate stored.
type gateServerStats struct {
	Scenario string `json:"scenario"`
	// Decisions made during the measured window, and per second of it.
	Decisions    int     `json:"decisions"`
	DecisionRate float64 `json:"decisionsPerSecond"`
	// The service's own time per decision (Decision.TotalMicros: decoding
	// to verdict, before the durable write) and, within it, the rule layer
	// (ledger aggregates and CEL).
	Total bench.Latency `json:"total"`
	Rules bench.Latency `json:"rules"`
	// Judge is the judge layer's time (Decision.JudgeMicros: building the
	// request, the model's answer, decoding it); absent without a judge.
	Judge *bench.Latency `json:"judge,omitempty"`
}

type gateJudgeOverhead struct {
	P50 time.Duration `json:"p50Ns"`
	P99 time.Duration `json:"p99Ns"`
	// ServerP50 and ServerP99 are the same overhead as the gate measured
	// it around its judge call (judge layer time − model delay), free of
	// the noise of subtracting two end-to-end distributions.
	ServerP50 time.Duration `json:"serverP50Ns"`
	ServerP99 time.Duration `json:"serverP99Ns"`
}

func runBenchGate(ctx context.Context, args []string, e *env) int {
	fs := newFlags("bench gate", "bench gate [flags]", e)
	c := fs.Int("c", 500, "concurrent gate sessions (and clients of each baseline), each with one write in flight")
	rate := fs.Float64("rate", gateGoalRate, "target `writes/s` of every scenario, summed over the sessions; 0 runs unthrottled (each session writes again as soon as the last write returned)")
	d := fs.Duration("d", 10*time.Second, "measured `duration` of each scenario")
	warm := fs.Duration("warmup", 2*time.Second, "unmeasured warm-up before each scenario")
	db := fs.String("db", "", "PostgreSQL `URL` (postgres://…) for the server under test; default: SQLite in a temporary directory")
	judgeMode := fs.String("judge", "none", "`mode` of the LLM judge: none (rules only), or fake (also run gated-judge against a second server whose judge is an in-process fake model)")
	judgeDelay := fs.Duration("judge-delay", 20*time.Millisecond, "the fake model's time per verdict (with --judge fake)")
	defaultTransport := fs.Bool("sdk-default-transport", false, "give the SDK its default HTTP client (Go's default transport) instead of one sized for --c keep-alive connections")
	asJSON := fs.Bool("json", false, "print results as JSON")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run (servers and load generator) to `file`")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	switch {
	case *c < 1 || *d <= 0 || *warm < 0 || *rate < 0:
		return usageError(fs, "--c must be at least 1, --d positive, --warmup and --rate not negative")
	case *judgeMode != "none" && *judgeMode != "fake":
		return usageError(fs, "unknown judge mode %q (want none or fake)", *judgeMode)
	case *judgeDelay < 0:
		return usageError(fs, "--judge-delay must not be negative")
	case *db != "" && !isPostgresURL(*db):
		return usageError(fs, "--db must be a postgres:// or postgresql:// URL")
	}
	if *cpuProfile != "" {
		stop, err := startCPUProfile(*cpuProfile)
		if err != nil {
			fmt.Fprintf(e.stderr, "novaos bench gate: %v\n", err)
			return exitFail
		}
		defer stop()
	}
	warmup := *warm
	if warmup == 0 {
		warmup = -1 // bench.Options reads 0 as its default
	}
	var doc gate.RuleSetDocument
	if err := json.Unmarshal([]byte(bench.GateRuleSet), &doc); err != nil {
		fmt.Fprintf(e.stderr, "novaos bench gate: rule set: %v\n", err)
		return exitFail
	}
	report := &gateBenchReport{
		benchReport: benchReport{Target: "gate", Store: "sqlite", Concurrency: *c, Duration: d.String(), Warmup: warm.String(),
			GoVersion: runtime.Version(), CPUs: runtime.GOMAXPROCS(0)},
		Rate: *rate, Rules: len(doc.Rules), Aggregates: len(doc.Aggregates),
	}
	if *db != "" {
		report.Store = "postgres"
	}
	cfg := gateBenchConfig{db: *db, judge: *judgeMode == "fake", judgeDelay: *judgeDelay, defaultTransport: *defaultTransport,
		opts: &bench.PaceOptions{Options: bench.Options{Concurrency: *c, Duration: *d, Warmup: warmup}, Rate: *rate}}
	if cfg.judge {
		report.JudgeDelay = judgeDelay.String()
	}
	if err := benchGate(ctx, cfg, report, e); err != nil {
		fmt.Fprintf(e.stderr, "novaos bench gate: %v\n", err)
		return exitFail
	}
	return reportBench(e, "gate", *asJSON, report, report.Results, func(w io.Writer) { printGateBench(w, report) })
}

func isPostgresURL(s string) bool {
	for _, p := range []string{"postgres://", "postgresql://"} {
		if len(s) > len(p) && s[:len(p)] == p {
			return true
		}
	}
	return false
}

type gateBenchConfig struct {
	db               string
	judge            bool
	judgeDelay       time.Duration
	defaultTransport bool
	opts             *bench.PaceOptions
}

// gateTarget is one server under test with its sessions open.
type gateTarget struct {
	srv      *app.Server
	tenant   string
	admin    *gate.Client
	agent    *gate.Client
	sessions []context.Context
	write    func(context.Context, refund) (string, error)
	close    func()
}

// refund is the gated function's argument.
type refund struct {
	Customer string
	Amount   float64
}

// refundDone is the gated function: trivial, so that what is measured is
// the gate.
func refundDone(_ context.Context, r refund) (string, error) {
	return r.Customer, nil
}

// benchGate starts the servers and runs the scenarios one after another:
// the ungated call, the bare HTTP pair, the gated write and, with the
// fake judge, the gated write through the judge.
func benchGate(ctx context.Context, cfg gateBenchConfig, report *gateBenchReport, e *env) error {
	log := benchLogger(e)
	plain, err := startGateTarget(ctx, cfg, "bench", nil, log)
	if err != nil {
		return err
	}
	defer plain.close()
	var judged *gateTarget
	if cfg.judge {
		modelURL, closeModel, err := serveLoopback(ctx, fakeJudgeModel(cfg.judgeDelay))
		if err != nil {
			return fmt.Errorf("fake model: %w", err)
		}
		defer closeModel()
		// As serve builds the judge from --gate-judge-*: the model client's
		// defaults are part of what is measured.
		j := judge.New(modelURL+"/v1", "fake-judge", secret.New("fake-model-key"),
			&judge.Options{Timeout: judge.DefaultTimeout, Model: &modelapi.Options{Timeout: judge.DefaultTimeout}})
		if judged, err = startGateTarget(ctx, cfg, "bench-judge", j, log); err != nil {
			return err
		}
		defer judged.close()
	}

	hc := bench.NewClient(cfg.opts.Concurrency)
	defer hc.CloseIdleConnections()
	healthz := plain.srv.URL() + "/healthz"
	get := func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, healthz, nil)
		if err != nil {
			return err
		}
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("healthz: status %d", resp.StatusCode)
		}
		return err
	}
	var seq atomic.Uint64
	next := func() refund {
		n := seq.Add(1)
		return refund{Customer: bench.GateCustomer(n), Amount: bench.GateAmount(n)}
	}
	gated := func(t *gateTarget) func(context.Context, int) error {
		return func(_ context.Context, client int) error {
			_, err := t.write(t.sessions[client], next())
			return err
		}
	}
	ops := []bench.Op{
		{Name: gateScenarioCall, Do: func(ctx context.Context, _ int) error {
			_, err := refundDone(ctx, next())
			return err
		}},
		{Name: gateScenarioHealthz, Do: func(ctx context.Context, _ int) error {
			if err := get(ctx); err != nil {
				return err
			}
			return get(ctx)
		}},
		{Name: gateScenarioGated, Do: gated(plain), Kind: killKind},
	}
	if judged != nil {
		ops = append(ops, bench.Op{Name: gateScenarioJudge, Do: gated(judged), Kind: killKind})
	}
	targets := map[string]*gateTarget{gateScenarioGated: plain, gateScenarioJudge: judged}
	o := cfg.opts
	for _, op := range ops {
		label := "unthrottled"
		if o.Rate > 0 {
			label = fmt.Sprintf("%.0f/s", o.Rate)
		}
		fmt.Fprintf(e.stderr, "bench: %s: %d clients, %s, %v warm-up + %v…\n", op.Name, o.Concurrency, label, max(o.Warmup, 0), o.Duration)
		runtime.GC()
		debug.FreeOSMemory()
		res, err := bench.RunOp(ctx, op, o)
		if err != nil {
			return err
		}
		finished := time.Now()
		report.Results = append(report.Results, benchResult{Result: res})
		if t := targets[op.Name]; t != nil {
			st, err := t.serverStats(ctx, op.Name, finished.Add(-res.Elapsed), finished)
			if err != nil {
				return fmt.Errorf("%s: read back decisions: %w", op.Name, err)
			}
			report.Server = append(report.Server, st)
		}
	}
	byName := map[string]*bench.Result{}
	for _, r := range report.Results {
		byName[r.Scenario] = r.Result
	}
	g := byName[gateScenarioGated]
	if b := byName[gateScenarioCall]; b.Latency.P99 > 0 {
		report.P99VsCall = float64(g.Latency.P99) / float64(b.Latency.P99)
	}
	if b := byName[gateScenarioHealthz]; b.Latency.P99 > 0 {
		report.P99VsHealthz = float64(g.Latency.P99) / float64(b.Latency.P99)
	}
	if j := byName[gateScenarioJudge]; j != nil {
		report.JudgeOverhead = &gateJudgeOverhead{
			P50: j.Latency.P50 - cfg.judgeDelay - g.Latency.P50,
			P99: j.Latency.P99 - cfg.judgeDelay - g.Latency.P99,
		}
		for _, s := range report.Server {
			if s.Judge != nil {
				report.JudgeOverhead.ServerP50 = s.Judge.P50 - cfg.judgeDelay
				report.JudgeOverhead.ServerP99 = s.Judge.P99 - cfg.judgeDelay
			}
		}
	}
	return nil
}

// startGateTarget serves novaos on loopback with the gate (and j as its
// judge, when not nil), loads the bench's rule set for tenant, and opens
// the sessions.
func startGateTarget(ctx context.Context, cfg gateBenchConfig, tenant string, j gatesvc.Judger, log *slog.Logger) (t *gateTarget, err error) {
	adminToken := secret.New(newBenchSecret())
	appOpts := &app.Options{Addr: "127.0.0.1:0", Logger: log, AdminToken: adminToken, Database: app.DatabaseOptions{URL: cfg.db}}
	var cleanup []func()
	t = &gateTarget{tenant: tenant, close: func() {
		for i := len(cleanup) - 1; i >= 0; i-- {
			cleanup[i]()
		}
	}}
	defer func() {
		if err != nil {
			t.close()
		}
	}()
	// The data directory holds the token keys even when the tasks live in
	// PostgreSQL, so it is always a throwaway one.
	dir, err := os.MkdirTemp("", "novaos-bench-gate-")
	if err != nil {
		return nil, err
	}
	cleanup = append(cleanup, func() { os.RemoveAll(dir) })
	appOpts.DataDir = dir
	if j != nil {
		appOpts.Gate = app.GateOptions{Judge: j, JudgeModel: "fake-judge"}
	}
	srv, err := app.New(ctx, appOpts)
	if err != nil {
		return nil, err
	}
	cleanup = append(cleanup, func() { srv.Shutdown(context.Background()) })
	if err := srv.Start(ctx); err != nil {
		return nil, err
	}
	t.srv = srv
	if srv.Gate() == nil {
		return nil, errors.New("the server has no gate")
	}
	if t.admin, err = gate.NewClient(gate.Config{URL: srv.URL(), Token: adminToken}, &gate.ClientOptions{Tenant: tenant, Logger: log}); err != nil {
		return nil, err
	}
	var doc gate.RuleSetDocument
	if err := json.Unmarshal([]byte(bench.GateRuleSet), &doc); err != nil {
		return nil, err
	}
	if _, err := t.admin.PutRules(ctx, doc); err != nil {
		return nil, fmt.Errorf("load rules: %w", err)
	}
	tok, err := srv.Issuer().Mint(ctx, identity.Claims{TenantID: tenant, AgentID: "bench-agent", Scopes: []string{gate.ScopeSubmit}}, 24*time.Hour)
	if err != nil {
		return nil, fmt.Errorf("mint agent token: %w", err)
	}
	co := &gate.ClientOptions{Logger: log}
	if !cfg.defaultTransport {
		hc := bench.NewClient(cfg.opts.Concurrency)
		cleanup = append(cleanup, hc.CloseIdleConnections)
		co.HTTPClient = hc
	}
	if t.agent, err = gate.NewClient(gate.Config{URL: srv.URL(), Token: secret.New(tok)}, co); err != nil {
		return nil, err
	}
	t.write = gate.Write(t.agent, gate.WriteSpec[refund]{ActionType: bench.GateActionType, Context: func(r refund) (gate.Context, error) {
		amount := r.Amount
		return gate.CSContext{CustomerID: r.Customer, Amount: &amount, Currency: "EUR"}, nil
	}}, refundDone)
	for range cfg.opts.Concurrency {
		sctx, _, err := t.agent.Begin(ctx, gate.Session{TenantID: tenant, TeamID: "support", AgentID: "bench-agent"})
		if err != nil {
			return nil, fmt.Errorf("open session: %w", err)
		}
		if err := gate.SetReasoning(sctx, "the customer was charged twice for one order"); err != nil {
			return nil, err
		}
		t.sessions = append(t.sessions, sctx)
	}
	cleanup = append(cleanup, func() {
		for _, s := range t.sessions {
			_ = t.agent.End(s)
		}
	})
	return t, nil
}

// serverStats reads back the decisions the gate recorded between from
// and to: how many, and the service's own time for each.
func (t *gateTarget) serverStats(ctx context.Context, scenario string, from, to time.Time) (gateServerStats, error) {
	st := gateServerStats{Scenario: scenario}
	var total, rules, judged bench.Histogram
	q := &gate.ListQuery{States: []gate.ActionState{gate.ActionExecuted, gate.ActionClaimed, gate.ActionPassed,
		gate.ActionHeld, gate.ActionKilled, gate.ActionUnconfirmed}, Limit: 500}
	for {
		page, err := t.admin.ListActions(ctx, q)
		if err != nil {
			return st, err
		}
		for _, r := range page.Actions {
			if r.CreatedAt.Before(from) || r.CreatedAt.After(to) {
				continue
			}
			var d gate.Decision
			if err := json.Unmarshal(r.Decision, &d); err != nil {
				return st, fmt.Errorf("action %s: decision: %w", r.ActionID, err)
			}
			st.Decisions++
			total.Record(time.Duration(d.TotalMicros) * time.Microsecond)
			rules.Record(time.Duration(d.RulesMicros) * time.Microsecond)
			if d.Judge != nil {
				judged.Record(time.Duration(d.JudgeMicros) * time.Microsecond)
			}
		}
		if page.Next == "" {
			break
		}
		q.After = page.Next
	}
	if s := to.Sub(from).Seconds(); s > 0 {
		st.DecisionRate = float64(st.Decisions) / s
	}
	lat := func(h *bench.Histogram) bench.Latency {
		return bench.Latency{P50: h.Quantile(0.5), P90: h.Quantile(0.9), P99: h.Quantile(0.99), Max: h.Max(), Mean: h.Mean()}
	}
	st.Total, st.Rules = lat(&total), lat(&rules)
	if judged.Count() > 0 {
		l := lat(&judged)
		st.Judge = &l
	}
	return st, nil
}

// newBenchSecret is a random admin token for one bench server.
func newBenchSecret() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return hex.EncodeToString(b)
}

// killKind names a gated write's failure by the gate's reason.
func killKind(err error) string {
	var k *gate.KillError
	if errors.As(err, &k) {
		switch {
		case k.Reason != "":
			return string(k.Reason)
		case k.RuleIDCited != "":
			return string(k.Verdict) + " by rule " + k.RuleIDCited
		}
		return string(k.Verdict)
	}
	msg := err.Error()
	if len(msg) > 80 {
		msg = msg[:80]
	}
	return msg
}

// fakeJudgeVerdict is a pass as package judge demands it.
const fakeJudgeVerdict = `{"verdict":"pass","rule_id_cited":"","rule_ids":["threats"],"rationale":"No rule is violated by this refund.","signals":["the amount is within policy"]}`

// fakeJudgeModel is an OpenAI-compatible chat completions endpoint that
// answers every request with a pass after delay.
func fakeJudgeModel(delay time.Duration) http.Handler {
	answer, _ := json.Marshal(map[string]any{
		"id": "fake", "object": "chat.completion", "model": "fake-judge",
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": fakeJudgeVerdict}}},
	})
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		// Read the request as a model server would before it answers.
		_, _ = io.Copy(io.Discard, r.Body)
		if delay > 0 {
			t := time.NewTimer(delay)
			defer t.Stop()
			select {
			case <-t.C:
			case <-r.Context().Done():
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(answer)
	})
	return mux
}

func printGateBench(w io.Writer, r *gateBenchReport) {
	rate := "unthrottled"
	if r.Rate > 0 {
		rate = fmt.Sprintf("target %.0f writes/s", r.Rate)
	}
	fmt.Fprintf(w, "novaos bench gate: %d sessions, %s, %s each after %s warm-up, %s, %d CPUs, loopback, %s store,\n%d rules (%d aggregates), judge off",
		r.Concurrency, rate, r.Duration, r.Warmup, r.GoVersion, r.CPUs, r.Store, r.Rules, r.Aggregates)
	if r.JudgeDelay != "" {
		fmt.Fprintf(w, " (gated-judge: fake model, %s per verdict)", r.JudgeDelay)
	}
	fmt.Fprint(w, "\n\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\tops/s\tp50\tp90\tp99\tmax\tlag p99\terrors\t")
	for _, res := range r.Results {
		lag := "-"
		if res.Lag != nil {
			lag = ms(res.Lag.P99)
		}
		fmt.Fprintf(tw, "%s\t%.0f\t%s\t%s\t%s\t%s\t%s\t%d\t\n", res.Scenario, res.Throughput,
			us(res.Latency.P50), us(res.Latency.P90), us(res.Latency.P99), us(res.Latency.Max), lag, res.Errors)
	}
	tw.Flush()
	fmt.Fprintln(w)
	for _, res := range r.Results {
		for k, n := range res.ErrorsByKind {
			fmt.Fprintf(w, "%s errors: %d %s\n", res.Scenario, n, k)
		}
	}
	fmt.Fprintf(w, "gated p99 / call p99: %.0f; gated p99 / healthz-pair p99: %.2f\n", r.P99VsCall, r.P99VsHealthz)
	for _, s := range r.Server {
		fmt.Fprintf(w, "server (%s): %d decisions, %.0f/s; service time p50 %s p99 %s, of which rules (aggregates + CEL) p50 %s p99 %s\n",
			s.Scenario, s.Decisions, s.DecisionRate, us(s.Total.P50), us(s.Total.P99), us(s.Rules.P50), us(s.Rules.P99))
	}
	for _, res := range r.Results {
		if res.Scenario != gateScenarioGated {
			continue
		}
		met := "met"
		if res.Latency.P99 > gateGoalP99 || res.Throughput < 0.95*gateGoalRate || res.Errors > 0 {
			met = "not met"
		}
		fmt.Fprintf(w, "goal p99 <= %s at %d gated writes/s: %s (p99 %s at %.0f/s)\n", ms(gateGoalP99), gateGoalRate, met, ms(res.Latency.P99), res.Throughput)
	}
	if o := r.JudgeOverhead; o != nil {
		met := "met"
		if o.P99 > gateGoalJudgeP99 {
			met = "not met"
		}
		fmt.Fprintf(w, "judge path beyond the model's %s: p50 %s, p99 %s (gated-judge - model delay - gated); goal p99 <= %s: %s\n",
			r.JudgeDelay, ms(o.P50), ms(o.P99), ms(gateGoalJudgeP99), met)
		fmt.Fprintf(w, "judge path beyond the model as the gate timed its judge call: p50 %s, p99 %s\n", ms(o.ServerP50), ms(o.ServerP99))
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "call: the gated function called directly; healthz-pair: two GET /healthz on the same server (two loopback round trips,")
	fmt.Fprintln(w, "each with a database ping); gated: gate.Write through the SDK (submit with ?claim=1, run, acknowledge), every write")
	fmt.Fprintln(w, "decided and recorded durably. Latency is each operation's own; lag is how late it started against the schedule.")
}

// us prints a duration in microseconds below a millisecond.
func us(d time.Duration) string {
	if d < time.Millisecond {
		return fmt.Sprintf("%.1fµs", float64(d)/float64(time.Microsecond))
	}
	return ms(d)
}
