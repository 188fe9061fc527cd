package llmgw

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"testing"
	"time"

	"novaos.dev/novaos/llm"
)

// BenchmarkChatCompletionStream streams a chat completion (content
// chunks, a finish chunk, a usage chunk, [DONE]) from llm/llmtest's
// provider, directly and through the gateway (token check, scope, route,
// a tenant budget held from a lease, settlement, the run event; the
// usage written in batches on memory, SQLite or PostgreSQL), and reports
// the time to the first event: mean and 99th percentile.
func BenchmarkChatCompletionStream(b *testing.B) {
	p := newProvider(b)
	body, _ := json.Marshal(chatBody("gpt-4o", "stream", true, "max_tokens", 64))
	run := func(b *testing.B, url, tok string, client *http.Client) {
		ttft := make([]time.Duration, 0, b.N)
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			if tok != "" {
				req.Header.Set("Authorization", "Bearer "+tok)
			}
			start := time.Now()
			resp, err := client.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			rd := llm.NewEventReader(resp.Body, 1<<20)
			if _, err := rd.Next(); err != nil {
				b.Fatal(err)
			}
			ttft = append(ttft, time.Since(start))
			for {
				ev, err := rd.Next()
				if err != nil {
					b.Fatalf("the stream ended before [DONE]: %v", err)
				}
				if string(ev.Data) == "[DONE]" {
					break
				}
			}
			resp.Body.Close()
		}
		b.StopTimer()
		slices.Sort(ttft)
		var sum time.Duration
		for _, d := range ttft {
			sum += d
		}
		b.ReportMetric(float64(sum.Microseconds())/float64(len(ttft)), "ttft-µs")
		b.ReportMetric(float64(ttft[len(ttft)*99/100].Microseconds()), "ttft-p99-µs")
	}
	b.Run("direct", func(b *testing.B) {
		run(b, p.BaseURL()+"/chat/completions", "", newClient())
	})
	for _, backend := range []string{"memory", "sqlite", "postgres"} {
		b.Run("gateway/"+backend, func(b *testing.B) {
			h := newHarness(b, &Options{Now: time.Now}, Deps{Store: testStore(b, backend)})
			h.provider("openai", p.BaseURL(), "sk-upstream")
			h.route("gpt-4o", llm.Target{Provider: "openai", Model: "gpt-4o"})
			// A budget, so every call is held to one, and the background
			// work that writes the usage and keeps the lease.
			h.admin(http.MethodPut, llm.BudgetsPath+"/acme", llm.BudgetRequest{DailyTokens: 1 << 40, DailyCostUSD: 1e6}, http.StatusCreated)
			h.run()
			run(b, h.srv.URL+ChatPath, h.token(claims("llm:model:gpt-4o")), newClient())
		})
	}
}

// newClient is an HTTP client with connections of its own.
func newClient() *http.Client {
	return &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
}
