package memindex_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"novaos.dev/novaos/memory"
	"novaos.dev/novaos/store/internal/memindex"
)

// source is an in-memory Source: a store's table and counters.
type source struct {
	mu    sync.Mutex
	docs  map[memindex.Key][]memindex.Doc
	c     map[memindex.Key]memindex.Counters
	seq   int64
	loads int
	fail  error
}

func newSource() *source {
	return &source{docs: map[memindex.Key][]memindex.Doc{}, c: map[memindex.Key]memindex.Counters{}}
}

func (s *source) put(k memindex.Key, m memory.Memory) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	s.docs[k] = append(s.docs[k], memindex.Doc{Seq: s.seq, Memory: m})
	c := s.c[k]
	c.Appended++
	s.c[k] = c
	return s.seq
}

// update replaces memory id's content and steps its version, as a store's
// Update does (same Seq).
func (s *source) update(k memindex.Key, id, content string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.docs[k] {
		if m := &s.docs[k][i].Memory; m.ID == id {
			m.Content = content
			m.Version++
		}
	}
	c := s.c[k]
	c.Changed++
	s.c[k] = c
}

// reuse deletes the partition's last memory and writes m under its Seq,
// as SQLite does with the rowid of a deleted last row.
func (s *source) reuse(k memindex.Key, m memory.Memory) {
	s.mu.Lock()
	defer s.mu.Unlock()
	last := &s.docs[k][len(s.docs[k])-1]
	last.Memory = m
	c := s.c[k]
	c.Changed++
	c.Appended++
	s.c[k] = c
}

func (s *source) remove(k memindex.Key, id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.docs[k] = slices.DeleteFunc(s.docs[k], func(d memindex.Doc) bool { return d.Memory.ID == id })
	c := s.c[k]
	c.Changed++
	s.c[k] = c
}

func (s *source) Counters(_ context.Context, k memindex.Key) (memindex.Counters, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.c[k]
	return c, ok, nil
}

func (s *source) Load(_ context.Context, k memindex.Key, after int64, add func(*memindex.Doc)) error {
	return s.load(k, func(d *memindex.Doc) bool { return d.Seq > after }, add)
}

func (s *source) LoadSeqs(_ context.Context, k memindex.Key, seqs []int64, add func(*memindex.Doc)) error {
	return s.load(k, func(d *memindex.Doc) bool { return slices.Contains(seqs, d.Seq) }, add)
}

func (s *source) Versions(_ context.Context, k memindex.Key, fn func(int64, string, int64)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return s.fail
	}
	for _, d := range s.docs[k] {
		fn(d.Seq, d.Memory.ID, d.Memory.Version)
	}
	return nil
}

func (s *source) load(k memindex.Key, want func(*memindex.Doc) bool, add func(*memindex.Doc)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.loads++
	if s.fail != nil {
		return s.fail
	}
	for _, d := range s.docs[k] {
		if want(&d) {
			if e := d.Memory.Embedding; e != nil { // the index owns what it is given
				d.Memory.Embedding = &memory.Embedding{Model: e.Model, Vector: slices.Clone(e.Vector)}
			}
			add(&d)
		}
	}
	return nil
}

var (
	ctx  = context.Background()
	acme = memindex.Key{Tenant: "acme", Scope: "agent", Owner: "a"}
	t0   = time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
)

func ids(hs []memory.Hit) []string {
	var out []string
	for _, h := range hs {
		out = append(out, h.Memory.ID)
	}
	return out
}

// bm25 is FTS5's formula written out for one document, the reference the
// index must match: dl and avgdl count one token more for the partition
// column the SQL index had.
func bm25(n int, df map[string]int, avgdl float64, doc []string, query []string) float64 {
	var s float64
	for _, q := range query {
		tf := 0
		for _, t := range doc {
			if t == q {
				tf++
			}
		}
		if tf == 0 {
			continue
		}
		idf := math.Log((float64(n) - float64(df[q]) + 0.5) / (float64(df[q]) + 0.5))
		if idf <= 0 {
			idf = 1e-6
		}
		s += idf * float64(tf) * 2.2 / (float64(tf) + 1.2*(0.25+0.75*float64(len(doc)+1)/avgdl))
	}
	return s
}

func TestKeywordMatchesBM25(t *testing.T) {
	src := newSource()
	r := rand.New(rand.NewPCG(1, 2))
	words := []string{"apple", "banana", "cherry", "date", "elder", "fig", "grape", "honeydew", "kiwi", "lemon"}
	var texts []string
	for i := range 300 {
		var w []string
		for range 1 + r.IntN(12) {
			w = append(w, words[r.IntN(len(words))])
		}
		text := fmt.Sprint(w)
		texts = append(texts, text)
		src.put(acme, memory.Memory{ID: fmt.Sprint("m", i), Content: text, CreatedAt: t0})
	}
	c := memindex.New(src, nil)
	n, df, total := len(texts), map[string]int{}, 0
	terms := make([][]string, n)
	for i, text := range texts {
		terms[i] = memory.Terms(text)
		total += len(terms[i]) + 1
		seen := map[string]bool{}
		for _, t := range terms[i] {
			if !seen[t] {
				df[t]++
				seen[t] = true
			}
		}
	}
	for _, q := range []string{"apple", "cherry grape", "kiwi lemon fig apple", "durian", "apple apple"} {
		qt := memory.Terms(q)
		got, err := c.Keyword(ctx, acme, memory.Filter{}, qt, 20)
		if err != nil {
			t.Fatal(err)
		}
		uq := slices.Compact(slices.Sorted(slices.Values(qt)))
		type ref struct {
			seq   int64
			score float64
		}
		var want []ref
		for i := range texts {
			if s := bm25(n, df, float64(total)/float64(n), terms[i], uq); s > 0 {
				want = append(want, ref{int64(i + 1), s})
			}
		}
		slices.SortStableFunc(want, func(a, b ref) int {
			if a.score != b.score {
				if a.score > b.score {
					return -1
				}
				return 1
			}
			return 0
		})
		want = want[:min(20, len(want))]
		if len(got) != len(want) {
			t.Fatalf("%q: %d hits, want %d", q, len(got), len(want))
		}
		for i := range got {
			if got[i].Memory.ID != fmt.Sprint("m", want[i].seq-1) || math.Abs(got[i].Score-want[i].score) > 1e-9 {
				t.Errorf("%q: hit %d = %+v, want %+v", q, i, got[i], want[i])
			}
		}
	}
}

func TestFilters(t *testing.T) {
	src := newSource()
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	docs := []memory.Memory{
		{ID: "plain", Content: "tea kettle", CreatedAt: at(0)},
		{ID: "typed", Content: "tea kettle", CreatedAt: at(time.Minute), Type: "semantic"},
		{ID: "tagged", Content: "tea kettle", CreatedAt: at(2 * time.Minute), Tags: []string{"kitchen", "home"}},
		{ID: "conv", Content: "tea kettle", CreatedAt: at(3 * time.Minute), ConversationID: "c1"},
		{ID: "secret", Content: "tea kettle", CreatedAt: at(4 * time.Minute), Classification: "confidential"},
		{ID: "expiring", Content: "tea kettle", CreatedAt: at(5 * time.Minute), ExpiresAt: at(time.Hour)},
	}
	for _, d := range docs {
		src.put(acme, d)
	}
	c := memindex.New(src, nil)
	// Equal scores go to the older memory; tags are indexed with the
	// content, so the tagged memory is longer and ranks last.
	all := []string{"plain", "typed", "conv", "secret", "expiring", "tagged"}
	tests := []struct {
		name string
		f    memory.Filter
		want []string
	}{
		{"all before expiry", memory.Filter{Now: t0}, all},
		{"zero now hides nothing", memory.Filter{}, all},
		{"expired at its time", memory.Filter{Now: t0.Add(time.Hour)}, slices.Delete(slices.Clone(all), 4, 5)},
		{"type", memory.Filter{Type: "semantic"}, []string{"typed"}},
		{"unknown type", memory.Filter{Type: "episodic"}, nil},
		{"one tag", memory.Filter{Tags: []string{"home"}}, []string{"tagged"}},
		{"every tag", memory.Filter{Tags: []string{"home", "kitchen"}}, []string{"tagged"}},
		{"a tag not held", memory.Filter{Tags: []string{"home", "garden"}}, nil},
		{"conversation", memory.Filter{ConversationID: "c1"}, []string{"conv"}},
		{"classification", memory.Filter{Classification: "confidential"}, []string{"secret"}},
		{"after is exclusive", memory.Filter{After: t0.Add(4 * time.Minute)}, []string{"expiring"}},
		{"before is exclusive", memory.Filter{Before: t0.Add(time.Minute)}, []string{"plain"}},
		{"between", memory.Filter{After: t0, Before: t0.Add(3 * time.Minute)}, []string{"typed", "tagged"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hs, err := c.Keyword(ctx, acme, tt.f, []string{"tea"}, 10)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, ids(hs)); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

func TestFollowsWrites(t *testing.T) {
	src := newSource()
	c := memindex.New(src, nil)
	search := func() []string {
		t.Helper()
		hs, err := c.Keyword(ctx, acme, memory.Filter{}, []string{"otter"}, 10)
		if err != nil {
			t.Fatal(err)
		}
		return ids(hs)
	}
	if got := search(); got != nil {
		t.Fatalf("empty partition: %v", got)
	}
	src.put(acme, memory.Memory{ID: "a", Content: "otter"})
	src.put(acme, memory.Memory{ID: "b", Content: "sea otter"})
	if got := search(); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("after two puts: %v", got)
	}
	loads := src.loads
	if search(); src.loads != loads {
		t.Errorf("a search with no write between loaded again")
	}
	src.put(acme, memory.Memory{ID: "d", Content: "otter otter"})
	if got := search(); !slices.Equal(got, []string{"d", "a", "b"}) {
		t.Errorf("after an append: %v", got)
	}
	src.remove(acme, "a")
	if got := search(); !slices.Equal(got, []string{"d", "b"}) {
		t.Errorf("after a change: %v", got)
	}
	docs, df, err := c.TermStats(ctx, acme, []string{"otter", "sea", "otter", "whale"})
	if err != nil || docs != 2 || !maps(df, map[string]int{"otter": 2, "sea": 1, "whale": 0}) {
		t.Errorf("TermStats = %d %v %v", docs, df, err)
	}
	// A failed load serves nothing stale and is retried.
	src.fail = errors.New("disk gone")
	src.put(acme, memory.Memory{ID: "e", Content: "otter"})
	if _, err := c.Keyword(ctx, acme, memory.Filter{}, []string{"otter"}, 10); err == nil {
		t.Error("search after a failed load succeeded")
	}
	src.fail = nil
	if got := search(); len(got) != 3 {
		t.Errorf("after the failure cleared: %v", got)
	}
}

func maps(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestVector(t *testing.T) {
	src := newSource()
	put := func(id, model string, v ...float32) {
		var e *memory.Embedding
		if model != "" {
			e = &memory.Embedding{Model: model, Vector: v}
		}
		src.put(acme, memory.Memory{ID: id, Embedding: e})
	}
	put("x", "m1", 1, 0, 0)
	put("y", "m1", 0, 2, 0)
	put("xy", "m1", 1, 1, 0)
	put("other-model", "m2", 1, 0, 0)
	put("other-width", "m1", 1, 0)
	put("zero", "m1", 0, 0, 0)
	put("none", "")
	c := memindex.New(src, nil)
	tests := []struct {
		name string
		q    memory.Embedding
		want []string
	}{
		{"nearest first", memory.Embedding{Model: "m1", Vector: []float32{3, 0.1, 0}}, []string{"x", "xy", "y"}},
		{"scale does not matter", memory.Embedding{Model: "m1", Vector: []float32{0, 0.001, 0}}, []string{"y", "xy", "x"}},
		{"unknown model", memory.Embedding{Model: "m3", Vector: []float32{1, 0, 0}}, nil},
		{"zero query", memory.Embedding{Model: "m1", Vector: []float32{0, 0, 0}}, nil},
		{"non-finite query", memory.Embedding{Model: "m1", Vector: []float32{float32(math.Inf(1)), 0, 0}}, nil},
	}
	for _, tt := range tests {
		hs, err := c.Vector(ctx, acme, memory.Filter{}, tt.q, 10)
		if err != nil {
			t.Fatal(err)
		}
		if got := ids(hs); !slices.Equal(got, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
	hs, _ := c.Vector(ctx, acme, memory.Filter{}, memory.Embedding{Model: "m1", Vector: []float32{1, 1, 0}}, 1)
	if len(hs) != 1 || hs[0].Memory.ID != "xy" || math.Abs(hs[0].Score-1) > 1e-6 || hs[0].Memory.Embedding != nil {
		t.Errorf("identical direction: %+v, want xy with cosine 1 (and no embedding)", hs)
	}
}

func TestAdjacent(t *testing.T) {
	src := newSource()
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	// Written out of creation order: neighbours follow creation time.
	src.put(acme, memory.Memory{ID: "3", ConversationID: "c", CreatedAt: at(3)})
	src.put(acme, memory.Memory{ID: "1", ConversationID: "c", CreatedAt: at(1)})
	src.put(acme, memory.Memory{ID: "2", ConversationID: "c", CreatedAt: at(2), Type: "episodic"})
	src.put(acme, memory.Memory{ID: "4", ConversationID: "c", CreatedAt: at(3)}) // same time as 3: after it by Seq
	src.put(acme, memory.Memory{ID: "lone", ConversationID: "d", CreatedAt: at(1)})
	src.put(acme, memory.Memory{ID: "none", CreatedAt: at(1)})
	c := memindex.New(src, nil)
	tests := []struct {
		name string
		f    memory.Filter
		ids  []string
		want map[string][]string
	}{
		{"both sides", memory.Filter{}, []string{"2", "3"}, map[string][]string{"2": {"1", "3"}, "3": {"2", "4"}}},
		{"ends", memory.Filter{}, []string{"1", "4"}, map[string][]string{"1": {"2"}, "4": {"3"}}},
		{"alone, without conversation, unknown", memory.Filter{}, []string{"lone", "none", "nope"}, map[string][]string{}},
		{"filter skips to the next match", memory.Filter{Type: "episodic"}, []string{"1", "3"}, map[string][]string{"1": {"2"}, "3": {"2"}}},
	}
	for _, tt := range tests {
		near, err := c.Adjacent(ctx, acme, tt.f, tt.ids)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string][]string{}
		for id, ms := range near {
			for _, m := range ms {
				got[id] = append(got[id], m.ID)
			}
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s (-want +got)\n%s", tt.name, diff)
		}
	}
}

func TestPartitionsAndBound(t *testing.T) {
	src := newSource()
	keys := []memindex.Key{acme, {Tenant: "acme", Scope: "agent", Owner: "b"}, {Tenant: "umbrella", Scope: "agent", Owner: "a"}}
	for i, k := range keys {
		for j := range 50 {
			src.put(k, memory.Memory{ID: fmt.Sprint(i, "-", j), Content: "shared words in every tenant"})
		}
	}
	c := memindex.New(src, &memindex.Options{MaxBytes: 1}) // holds one partition at a time
	for range 2 {
		for i, k := range keys {
			hs, err := c.Keyword(ctx, k, memory.Filter{}, memory.Terms("shared"), 100)
			if err != nil {
				t.Fatal(err)
			}
			if len(hs) != 50 {
				t.Fatalf("%v: %d hits, want its own 50", k, len(hs))
			}
			for _, h := range hs {
				if want := fmt.Sprint(i, "-"); !strings.HasPrefix(h.Memory.ID, want) {
					t.Fatalf("%v: hit %s is not one of its memories", k, h.Memory.ID)
				}
			}
		}
	}
	if src.loads != 6 {
		t.Errorf("loads = %d, want 6: a bound of one partition evicts the others", src.loads)
	}
	if c.Size() <= 0 {
		t.Errorf("Size = %d", c.Size())
	}
}

func TestConcurrentSearchesAndWrites(t *testing.T) {
	src := newSource()
	c := memindex.New(src, nil)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 200 {
				src.put(acme, memory.Memory{ID: fmt.Sprint(w, "-", i), Content: "heron"})
				if i%50 == 0 {
					src.remove(acme, fmt.Sprint(w, "-", i))
				}
				if _, err := c.Keyword(ctx, acme, memory.Filter{}, []string{"heron"}, 5); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	docs, _, err := c.TermStats(ctx, acme, nil)
	if err != nil || docs != 4*200-4*4 {
		t.Errorf("docs = %d, %v; want %d", docs, err, 4*200-4*4)
	}
}

// BenchmarkLoad builds the index of a partition of 10k memories with
// 256-wide vectors from an in-memory source: the cost a search pays after
// a change to the partition (the store's read of the rows comes on top).
func BenchmarkLoad(b *testing.B) {
	src := newSource()
	emb := memory.NewHashEmbedder(0)
	r := rand.New(rand.NewPCG(5, 6))
	words := []string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet",
		"kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango"}
	for i := range 10_000 {
		var text string
		for range 12 + r.IntN(20) {
			text += words[r.IntN(len(words))] + fmt.Sprint(r.IntN(50)) + " "
		}
		src.put(acme, memory.Memory{ID: fmt.Sprint("m", i), Content: text, ConversationID: fmt.Sprint("c", i/100),
			CreatedAt: t0.Add(time.Duration(i) * time.Second), Embedding: &memory.Embedding{Model: emb.ModelID(), Vector: emb.Vector(text)}})
	}
	for b.Loop() {
		c := memindex.New(src, nil)
		if _, _, err := c.TermStats(ctx, acme, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// An entry kept up to date through appends, changes, deletions and reused
// Seqs answers exactly as one built afresh from the same rows.
func TestIncrementalEqualsFresh(t *testing.T) {
	src := newSource()
	emb := memory.NewHashEmbedder(32)
	r := rand.New(rand.NewPCG(11, 12))
	words := []string{"river", "stone", "maple", "harbor", "lantern", "copper", "meadow", "falcon", "ember", "quartz", "willow", "summit"}
	text := func() string {
		var b []byte
		for range 2 + r.IntN(8) {
			b = append(b, words[r.IntN(len(words))]...)
			b = append(b, ' ')
		}
		return string(b)
	}
	n := 0
	newMem := func() memory.Memory {
		n++
		c := text()
		return memory.Memory{ID: fmt.Sprint("m", n), Content: c, Version: 1, ConversationID: fmt.Sprint("c", r.IntN(4)),
			CreatedAt: t0.Add(time.Duration(r.IntN(1000)) * time.Second),
			Embedding: &memory.Embedding{Model: emb.ModelID(), Vector: emb.Vector(c)}}
	}
	for range 200 {
		src.put(acme, newMem())
	}
	var logs strings.Builder
	var logMu sync.Mutex
	live := memindex.New(src, &memindex.Options{Logger: slog.New(slog.NewTextHandler(lockedWriter{&logMu, &logs},
		&slog.HandlerOptions{Level: slog.LevelDebug}))})
	check := func(step int) {
		t.Helper()
		fresh := memindex.New(src, nil)
		for q := range 6 {
			terms := memory.Terms(text())
			f := memory.Filter{}
			if q%2 == 1 {
				f.ConversationID = "c1"
			}
			a, err1 := live.Keyword(ctx, acme, f, terms, 15)
			b, err2 := fresh.Keyword(ctx, acme, f, terms, 15)
			if err1 != nil || err2 != nil {
				t.Fatal(err1, err2)
			}
			if diff := cmp.Diff(b, a); diff != "" {
				t.Fatalf("step %d: keyword %v (-fresh +incremental):\n%s", step, terms, diff)
			}
			qv := memory.Embedding{Model: emb.ModelID(), Vector: emb.Vector(text())}
			a, _ = live.Vector(ctx, acme, f, qv, 15)
			b, _ = fresh.Vector(ctx, acme, f, qv, 15)
			if diff := cmp.Diff(b, a); diff != "" {
				t.Fatalf("step %d: vector (-fresh +incremental):\n%s", step, diff)
			}
			da, dfa, _ := live.TermStats(ctx, acme, terms)
			db, dfb, _ := fresh.TermStats(ctx, acme, terms)
			if da != db || !maps(dfa, dfb) {
				t.Fatalf("step %d: TermStats %d %v, fresh %d %v", step, da, dfa, db, dfb)
			}
			ids := []string{fmt.Sprint("m", 1+r.IntN(n)), fmt.Sprint("m", 1+r.IntN(n))}
			aa, _ := live.Adjacent(ctx, acme, f, ids)
			ab, _ := fresh.Adjacent(ctx, acme, f, ids)
			if diff := cmp.Diff(ab, aa); diff != "" {
				t.Fatalf("step %d: adjacent %v (-fresh +incremental):\n%s", step, ids, diff)
			}
		}
	}
	check(0)
	for step := 1; step <= 60; step++ {
		for range 1 + r.IntN(3) {
			docs := src.docs[acme]
			switch op := r.IntN(5); {
			case op == 0:
				src.put(acme, newMem())
			case op == 1 && len(docs) > 0:
				src.remove(acme, docs[r.IntN(len(docs))].Memory.ID)
			case op == 2 && len(docs) > 0:
				src.update(acme, docs[r.IntN(len(docs))].Memory.ID, text())
			case op == 3 && len(docs) > 0:
				src.reuse(acme, newMem())
			default:
				src.put(acme, newMem())
			}
		}
		check(step)
	}
	loads := src.loads
	// A rebuild after most of the partition changed, not a pile of dead
	// slots.
	for _, d := range slices.Clone(src.docs[acme]) {
		src.update(acme, d.Memory.ID, text())
	}
	check(61)
	if src.loads == loads {
		t.Error("no load after every memory changed")
	}
	logMu.Lock()
	defer logMu.Unlock()
	if c := strings.Count(logs.String(), "how=changes"); c < 30 {
		t.Errorf("%d refreshes applied changes in place; want most of the 60 steps", c)
	}
	if !strings.Contains(logs.String(), "how=full") {
		t.Error("no rebuild logged")
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// awaitLog waits until the cache's log holds want.
func awaitLog(t testing.TB, mu *sync.Mutex, logs *strings.Builder, want string, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		mu.Lock()
		ok := strings.Contains(logs.String(), want)
		mu.Unlock()
		if ok {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("log never said %q", want)
}

// Above ApproxAbove a whole-partition search walks the graph once it is
// built, finds what the scan finds on easy data, skips what is dead or
// expired, and follows appends; filtered searches keep scanning.
func TestVectorGraph(t *testing.T) {
	src := newSource()
	r := rand.New(rand.NewPCG(21, 22))
	const dims = 16
	vec := func() []float32 {
		v := make([]float32, dims)
		for i := range v {
			v[i] = float32(r.NormFloat64())
		}
		return v
	}
	var vecs [][]float32
	for i := range 400 {
		v := vec()
		vecs = append(vecs, v)
		m := memory.Memory{ID: fmt.Sprint("v", i), Version: 1, Embedding: &memory.Embedding{Model: "m", Vector: slices.Clone(v)}}
		if i%2 == 1 {
			m.ConversationID = "odd"
		}
		if i == 7 {
			m.ExpiresAt = t0
		}
		src.put(acme, m)
	}
	var logs strings.Builder
	var mu sync.Mutex
	c := memindex.New(src, &memindex.Options{ApproxAbove: 100, Logger: slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs},
		&slog.HandlerOptions{Level: slog.LevelDebug}))})
	exact := memindex.New(src, &memindex.Options{ApproxAbove: -1})
	search := func(c *memindex.Cache, f memory.Filter, q []float32) []string {
		t.Helper()
		hs, err := c.Vector(ctx, acme, f, memory.Embedding{Model: "m", Vector: q}, 10)
		if err != nil {
			t.Fatal(err)
		}
		return ids(hs)
	}
	search(c, memory.Filter{}, vecs[0]) // starts the build
	awaitLog(t, &mu, &logs, "vector graph built", 20*time.Second)
	recall := func(f memory.Filter) float64 {
		found, total := 0, 0
		for i := range 40 {
			q := vecs[i*9%len(vecs)]
			want := search(exact, f, q)
			got := search(c, f, q)
			total += len(want)
			for _, id := range got {
				if slices.Contains(want, id) {
					found++
				}
			}
		}
		return float64(found) / float64(total)
	}
	if got := recall(memory.Filter{Now: t0}); got < 0.95 {
		t.Errorf("recall@10 through the graph = %.2f, want at least 0.95", got)
	}
	if got := search(c, memory.Filter{Now: t0}, vecs[7]); slices.Contains(got, "v7") {
		t.Errorf("an expired memory was found through the graph: %v", got)
	}
	if got := search(c, memory.Filter{}, vecs[7]); len(got) == 0 || got[0] != "v7" {
		t.Errorf("search for v7 before its expiry = %v", got)
	}
	if got := recall(memory.Filter{ConversationID: "odd"}); got != 1 {
		t.Errorf("a filtered search has recall %.2f, want the scan's 1", got)
	}
	src.remove(acme, "v3")
	if got := search(c, memory.Filter{}, vecs[3]); slices.Contains(got, "v3") {
		t.Errorf("a forgotten memory was found through the graph: %v", got)
	}
	v := vec()
	src.put(acme, memory.Memory{ID: "late", Version: 1, Embedding: &memory.Embedding{Model: "m", Vector: slices.Clone(v)}})
	if got := search(c, memory.Filter{}, v); len(got) == 0 || got[0] != "late" {
		t.Errorf("a memory added after the build = %v, want it first", got)
	}
}

// gatedSource holds every load until release is closed, and counts the
// loads begun; begun receives one value per load.
type gatedSource struct {
	*source
	release chan struct{}
	begun   chan struct{}
	loads   *atomic.Int32
}

func (s gatedSource) Load(ctx context.Context, k memindex.Key, after int64, add func(*memindex.Doc)) error {
	s.loads.Add(1)
	select {
	case s.begun <- struct{}{}:
	default:
	}
	select {
	case <-s.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	return s.source.Load(ctx, k, after, add)
}

// A load longer than a search may wait finishes anyway, for the next
// search: the search that started it gives up while it runs, and the next
// search finds the partition loaded without loading it again.
func TestLoadOutlivesItsSearch(t *testing.T) {
	src := newSource()
	src.put(acme, memory.Memory{ID: "a", Content: "otter"})
	gs := gatedSource{src, make(chan struct{}), make(chan struct{}, 1), new(atomic.Int32)}
	c := memindex.New(gs, nil)
	short, cancel := context.WithCancel(ctx)
	searched := make(chan error, 1)
	go func() {
		_, err := c.Keyword(short, acme, memory.Filter{}, []string{"otter"}, 10)
		searched <- err
	}()
	<-gs.begun
	cancel() // the search gives up while its load runs
	if err := <-searched; !errors.Is(err, context.Canceled) {
		t.Fatalf("search given up during the load = %v, want its cancellation", err)
	}
	close(gs.release)
	if hs, err := c.Keyword(ctx, acme, memory.Filter{}, []string{"otter"}, 10); err != nil || len(hs) != 1 {
		t.Fatalf("search after the load = %v, %v", ids(hs), err)
	}
	if n := gs.loads.Load(); n != 1 {
		t.Errorf("%d loads, want 1: the first was cut off with its search", n)
	}
}

// The exact scan ranks by an int8 copy, then scores the best candidates
// with the float32 vectors: what it returns is what a float32 scan returns.
func TestExactScanMatchesFloat(t *testing.T) {
	src := newSource()
	r := rand.New(rand.NewPCG(41, 42))
	const n, dims = 3000, 64
	var vecs [][]float32
	for i := range n {
		v := make([]float32, dims)
		for j := range v {
			v[j] = float32(r.NormFloat64())
		}
		vecs = append(vecs, v)
		src.put(acme, memory.Memory{ID: fmt.Sprint("v", i), Version: 1, Embedding: &memory.Embedding{Model: "m", Vector: slices.Clone(v)}})
	}
	c := memindex.New(src, &memindex.Options{ApproxAbove: -1})
	cos := func(a, b []float32) float64 {
		return float64(memory.Dot(a, b)) / math.Sqrt(float64(memory.Dot(a, a))*float64(memory.Dot(b, b)))
	}
	found, total := 0, 0
	for qi := range 50 {
		q := make([]float32, dims)
		for j := range q {
			q[j] = float32(r.NormFloat64())
		}
		type scored struct {
			id string
			s  float64
		}
		var all []scored
		for i, v := range vecs {
			all = append(all, scored{fmt.Sprint("v", i), cos(q, v)})
		}
		slices.SortStableFunc(all, func(a, b scored) int {
			switch {
			case a.s > b.s:
				return -1
			case a.s < b.s:
				return 1
			}
			return 0
		})
		hs, err := c.Vector(ctx, acme, memory.Filter{}, memory.Embedding{Model: "m", Vector: q}, 10)
		if err != nil || len(hs) != 10 {
			t.Fatalf("query %d: %d hits, %v", qi, len(hs), err)
		}
		for i, h := range hs {
			if math.Abs(h.Score-cos(q, vecs[indexOf(h.Memory.ID)])) > 1e-5 {
				t.Fatalf("query %d: hit %d scored %v, its cosine is %v", qi, i, h.Score, cos(q, vecs[indexOf(h.Memory.ID)]))
			}
			for _, w := range all[:10] {
				if w.id == h.Memory.ID {
					found++
				}
			}
		}
		total += 10
	}
	if recall := float64(found) / float64(total); recall < 0.99 {
		t.Errorf("recall@10 against a float32 scan = %.3f, want at least 0.99", recall)
	}
}

func indexOf(id string) int {
	var i int
	fmt.Sscanf(id, "v%d", &i)
	return i
}

// Stats counts the partitions loaded and their live memories.
func TestStats(t *testing.T) {
	src := newSource()
	c := memindex.New(src, nil)
	other := memindex.Key{Tenant: "acme", Scope: "agent", Owner: "b"}
	if st := c.Stats(); st != (memindex.Stats{}) {
		t.Fatalf("empty cache: %+v", st)
	}
	for i := range 3 {
		src.put(acme, memory.Memory{ID: fmt.Sprint("a", i), Content: "otter"})
	}
	src.put(other, memory.Memory{ID: "b0", Content: "otter"})
	for _, k := range []memindex.Key{acme, other} {
		if _, err := c.Keyword(ctx, k, memory.Filter{}, []string{"otter"}, 10); err != nil {
			t.Fatal(err)
		}
	}
	src.remove(acme, "a0")
	if _, err := c.Keyword(ctx, acme, memory.Filter{}, []string{"otter"}, 10); err != nil {
		t.Fatal(err)
	}
	st := c.Stats()
	if st.Partitions != 2 || st.Memories != 3 || st.Bytes != c.Size() || st.Bytes <= 0 {
		t.Errorf("Stats = %+v, want 2 partitions of 3 live memories in %d bytes", st, c.Size())
	}
}
