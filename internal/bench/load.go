package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"
)

// Scenario is one kind of request the generator sends, and how it judges
// the answer.
type Scenario struct {
	// Name labels the result.
	Name string
	// URL is where every request is POSTed.
	URL string
	// Replicas are the same endpoint on other servers: client i then
	// POSTs to the (i mod n)th of URL and Replicas, n servers in all, so
	// the clients are spread over them round-robin.
	Replicas []string
	// Header is sent with every request.
	Header http.Header
	// Body appends one request body to buf and returns the result. Workers
	// call it concurrently, each with its own buf, which they reuse; nil
	// sends an empty body.
	Body func(buf []byte) []byte
	// Check judges a response that had status 200, given its whole body;
	// an error marks the request failed. Nil accepts every 200.
	Check func(h http.Header, body []byte) error
}

// Options tune [Run]; the zero value (or nil) runs 32 clients for 20s after
// a 2s warm-up.
type Options struct {
	// Concurrency is the number of clients, each with one request in flight.
	Concurrency int
	// Duration is how long requests are measured, after Warmup.
	Duration time.Duration
	// Warmup is how long requests are sent, and not measured, first; a
	// negative value means none.
	Warmup time.Duration
	// Client sends the requests. The default uses one keep-alive transport
	// with an idle pool large enough for every client, so the run measures
	// requests, not connection set-up.
	Client *http.Client
	// SampleEvery is how often resident memory is sampled (default 1s).
	SampleEvery time.Duration
}

func (o *Options) withDefaults() Options {
	var v Options
	if o != nil {
		v = *o
	}
	if v.Concurrency <= 0 {
		v.Concurrency = 32
	}
	if v.Duration <= 0 {
		v.Duration = 20 * time.Second
	}
	if v.Warmup == 0 {
		v.Warmup = 2 * time.Second
	}
	v.Warmup = max(v.Warmup, 0)
	if v.SampleEvery <= 0 {
		v.SampleEvery = time.Second
	}
	return v
}

// NewClient returns an HTTP client for concurrency clients against one
// loopback host: keep-alive, an idle pool of at least concurrency
// connections, no proxy, no compression.
func NewClient(concurrency int) *http.Client {
	return &http.Client{Transport: &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        max(concurrency, 1) * 2,
		MaxIdleConnsPerHost: max(concurrency, 1) * 2,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		ForceAttemptHTTP2:   false,
	}}
}

// Result is what one run measured. Only requests started after the warm-up
// count.
type Result struct {
	Scenario    string        `json:"scenario"`
	Concurrency int           `json:"concurrency"`
	Requests    uint64        `json:"requests"` // measured, successful or not
	Errors      uint64        `json:"errors"`
	Elapsed     time.Duration `json:"elapsedNs"`
	// Throughput is successful requests per second of Elapsed.
	Throughput float64 `json:"throughput"`
	// Latency covers successful requests, from just before the request was
	// written to when its body had been read to the end.
	Latency Latency `json:"latency"`
	// Memory is the process's resident memory during the run (warm-up
	// included); zero where it cannot be read.
	Memory MemoryProfile `json:"memory"`
	// FirstError describes the first failed request, "" if none failed.
	FirstError string `json:"firstError,omitempty"`
	// ErrorsByKind counts failed operations by kind ([RunOp] only).
	ErrorsByKind map[string]uint64 `json:"errorsByKind,omitempty"`
	// TargetRate is the paced rate asked of [RunOp], 0 for a closed loop.
	TargetRate float64 `json:"targetRate,omitempty"`
	// Lag is how late paced operations started against their schedule
	// ([RunOp] with a rate only): a p99 far above zero means the clients
	// could not keep up and Latency no longer shows the waiting.
	Lag *Latency `json:"lag,omitempty"`
	// Frames counts the status updates of [RunXStream] (only): then
	// Latency is theirs, from emission to receipt, not the tasks'.
	Frames *Frames `json:"frames,omitempty"`
}

// Latency summarises a run's latencies.
type Latency struct {
	P50  time.Duration `json:"p50Ns"`
	P90  time.Duration `json:"p90Ns"`
	P99  time.Duration `json:"p99Ns"`
	Max  time.Duration `json:"maxNs"`
	Mean time.Duration `json:"meanNs"`
}

// MemoryProfile is the resident memory at the start of a run, the highest
// sample during it, and at its end, in bytes. HWM is the kernel's
// high-water mark for the whole process lifetime, so it includes anything
// that ran before.
type MemoryProfile struct {
	Start uint64 `json:"startBytes"`
	Peak  uint64 `json:"peakBytes"`
	End   uint64 `json:"endBytes"`
	HWM   uint64 `json:"hwmBytes"`
	// Samples are the readings taken every SampleEvery, oldest first, so a
	// long run shows whether memory settles or keeps growing.
	Samples []uint64 `json:"samplesBytes,omitempty"`
}

// Run sends sc's requests from opts.Concurrency clients for opts.Warmup
// plus opts.Duration and reports what it measured. It returns early with
// ctx's error if ctx ends first; requests cut off that way are not counted.
func Run(ctx context.Context, sc Scenario, opts *Options) (*Result, error) {
	o := opts.withDefaults()
	if sc.URL == "" {
		return nil, errors.New("bench: scenario has no URL")
	}
	client := o.Client
	if client == nil {
		client = NewClient(o.Concurrency)
		defer client.CloseIdleConnections()
	}

	sampler := startSampler(o.SampleEvery)
	start := time.Now()
	g := &generator{
		sc:          sc,
		client:      client,
		measureFrom: start.Add(o.Warmup),
		end:         start.Add(o.Warmup + o.Duration),
	}
	stats := make([]workerStats, o.Concurrency)
	urls := append([]string{sc.URL}, sc.Replicas...)
	var wg sync.WaitGroup
	for i := range stats {
		wg.Go(func() { g.work(ctx, urls[i%len(urls)], &stats[i]) })
	}
	wg.Wait()
	finished := time.Now()
	mem := sampler.stop()

	res := &Result{
		Scenario:    sc.Name,
		Concurrency: o.Concurrency,
		Elapsed:     finished.Sub(g.measureFrom),
		Memory:      mem,
	}
	var h Histogram
	var firstErrAt time.Time
	for i := range stats {
		s := &stats[i]
		h.Merge(&s.hist)
		res.Requests += s.requests
		res.Errors += s.errors
		if s.firstErr != "" && (res.FirstError == "" || s.firstErrAt.Before(firstErrAt)) {
			res.FirstError, firstErrAt = s.firstErr, s.firstErrAt
		}
	}
	if res.Elapsed > 0 {
		res.Throughput = float64(h.Count()) / res.Elapsed.Seconds()
	}
	res.Latency = Latency{
		P50: h.Quantile(0.50), P90: h.Quantile(0.90), P99: h.Quantile(0.99),
		Max: h.Max(), Mean: h.Mean(),
	}
	if err := ctx.Err(); err != nil {
		return res, fmt.Errorf("bench: %s: %w", sc.Name, err)
	}
	return res, nil
}

type generator struct {
	sc          Scenario
	client      *http.Client
	measureFrom time.Time
	end         time.Time
}

// workerStats is owned by one worker until Run's WaitGroup returns.
type workerStats struct {
	hist       Histogram
	sent       uint64 // every request that finished, measured or not
	requests   uint64
	errors     uint64
	firstErr   string
	firstErrAt time.Time
}

func (g *generator) work(ctx context.Context, url string, st *workerStats) {
	header := g.sc.Header.Clone()
	var reqBuf []byte
	var respBuf bytes.Buffer
	for ctx.Err() == nil {
		t0 := time.Now()
		if !t0.Before(g.end) {
			return
		}
		if g.sc.Body != nil {
			reqBuf = g.sc.Body(reqBuf[:0])
		}
		err := g.do(ctx, url, header, reqBuf, &respBuf)
		elapsed := time.Since(t0)
		if ctx.Err() == nil {
			st.sent++
		}
		if t0.Before(g.measureFrom) || ctx.Err() != nil {
			continue
		}
		st.requests++
		if err != nil {
			st.errors++
			if st.firstErr == "" {
				st.firstErr, st.firstErrAt = err.Error(), t0
			}
			continue
		}
		st.hist.Record(elapsed)
	}
}

// maxErrBody bounds how much of a failed response goes into an error.
const maxErrBody = 200

func (g *generator) do(ctx context.Context, url string, header http.Header, body []byte, respBuf *bytes.Buffer) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("new request: %w", err)
	}
	req.Header = header
	resp, err := g.client.Do(req)
	if err != nil {
		return err
	}
	respBuf.Reset()
	_, err = respBuf.ReadFrom(resp.Body)
	resp.Body.Close()
	if err != nil {
		return fmt.Errorf("read body: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		b := respBuf.Bytes()
		if len(b) > maxErrBody {
			b = b[:maxErrBody]
		}
		return fmt.Errorf("status %d: %s", resp.StatusCode, b)
	}
	if g.sc.Check != nil {
		if err := g.sc.Check(resp.Header, respBuf.Bytes()); err != nil {
			return err
		}
	}
	return nil
}
