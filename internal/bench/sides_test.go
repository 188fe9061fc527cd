package bench

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// RunSides takes turns A B B A …, measures only the measured rounds,
// and counts every request each server served in Sent.
func TestRunSides(t *testing.T) {
	var served [2]atomic.Uint64
	srvs := make([]*httptest.Server, 2)
	for i := range srvs {
		h := EchoHandler()
		srvs[i] = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			served[i].Add(1)
			h.ServeHTTP(w, r)
		}))
		defer srvs[i].Close()
	}
	a, b := Baseline(srvs[0].URL), Baseline(srvs[1].URL)
	a.Name, b.Name = "a", "b"
	var turns []int
	sides, err := RunSides(t.Context(), []Scenario{a, b}, &SidesOptions{Concurrency: 2, Duration: 120 * time.Millisecond,
		Warmup: 20 * time.Millisecond, Round: 30 * time.Millisecond,
		MeasuredRound: func(side, n int) func() {
			turns = append(turns, side)
			return func() {}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int{0, 1, 1, 0, 0, 1, 1, 0}, turns); diff != "" {
		t.Errorf("turns (-want +got):\n%s", diff)
	}
	for i, s := range sides {
		if s.Scenario != []string{"a", "b"}[i] || len(s.Rounds) != 4 || s.Requests == 0 || s.Errors != 0 || s.Throughput <= 0 || s.VsFirst <= 0 {
			t.Errorf("side %d: %+v", i, s)
		}
		if s.Sent != served[i].Load() || s.Sent <= s.Requests {
			t.Errorf("side %d: sent %d, measured %d; the server served %d", i, s.Sent, s.Requests, served[i].Load())
		}
		if l := s.Latency; !(0 < l.P50 && l.P50 <= l.P99 && l.P99 <= l.Max) {
			t.Errorf("side %d: latencies %+v", i, l)
		}
		if _, ok := processCPU(); ok && s.CPUPerRequest <= 0 {
			t.Errorf("side %d: no CPU per request", i)
		}
		if s.Elapsed < 4*30*time.Millisecond {
			t.Errorf("side %d: measured %v, want at least its four rounds", i, s.Elapsed)
		}
	}
	if sides[0].VsFirst != 1 {
		t.Errorf("first side VsFirst %v, want 1", sides[0].VsFirst)
	}
}

func TestRunSidesNeedsScenarios(t *testing.T) {
	if _, err := RunSides(t.Context(), nil, nil); err == nil {
		t.Error("no scenario: no error")
	}
	if _, err := RunSides(t.Context(), []Scenario{{Name: "x"}}, nil); err == nil {
		t.Error("no URL: no error")
	}
}

func TestMedian(t *testing.T) {
	tests := []struct {
		in   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{3}, 3},
		{[]float64{5, 1, 3}, 3},
		{[]float64{4, 1, 3, 2}, 2.5},
	}
	for _, tc := range tests {
		if got := median(tc.in); got != tc.want {
			t.Errorf("median(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}
