package cli

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/internal/bench"
	"novaos.dev/novaos/internal/pgtest"
)

func TestBenchOpsUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no clients", []string{"--c", "0"}, "--c must be from 1 to 4096"},
		{"zero duration", []string{"--d", "0s"}, "--d and --round positive"},
		{"zero round", []string{"--round", "0s"}, "--d and --round positive"},
		{"negative warm-up", []string{"--warmup", "-1s"}, "--warmup not negative"},
		{"no sampling", []string{"--trace-ratio", "0"}, "--trace-ratio must be above 0"},
		{"ratio above one", []string{"--trace-ratio", "1.5"}, "--trace-ratio must be above 0"},
		{"negative scrape interval", []string{"--scrape-every", "-1s"}, "--scrape-every must not be negative"},
		{"negative tasks", []string{"--tasks", "-1"}, "--tasks and --runs"},
		{"no scrapes", []string{"--scrapes", "0"}, "--scrapes must be from 1"},
		{"not postgres", []string{"--db", "mysql://x"}, "postgres:// or postgresql://"},
		{"no pool", []string{"--db-max-conns", "0"}, "--db-max-conns"},
		{"unknown store", []string{"--store", "redis"}, `unknown --store "redis"`},
		{"postgres without a URL", []string{"--store", "postgres"}, "--store postgres needs --db"},
		{"unknown part", []string{"--part", "all"}, `unknown --part "all"`},
		{"two CPU profiles", []string{"--cpuprofile", "a", "--cpuprofile-sides", "b"}, "exclude each other"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, _, errOut := testEnv(nil)
			if code := run(t.Context(), append([]string{"bench", "ops"}, tc.args...), e); code != exitUsage {
				t.Errorf("exit code %d, want %d", code, exitUsage)
			}
			if !strings.Contains(errOut.String(), tc.want) {
				t.Errorf("stderr %q, want %q", errOut, tc.want)
			}
		})
	}
}

// opsShortArgs run both parts with small numbers: every request traced,
// so that spans are exported whatever the sampler draws, and a scrape
// as the on side's clock starts.
var opsShortArgs = []string{"bench", "ops", "--c", "2", "--d", "150ms", "--warmup", "30ms", "--round", "50ms",
	"--trace-ratio", "1", "--scrape-every", "1h", "--tasks", "40", "--runs", "10", "--scrapes", "5", "--json"}

// runOpsShort runs bench ops with opsShortArgs and more, and checks the
// report's shape and that every request, export and scrape succeeded;
// never how fast.
func runOpsShort(t *testing.T, more ...string) *opsBenchReport {
	t.Helper()
	e, out, errOut := testEnv(nil)
	if code := run(t.Context(), append(append([]string{}, opsShortArgs...), more...), e); code != exitOK {
		t.Fatalf("exit code %d; stderr %s", code, errOut)
	}
	var rep opsBenchReport
	if err := json.Unmarshal([]byte(out.String()), &rep); err != nil {
		t.Fatalf("--json output: %v\n%s", err, out)
	}
	if rep.Target != "ops" || rep.Concurrency != 2 || rep.Duration != "150ms" || rep.Round != "50ms" || rep.Overhead == nil {
		t.Fatalf("report %+v", rep)
	}
	o := rep.Overhead
	if o.TraceRatio != 1 || !o.AccessLog || o.ScrapeEvery != "1h0m0s" {
		t.Errorf("overhead settings %+v", o)
	}
	for i, s := range []bench.Side{o.Off, o.On} {
		if s.Scenario != []string{opsSideOff, opsSideOn}[i] || len(s.Rounds) != 3 || s.Requests == 0 || s.Errors != 0 ||
			s.Sent < s.Requests || s.Throughput <= 0 || s.Latency.P50 <= 0 || s.Latency.P99 < s.Latency.P50 {
			t.Errorf("side %d: %+v", i, s)
		}
	}
	if o.Ratio <= 0 || o.Ratio != o.On.VsFirst {
		t.Errorf("ratio %v, on side's VsFirst %v", o.Ratio, o.On.VsFirst)
	}
	if o.Off.CPUPerRequest > 0 && o.CostRatio <= 0 {
		t.Errorf("cost ratio %v with CPU per request %v and %v", o.CostRatio, o.Off.CPUPerRequest, o.On.CPUPerRequest)
	}
	// Every request is sampled: each makes one span or more.
	if o.Spans.Exports == 0 || o.Spans.Refused != 0 || o.SpansPerRequest < 1 || o.ExportedBytesPerRequest <= 0 {
		t.Errorf("spans %+v, %v per request", o.Spans, o.SpansPerRequest)
	}
	if o.Scrapes.Scrapes != 1 || o.Scrapes.Errors != 0 || o.Scrapes.Bytes == 0 || o.Scrapes.Every != time.Hour {
		t.Errorf("scrapes under load %+v", o.Scrapes)
	}
	var goals []string
	for _, g := range rep.Goals {
		goals = append(goals, g.Name)
		if g.Goal == "" || g.Measured == "" {
			t.Errorf("goal %+v", g)
		}
	}
	want := []string{"telemetry overhead"}
	for _, s := range rep.Scrape {
		want = append(want, "scrape "+s.Store)
		if s.ScrapeResult == nil || s.Scrapes != 5 || s.First <= 0 || s.Latency.P50 <= 0 || s.Latency.Max < s.Latency.P99 || s.Bytes == 0 || s.Fill <= 0 {
			t.Errorf("scrape on %s: %+v %+v", s.Store, s, s.ScrapeResult)
		}
	}
	if diff := cmp.Diff(want, goals); diff != "" {
		t.Errorf("goals (-want +got):\n%s", diff)
	}
	return &rep
}

func TestBenchOpsShort(t *testing.T) {
	rep := runOpsShort(t)
	if rep.Overhead.Store != opsStoreSQLite || len(rep.Scrape) != 1 || rep.Scrape[0].Store != opsStoreSQLite {
		t.Fatalf("stores: overhead %s, scrape %+v", rep.Overhead.Store, rep.Scrape)
	}
	if s := rep.Scrape[0]; s.Tasks != 40 || s.Runs != 10 {
		t.Errorf("the database held %d tasks and %d runs, want 40 and 10", s.Tasks, s.Runs)
	}
}

// With --db the overhead servers share the PostgreSQL database, and the
// scrape is timed there after SQLite, on the tasks and runs filled (the
// overhead part runs after it).
func TestBenchOpsPostgres(t *testing.T) {
	rep := runOpsShort(t, "--db", pgtest.URL(t))
	if rep.Overhead.Store != opsStorePostgres {
		t.Errorf("overhead store %s", rep.Overhead.Store)
	}
	var stores []string
	for _, s := range rep.Scrape {
		stores = append(stores, s.Store)
		if s.Tasks != 40 || s.Runs != 10 {
			t.Errorf("%s held %d tasks and %d runs, want 40 and 10", s.Store, s.Tasks, s.Runs)
		}
	}
	if diff := cmp.Diff([]string{opsStoreSQLite, opsStorePostgres}, stores); diff != "" {
		t.Errorf("scrape stores (-want +got):\n%s", diff)
	}
}

func TestBenchOpsParts(t *testing.T) {
	tests := []struct {
		part, store string
		overhead    bool
		scrapes     int
	}{
		{opsPartOverhead, opsStoreMemory, true, 0},
		{opsPartScrape, "", false, 1},
	}
	for _, tc := range tests {
		t.Run(tc.part, func(t *testing.T) {
			args := append(append([]string{}, opsShortArgs...), "--part", tc.part)
			if tc.store != "" {
				args = append(args, "--store", tc.store)
			}
			e, out, errOut := testEnv(nil)
			if code := run(t.Context(), args, e); code != exitOK {
				t.Fatalf("exit code %d; stderr %s", code, errOut)
			}
			var rep opsBenchReport
			if err := json.Unmarshal([]byte(out.String()), &rep); err != nil {
				t.Fatal(err)
			}
			goals := tc.scrapes
			if tc.overhead {
				goals++
			}
			if (rep.Overhead != nil) != tc.overhead || len(rep.Scrape) != tc.scrapes || len(rep.Goals) != goals {
				t.Errorf("report %+v", rep)
			}
			if tc.overhead && rep.Overhead.Store != tc.store {
				t.Errorf("overhead store %s, want %s", rep.Overhead.Store, tc.store)
			}
		})
	}
}

func TestBenchOpsTable(t *testing.T) {
	e, out, errOut := testEnv(nil)
	args := append(append([]string{}, opsShortArgs[:len(opsShortArgs)-1]...), "--warmup", "0")
	if code := run(t.Context(), args, e); code != exitOK {
		t.Fatalf("exit code %d; stderr %s", code, errOut)
	}
	for _, want := range []string{"telemetry overhead: SendMessage to echo", opsSideOff, opsSideOn, "CPU/req", "on/off:",
		"spans exported:", "scrapes of /metrics under load (every 1h0m0s of the on side's time): 1;", "/metrics scrape, every service mounted", "sqlite",
		"goal telemetry overhead:", "goal scrape sqlite:"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}
