package cli

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"novaos.dev/novaos/internal/app"
	"novaos.dev/novaos/internal/bench"
)

// phasesBench is what the benches of a latency and a load phase whose
// sides take turns (bench tools, bench llm) share: their flags, their
// profiles and their output.
type phasesBench struct {
	name string // "bench tools"
	fs   *flag.FlagSet
	e    *env

	c                        *int
	d, warm, round           *time.Duration
	db                       *string
	maxConns                 *int
	json                     *bool
	cpuProfile, sideProfiles *string
}

// newPhasesBench defines the flags: call is what a client has in flight,
// sides what --d times, peer what runs beside the server.
func newPhasesBench(name, call, sides, peer string, e *env) *phasesBench {
	fs := newFlags(name, name+" [flags]", e)
	return &phasesBench{name: name, fs: fs, e: e,
		c:            fs.Int("c", bench.DefaultPhasesConcurrency, "concurrent clients of the load phase, each with one "+call+" in flight (the latency phase has one)"),
		d:            fs.Duration("d", 10*time.Second, "measured `duration` of each side in each phase: "+sides),
		warm:         fs.Duration("warmup", time.Second, "unmeasured warm-up of each side first"),
		round:        fs.Duration("round", bench.DefaultPhasesRound, "`length` of one round: the sides take turns, A B C C B A …, so that the machine's noise falls on each"),
		db:           fs.String("db", "", "PostgreSQL `URL` (postgres://…) for the server under test; default: SQLite in a temporary directory"),
		maxConns:     fs.Int("db-max-conns", app.DefaultDBMaxConns, "with --db: connections in the server's pool"),
		json:         fs.Bool("json", false, "print results as JSON"),
		cpuProfile:   fs.String("cpuprofile", "", "write a CPU profile of the whole run (server, "+peer+" and clients) to `file`"),
		sideProfiles: fs.String("cpuprofile-sides", "", "write a CPU profile of each measured round to `dir`/<phase>-<scenario>-<round>.prof (merge a side's with go tool pprof); excludes --cpuprofile"),
	}
}

// parse reads and checks the flags.
func (b *phasesBench) parse(args []string) (int, bool) {
	if code, ok := parse(b.fs, args); !ok {
		return code, false
	}
	switch {
	case *b.c < 1 || *b.c > 4096 || *b.d <= 0 || *b.warm < 0 || *b.round <= 0:
		return usageError(b.fs, "--c must be from 1 to 4096, --d and --round positive, --warmup not negative"), false
	case *b.db != "" && !isPostgresURL(*b.db):
		return usageError(b.fs, "--db must be a postgres:// or postgresql:// URL"), false
	case *b.maxConns < 1 || *b.maxConns > 1<<20:
		return usageError(b.fs, "--db-max-conns: want a positive number of connections"), false
	case *b.cpuProfile != "" && *b.sideProfiles != "":
		return usageError(b.fs, "--cpuprofile and --cpuprofile-sides exclude each other: one CPU profile runs at a time"), false
	}
	return 0, true
}

// benchHeader opens a phases bench's report: what ran, where and how
// long.
type benchHeader struct {
	Target      string `json:"target"`
	Store       string `json:"store"`
	Concurrency int    `json:"concurrency"`
	Duration    string `json:"duration"`
	Warmup      string `json:"warmup"`
	Round       string `json:"round"`
	GoVersion   string `json:"goVersion"`
	CPUs        int    `json:"cpus"`
}

func (b *phasesBench) header(target string) benchHeader {
	h := benchHeader{Target: target, Store: "sqlite", Concurrency: *b.c, Duration: b.d.String(), Warmup: b.warm.String(),
		Round: min(*b.round, *b.d).String(), GoVersion: runtime.Version(), CPUs: runtime.GOMAXPROCS(0)}
	if *b.db != "" {
		h.Store = "postgres"
	}
	return h
}

// start starts the CPU profile --cpuprofile asks for, and returns the
// run's options, with the profile of each round --cpuprofile-sides asks
// for; stop ends the whole run's profile, and roundErr says what the
// rounds' failed with.
func (b *phasesBench) start() (o *bench.PhasesOptions, stop func(), roundErr func() error, err error) {
	stop = func() {}
	if *b.cpuProfile != "" {
		if stop, err = startCPUProfile(*b.cpuProfile); err != nil {
			return nil, nil, nil, err
		}
	}
	warmup := *b.warm
	if warmup == 0 {
		warmup = -1 // bench.PhasesOptions reads 0 as its default
	}
	o = &bench.PhasesOptions{Concurrency: *b.c, Duration: *b.d, Warmup: warmup, Round: *b.round}
	var errs error
	if *b.sideProfiles != "" {
		if err := os.MkdirAll(*b.sideProfiles, 0o755); err != nil {
			stop()
			return nil, nil, nil, err
		}
		o.MeasuredRound = func(phase, scenario string, n int) func() {
			stop, err := startCPUProfile(filepath.Join(*b.sideProfiles, fmt.Sprintf("%s-%s-%d.prof", phase, scenario, n)))
			if err != nil {
				errs = errors.Join(errs, err)
				return func() {}
			}
			return stop
		}
	}
	return o, stop, func() error { return errs }, nil
}

// run measures with the flags' options and prints the report: measure
// gives it, the table that draws it, and the sides whose calls failed
// (each with the count and the first error).
func (b *phasesBench) run(args []string, measure func(o *bench.PhasesOptions) (report any, table func(io.Writer), failures []string, err error)) int {
	if code, ok := b.parse(args); !ok {
		return code
	}
	opts, stop, roundErr, err := b.start()
	if err != nil {
		return b.fail(err)
	}
	defer stop()
	report, table, failures, err := measure(opts)
	if err == nil {
		err = roundErr()
	}
	if err != nil {
		return b.fail(err)
	}
	return b.output(report, table, failures)
}

// fail reports err and exits 1.
func (b *phasesBench) fail(err error) int {
	fmt.Fprintf(b.e.stderr, "novaos %s: %v\n", b.name, err)
	return exitFail
}

// output prints report as JSON with --json, else as table draws it, and
// exits 1 when a call of a side failed: failures name each such side,
// the failed count and the first error.
func (b *phasesBench) output(report any, table func(io.Writer), failures []string) int {
	if *b.json {
		enc := json.NewEncoder(b.e.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(report); err != nil {
			return b.fail(err)
		}
	} else {
		table(b.e.stdout)
	}
	for _, f := range failures {
		fmt.Fprintf(b.e.stderr, "novaos %s: %s\n", b.name, f)
	}
	if len(failures) > 0 {
		return exitFail
	}
	return exitOK
}
