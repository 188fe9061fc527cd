package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestBenchRunsUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no clients", []string{"--c", "0"}, "--c must be at least 1"},
		{"zero round", []string{"--round", "0s"}, "--round positive"},
		{"negative warm-up", []string{"--warmup", "-1s"}, "--warmup not negative"},
		{"no streams", []string{"--streams", "0"}, "--streams must be from 1 to 100000"},
		{"too many streams", []string{"--streams", "100001"}, "--streams must be from 1 to 100000"},
		{"not postgres", []string{"--db", "mysql://x"}, "postgres:// or postgresql://"},
		{"no pool", []string{"--db-max-conns", "0"}, "--db-max-conns"},
		{"unknown token algorithm", []string{"--token-alg", "HS256"}, `unknown --token-alg "HS256"`},
		{"two CPU profiles", []string{"--cpuprofile", "a", "--cpuprofile-sides", "b"}, "exclude each other"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, _, errOut := testEnv(nil)
			if code := run(t.Context(), append([]string{"bench", "runs"}, tc.args...), e); code != exitUsage {
				t.Errorf("exit code %d, want %d", code, exitUsage)
			}
			if !strings.Contains(errOut.String(), tc.want) {
				t.Errorf("stderr %q, want %q", errOut, tc.want)
			}
		})
	}
}

// TestBenchRunsShort runs the target end to end on SQLite with small
// numbers and checks the report's shape and that every run, call and
// resume completed; never how fast.
func TestBenchRunsShort(t *testing.T) {
	e, out, errOut := testEnv(nil)
	code := run(t.Context(), []string{"bench", "runs", "--c", "2", "--d", "200ms", "--warmup", "50ms", "--round", "100ms",
		"--streams", "12", "--json"}, e)
	if code != exitOK {
		t.Fatalf("exit code %d; stderr %s", code, errOut)
	}
	var rep runsBenchReport
	if err := json.Unmarshal([]byte(out.String()), &rep); err != nil {
		t.Fatalf("--json output: %v\n%s", err, out)
	}
	if rep.Target != "runs" || rep.Store != "sqlite" || rep.Concurrency != 2 || rep.Round != "100ms" || rep.TokenAlgorithm != "RS256" || rep.RunsResult == nil {
		t.Fatalf("report %+v", rep)
	}
	for _, s := range []struct {
		name                  string
		runs, errors          uint64
		throughput            float64
		first, total, elapsed int64
	}{
		{rep.Gateway.Scenario, rep.Gateway.Runs, rep.Gateway.Errors, rep.Gateway.Throughput, int64(rep.Gateway.FirstEvent.P50), int64(rep.Gateway.Latency.P50), int64(rep.Gateway.Elapsed)},
		{rep.Direct.Scenario, rep.Direct.Runs, rep.Direct.Errors, rep.Direct.Throughput, int64(rep.Direct.FirstEvent.P50), int64(rep.Direct.Latency.P50), int64(rep.Direct.Elapsed)},
	} {
		if s.runs == 0 || s.errors != 0 || s.throughput <= 0 || s.first <= 0 || s.total < s.first || s.elapsed <= 0 {
			t.Errorf("%s: %+v", s.name, s)
		}
	}
	if rep.Gateway.Scenario != "gateway-run" || rep.Direct.Scenario != "direct-stream" || rep.ThroughputRatio <= 0 {
		t.Errorf("scenarios %q, %q, ratio %v", rep.Gateway.Scenario, rep.Direct.Scenario, rep.ThroughputRatio)
	}
	if r := rep.Resume; r.Resumes != 12 || r.Errors != 0 || r.Latency.P50 <= 0 || r.Replay.P50 <= 0 {
		t.Errorf("resume %+v, want 12 resumes without an error", r)
	}
	// Each held stream is served by its handler's goroutine; the client
	// end has none. Goroutines of earlier work may end meanwhile, so the
	// count is only held to be positive.
	if s := rep.Streams; s.Streams != 12 || s.RSSBefore == 0 || s.RSSAfter == 0 || s.Goroutines <= 0 {
		t.Errorf("streams %+v, want 12 held with memory read", s)
	}
	var goals []string
	for _, g := range rep.Goals {
		goals = append(goals, g.Name)
		if g.Goal == "" || g.Measured == "" {
			t.Errorf("goal %+v", g)
		}
	}
	if diff := cmp.Diff([]string{"throughput", "first event", "resume", "stream memory"}, goals); diff != "" {
		t.Errorf("goals (-want +got):\n%s", diff)
	}
}

func TestBenchRunsTable(t *testing.T) {
	e, out, errOut := testEnv(nil)
	code := run(t.Context(), []string{"bench", "runs", "--c", "1", "--d", "100ms", "--warmup", "0", "--round", "50ms", "--streams", "3", "--token-alg", "EdDSA"}, e)
	if code != exitOK {
		t.Fatalf("exit code %d; stderr %s", code, errOut)
	}
	for _, want := range []string{"sqlite store, EdDSA tokens", "gateway-run", "direct-stream", "first event p99", "resume after a cut: 3 resumes, 0 errors",
		"3 open event streams", "goal throughput:", "goal first event:", "goal resume:", "goal stream memory:"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}
