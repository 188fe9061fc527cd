package bench_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"novaos.dev/novaos/internal/bench"
	"novaos.dev/novaos/memory"
	"novaos.dev/novaos/store/sqlite"
)

// locomoFile is the LoCoMo file BenchmarkLoCoMo scores; tests never read it.
//
//	go test -run='^$' -bench=LoCoMo ./internal/bench -locomo=PATH/locomo10.json
var locomoFile = flag.String("locomo", "", "LoCoMo JSON file for BenchmarkLoCoMo")

func memStore(tb testing.TB) memory.Store {
	tb.Helper()
	db, err := sqlite.Open(context.Background(), filepath.Join(tb.TempDir(), "memory.db"), nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db.MemoryStore()
}

func parseFile(tb testing.TB, path string) []bench.LoCoMoConversation {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	convs, err := bench.ParseLoCoMo(f)
	if err != nil {
		tb.Fatal(err)
	}
	return convs
}

func TestParseLoCoMo(t *testing.T) {
	convs := parseFile(t, "testdata/locomo_tiny.json")
	if len(convs) != 2 || convs[0].SampleID != "conv-a" || len(convs[0].Turns) != 7 || len(convs[0].QA) != 8 {
		t.Fatalf("parsed %+v", convs)
	}
	t4 := convs[0].Turns[3]
	if t4.DiaID != "D1:4" || t4.Session != 1 || t4.Date != "9:00 am on 3 March, 2024" || t4.Caption == "" {
		t.Errorf("turn 4 = %+v", t4)
	}
	if got := bench.TurnContent(t4); got != "Tom: I have been learning to play the cello at a community school. [shares a photo of a cello leaning on a chair]" {
		t.Errorf("TurnContent = %q", got)
	}
	if convs[0].Turns[4].Session != 2 {
		t.Errorf("sessions out of order: %+v", convs[0].Turns[4])
	}
	for _, bad := range []string{``, `{}`, `[{"conversation": {"session_1": "x"}}]`, `[` + strings.Repeat(" ", 10) + `{"qa": 1}]`} {
		if _, err := bench.ParseLoCoMo(strings.NewReader(bad)); err == nil {
			t.Errorf("ParseLoCoMo(%q) accepted it", bad)
		}
	}
}

// TestLoCoMoFixture runs the whole harness on a handmade conversation
// small enough to know every answer: each scored question's evidence turn
// is found, category 5 and unknown evidence are left out.
func TestLoCoMoFixture(t *testing.T) {
	convs := parseFile(t, "testdata/locomo_tiny.json")
	rep, err := bench.LoCoMo(context.Background(), memStore(t), convs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Memories != 9 || rep.Questions != 8 {
		t.Fatalf("memories %d questions %d, want 9 and 8", rep.Memories, rep.Questions)
	}
	if rep.Hybrid.Hit10 != 1 || rep.Keyword.N != 8 {
		t.Errorf("hybrid %v, keyword %v: every evidence turn is in the top 10 of a 7-turn conversation", rep.Hybrid, rep.Keyword)
	}
	if rep.Hybrid.Hit1 < 0.75 {
		t.Errorf("hybrid hit@1 %.3f, want at least 6 of 8 first", rep.Hybrid.Hit1)
	}
	cats := []int{}
	for c := range rep.ByCategory {
		cats = append(cats, c)
	}
	slices.Sort(cats)
	if !slices.Equal(cats, []int{1, 2, 3, 4}) {
		t.Errorf("categories %v", cats)
	}
	if rep.ByCategory[4][0].N != 3 {
		t.Errorf("category 4 scored %d questions, want 3", rep.ByCategory[4][0].N)
	}
	if rep.ScoreRelevant <= 0 || rep.ScoreRelevant > 1 {
		t.Errorf("mean score of a relevant first result %v", rep.ScoreRelevant)
	}
}

func FuzzParseLoCoMo(f *testing.F) {
	b, err := os.ReadFile("testdata/locomo_tiny.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte(`[{"conversation":{"session_1":[{"dia_id":"D1:1","text":"x"}]},"qa":[{"category":"x","evidence":["D1:1;D1:1"]}]}]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		convs, err := bench.ParseLoCoMo(strings.NewReader(string(b)))
		if err != nil {
			return
		}
		for _, c := range convs {
			for _, tn := range c.Turns {
				if tn.DiaID == "" {
					t.Fatalf("turn without id: %+v", tn)
				}
			}
		}
	})
}

// BenchmarkLoCoMo reports LoCoMo retrieval quality (turn level, categories
// 1–4) of the default stack and of BM25 alone, measured in the same run.
// It needs -locomo; without it there is nothing to measure.
func BenchmarkLoCoMo(b *testing.B) {
	if *locomoFile == "" {
		b.Skip("pass -locomo=PATH to a LoCoMo JSON file (locomo10.json)")
	}
	convs := parseFile(b, *locomoFile)
	for b.Loop() {
		opts := &bench.LoCoMoOptions{}
		rep, err := bench.LoCoMo(context.Background(), memStore(b), convs, opts)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(rep.Hybrid.Hit10, "hit@10")
		b.ReportMetric(rep.Hybrid.MRR, "MRR")
		b.ReportMetric(rep.Keyword.Hit10, "bm25-hit@10")
		b.ReportMetric(rep.Keyword.MRR, "bm25-MRR")
		b.ReportMetric(rep.Hybrid.Hit10/rep.Keyword.Hit10, "hit@10/bm25")
		b.Logf("%d memories ingested in %v, %d questions", rep.Memories, rep.Ingest, rep.Questions)
		b.Logf("default stack %v", rep.Hybrid)
		b.Logf("BM25 alone    %v", rep.Keyword)
		b.Logf("vector alone  %v", rep.Vector)
		for c := 1; c <= 4; c++ {
			if s := rep.ByCategory[c]; s != nil {
				b.Logf("category %d: default %s | bm25 %s", c, fmt.Sprintf("hit@10 %.3f MRR %.3f", s[0].Hit10, s[0].MRR), fmt.Sprintf("hit@10 %.3f MRR %.3f", s[1].Hit10, s[1].MRR))
			}
		}
		b.Logf("mean score of the first result: %.3f when relevant, %.3f otherwise", rep.ScoreRelevant, rep.ScoreOther)
	}
}
