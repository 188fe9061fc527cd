package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"text/tabwriter"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/adapter"
	"novaos.dev/novaos/delivery"
	"novaos.dev/novaos/dpop"
	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/app"
	"novaos.dev/novaos/internal/bench"
	"novaos.dev/novaos/secret"
	"novaos.dev/novaos/store/sqlite"
)

// Pull delivery's performance goals, which bench delivery holds its
// figures against.
const (
	deliveryGoalRate      = 5000
	deliveryGoalAckP99    = 20 * time.Millisecond
	deliveryGoalResumeP99 = 1500 * time.Millisecond
)

// Scenario names of bench delivery.
const (
	deliveryScenarioMax   = "store-ack"
	deliveryScenarioPaced = "store-ack@"
	deliveryScenarioSend  = "send"
)

// deliveryBenchReport is bench delivery's result, and its --json output.
type deliveryBenchReport struct {
	Target string `json:"target"`
	Store  string `json:"store"`
	// Concurrency is the SendMessage clients; Producers the goroutines
	// offering invocations.
	Concurrency int    `json:"concurrency"`
	Producers   int    `json:"producers"`
	Duration    string `json:"duration"`
	Warmup      string `json:"warmup"`
	GoVersion   string `json:"goVersion"`
	CPUs        int    `json:"cpus"`

	// Max is the closed loop (at most Backlog outstanding), Paced the
	// scheduled load at --rate (absent with --rate 0), Send the
	// platform's SendMessage to echo in the same run.
	Max   bench.DeliveryLoad  `json:"max"`
	Paced *bench.DeliveryLoad `json:"paced,omitempty"`
	Send  *bench.Side         `json:"send"`
	// VsSend is Max's throughput over Send's.
	VsSend float64 `json:"vsSendMessage"`
	// Totals count the invocations of the loads and the resumes, read
	// once they were all acknowledged.
	Totals bench.DeliveryTotals `json:"totals"`
	Resume bench.DeliveryResume `json:"resume"`
	Memory bench.DeliveryMemory `json:"memory"`
	Goals  []runsGoal           `json:"goals"`
}

// deliveryConfig is what bench delivery's flags ask for.
type deliveryConfig struct {
	opts    bench.DeliveryOptions
	clients int
	rate    float64
	drops   int
	entries int
}

func runBenchDelivery(ctx context.Context, args []string, e *env) int {
	fs := newFlags("bench delivery", "bench delivery [flags]", e)
	c := fs.Int("c", 32, "concurrent keep-alive clients of the SendMessage baseline")
	d := fs.Duration("d", 10*time.Second, "measured `duration` of each load: the closed loop, the paced load, SendMessage")
	warm := fs.Duration("warmup", 2*time.Second, "unmeasured warm-up before each load")
	producers := fs.Int("producers", bench.DefaultDeliveryProducers, "goroutines offering invocations to the pull agent")
	backlog := fs.Int("backlog", bench.DefaultDeliveryBacklog, "invocations offered and not yet acknowledged at most in the closed loop")
	rate := fs.Float64("rate", deliveryGoalRate, "`n` invocations a second offered on a schedule in the paced load; 0 leaves it out")
	drops := fs.Int("drops", 100, "disconnects timed, one after the other")
	entries := fs.Int("entries", bench.DefaultDeliveryEntries, "inbox entries the memory reading stores")
	asJSON := fs.Bool("json", false, "print results as JSON")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run (server, adapter and load) to `file`")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	switch {
	case *c < 1 || *producers < 1 || *backlog < 1:
		return usageError(fs, "--c, --producers and --backlog must be at least 1")
	case *d <= 0 || *warm < 0 || *rate < 0:
		return usageError(fs, "--d must be positive, --warmup and --rate not negative")
	case *drops < 1 || *drops > 100_000 || *entries < 1 || *entries > 10_000_000:
		return usageError(fs, "--drops must be from 1 to 100000 and --entries from 1 to 10000000")
	}
	cfg := deliveryConfig{clients: *c, rate: *rate, drops: *drops, entries: *entries,
		opts: bench.DeliveryOptions{Producers: *producers, Backlog: *backlog, Duration: *d, Warmup: *warm, Logger: benchLogger(e)}}
	if *warm == 0 {
		cfg.opts.Warmup = -1 // the options read 0 as their default
	}
	if *cpuProfile != "" {
		stop, err := startCPUProfile(*cpuProfile)
		if err != nil {
			fmt.Fprintf(e.stderr, "novaos bench delivery: %v\n", err)
			return exitFail
		}
		defer stop()
	}
	report, err := benchDelivery(ctx, &cfg, e)
	if err != nil {
		fmt.Fprintf(e.stderr, "novaos bench delivery: %v\n", err)
		return exitFail
	}
	report.Duration, report.Warmup = d.String(), warm.String()
	var failures []string
	failures = failure(failures, report.Max.Scenario, report.Max.Errors, "offers", report.Max.FirstError)
	if p := report.Paced; p != nil {
		failures = failure(failures, p.Scenario, p.Errors, "offers", p.FirstError)
	}
	failures = failure(failures, deliveryScenarioSend, report.Send.Errors, "requests", report.Send.FirstError)
	failures = failure(failures, "resume", uint64(report.Resume.Errors), "resumes", report.Resume.FirstError)
	return printBenchReport(e, "bench delivery", *asJSON, report, func(w io.Writer) { printDeliveryBench(w, report) }, failures)
}

// benchDelivery serves novaos on loopback over a SQLite database whose
// delivery store times each invocation (bench.DeliveryStamps), installs
// a pull instance with a DPoP-bound API token through the API, and
// measures: the closed loop, SendMessage to echo on the same server, the
// paced load, the resumes, and an inbox's memory.
func benchDelivery(ctx context.Context, cfg *deliveryConfig, e *env) (*deliveryBenchReport, error) {
	dir, err := os.MkdirTemp("", "novaos-bench-delivery-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	// The server's own database, opened here so that its delivery store
	// can be wrapped; it is the one app opens in its data directory.
	db, err := sqlite.Open(ctx, filepath.Join(dir, app.DatabaseFile), &sqlite.Options{Logger: benchLogger(e)})
	if err != nil {
		return nil, err
	}
	defer db.Close()
	stores := db.Stores()
	stamps := bench.NewDeliveryStamps(stores.Delivery)
	stores.Delivery = stamps
	srv, stop, err := startBenchServer(ctx, "delivery", &app.Options{Stores: stores, DataDir: dir}, e)
	if err != nil {
		return nil, err
	}
	defer stop()
	target, err := deliveryTarget(ctx, srv, stamps)
	if err != nil {
		return nil, err
	}
	cfg.opts.Dir = filepath.Join(dir, "adapter")
	report := &deliveryBenchReport{Target: "delivery", Store: "sqlite", Concurrency: cfg.clients, Producers: cfg.opts.Producers,
		GoVersion: runtime.Version(), CPUs: runtime.GOMAXPROCS(0)}
	d, err := bench.NewDeliveryBench(ctx, target, &cfg.opts)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	o := cfg.opts
	fmt.Fprintf(e.stderr, "bench: delivery: %s: %d producers, at most %d outstanding, %v warm-up + %v…\n",
		deliveryScenarioMax, o.Producers, o.Backlog, max(o.Warmup, 0), o.Duration)
	if report.Max, err = d.Load(ctx, deliveryScenarioMax, 0); err != nil {
		return nil, err
	}
	fmt.Fprintf(e.stderr, "bench: delivery: %s: %d clients, %v warm-up + %v…\n", deliveryScenarioSend, cfg.clients, max(o.Warmup, 0), o.Duration)
	sc := bench.SendMessage(srv.URL() + "/agents/echo")
	sc.Name = deliveryScenarioSend
	// One side, in rounds: its throughput is their median, and its CPU
	// per request is read as bench ops reads it.
	sides, err := bench.RunSides(ctx, []bench.Scenario{sc}, &bench.SidesOptions{Concurrency: cfg.clients, Duration: o.Duration, Warmup: o.Warmup})
	if err != nil {
		return nil, err
	}
	report.Send = &sides[0]
	if report.Send.Throughput > 0 {
		report.VsSend = report.Max.Throughput / report.Send.Throughput
	}
	if cfg.rate > 0 {
		name := fmt.Sprintf("%s%.0f/s", deliveryScenarioPaced, cfg.rate)
		fmt.Fprintf(e.stderr, "bench: delivery: %s: %v warm-up + %v…\n", name, max(o.Warmup, 0), o.Duration)
		paced, err := d.Load(ctx, name, cfg.rate)
		if err != nil {
			return nil, err
		}
		report.Paced = &paced
	}
	fmt.Fprintf(e.stderr, "bench: delivery: %d disconnects…\n", cfg.drops)
	if report.Resume, err = d.Resume(ctx, cfg.drops); err != nil {
		return nil, err
	}
	report.Totals = d.Totals()
	fmt.Fprintf(e.stderr, "bench: delivery: an inbox of %d entries…\n", cfg.entries)
	if report.Memory, err = d.Memory(ctx, cfg.entries); err != nil {
		return nil, err
	}
	report.Goals = deliveryGoals(report, cfg.rate)
	return report, nil
}

// deliveryTarget installs a pull instance in a fresh tenant of srv,
// issues it an API token bound to a new DPoP key, and offers its
// invocations through the server's delivery service, as the execution
// gateway does when it dispatches a run of a pull instance (the runs
// themselves are not created: that is bench runs's part).
func deliveryTarget(ctx context.Context, srv *app.Server, stamps *bench.DeliveryStamps) (*bench.DeliveryTarget, error) {
	tenant := benchTenant("bench-delivery-")
	tok, err := mintBenchToken(ctx, srv, identity.Claims{TenantID: tenant, UserID: "bench", AgentID: "bench-delivery",
		Scopes: []string{"instances:*"}})
	if err != nil {
		return nil, err
	}
	gw, err := gateway.NewClient(srv.URL(), &gateway.ClientOptions{Token: tok})
	if err != nil {
		return nil, err
	}
	inst, err := gw.Install(ctx, gateway.InstallRequest{Name: "bench-agent", Delivery: gateway.DeliveryPull})
	if err != nil {
		return nil, fmt.Errorf("install the pull agent: %w", err)
	}
	key, err := dpop.GenerateKey()
	if err != nil {
		return nil, err
	}
	admin, err := adapter.NewClient(srv.URL(), adapter.Credentials{APIToken: tok}, nil)
	if err != nil {
		return nil, err
	}
	grant, err := admin.CreateToken(ctx, inst.ID, delivery.TokenCreate{DPoPJKT: key.Thumbprint(), Name: "bench"})
	if err != nil {
		return nil, fmt.Errorf("create the agent's API token: %w", err)
	}
	svc := srv.Delivery()
	if svc == nil {
		return nil, errors.New("the server serves no pull delivery")
	}
	pull := *inst
	return &bench.DeliveryTarget{BaseURL: srv.URL(), AgentID: inst.ID, Stamps: stamps,
		Credentials: adapter.Credentials{APIToken: secret.New(grant.Token), DPoP: key},
		Offer: func(ctx context.Context) error {
			return svc.Offer(ctx, gateway.Run{ID: a2a.NewID(), TenantID: tenant, InstanceID: pull.ID, Status: gateway.StatusQueued,
				Turn: 1, Caller: gateway.Caller{Subject: "bench", UserID: "bench"}}, pull)
		}}, nil
}

func deliveryGoals(r *deliveryBenchReport, rate float64) []runsGoal {
	goals := []runsGoal{{Name: "throughput", Goal: fmt.Sprintf("invocations stored and acknowledged >= %d/s", deliveryGoalRate),
		Measured: fmt.Sprintf("%.0f/s (%.2f× SendMessage)", r.Max.Throughput, r.VsSend), Met: r.Max.Throughput >= deliveryGoalRate}}
	if p := r.Paced; p != nil {
		goals = append(goals, runsGoal{Name: "ack latency", Goal: fmt.Sprintf("ack p99 <= %s at %.0f/s", ms(deliveryGoalAckP99), rate),
			Measured: fmt.Sprintf("%s at %.0f/s", ms(p.Latency.P99), p.Throughput),
			Met:      p.Acked > 0 && p.Latency.P99 <= deliveryGoalAckP99 && p.Throughput >= 0.95*rate})
	}
	res := r.Resume
	goals = append(goals, runsGoal{Name: "resume", Goal: "resume after a disconnect p99 <= " + ms(deliveryGoalResumeP99),
		Measured: ms(res.Latency.P99), Met: res.Resumed > 0 && res.Resumed == res.Drops && res.Latency.P99 <= deliveryGoalResumeP99})
	return goals
}

func printDeliveryBench(w io.Writer, r *deliveryBenchReport) {
	fmt.Fprintf(w, "novaos bench delivery: %d producers, SendMessage from %d clients, %s each after %s warm-up, %s, %d CPUs, loopback, %s store\n\n",
		r.Producers, r.Concurrency, r.Duration, r.Warmup, r.GoVersion, r.CPUs, r.Store)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\tper second\tp50\tp99\tmax\tCPU/op\tper commit\terrors\tvs send\t")
	loads := []bench.DeliveryLoad{r.Max}
	if r.Paced != nil {
		loads = append(loads, *r.Paced)
	}
	for _, l := range loads {
		ratio := "-"
		if l.Rate == 0 && r.Send != nil && r.Send.Throughput > 0 {
			ratio = fmt.Sprintf("%.2f", r.VsSend)
		}
		fmt.Fprintf(tw, "%s\t%.0f\t%s\t%s\t%s\t%s\t%.0f\t%d\t%s\t\n", l.Scenario, l.Throughput, ms(l.Latency.P50), ms(l.Latency.P99),
			ms(l.Latency.Max), cpuUS(l.CPUPerEvent), l.PerCommit, l.Errors, ratio)
	}
	if s := r.Send; s != nil {
		fmt.Fprintf(tw, "%s\t%.0f\t%s\t%s\t%s\t%s\t-\t%d\t1.00\t\n", s.Scenario, s.Throughput, ms(s.Latency.P50), ms(s.Latency.P99),
			ms(s.Latency.Max), cpuUS(s.CPUPerRequest), s.Errors)
	}
	tw.Flush()
	fmt.Fprintln(w)
	fmt.Fprintf(w, "%s: at most %d outstanding; %d offered, %d acknowledged; in the adapter p50 %s, p99 %s\n", r.Max.Scenario, r.Max.Backlog,
		r.Max.Offered, r.Max.Acked, ms(r.Max.InAdapter.P50), ms(r.Max.InAdapter.P99))
	if p := r.Paced; p != nil {
		lag := "-"
		if p.Lag != nil {
			lag = ms(p.Lag.P99)
		}
		fmt.Fprintf(w, "%s: offered %.0f/s (offers late by %s at p99); %d offered, %d acknowledged; in the adapter p50 %s, p99 %s\n",
			p.Scenario, p.OfferedRate, lag, p.Offered, p.Acked, ms(p.InAdapter.P50), ms(p.InAdapter.P99))
	}
	t := r.Totals
	fmt.Fprintf(w, "all invocations: %d offered, %d acknowledged, %d stored in the inbox\n", t.Offered, t.Acked, t.Stored)
	res := r.Resume
	fmt.Fprintf(w, "resume after a disconnect: %d drops, %d resumed, %d identified anew, %d errors; p50 %s, p99 %s, max %s (beyond the "+
		"backoff: p50 %s, p99 %s); an invocation offered at the cut acknowledged: p50 %s, p99 %s\n",
		res.Drops, res.Resumed, res.Identified, res.Errors, ms(res.Latency.P50), ms(res.Latency.P99), ms(res.Latency.Max),
		ms(res.BeyondBackoff.P50), ms(res.BeyondBackoff.P99), ms(res.Acked.P50), ms(res.Acked.P99))
	m := r.Memory
	fmt.Fprintf(w, "inbox of %d entries: disk %s (%s once closed), Go heap %+.2f MB, RSS %+.1f MB; per 10,000 entries: disk %.1f MB, Go heap %+.2f MB, RSS %+.1f MB (a connected adapter: Go heap %+.2f MB)\n\n",
		m.Entries, mb(m.Disk), mb(m.DiskClosed), float64(m.Heap)/1e6, float64(m.RSS)/1e6,
		bench.Per10k(m.Disk, m.Entries)/1e6, bench.Per10k(m.Heap, m.Entries)/1e6, bench.Per10k(m.RSS, m.Entries)/1e6, float64(m.HeapBase)/1e6)
	printGoals(w, r.Goals)
	fmt.Fprintln(w)
	for _, line := range []string{
		"store-ack: invocations offered to a pull agent (the delivery service's Offer, as the execution gateway dispatches a",
		"run), sent over the WebSocket gateway each with a fresh token, verified by the adapter SDK, stored in its SQLite inbox",
		"(synchronous=FULL, one commit per batch received: per commit) and acknowledged. Per second: acknowledgements the",
		"platform stored; p50/p99/max: from an invocation's append commit to the commit of its acknowledgement, both at the",
		"platform's store (in the closed loop mostly the wait behind the backlog); in the adapter: from the receipt of its",
		"batch to its acknowledgement sent. send: SendMessage to /agents/echo on the same server (its request latency; per",
		"second the median of 1-second rounds). CPU/op: the CPU time of this whole process (platform, adapter, load) per",
		"invocation acknowledged or per request. Resume: the adapter's socket closed under it, to its session resumed after",
		"its reconnect backoff (a random part of 500 ms).",
	} {
		fmt.Fprintln(w, line)
	}
}

// cpuUS is a CPU time per operation in microseconds, "-" when unknown.
func cpuUS(d time.Duration) string {
	if d <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.0fµs", float64(d)/float64(time.Microsecond))
}

func mb(b int64) string { return fmt.Sprintf("%.1f MB", float64(b)/1e6) }
