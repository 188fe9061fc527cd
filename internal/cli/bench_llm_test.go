package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/internal/bench"
)

// TestBenchLLMShort runs the target end to end on SQLite with small
// numbers and checks the report's shape and that every stream of every
// side completed; never how fast.
func TestBenchLLMShort(t *testing.T) {
	e, out, errOut := testEnv(nil)
	code := run(t.Context(), []string{"bench", "llm", "--c", "2", "--d", "150ms", "--warmup", "30ms", "--round", "50ms", "--json"}, e)
	if code != exitOK {
		t.Fatalf("exit code %d; stderr %s", code, errOut)
	}
	var rep llmBenchReport
	if err := json.Unmarshal([]byte(out.String()), &rep); err != nil {
		t.Fatalf("--json output: %v\n%s", err, out)
	}
	if rep.Target != "llm" || rep.Store != "sqlite" || rep.Concurrency != 2 || rep.Round != "50ms" || rep.LLMResult == nil {
		t.Fatalf("report %+v", rep)
	}
	for _, ph := range []struct {
		clients int
		phase   bench.LLMPhase
	}{{1, rep.Latency}, {2, rep.Load}} {
		if ph.phase.Clients != ph.clients {
			t.Errorf("phase of %d clients reports %d", ph.clients, ph.phase.Clients)
		}
		var scenarios []string
		for _, s := range []bench.LLMSide{ph.phase.Direct, ph.phase.Gateway} {
			scenarios = append(scenarios, s.Scenario)
			if s.Calls == 0 || s.Errors != 0 || s.Throughput <= 0 || s.FirstToken.P50 <= 0 || s.FirstToken.P99 < s.FirstToken.P50 ||
				s.Latency.P50 < s.FirstToken.P50 || s.Elapsed <= 0 {
				t.Errorf("%d clients, %s: %+v", ph.clients, s.Scenario, s)
			}
		}
		if diff := cmp.Diff([]string{bench.ScenarioLLMDirect, bench.ScenarioLLMGateway}, scenarios); diff != "" {
			t.Errorf("scenarios (-want +got):\n%s", diff)
		}
	}
	if rep.ThroughputRatio <= 0 {
		t.Errorf("throughput ratio %v", rep.ThroughputRatio)
	}
	if rep.AddedP50 != rep.Latency.Gateway.FirstToken.P50-rep.Latency.Direct.FirstToken.P50 ||
		rep.AddedP99 != rep.Latency.Gateway.FirstToken.P99-rep.Latency.Direct.FirstToken.P99 {
		t.Errorf("added latencies %v, %v do not follow the latency phase", rep.AddedP50, rep.AddedP99)
	}
	if len(rep.Goals) != 1 || rep.Goals[0].Name != "added first-token p99" || rep.Goals[0].Measured == "" {
		t.Errorf("goals %+v", rep.Goals)
	}
}

func TestBenchLLMTable(t *testing.T) {
	e, out, errOut := testEnv(nil)
	code := run(t.Context(), []string{"bench", "llm", "--c", "1", "--d", "60ms", "--warmup", "0", "--round", "30ms"}, e)
	if code != exitOK {
		t.Fatalf("exit code %d; stderr %s", code, errOut)
	}
	for _, want := range []string{"sqlite store", "direct", "gateway", "streams/s", "first p99",
		"one client: gateway − direct, time to the first streamed token", "goal added first-token p99:"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}
