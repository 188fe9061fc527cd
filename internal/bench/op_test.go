package bench

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestRunOp(t *testing.T) {
	errOdd := errors.New("odd")
	tests := []struct {
		name string
		rate float64
		fail bool
	}{
		{name: "closed loop", rate: 0},
		{name: "paced", rate: 400},
		{name: "paced with failures", rate: 400, fail: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls atomic.Int64
			busy := make([]atomic.Bool, 4)
			op := Op{Name: "op", Do: func(ctx context.Context, client int) error {
				// Each client must have one operation in flight at a time.
				if !busy[client].CompareAndSwap(false, true) {
					t.Errorf("client %d called concurrently", client)
				}
				defer busy[client].Store(false)
				n := calls.Add(1)
				time.Sleep(100 * time.Microsecond)
				if tt.fail && n%2 == 1 {
					return errOdd
				}
				return nil
			}}
			opts := &PaceOptions{Options: Options{Concurrency: 4, Duration: 500 * time.Millisecond, Warmup: 100 * time.Millisecond, SampleEvery: 100 * time.Millisecond}, Rate: tt.rate}
			res, err := RunOp(t.Context(), op, opts)
			if err != nil {
				t.Fatal(err)
			}
			if res.Requests == 0 || res.Latency.P50 < 100*time.Microsecond || res.Latency.P99 > res.Latency.Max {
				t.Fatalf("implausible result %+v", res)
			}
			if tt.rate > 0 {
				// 400/s for 0.5 s is 200 measured operations; a loaded
				// machine may start the last few after the end.
				if res.Requests < 150 || res.Requests > 201 {
					t.Errorf("%d operations measured at %v/s over %v", res.Requests, tt.rate, opts.Duration)
				}
				if res.Lag == nil || res.TargetRate != tt.rate {
					t.Errorf("paced run without lag or rate: %+v", res)
				}
			} else if res.Lag != nil {
				t.Errorf("closed loop reported lag %+v", res.Lag)
			}
			if tt.fail {
				if res.Errors == 0 || res.ErrorsByKind["odd"] != res.Errors || res.FirstError != "odd" {
					t.Errorf("errors %d by kind %v, first %q", res.Errors, res.ErrorsByKind, res.FirstError)
				}
			} else if res.Errors != 0 {
				t.Errorf("%d errors", res.Errors)
			}
		})
	}
}

// Settle tells each client which of its operations counted: those of
// the warm-up did not, the measured ones did, as many as Requests.
func TestRunOpSettle(t *testing.T) {
	const clients = 3
	var counted, uncounted [clients]uint64
	op := Op{Name: "op",
		Do: func(ctx context.Context, client int) error { time.Sleep(time.Millisecond); return nil },
		Settle: func(client int, c bool) {
			if c {
				counted[client]++
			} else {
				uncounted[client]++
			}
		}}
	res, err := RunOp(t.Context(), op, &PaceOptions{Options: Options{Concurrency: clients, Duration: 200 * time.Millisecond, Warmup: 100 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	var c, u uint64
	for i := range clients {
		c, u = c+counted[i], u+uncounted[i]
	}
	if c != res.Requests || c == 0 || u == 0 {
		t.Errorf("settled %d counted and %d not, for %d measured operations", c, u, res.Requests)
	}
}

func TestRoundRobin(t *testing.T) {
	var got [2][]int
	var mu sync.Mutex
	mk := func(i int) Op {
		return Op{Name: "op" + strconv.Itoa(i), Do: func(_ context.Context, client int) error {
			mu.Lock()
			got[i] = append(got[i], client)
			mu.Unlock()
			return nil
		}}
	}
	op := RoundRobin(mk(0), mk(1))
	for client := range 4 {
		op.Do(t.Context(), client)
	}
	if op.Name != "op0" || !slices.Equal(got[0], []int{0, 2}) || !slices.Equal(got[1], []int{1, 3}) {
		t.Errorf("name %q, clients by op %v; want op0, [[0 2] [1 3]]", op.Name, got)
	}
}
