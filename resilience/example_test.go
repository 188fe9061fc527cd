package resilience_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"

	"novaos.dev/novaos/resilience"
)

// A service that is unavailable twice and then answers: the policy retries
// the 503s and returns the answer.
func Example() {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) <= 2 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, "ok")
	}))
	defer srv.Close()

	p := &resilience.Policy{
		Attempts: resilience.DefaultAttempts,
		Base:     time.Millisecond, // keep the example quick
		Breaker:  resilience.NewBreaker(nil),
	}
	err := p.Do(context.Background(), func(ctx context.Context) error {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return resilience.StatusError(resp)
		}
		return nil
	})
	fmt.Println(err, calls.Load())
	// Output: <nil> 3
}
