package bench_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"time"

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
