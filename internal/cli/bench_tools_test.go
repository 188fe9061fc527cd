package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/internal/bench"
)

// TestBenchToolsShort runs the target end to end on SQLite with small
// numbers and checks the report's shape and that every call of every
// side completed; never how fast.
func TestBenchToolsShort(t *testing.T) {
	e, out, errOut := testEnv(nil)
	code := run(t.Context(), []string{"bench", "tools", "--c", "2", "--d", "150ms", "--warmup", "30ms", "--round", "50ms", "--json"}, e)
	if code != exitOK {
		t.Fatalf("exit code %d; stderr %s", code, errOut)
	}
	var rep toolsBenchReport
	if err := json.Unmarshal([]byte(out.String()), &rep); err != nil {
		t.Fatalf("--json output: %v\n%s", err, out)
	}
	if rep.Target != "tools" || rep.Store != "sqlite" || rep.Concurrency != 2 || rep.Round != "50ms" || rep.ToolsResult == nil {
		t.Fatalf("report %+v", rep)
	}
	for _, ph := range []struct {
		clients int
		phase   bench.ToolsPhase
	}{{1, rep.Latency}, {2, rep.Load}} {
		if ph.phase.Clients != ph.clients {
			t.Errorf("phase of %d clients reports %d", ph.clients, ph.phase.Clients)
		}
		var scenarios []string
		for _, s := range []bench.ToolsSide{ph.phase.Direct, ph.phase.Read, ph.phase.Write} {
			scenarios = append(scenarios, s.Scenario)
			if s.Calls == 0 || s.Errors != 0 || s.Throughput <= 0 || s.Latency.P50 <= 0 || s.Latency.P99 < s.Latency.P50 || s.Elapsed <= 0 {
				t.Errorf("%d clients, %s: %+v", ph.clients, s.Scenario, s)
			}
		}
		if diff := cmp.Diff([]string{bench.ScenarioToolsDirect, bench.ScenarioToolsRead, bench.ScenarioToolsWrite}, scenarios); diff != "" {
			t.Errorf("scenarios (-want +got):\n%s", diff)
		}
	}
	if rep.ThroughputRatio <= 0 || rep.WriteThroughputRatio <= 0 {
		t.Errorf("ratios %v, %v", rep.ThroughputRatio, rep.WriteThroughputRatio)
	}
	if rep.AddedP50 != rep.Latency.Read.Latency.P50-rep.Latency.Direct.Latency.P50 ||
		rep.WriteAddedP99 != rep.Latency.Write.Latency.P99-rep.Latency.Read.Latency.P99 {
		t.Errorf("added latencies %v, %v do not follow the latency phase", rep.AddedP50, rep.WriteAddedP99)
	}
	var goals []string
	for _, g := range rep.Goals {
		goals = append(goals, g.Name)
		if g.Goal == "" || g.Measured == "" {
			t.Errorf("goal %+v", g)
		}
	}
	if diff := cmp.Diff([]string{"added p50", "added p99", "throughput", "write added p99"}, goals); diff != "" {
		t.Errorf("goals (-want +got):\n%s", diff)
	}
}

func TestBenchToolsTable(t *testing.T) {
	e, out, errOut := testEnv(nil)
	code := run(t.Context(), []string{"bench", "tools", "--c", "1", "--d", "60ms", "--warmup", "0", "--round", "30ms"}, e)
	if code != exitOK {
		t.Fatalf("exit code %d; stderr %s", code, errOut)
	}
	for _, want := range []string{"sqlite store", "direct", "gateway-read", "gateway-write", "calls/s", "one client: gateway-read − direct",
		"goal added p50:", "goal added p99:", "goal throughput:", "goal write added p99:"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}
