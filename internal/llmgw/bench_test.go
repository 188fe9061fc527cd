package llmgw

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"novaos.dev/novaos/internal/pgtest"
	"novaos.dev/novaos/llm"
	"novaos.dev/novaos/store/postgres"
	"novaos.dev/novaos/store/sqlite"
)

// BenchmarkChatCompletionStream streams a chat completion (content
// chunks, a finish chunk, a usage chunk, [DONE]) from llm/llmtest's
// provider, directly and through the gateway (token check, scope, route,
// budget, settlement, the run event), and reports the time to the first
// event: mean and 99th percentile.
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
			var st llm.Store
			switch backend {
			case "sqlite":
				db, err := sqlite.Open(b.Context(), filepath.Join(b.TempDir(), "novaos.db"), nil)
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { db.Close() })
				st = db.LLMStore()
			case "postgres":
				if os.Getenv(pgtest.EnvURL) == "" {
					b.Skip(pgtest.EnvURL + " is not set")
				}
				db, err := postgres.Open(b.Context(), pgtest.URL(b), nil)
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { db.Close() })
				st = db.LLMStore()
			}
			h := newHarness(b, nil, Deps{Store: st})
			h.provider("openai", p.BaseURL(), "sk-upstream")
			h.route("gpt-4o", llm.Target{Provider: "openai", Model: "gpt-4o"})
			run(b, h.srv.URL+ChatPath, h.token(claims("llm:model:gpt-4o")), newClient())
		})
	}
}

// newClient is an HTTP client with connections of its own.
func newClient() *http.Client {
	return &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
}
