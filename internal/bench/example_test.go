package bench_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/internal/bench"
)

func ExampleRun() {
	srv := httptest.NewServer(bench.EchoHandler())
	defer srv.Close()

	res, err := bench.Run(context.Background(), bench.Baseline(srv.URL), &bench.Options{
		Concurrency: 4,
		Duration:    100 * time.Millisecond,
		Warmup:      20 * time.Millisecond,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Scenario, "errors:", res.Errors, "served:", res.Throughput > 0, "p50<=p99:", res.Latency.P50 <= res.Latency.P99)
	// Output: baseline errors: 0 served: true p50<=p99: true
}

func ExampleHistogram() {
	var h bench.Histogram
	for i := 1; i <= 100; i++ {
		h.Record(time.Duration(i) * time.Microsecond)
	}
	fmt.Println(h.Count(), h.Min(), h.Max())
	// Quantiles are rounded up to their bucket, by less than 1%.
	fmt.Println(h.Quantile(0.5) >= 50*time.Microsecond, h.Quantile(0.5) < 50500*time.Nanosecond)
	// Output:
	// 100 1µs 100µs
	// true true
}

func ExampleRunXStream() {
	// One server hosting the xstream agent; servers on one database would
	// each host it, and Subscribe would name the next one's URL.
	srv := httptest.NewServer(nil)
	defer srv.Close()
	o := bench.XStreamOptions{Updates: 3, Interval: time.Millisecond, StartDelay: 10 * time.Millisecond}
	a := bench.NewXStreamAgent(&o)
	card := a.Card()
	card.SupportedInterfaces = []a2a.AgentInterface{{URL: srv.URL, ProtocolBinding: a2a.BindingJSONRPC, ProtocolVersion: a2a.ProtocolVersion}}
	h := a2asrv.NewHandler(card, a, nil)
	defer h.Shutdown(context.Background())
	srv.Config.Handler = h

	res, err := bench.RunXStream(context.Background(), bench.XStream{Send: []string{srv.URL}, Subscribe: []string{srv.URL}, Options: o},
		&bench.Options{Concurrency: 2, Duration: 100 * time.Millisecond, Warmup: -1})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("errors:", res.Errors, "all updates seen:", res.Frames.Seen == res.Frames.Expected && res.Frames.Seen > 0)
	// Output: errors: 0 all updates seen: true
}
