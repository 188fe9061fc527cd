package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/memory"
)

// Memory scenario names.
const (
	ScenarioMemoryWriteRun   = "write-run"
	ScenarioMemoryWriteAgent = "write-agent"
	ScenarioMemoryQuery      = "query"
	ScenarioMemoryAssemble   = "assemble"
)

// vocabulary is a made-up lexicon of about 25,000 words: a run's memories
// and queries draw from it with a Zipf skew, as English content words
// are drawn once stop words are left out, so a few words are in many
// memories and most are rare.
var vocabulary = func() []string {
	onsets := []string{"b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "br", "st", "tr", "pl", "sh", "ch"}
	vowels := []string{"a", "e", "i", "o", "u", "ai", "ou"}
	codas := []string{"", "n", "r", "s", "t", "l", "m", "x", "nd"}
	var syllables []string
	for _, o := range onsets {
		for _, v := range vowels {
			for _, c := range codas {
				syllables = append(syllables, o+v+c)
			}
		}
	}
	words := make([]string, 0, 25000)
	r := rand.New(rand.NewPCG(1, 2))
	seen := map[string]bool{}
	for len(words) < cap(words) {
		w := syllables[r.IntN(len(syllables))] + syllables[r.IntN(len(syllables))]
		if r.IntN(3) == 0 {
			w += syllables[r.IntN(len(syllables))]
		}
		if !seen[w] {
			seen[w] = true
			words = append(words, w)
		}
	}
	return words
}()

// Sentence writes n words of the bench lexicon, drawn by r.
func Sentence(r *rand.Rand, z *rand.Zipf, n int) string {
	var b bytes.Buffer
	for i := range n {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(vocabulary[z.Uint64()])
	}
	return b.String()
}

func newZipf(seed uint64) (*rand.Rand, *rand.Zipf) {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	return r, rand.NewZipf(r, 1.07, 2, uint64(len(vocabulary)-1))
}

// toolCall is the JSON-RPC body of one tools/call.
func toolCall(buf []byte, id uint64, tool string, args any) []byte {
	a, _ := json.Marshal(args)
	buf = append(buf, `{"jsonrpc":"2.0","id":`...)
	buf = strconv.AppendUint(buf, id, 10)
	buf = append(buf, `,"method":"tools/call","params":{"name":"`...)
	buf = append(buf, tool...)
	buf = append(buf, `","arguments":`...)
	buf = append(buf, a...)
	return append(buf, `}}`...)
}

// checkTool fails a tools/call answer that is a protocol or tool error.
func checkTool(_ http.Header, body []byte) error {
	var resp struct {
		Result *struct {
			IsError bool `json:"isError"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"result"`
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &resp); err != nil {
		return fmt.Errorf("answer is not JSON: %w", err)
	}
	switch {
	case resp.Error != nil:
		return fmt.Errorf("protocol error: %s", resp.Error.Message)
	case resp.Result == nil:
		return fmt.Errorf("no result")
	case resp.Result.IsError:
		msg := ""
		if len(resp.Result.Content) > 0 {
			msg = resp.Result.Content[0].Text
		}
		return fmt.Errorf("tool error: %s", msg)
	}
	return nil
}

func mcpHeader(token string) http.Header {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		h.Set("Authorization", "Bearer "+token)
	}
	return h
}

// memoryScenario builds a scenario whose bodies are tool calls with
// arguments from args; each worker draws its own words.
func memoryScenario(name, url, token, tool string, args func(r *rand.Rand, z *rand.Zipf, n uint64) any) Scenario {
	var seq atomic.Uint64
	var pool sync.Pool
	return Scenario{
		Name: name, URL: url, Header: mcpHeader(token), Check: checkTool,
		Body: func(buf []byte) []byte {
			n := seq.Add(1)
			g, _ := pool.Get().(*zipfGen)
			if g == nil {
				g = &zipfGen{}
				g.r, g.z = newZipf(n)
			}
			defer pool.Put(g)
			return toolCall(buf, n, tool, args(g.r, g.z, n))
		},
	}
}

type zipfGen struct {
	r *rand.Rand
	z *rand.Zipf
}

// MemoryWrite writes a new memory of scope per request; every content is
// distinct, so nothing is deduplicated.
func MemoryWrite(name, url, token string, scope memory.Scope) Scenario {
	return memoryScenario(name, url, token, "novaos.memory.write", func(r *rand.Rand, z *rand.Zipf, n uint64) any {
		return memory.WriteRequest{Scope: scope, Content: Sentence(r, z, 12+r.IntN(8)) + " " + strconv.FormatUint(n, 36)}
	})
}

// MemoryQuery asks agent scope a question of three to six words.
func MemoryQuery(name, url, token string) Scenario {
	return memoryScenario(name, url, token, "novaos.memory.query", func(r *rand.Rand, z *rand.Zipf, _ uint64) any {
		return memory.QueryRequest{Scope: memory.ScopeAgent, Query: Sentence(r, z, 3+r.IntN(4))}
	})
}

// MemoryAssemble assembles context with a latency budget.
func MemoryAssemble(name, url, token string, budgetMS int) Scenario {
	return memoryScenario(name, url, token, "novaos.memory.assemble", func(r *rand.Rand, z *rand.Zipf, _ uint64) any {
		return memory.AssembleRequest{Query: Sentence(r, z, 3+r.IntN(4)), LatencyBudgetMS: &budgetMS}
	})
}

// SeedMemories stores n agent-scope memories of partition p in tenant,
// with vectors of emb, from concurrency writers, so a query scenario has
// a corpus; it bypasses the service, whose write path other scenarios
// measure.
func SeedMemories(ctx context.Context, s memory.Store, emb memory.Embedder, tenant string, p memory.Partition, first, n, concurrency int) error {
	var next atomic.Int64
	next.Store(int64(first))
	end := int64(first + n)
	errs := make(chan error, concurrency)
	var wg sync.WaitGroup
	now := time.Now()
	for w := range max(concurrency, 1) {
		wg.Go(func() {
			r, z := newZipf(uint64(w) + 7919)
			for {
				i := next.Add(1) - 1
				if i >= end {
					return
				}
				content := Sentence(r, z, 12+r.IntN(8))
				vecs, err := emb.Embed(ctx, []string{content})
				if err != nil {
					errs <- err
					return
				}
				m := &memory.Memory{ID: a2a.NewID(), Partition: p, Content: content, Version: 1, CreatedAt: now, UpdatedAt: now,
					WriteEventID: a2a.NewID(), Embedding: &memory.Embedding{Model: emb.ModelID(), Vector: vecs[0]}}
				if _, _, err := s.Put(ctx, tenant, m, memory.Key{}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}
