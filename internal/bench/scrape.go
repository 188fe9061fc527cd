package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"novaos.dev/novaos/secret"
)

// maxScrapeBytes bounds the /metrics body Scrape reads: a page beyond
// it is a runaway series count, not something to time.
const maxScrapeBytes = 64 << 20

// Scrape GETs url, a Prometheus /metrics endpoint, as Prometheus does
// (text format, no compression), with tok as the bearer token unless it
// is zero, and reads the body into buf, which it resets first. It fails
// unless the status is 200 and the body is not empty.
func Scrape(ctx context.Context, hc *http.Client, url string, tok secret.Value, buf *bytes.Buffer) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("bench: scrape: %w", err)
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	if !tok.IsZero() {
		req.Header.Set("Authorization", "Bearer "+tok.Reveal())
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("bench: scrape: %w", err)
	}
	defer resp.Body.Close()
	buf.Reset()
	n, err := buf.ReadFrom(io.LimitReader(resp.Body, maxScrapeBytes+1))
	switch {
	case err != nil:
		return fmt.Errorf("bench: scrape: read body: %w", err)
	case n > maxScrapeBytes:
		return fmt.Errorf("bench: scrape: body over %d bytes", maxScrapeBytes)
	case resp.StatusCode != http.StatusOK:
		b := buf.Bytes()
		return fmt.Errorf("bench: scrape: status %d: %s", resp.StatusCode, b[:min(len(b), maxErrBody)])
	case n == 0:
		return errors.New("bench: scrape: empty body")
	}
	return nil
}

// ScrapeResult is what [TimeScrapes] measured.
type ScrapeResult struct {
	// First is the first scrape's time, apart from the others: it may
	// make a count that later scrapes find made.
	First time.Duration `json:"firstNs"`
	// Scrapes are the scrapes timed after it, one after the other, and
	// Latency theirs, from the request to the body's last byte.
	Scrapes int     `json:"scrapes"`
	Latency Latency `json:"latency"`
	// CPUPerScrape is the CPU time, user and system, this whole process
	// (server and client) used per timed scrape; zero where the platform
	// does not tell. Other work on the machine sways it less than Latency.
	CPUPerScrape time.Duration `json:"cpuPerScrapeNs"`
	// Bytes is the size of the last scrape's body.
	Bytes int `json:"bytes"`
}

// TimeScrapes scrapes url once, then n more times one after the other,
// timing each; it fails on a scrape that fails, or when the last body
// lacks one of the metric names in want.
func TimeScrapes(ctx context.Context, hc *http.Client, url string, tok secret.Value, n int, want []string) (*ScrapeResult, error) {
	var buf bytes.Buffer
	t0 := time.Now()
	if err := Scrape(ctx, hc, url, tok, &buf); err != nil {
		return nil, err
	}
	res := &ScrapeResult{First: time.Since(t0), Scrapes: n}
	var h Histogram
	cpu0, ok0 := processCPU()
	for range n {
		t0 := time.Now()
		if err := Scrape(ctx, hc, url, tok, &buf); err != nil {
			return nil, err
		}
		h.Record(time.Since(t0))
	}
	if cpu1, ok1 := processCPU(); ok0 && ok1 && n > 0 {
		res.CPUPerScrape = (cpu1 - cpu0) / time.Duration(n)
	}
	res.Latency, res.Bytes = latencyOf(&h), buf.Len()
	for _, name := range want {
		// A family's samples and comments each start a line.
		if !bytes.Contains(buf.Bytes(), []byte("\n"+name)) {
			return nil, fmt.Errorf("bench: scrape: no %s among the metrics", name)
		}
	}
	return res, nil
}

// Scraper scrapes a /metrics URL every Every of the time it runs, as
// Prometheus scrapes a target, the first time as it first runs. Resume
// and Pause start and stop its clock, so that a benchmark taking turns
// between servers scrapes one only while that one is loaded. Resume and
// Pause are called in turn from one goroutine.
type Scraper struct {
	hc    *http.Client
	url   string
	tok   secret.Value
	every time.Duration

	ran       time.Duration // run so far, as of the last Pause
	due       time.Duration // of the clock, when the next scrape is
	resumedAt time.Time
	stop      chan struct{}
	done      chan struct{}

	mu  sync.Mutex
	res ScraperResult
	h   Histogram
}

// ScraperResult is what a [Scraper] saw.
type ScraperResult struct {
	Every   time.Duration `json:"everyNs"`
	Scrapes uint64        `json:"scrapes"`
	Errors  uint64        `json:"errors"`
	// Latency is the successful scrapes', taken under whatever load ran
	// meanwhile.
	Latency Latency `json:"latency"`
	// Bytes is the size of the last successful scrape's body.
	Bytes      int    `json:"bytes"`
	FirstError string `json:"firstError,omitempty"`
}

// NewScraper returns a scraper of url, sending tok as the bearer token
// unless it is zero, every every of its running time.
func NewScraper(hc *http.Client, url string, tok secret.Value, every time.Duration) *Scraper {
	return &Scraper{hc: hc, url: url, tok: tok, every: every, res: ScraperResult{Every: every}}
}

// Resume starts the scraper's clock; its scrapes end with ctx.
func (s *Scraper) Resume(ctx context.Context) {
	s.resumedAt = time.Now()
	s.stop, s.done = make(chan struct{}), make(chan struct{})
	go s.run(ctx, s.ran, s.resumedAt, s.stop, s.done)
}

// Pause stops the scraper's clock, once a scrape under way (or due as
// the clock resumed) has finished.
func (s *Scraper) Pause() {
	close(s.stop)
	<-s.done
	s.ran += time.Since(s.resumedAt)
}

func (s *Scraper) run(ctx context.Context, ran time.Duration, resumed time.Time, stop, done chan struct{}) {
	defer close(done)
	var buf bytes.Buffer
	for {
		if wait := s.due - ran - time.Since(resumed); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-stop:
				t.Stop()
				return
			}
		}
		// A scrape due as the clock resumes is made even if Pause follows
		// at once: Pause waits for it.
		t0 := time.Now()
		err := Scrape(ctx, s.hc, s.url, s.tok, &buf)
		took := time.Since(t0)
		s.record(took, buf.Len(), err)
		// A scrape slower than the interval skips the ticks it overran,
		// as Prometheus does.
		now := ran + time.Since(resumed)
		if s.due += s.every; s.due <= now {
			s.due += ((now-s.due)/s.every + 1) * s.every
		}
		select {
		case <-stop:
			return
		default:
		}
	}
}

func (s *Scraper) record(took time.Duration, n int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.res.Scrapes++
	if err != nil {
		s.res.Errors++
		if s.res.FirstError == "" {
			s.res.FirstError = err.Error()
		}
		return
	}
	s.h.Record(took)
	s.res.Bytes = n
}

// Result is what the scraper saw so far.
func (s *Scraper) Result() ScraperResult {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.res
	r.Latency = latencyOf(&s.h)
	return r
}
