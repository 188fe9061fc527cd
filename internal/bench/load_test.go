package bench

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

var shortRun = &Options{Concurrency: 4, Duration: 200 * time.Millisecond, Warmup: 50 * time.Millisecond, SampleEvery: 50 * time.Millisecond}

func TestRunAgainstEcho(t *testing.T) {
	srv := httptest.NewUnstartedServer(EchoHandler())
	var conns atomic.Int64
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()

	res, err := Run(t.Context(), Baseline(srv.URL), shortRun)
	if err != nil {
		t.Fatal(err)
	}
	if res.Errors != 0 || res.FirstError != "" {
		t.Fatalf("%d errors, first: %s", res.Errors, res.FirstError)
	}
	if res.Requests == 0 || res.Throughput <= 0 {
		t.Fatalf("no throughput: %+v", res)
	}
	if res.Scenario != ScenarioBaseline || res.Concurrency != 4 {
		t.Errorf("labels %q/%d", res.Scenario, res.Concurrency)
	}
	l := res.Latency
	if !(0 < l.P50 && l.P50 <= l.P90 && l.P90 <= l.P99 && l.P99 <= l.Max) {
		t.Errorf("latencies out of order: %+v", l)
	}
	// Measured time starts after the warm-up and ends when the last request
	// finishes, a little after the deadline (more on a loaded machine: a
	// minute only bounds a run that ignored its duration).
	if res.Elapsed < shortRun.Duration || res.Elapsed > shortRun.Duration+time.Minute {
		t.Errorf("elapsed %v for a %v run", res.Elapsed, shortRun.Duration)
	}
	// Keep-alive: connections are reused for the whole run. The transport
	// may dial a spare one at start, when a dial races a connection
	// coming back to the pool, but never one per request.
	if n := conns.Load(); n > 2*int64(shortRun.Concurrency) {
		t.Errorf("%d connections opened for %d clients and %d requests", n, shortRun.Concurrency, res.Requests)
	}
	if _, err := ReadMemory(); err == nil {
		m := res.Memory
		if m.Start == 0 || m.Peak < m.Start || m.Peak < m.End || m.HWM < m.Peak {
			t.Errorf("implausible memory profile %+v", m)
		}
	}
}

func TestRunCountsErrors(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch n.Add(1) % 3 {
		case 0:
			http.Error(w, "boom", http.StatusInternalServerError)
		case 1:
			w.Write([]byte(`{"bad":true}`))
		default:
			w.Write([]byte(`{"ok":true}`))
		}
	}))
	defer srv.Close()

	sc := Scenario{
		Name: "flaky",
		URL:  srv.URL,
		Check: func(_ http.Header, body []byte) error {
			if !strings.Contains(string(body), "ok") {
				return errors.New("not ok")
			}
			return nil
		},
	}
	res, err := Run(t.Context(), sc, &Options{Concurrency: 2, Duration: 300 * time.Millisecond, Warmup: -1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests < 9 {
		t.Fatalf("only %d requests", res.Requests)
	}
	// Two of every three requests fail, one way or the other.
	ok := res.Requests - res.Errors
	if ok == 0 || res.Errors < ok || res.Errors > 3*ok {
		t.Errorf("%d errors of %d requests, want about 2/3", res.Errors, res.Requests)
	}
	if res.FirstError != "status 500: boom\n" && res.FirstError != "not ok" {
		t.Errorf("first error %q", res.FirstError)
	}
	if wantTP := float64(ok) / res.Elapsed.Seconds(); res.Throughput != wantTP {
		t.Errorf("throughput %v counts failures too (want %v)", res.Throughput, wantTP)
	}
}

func TestRunStopsWithContext(t *testing.T) {
	srv := httptest.NewServer(EchoHandler())
	defer srv.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	res, err := Run(ctx, Baseline(srv.URL), &Options{Concurrency: 2, Duration: time.Hour, Warmup: -1})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want deadline exceeded", err)
	}
	// Run is told to last an hour: a minute only bounds a failure.
	if time.Since(start) > time.Minute {
		t.Fatalf("Run did not stop with its context (%v)", time.Since(start))
	}
	if res == nil || res.Errors != 0 {
		t.Fatalf("cancelled requests counted as errors: %+v", res)
	}
}

func TestRunWarmupNotMeasured(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.Write([]byte("{}"))
	}))
	defer srv.Close()
	res, err := Run(t.Context(), Scenario{Name: "x", URL: srv.URL}, &Options{Concurrency: 1, Duration: 50 * time.Millisecond, Warmup: 150 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests == 0 || res.Requests >= uint64(n.Load()) {
		t.Fatalf("measured %d of %d requests served; the warm-up should not count", res.Requests, n.Load())
	}
}

func TestRunNeedsURL(t *testing.T) {
	if _, err := Run(t.Context(), Scenario{Name: "x"}, nil); err == nil {
		t.Fatal("Run accepted a scenario without URL")
	}
}

// A scenario with replicas spreads its clients over them round-robin.
func TestRunSpreadsOverReplicas(t *testing.T) {
	var hits [3]atomic.Int64
	urls := make([]string, len(hits))
	for i := range hits {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hits[i].Add(1)
			EchoHandler().ServeHTTP(w, r)
		}))
		defer srv.Close()
		urls[i] = srv.URL
	}
	sc := Baseline(urls[0])
	sc.Replicas = urls[1:]
	res, err := Run(t.Context(), sc, &Options{Concurrency: 6, Duration: 100 * time.Millisecond, Warmup: -1})
	if err != nil || res.Errors != 0 {
		t.Fatalf("%v; %d errors: %s", err, res.Errors, res.FirstError)
	}
	for i := range hits {
		if hits[i].Load() == 0 {
			t.Errorf("replica %d got no request", i)
		}
	}
}
