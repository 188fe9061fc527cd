// Package bench is the load generator behind `novaos bench`.
//
// A fixed number of keep-alive clients send one [Scenario]'s requests for a
// fixed duration after a warm-up, every latency goes into a log-linear
// [Histogram], errors are counted, and the process's resident memory is
// sampled while the load runs.
//
// It also holds what a benchmark compares against: [EchoHandler], a bare
// net/http JSON echo, and the A2A scenarios ([SendMessage],
// [SendStreamingMessage]) with the matching [Baseline]. A scenario's
// Replicas, or [RoundRobin] for operations, spread the clients over several
// servers; [RunXStream] times status updates from their emission by an
// [XStreamAgent] on one server to their receipt on a subscription on
// another; [Commits] counts a PostgreSQL database's transactions.
// [RunSides] loads several servers one at a time in turns, so that their
// ratio survives a noisy machine; [SpanSink] is an OTLP collector that
// counts and drops spans; [FillDatabase], [TimeScrapes] and [Scraper]
// time /metrics on a database of realistic size. [DeliveryBench] runs an
// adapter of the SDK (gateway session, verifier, SQLite inbox) against a
// pull agent's stream, timed at the platform's store by
// [DeliveryStamps]: loads, resumes after a cut, and an inbox's memory.
//
//	srv := httptest.NewServer(bench.EchoHandler())
//	defer srv.Close()
//	res, err := bench.Run(ctx, bench.Baseline(srv.URL), &bench.Options{
//		Concurrency: 8, Duration: time.Second, Warmup: 200 * time.Millisecond,
//	})
//	if err != nil { ... }
//	fmt.Println(res.Throughput, res.Latency.P99, res.Errors)
//
// The generator runs in the same process as the servers it measures, so the
// memory figures are the whole process's; the throughput of every scenario
// is limited by the same cores, which is what makes a ratio between
// scenarios run back to back meaningful.
package bench
