package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestBenchDeliveryUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no clients", []string{"--c", "0"}, "--c, --producers and --backlog must be at least 1"},
		{"no producers", []string{"--producers", "0"}, "--c, --producers and --backlog must be at least 1"},
		{"no backlog", []string{"--backlog", "0"}, "--c, --producers and --backlog must be at least 1"},
		{"zero duration", []string{"--d", "0s"}, "--d must be positive"},
		{"negative warm-up", []string{"--warmup", "-1s"}, "--warmup and --rate not negative"},
		{"negative rate", []string{"--rate", "-1"}, "--warmup and --rate not negative"},
		{"no drops", []string{"--drops", "0"}, "--drops must be from 1 to 100000"},
		{"no entries", []string{"--entries", "0"}, "--entries from 1 to 10000000"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, _, errOut := testEnv(nil)
			if code := run(t.Context(), append([]string{"bench", "delivery"}, tc.args...), e); code != exitUsage {
				t.Errorf("exit code %d, want %d", code, exitUsage)
			}
			if !strings.Contains(errOut.String(), tc.want) {
				t.Errorf("stderr %q, want %q", errOut, tc.want)
			}
		})
	}
}

// TestBenchDeliveryShort runs the target end to end with small numbers
// and checks the report's shape and its counts: every invocation
// offered was acknowledged and stored once, every cut resumed, every
// inbox entry stored; never how fast.
func TestBenchDeliveryShort(t *testing.T) {
	e, out, errOut := testEnv(nil)
	code := run(t.Context(), []string{"bench", "delivery", "--c", "2", "--d", "200ms", "--warmup", "50ms", "--producers", "4",
		"--backlog", "50", "--rate", "200", "--drops", "3", "--entries", "120", "--json"}, e)
	if code != exitOK {
		t.Fatalf("exit code %d; stderr %s", code, errOut)
	}
	var rep deliveryBenchReport
	if err := json.Unmarshal([]byte(out.String()), &rep); err != nil {
		t.Fatalf("--json output: %v\n%s", err, out)
	}
	if rep.Target != "delivery" || rep.Store != "sqlite" || rep.Concurrency != 2 || rep.Producers != 4 || rep.Duration != "200ms" {
		t.Fatalf("report %+v", rep)
	}
	if m := rep.Max; m.Scenario != "store-ack" || m.Backlog != 50 || m.Rate != 0 || m.Acked == 0 || m.Errors != 0 || m.Elapsed <= 0 {
		t.Errorf("closed loop %+v", m)
	}
	if p := rep.Paced; p == nil || p.Scenario != "store-ack@200/s" || p.Rate != 200 || p.Lag == nil || p.Acked == 0 || p.Errors != 0 {
		t.Errorf("paced load %+v", p)
	}
	if s := rep.Send; s == nil || s.Scenario != "send" || s.Requests == 0 || s.Errors != 0 || rep.VsSend <= 0 {
		t.Errorf("SendMessage %+v, ratio %v", s, rep.VsSend)
	}
	if tt := rep.Totals; tt.Offered == 0 || tt.Acked != tt.Offered || tt.Stored != tt.Offered {
		t.Errorf("totals %+v: every invocation offered must be acknowledged and stored once", tt)
	}
	if r := rep.Resume; r.Drops != 3 || r.Resumed != 3 || r.Identified != 0 || r.Errors != 0 || r.Latency.P50 <= 0 || r.Acked.P50 < r.Latency.P50 ||
		r.BeyondBackoff.P50 <= 0 || r.BeyondBackoff.Max > r.Latency.Max {
		t.Errorf("resume %+v, want 3 resumed", r)
	}
	if m := rep.Memory; m.Entries != 120 || m.Disk <= 0 || m.DiskClosed <= 0 {
		t.Errorf("memory %+v", m)
	}
	var goals []string
	for _, g := range rep.Goals {
		goals = append(goals, g.Name)
		if g.Goal == "" || g.Measured == "" {
			t.Errorf("goal %+v", g)
		}
	}
	if diff := cmp.Diff([]string{"throughput", "ack latency", "resume"}, goals); diff != "" {
		t.Errorf("goals (-want +got):\n%s", diff)
	}
}

func TestBenchDeliveryTable(t *testing.T) {
	e, out, errOut := testEnv(nil)
	code := run(t.Context(), []string{"bench", "delivery", "--c", "1", "--d", "100ms", "--warmup", "0", "--producers", "2",
		"--rate", "0", "--drops", "1", "--entries", "20"}, e)
	if code != exitOK {
		t.Fatalf("exit code %d; stderr %s", code, errOut)
	}
	for _, want := range []string{"sqlite store", "store-ack", "send", "vs send", "resume after a disconnect: 1 drops, 1 resumed",
		"inbox of 20 entries", "per 10,000 entries", "goal throughput:", "goal resume:"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out.String(), "store-ack@") || strings.Contains(out.String(), "goal ack latency") {
		t.Errorf("--rate 0 shows a paced load:\n%s", out)
	}
}
