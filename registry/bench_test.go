package registry

import (
	"fmt"
	"testing"
)

var (
	benchVerbs = []string{"web", "data", "image", "text", "code", "speech", "video", "api", "report", "search",
		"fraud", "risk", "price", "route", "stock", "email", "chat", "doc", "log", "metric"}
	benchNouns = []string{"scraping", "analysis", "generation", "translation", "review", "synthesis", "summary",
		"integration", "forecast", "detection", "ranking", "planning", "extraction", "classification", "monitoring",
		"tagging", "cleaning", "indexing", "routing", "scoring", "auditing", "labelling", "parsing", "rendering", "tuning"}
)

// BenchAgents returns n agents with five capabilities each, drawn from
// 500 distinct names in the reference SDK's "Title Case" style.
func benchAgents(n int) []*Agent {
	out := make([]*Agent, n)
	for i := range out {
		a := &Agent{Name: fmt.Sprintf("agent-%04d", i), URL: "https://a.example.com/"}
		for k := range 5 {
			j := i*5 + k*37
			a.Capabilities = append(a.Capabilities, benchVerbs[j%len(benchVerbs)]+" "+benchNouns[(j/len(benchVerbs))%len(benchNouns)])
		}
		out[i] = a
	}
	return out
}

var benchQuery = []string{"web scraping", "data analytics"}

// naiveMatch is the straightforward port: every agent, every required
// name, MatchCapability over the agent's names.
func naiveMatch(agents []*Agent, required []string, threshold float64) int {
	n := 0
	for _, a := range agents {
		caps := a.AllCapabilities()
		ok := true
		for _, r := range required {
			if _, _, m := MatchCapability(r, caps, threshold); !m {
				ok = false
				break
			}
		}
		if ok {
			n++
		}
	}
	return n
}

func BenchmarkFindByCapability1000(b *testing.B) {
	agents := benchAgents(1000)
	b.Run("fuzzy/naive", func(b *testing.B) {
		for b.Loop() {
			naiveMatch(agents, benchQuery, DefaultThreshold)
		}
	})
	b.Run("fuzzy/index-build+match", func(b *testing.B) {
		for b.Loop() {
			NewIndex(agents).Match(benchQuery, MatchAll, DefaultThreshold)
		}
	})
	x := NewIndex(agents)
	b.Run("fuzzy/index-match", func(b *testing.B) {
		for b.Loop() {
			x.Match(benchQuery, MatchAll, DefaultThreshold)
		}
	})
	b.Run("exact/naive", func(b *testing.B) {
		for b.Loop() {
			naiveMatch(agents, benchQuery, 1)
		}
	})
	b.Run("exact/index-build+match", func(b *testing.B) {
		for b.Loop() {
			NewIndex(agents).Match(benchQuery, MatchAll, 1)
		}
	})
}

// The index and the naive port agree.
func TestBenchAgentsIndexAgreesWithNaive(t *testing.T) {
	agents := benchAgents(1000)
	for _, th := range []float64{1, 0.9, DefaultThreshold, 0.6} {
		for _, q := range [][]string{benchQuery, {"web scraping"}, {"Fraud Detection", "risk-scoring"}, {"api"}} {
			want := naiveMatch(agents, q, th)
			got := len(NewIndex(agents).Match(q, MatchAll, th))
			if got != want {
				t.Errorf("threshold %v, %v: index %d agents, naive %d", th, q, got, want)
			}
		}
	}
}
