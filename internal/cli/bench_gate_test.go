package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestBenchGateUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no sessions", []string{"--c", "0"}, "--c must be at least 1"},
		{"negative rate", []string{"--rate", "-1"}, "--rate not negative"},
		{"unknown judge", []string{"--judge", "gpt"}, `unknown judge mode "gpt"`},
		{"negative judge delay", []string{"--judge", "fake", "--judge-delay", "-1s"}, "--judge-delay must not be negative"},
		{"not postgres", []string{"--db", "mysql://x"}, "postgres:// or postgresql://"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, _, errOut := testEnv(nil)
			if code := run(t.Context(), append([]string{"bench", "gate"}, tc.args...), e); code != exitUsage {
				t.Errorf("exit code %d, want %d", code, exitUsage)
			}
			if !strings.Contains(errOut.String(), tc.want) {
				t.Errorf("stderr %q, want %q", errOut, tc.want)
			}
		})
	}
}

// TestBenchGateShort runs every scenario briefly, the fake judge's too,
// and checks that the writes went through the gate and were recorded.
func TestBenchGateShort(t *testing.T) {
	e, out, errOut := testEnv(nil)
	code := run(t.Context(), []string{"bench", "gate", "--c", "8", "--rate", "100", "--d", "500ms", "--warmup", "100ms",
		"--judge", "fake", "--judge-delay", "5ms", "--json"}, e)
	if code != exitOK {
		t.Fatalf("exit code %d; stderr %s", code, errOut)
	}
	var rep gateBenchReport
	if err := json.Unmarshal([]byte(out.String()), &rep); err != nil {
		t.Fatalf("--json output: %v\n%s", err, out)
	}
	var names []string
	for _, r := range rep.Results {
		names = append(names, r.Scenario)
		if r.Requests == 0 || r.Errors != 0 || r.Lag == nil || r.TargetRate != 100 {
			t.Errorf("%s: %d ops, %d errors (%v), lag %v, rate %v", r.Scenario, r.Requests, r.Errors, r.ErrorsByKind, r.Lag, r.TargetRate)
		}
	}
	if want := "call,healthz-pair,gated,gated-judge"; strings.Join(names, ",") != want {
		t.Errorf("scenarios %v, want %s", names, want)
	}
	if len(rep.Server) != 2 {
		t.Fatalf("server stats %+v, want gated and gated-judge", rep.Server)
	}
	for _, s := range rep.Server {
		// 100/s for 0.5 s: about 50 writes decided in the window, fewer
		// on a loaded machine; the count is checked, not the speed.
		if s.Decisions == 0 || s.DecisionRate <= 0 || s.Total.P50 <= 0 {
			t.Errorf("%s: server stats %+v", s.Scenario, s)
		}
	}
	if j := rep.Server[1].Judge; j == nil || j.P50 < 5_000_000 || rep.Server[0].Judge != nil {
		t.Errorf("judge layer times: gated %+v, gated-judge %+v", rep.Server[0].Judge, j)
	}
	if rep.Rules != 21 || rep.Aggregates != 5 || rep.JudgeOverhead == nil || rep.P99VsHealthz <= 0 || rep.P99VsCall <= 0 {
		t.Errorf("report %+v", rep)
	}
	// The judged writes waited for the fake model's 5 ms.
	if j := rep.Results[3]; j.Latency.P50 < 5_000_000 {
		t.Errorf("gated-judge p50 %v, below the model's delay", j.Latency.P50)
	}
}

func TestBenchGateTable(t *testing.T) {
	e, out, errOut := testEnv(nil)
	code := run(t.Context(), []string{"bench", "gate", "--c", "4", "--rate", "0", "--d", "300ms", "--warmup", "0"}, e)
	if code != exitOK {
		t.Fatalf("exit code %d; stderr %s", code, errOut)
	}
	for _, want := range []string{"unthrottled", "sqlite store", "21 rules (5 aggregates)", "gated p99 / call p99", "server (gated):", "goal p99 <= 5.00ms"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}
