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
	"strconv"
	"strings"
	"time"

	"novaos.dev/novaos/internal/app"
	"novaos.dev/novaos/internal/bench"
)

// turnsBench is what the benches whose sides take turns share (bench
// runs, ops, tools and llm): the flags of their load, their database,
// their output and their CPU profiles, the checks of those, and how a
// report is printed.
type turnsBench struct {
	name       string // "bench tools"
	fs         *flag.FlagSet
	e          *env
	maxClients int

	c                        *int
	d, warm, round           *time.Duration
	db                       *string
	maxConns                 *int
	json                     *bool
	cpuProfile, sideProfiles *string

	profErr error // of the rounds' profiles
}

// turnsFlags say what the common flags of a turns bench default to and
// mean where the benches differ.
type turnsFlags struct {
	// clients is --c's default, maxClients its bound (0: none), and
	// clientsHelp what the clients are.
	clients, maxClients int
	clientsHelp         string
	// sides ends what --d times: "measured duration of each side" and,
	// say, ": gateway runs, and direct calls".
	sides string
	// warmup and round are --warmup's and --round's defaults; order is
	// how the sides take turns ("A B B A …, so that …").
	warmup, round time.Duration
	order         string
	// dbHelp and maxConnsHelp say what --db and --db-max-conns do; ""
	// for a bench of one server on SQLite or PostgreSQL.
	dbHelp, maxConnsHelp string
	// profiled is what --cpuprofile profiles ("server and load
	// generator"); rounds which rounds --cpuprofile-sides profiles (""
	// for every one), and roundFile what names a round's profile before
	// its number ("<scenario>").
	profiled, rounds, roundFile string
}

// newTurnsBench defines the common flags of the bench called name (its
// own go on b.fs).
func newTurnsBench(name string, f turnsFlags, e *env) *turnsBench {
	fs := newFlags(name, name+" [flags]", e)
	if f.dbHelp == "" {
		f.dbHelp = "PostgreSQL `URL` (postgres://…) for the server under test; default: SQLite in a temporary directory"
	}
	if f.maxConnsHelp == "" {
		f.maxConnsHelp = "with --db: connections in the server's pool"
	}
	return &turnsBench{name: name, fs: fs, e: e, maxClients: f.maxClients,
		c:          fs.Int("c", f.clients, f.clientsHelp),
		d:          fs.Duration("d", 10*time.Second, "measured `duration` of each side"+f.sides),
		warm:       fs.Duration("warmup", f.warmup, "unmeasured warm-up of each side first"),
		round:      fs.Duration("round", f.round, "`length` of one round: the sides take turns, "+f.order),
		db:         fs.String("db", "", f.dbHelp),
		maxConns:   fs.Int("db-max-conns", app.DefaultDBMaxConns, f.maxConnsHelp),
		json:       fs.Bool("json", false, "print results as JSON"),
		cpuProfile: fs.String("cpuprofile", "", "write a CPU profile of the whole run ("+f.profiled+") to `file`"),
		sideProfiles: fs.String("cpuprofile-sides", "", "write a CPU profile of each measured round"+f.rounds+" to `dir`/"+f.roundFile+
			"-<round>.prof (merge a side's with go tool pprof); excludes --cpuprofile"),
	}
}

// parse reads the flags and checks the common ones; the bench checks
// its own next.
func (b *turnsBench) parse(args []string) (int, bool) {
	if code, ok := parse(b.fs, args); !ok {
		return code, false
	}
	clients := "at least 1"
	if b.maxClients > 0 {
		clients = "from 1 to " + strconv.Itoa(b.maxClients)
	}
	switch {
	case *b.c < 1 || (b.maxClients > 0 && *b.c > b.maxClients) || *b.d <= 0 || *b.warm < 0 || *b.round <= 0:
		return usageError(b.fs, "--c must be %s, --d and --round positive, --warmup not negative", clients), false
	case *b.db != "" && !isPostgresURL(*b.db):
		return usageError(b.fs, "--db must be a postgres:// or postgresql:// URL"), false
	case *b.maxConns < 1 || *b.maxConns > 1<<20:
		return usageError(b.fs, "--db-max-conns: want a positive number of connections"), false
	case *b.cpuProfile != "" && *b.sideProfiles != "":
		return usageError(b.fs, "--cpuprofile and --cpuprofile-sides exclude each other: one CPU profile runs at a time"), false
	}
	return 0, true
}

// warmup is --warmup as the bench's options read it: 0 there is the
// default, so none is negative.
func (b *turnsBench) warmup() time.Duration {
	if *b.warm == 0 {
		return -1
	}
	return *b.warm
}

// benchHeader opens a turns bench's report: what ran, where and how
// long.
type benchHeader struct {
	Target string `json:"target"`
	// Store is the server's database, sqlite or postgres; bench ops,
	// whose parts name their own, leaves it out.
	Store       string `json:"store,omitempty"`
	Concurrency int    `json:"concurrency"`
	Duration    string `json:"duration"`
	Warmup      string `json:"warmup"`
	Round       string `json:"round"`
	// TokenAlgorithm is what the server signed the execution tokens with
	// (bench runs's).
	TokenAlgorithm string `json:"tokenAlgorithm,omitempty"`
	GoVersion      string `json:"goVersion"`
	CPUs           int    `json:"cpus"`
}

func (b *turnsBench) header(target string) benchHeader {
	h := benchHeader{Target: target, Store: "sqlite", Concurrency: *b.c, Duration: b.d.String(), Warmup: b.warm.String(),
		Round: min(*b.round, *b.d).String(), GoVersion: runtime.Version(), CPUs: runtime.GOMAXPROCS(0)}
	if *b.db != "" {
		h.Store = "postgres"
	}
	return h
}

// profilesRounds says whether --cpuprofile-sides asks for a profile of
// each measured round.
func (b *turnsBench) profilesRounds() bool { return *b.sideProfiles != "" }

// profileRound starts the CPU profile of measured round n, its file
// named by parts and n, and returns what stops it; a profile that cannot
// start fails the run as it ends, and the round goes on.
func (b *turnsBench) profileRound(n int, parts ...string) (stop func()) {
	name := strings.Join(append(parts, strconv.Itoa(n)), "-") + ".prof"
	stop, err := startCPUProfile(filepath.Join(*b.sideProfiles, name))
	if err != nil {
		b.profErr = errors.Join(b.profErr, err)
		return func() {}
	}
	return stop
}

// run starts the CPU profile --cpuprofile asks for, or makes the
// directory of --cpuprofile-sides, measures, and prints the report:
// measure gives it, the table that draws it, and the parts of the run
// that failed.
func (b *turnsBench) run(measure func() (report any, table func(io.Writer), failures []string, err error)) int {
	stop := func() {}
	switch {
	case *b.cpuProfile != "":
		var err error
		if stop, err = startCPUProfile(*b.cpuProfile); err != nil {
			return b.fail(err)
		}
	case b.profilesRounds():
		if err := os.MkdirAll(*b.sideProfiles, 0o755); err != nil {
			return b.fail(err)
		}
	}
	defer stop()
	report, table, failures, err := measure()
	if err == nil {
		err = b.profErr
	}
	if err != nil {
		return b.fail(err)
	}
	return printBenchReport(b.e, b.name, *b.json, report, table, failures)
}

// fail reports err and exits 1.
func (b *turnsBench) fail(err error) int {
	fmt.Fprintf(b.e.stderr, "novaos %s: %v\n", b.name, err)
	return exitFail
}

// failure adds to failures the part name of a run when n of its
// operations (what they are, or "") failed, with the first error.
func failure(failures []string, name string, n uint64, what, first string) []string {
	if n == 0 {
		return failures
	}
	if what != "" {
		what += " "
	}
	return append(failures, fmt.Sprintf("%s: %d %sfailed; first: %s", name, n, what, first))
}

// printBenchReport prints the report of the bench called name as JSON
// with asJSON, else as table draws it, and exits 1 when part of the run
// failed: failures say each such part.
func printBenchReport(e *env, name string, asJSON bool, report any, table func(io.Writer), failures []string) int {
	if asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(report); err != nil {
			fmt.Fprintf(e.stderr, "novaos %s: %v\n", name, err)
			return exitFail
		}
	} else {
		table(e.stdout)
	}
	for _, f := range failures {
		fmt.Fprintf(e.stderr, "novaos %s: %s\n", name, f)
	}
	if len(failures) > 0 {
		return exitFail
	}
	return exitOK
}

// newPhasesBench is the turns bench of a latency and a load phase
// (bench tools, bench llm): call is what a client has in flight, sides
// what --d times, peer what runs beside the server.
func newPhasesBench(name, call, sides, peer string, e *env) *turnsBench {
	return newTurnsBench(name, turnsFlags{
		clients: bench.DefaultPhasesConcurrency, maxClients: maxBenchClients,
		clientsHelp: "concurrent clients of the load phase, each with one " + call + " in flight (the latency phase has one)",
		sides:       " in each phase: " + sides,
		warmup:      time.Second, round: bench.DefaultPhasesRound, order: "A B C C B A …, so that the machine's noise falls on each",
		profiled: "server, " + peer + " and clients", roundFile: "<phase>-<scenario>",
	}, e)
}

// maxBenchClients bounds --c of bench ops, tools and llm.
const maxBenchClients = 4096

// phasesOptions are the options the flags of a phases bench ask for.
func (b *turnsBench) phasesOptions() *bench.PhasesOptions {
	o := &bench.PhasesOptions{Concurrency: *b.c, Duration: *b.d, Warmup: b.warmup(), Round: *b.round}
	if b.profilesRounds() {
		o.MeasuredRound = func(phase, scenario string, n int) func() { return b.profileRound(n, phase, scenario) }
	}
	return o
}
