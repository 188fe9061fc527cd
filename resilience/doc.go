// Package resilience holds the retry and circuit-breaker rules of the
// platform's service clients.
//
// The memory client, the gate client and later clients share them, so they
// fail and retry alike, as the NovaOS Python SDK's clients do (its
// _resilience module).
//
// A Policy retries an operation on transient failures with truncated
// binary exponential backoff: attempt n waits Base·2^(n-1), capped at Max,
// times a random factor in [0.5, 1.0] so concurrent callers spread out. A
// failure is transient when the operation says so (Retryable, or an HTTP
// status in RetryableStatus: 429, 502, 503, 504) or when it is a network
// error; anything else is returned at once. A server's Retry-After (an
// error with a RetryAfter method) is honoured instead of the computed
// delay when it is longer, up to Max.
//
// Attempts counts every try, the first included, and 0 still makes one:
// "no retries", not "no attempts" (as the Python SDK's max_retries). The
// default is 3.
//
// A Breaker trips after Threshold consecutive failures (default 5) and then
// refuses calls with ErrOpen for Reset (default 30s); after that one probe
// is let through, whose success closes the breaker and whose failure opens
// it again for another Reset. A Policy with a Breaker consults it before
// every attempt and records every outcome that counts: a transient failure
// counts, a caller's own mistake (a 4xx other than 429) does not, because
// it says nothing about the service's health.
//
//	p := &resilience.Policy{Breaker: resilience.NewBreaker(nil)}
//	err := p.Do(ctx, func(ctx context.Context) error {
//		resp, err := http.DefaultClient.Do(req.WithContext(ctx))
//		if err != nil {
//			return err // network errors are retried
//		}
//		defer resp.Body.Close()
//		if resp.StatusCode >= 300 {
//			return resilience.StatusError(resp) // 429/502/503/504 are retried
//		}
//		return nil
//	})
package resilience
