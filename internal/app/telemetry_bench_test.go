package app_test

import (
	"context"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/internal/app"
	"novaos.dev/novaos/internal/bench"
	"novaos.dev/novaos/internal/telemetry"
	"novaos.dev/novaos/store"
	"novaos.dev/novaos/store/sqlite"
)

var (
	telemetryRound = flag.Duration("telemetry-round", 3*time.Second, "BenchmarkTelemetryOverhead: how long each server is loaded per round")
	telemetryConc  = flag.Int("telemetry-c", 16, "BenchmarkTelemetryOverhead: concurrent clients")
)

// startTB is start for a benchmark.
func startTB(tb testing.TB, opts *app.Options) *app.Server {
	tb.Helper()
	opts.Addr = "127.0.0.1:0"
	srv, err := app.New(context.Background(), opts)
	if err != nil {
		tb.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		srv.Shutdown(context.Background())
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	return srv
}

// BenchmarkTelemetryOverhead loads the echo agent with SendMessage on two
// servers in one process, one at a time in turns: one with the server's
// telemetry and one with none (Options.NoTelemetry). With
// "traces+metrics" the metrics are kept and a server span per request is
// sampled at 10% and exported over OTLP/HTTP to a collector that drops
// them; "+accesslog" also formats the access log line as JSON (to
// nowhere). Each -benchtime iteration is one turn, a round of each
// server (off then on, then on then off, …), and on/off is the median of
// the turns' throughput ratios, cpu-on/off the process's CPU time per
// request of the one over the other's. Loading both at once would not
// show the difference: closed-loop clients of two servers sharing one
// scheduler wait in the same run queues, so both see about the same
// latency and so the same throughput, whatever each request costs. The
// task store is in memory, so requests cost CPU, not disk, and the
// telemetry's share is as large as it gets.
//
//	go test -run '^$' -bench TelemetryOverhead -benchtime 10x ./internal/app
func BenchmarkTelemetryOverhead(b *testing.B) {
	for _, tc := range []struct {
		name      string
		accessLog bool
	}{{"traces+metrics", false}, {"traces+metrics+accesslog", true}} {
		b.Run(tc.name, func(b *testing.B) { benchTelemetry(b, tc.accessLog) })
	}
}

func benchTelemetry(b *testing.B, accessLog bool) {
	mem := func() *store.Stores { return &store.Stores{Kind: "memory", Tasks: a2asrv.NewMemoryTaskStore(nil)} }
	off := startTB(b, &app.Options{Stores: mem(), NoTelemetry: true})
	// A collector that reads and drops what it is sent: one that decoded
	// and kept every span (otlptest) would weigh on the process's heap
	// and CPU, which the server's telemetry would be charged for.
	var exported atomic.Int64
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		exported.Add(n)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	b.Cleanup(collector.Close)
	on := startTB(b, &app.Options{Stores: mem(), OTLPEndpoint: collector.URL, TraceSampleRatio: 0.1, AccessLog: accessLog,
		Logger: slog.New(telemetry.LogHandler(slog.NewJSONHandler(io.Discard, nil)))})

	scenarios := []bench.Scenario{bench.SendMessage(off.URL() + "/agents/echo"), bench.SendMessage(on.URL() + "/agents/echo")}
	turn := func(warmup time.Duration, reverse bool) (offSide, onSide bench.Side) {
		sc := scenarios
		if reverse {
			sc = []bench.Scenario{sc[1], sc[0]}
		}
		sides, err := bench.RunSides(context.Background(), sc, &bench.SidesOptions{Concurrency: *telemetryConc,
			Duration: *telemetryRound, Round: *telemetryRound, Warmup: warmup})
		if err != nil {
			b.Fatal(err)
		}
		for _, s := range sides {
			if s.Errors > 0 {
				b.Errorf("%d requests failed: %s", s.Errors, s.FirstError)
			}
		}
		if reverse {
			return sides[1], sides[0]
		}
		return sides[0], sides[1]
	}
	turn(*telemetryRound/6, false) // warm-up
	exported.Store(0)
	var ratios []float64
	var offCPU, onCPU time.Duration
	var offReqs, onReqs uint64
	for i := 0; b.Loop(); i++ {
		o, n := turn(-1, i%2 == 1)
		if o.Throughput > 0 {
			ratios = append(ratios, n.Throughput/o.Throughput)
		}
		offCPU, onCPU = offCPU+o.CPUPerRequest*time.Duration(o.Requests), onCPU+n.CPUPerRequest*time.Duration(n.Requests)
		offReqs, onReqs = offReqs+o.Requests, onReqs+n.Requests
	}
	slices.Sort(ratios)
	if n := len(ratios); n > 0 {
		b.ReportMetric((ratios[(n-1)/2]+ratios[n/2])/2, "on/off")
	}
	if offCPU > 0 && onReqs > 0 && offReqs > 0 {
		b.ReportMetric((float64(onCPU)/float64(onReqs))/(float64(offCPU)/float64(offReqs)), "cpu-on/off")
	}
	if onReqs > 0 {
		b.ReportMetric(float64(exported.Load())/float64(onReqs), "exported-bytes/req")
	}
}

// BenchmarkMetricsScrape times GET /metrics on a server whose SQLite
// database holds 10,000 tasks and 1,000 runs, every service mounted.
//
//	go test -run '^$' -bench MetricsScrape ./internal/app
func BenchmarkMetricsScrape(b *testing.B) {
	dir := b.TempDir()
	db, err := sqlite.Open(context.Background(), filepath.Join(dir, app.DatabaseFile), nil)
	if err != nil {
		b.Fatal(err)
	}
	err = bench.FillDatabase(context.Background(), db.Stores(), 10_000, 1_000)
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		b.Fatal(err)
	}
	srv := startTB(b, &app.Options{DataDir: dir})
	url := srv.URL() + app.MetricsPath
	scrape := func() int {
		resp, err := http.Get(url)
		if err != nil {
			b.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("GET /metrics: %d", resp.StatusCode)
		}
		return int(n)
	}
	first := time.Now()
	size := scrape() // counts the tasks itself; later scrapes take the last count
	firstTook := time.Since(first)
	var h bench.Histogram
	for b.Loop() {
		t0 := time.Now()
		scrape()
		h.Record(time.Since(t0))
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(firstTook), "first-ms")
	b.ReportMetric(ms(h.Quantile(0.5)), "p50-ms")
	b.ReportMetric(ms(h.Quantile(0.99)), "p99-ms")
	b.ReportMetric(ms(h.Max()), "max-ms")
	b.ReportMetric(float64(size), "bytes")
}
