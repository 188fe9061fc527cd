package bench

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"novaos.dev/novaos/secret"
)

const metricsPage = "# HELP novaos_tasks Tasks.\n# TYPE novaos_tasks gauge\nnovaos_tasks{state=\"completed\"} 3\n"

// metricsServer serves metricsPage to a request with the bearer token
// tok, 401 to any other.
func metricsServer(t *testing.T, tok string, scrapes *atomic.Int64) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+tok {
			http.Error(w, "who are you", http.StatusUnauthorized)
			return
		}
		scrapes.Add(1)
		w.Write([]byte(metricsPage))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestScrape(t *testing.T) {
	var n atomic.Int64
	srv := metricsServer(t, "tok-1", &n)
	hc := NewClient(1)
	var buf bytes.Buffer
	if err := Scrape(t.Context(), hc, srv.URL, secret.New("tok-1"), &buf); err != nil || buf.String() != metricsPage {
		t.Fatalf("Scrape: %v, %q", err, buf.String())
	}
	if err := Scrape(t.Context(), hc, srv.URL, secret.New("wrong"), &buf); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("Scrape with a wrong token: %v", err)
	}
}

func TestTimeScrapes(t *testing.T) {
	var n atomic.Int64
	srv := metricsServer(t, "tok-1", &n)
	hc := NewClient(1)
	res, err := TimeScrapes(t.Context(), hc, srv.URL, secret.New("tok-1"), 5, []string{"novaos_tasks"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := processCPU(); ok && res.CPUPerScrape <= 0 {
		t.Errorf("no CPU per scrape: %+v", res)
	}
	if res.Scrapes != 5 || n.Load() != 6 || res.First <= 0 || res.Latency.P50 <= 0 || res.Bytes != len(metricsPage) {
		t.Errorf("result %+v after %d scrapes", res, n.Load())
	}
	if _, err := TimeScrapes(t.Context(), hc, srv.URL, secret.New("tok-1"), 1, []string{"novaos_runs"}); err == nil {
		t.Error("a page without novaos_runs passed")
	}
}

// The scraper's clock runs only between Resume and Pause: with an hour
// between scrapes, it scrapes once as it first runs, and never again
// however often it is resumed.
func TestScraperClock(t *testing.T) {
	var n atomic.Int64
	srv := metricsServer(t, "tok-1", &n)
	s := NewScraper(NewClient(1), srv.URL, secret.New("tok-1"), time.Hour)
	for range 3 {
		s.Resume(t.Context())
		s.Pause()
	}
	res := s.Result()
	if res.Scrapes != 1 || res.Errors != 0 || n.Load() != 1 || res.Bytes != len(metricsPage) || res.Every != time.Hour {
		t.Errorf("result %+v, %d scrapes served", res, n.Load())
	}
}

// A scraper whose every tick is due at once scrapes again and again
// while it runs, and counts the failures.
func TestScraperCountsFailures(t *testing.T) {
	hits := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case hits <- struct{}{}:
		case <-r.Context().Done():
		}
		http.Error(w, "who are you", http.StatusUnauthorized)
	}))
	defer srv.Close()
	s := NewScraper(NewClient(1), srv.URL, secret.Value{}, time.Nanosecond)
	s.Resume(t.Context())
	for range 3 {
		<-hits
	}
	go func() { // the scrape under way when Pause is called
		for range hits {
		}
	}()
	s.Pause()
	close(hits)
	res := s.Result()
	if res.Errors < 3 || res.Errors != res.Scrapes || !strings.Contains(res.FirstError, "401") {
		t.Errorf("result %+v", res)
	}
}
