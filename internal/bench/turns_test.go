package bench

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// The sides take turns A B B A for two, A B C C B A for three.
func TestTurnsOrder(t *testing.T) {
	for _, n := range []int{2, 3} {
		t.Run(fmt.Sprint(n, " sides"), func(t *testing.T) {
			var sides []*side
			for i := range n {
				sides = append(sides, &side{name: string(rune('A' + i)), do: func(context.Context, int) (time.Duration, time.Duration, error) {
					return time.Microsecond, time.Microsecond, nil
				}})
			}
			var got []string
			tt := turns{clients: 1, duration: 4 * time.Millisecond, round: 2 * time.Millisecond,
				measured: func(scenario string, r int) func() { got = append(got, fmt.Sprint(scenario, r)); return func() {} }}
			if err := tt.run(t.Context(), sides); err != nil {
				t.Fatal(err)
			}
			want := map[int][]string{2: {"A0", "B0", "B1", "A1"}, 3: {"A0", "B0", "C0", "C1", "B1", "A1"}}[n]
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("turns (-want +got):\n%s", diff)
			}
		})
	}
}

// A side counts every measured call, failed or not, and none of the
// warm-up's, which runs first when there is one.
func TestTurnsCountMeasuredCalls(t *testing.T) {
	for _, warm := range []time.Duration{0, 20 * time.Millisecond} {
		t.Run(fmt.Sprint("warmup ", warm), func(t *testing.T) {
			var calls, warmCalls [2]atomic.Uint64
			var measuring atomic.Bool
			mk := func(i int) *side {
				return &side{name: fmt.Sprint("side", i), do: func(context.Context, int) (time.Duration, time.Duration, error) {
					n := calls[i].Add(1)
					if !measuring.Load() {
						warmCalls[i].Add(1)
					}
					if n%2 == 0 {
						return 0, 0, errors.New("even call fails")
					}
					return time.Microsecond, time.Millisecond, nil
				}}
			}
			sides := []*side{mk(0), mk(1)}
			rounds := 0
			tt := turns{clients: 1, warmup: warm, duration: 40 * time.Millisecond, round: 10 * time.Millisecond,
				measured: func(string, int) func() {
					measuring.Store(true)
					rounds++
					return func() {}
				}}
			if err := tt.run(t.Context(), sides); err != nil {
				t.Fatal(err)
			}
			if rounds != 8 {
				t.Errorf("%d measured rounds, want 4 per side", rounds)
			}
			for i, s := range sides {
				if s.calls != calls[i].Load()-warmCalls[i].Load() || s.calls == 0 {
					t.Errorf("%s: %d calls counted, %d made of which %d in the warm-up", s.name, s.calls, calls[i].Load(), warmCalls[i].Load())
				}
				if (warmCalls[i].Load() > 0) != (warm > 0) {
					t.Errorf("%s: %d warm-up calls with a warm-up of %v", s.name, warmCalls[i].Load(), warm)
				}
				if s.errors == 0 || s.errors > s.calls || s.errText != "even call fails" {
					t.Errorf("%s: %d errors of %d, first %q", s.name, s.errors, s.calls, s.errText)
				}
				if s.elapsed < tt.duration || s.throughput() <= 0 || s.first.Quantile(0.5) != time.Microsecond || s.total.Quantile(0.5) != time.Millisecond {
					t.Errorf("%s: elapsed %v, throughput %v, first %v, total %v", s.name, s.elapsed, s.throughput(), s.first.Quantile(0.5), s.total.Quantile(0.5))
				}
			}
		})
	}
}

func TestTurnsStopWithContext(t *testing.T) {
	for _, warm := range []time.Duration{0, time.Hour} {
		t.Run(fmt.Sprint("warmup ", warm), func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			s := &side{name: "s", do: func(context.Context, int) (time.Duration, time.Duration, error) {
				cancel()
				return 0, 0, nil
			}}
			err := turns{clients: 2, warmup: warm, duration: time.Hour, round: time.Second}.run(ctx, []*side{s, s})
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("run = %v, want context.Canceled", err)
			}
			if s.calls != 0 {
				t.Errorf("%d calls counted after the cancel", s.calls)
			}
		})
	}
}

func TestRoundPlan(t *testing.T) {
	tests := []struct {
		d, round time.Duration
		rounds   int
		per      time.Duration
	}{
		{40 * time.Millisecond, 10 * time.Millisecond, 4, 10 * time.Millisecond},
		{45 * time.Millisecond, 10 * time.Millisecond, 5, 9 * time.Millisecond},
		{11 * time.Millisecond, 10 * time.Millisecond, 2, 5500 * time.Microsecond},
		{5 * time.Millisecond, 10 * time.Millisecond, 1, 5 * time.Millisecond},
	}
	for _, tc := range tests {
		rounds, per := roundPlan(tc.d, tc.round)
		if rounds != tc.rounds || per != tc.per {
			t.Errorf("roundPlan(%v, %v) = %d, %v; want %d, %v", tc.d, tc.round, rounds, per, tc.rounds, tc.per)
		}
	}
}

// Each option a runner leaves zero takes the runner's default, a negative
// warm-up is none, and a set one stands.
func TestTurnsOf(t *testing.T) {
	def := turns{clients: 32, warmup: time.Second, duration: 10 * time.Second, round: time.Second}
	tests := []struct {
		name                    string
		clients                 int
		warmup, duration, round time.Duration
		want                    turns
	}{
		{"zero", 0, 0, 0, 0, def},
		{"negative", -1, -1, -1, -1, turns{clients: 32, warmup: 0, duration: 10 * time.Second, round: time.Second}},
		{"set", 3, 5 * time.Millisecond, 40 * time.Millisecond, 10 * time.Millisecond,
			turns{clients: 3, warmup: 5 * time.Millisecond, duration: 40 * time.Millisecond, round: 10 * time.Millisecond}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := turnsOf(tc.clients, tc.warmup, tc.duration, tc.round, def)
			if got.clients != tc.want.clients || got.warmup != tc.want.warmup || got.duration != tc.want.duration || got.round != tc.want.round || got.measured != nil {
				t.Errorf("turnsOf = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// The latency phase has one client, the load phase Concurrency; each
// measured round is told its phase, and a phase's failure ends the run.
func TestRunPhases(t *testing.T) {
	var rounds []string
	o := &PhasesOptions{Concurrency: 3, Duration: 2 * time.Millisecond, Warmup: -1, Round: time.Millisecond,
		MeasuredRound: func(phase, scenario string, n int) func() {
			rounds = append(rounds, fmt.Sprint(phase, " ", scenario, n))
			return func() {}
		}}
	phase := func(ctx context.Context, tt turns) (int, error) {
		s := &side{name: "s", do: func(context.Context, int) (time.Duration, time.Duration, error) {
			return time.Microsecond, time.Microsecond, nil
		}}
		return tt.clients, tt.run(ctx, []*side{s})
	}
	latency, load, err := runPhases(t.Context(), o, phase)
	if err != nil {
		t.Fatal(err)
	}
	if latency != 1 || load != 3 {
		t.Errorf("clients %d, then %d; want 1, then 3", latency, load)
	}
	if diff := cmp.Diff([]string{"latency s0", "latency s1", "load s0", "load s1"}, rounds); diff != "" {
		t.Errorf("measured rounds (-want +got):\n%s", diff)
	}
	calls := 0
	_, _, err = runPhases(t.Context(), o, func(context.Context, turns) (int, error) {
		calls++
		return 0, errors.New("no session")
	})
	if err == nil || calls != 1 {
		t.Errorf("a failed latency phase: %v after %d phases, want its error after 1", err, calls)
	}
}
