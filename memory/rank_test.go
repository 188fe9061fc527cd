package memory_test

import (
	"context"
	"math"
	"slices"
	"testing"

	"novaos.dev/novaos/memory"
)

func hit(id string, score float64, content string) memory.Hit {
	return memory.Hit{Memory: memory.Memory{ID: id, Content: content}, Score: score}
}

func ids(fs []memory.Fused) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Memory.ID)
	}
	return out
}

func TestFuse(t *testing.T) {
	kw := []memory.Hit{hit("a", 9, "tea"), hit("b", 5, "tea time"), hit("c", 1, "coffee")}
	vec := []memory.Hit{hit("b", 0.9, "tea time"), hit("d", 0.5, "teapot"), hit("a", 0.4, "tea")}
	tests := []struct {
		name string
		opts memory.FuseOptions
		want []string
	}{
		{"equal weights: agreement wins", memory.FuseOptions{}, []string{"b", "a", "d", "c"}},
		{"keyword only", memory.FuseOptions{KeywordWeight: 1}, []string{"a", "b", "c", "d"}},
		{"vector only", memory.FuseOptions{VectorWeight: 1}, []string{"b", "d", "a", "c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := memory.Fuse([]string{"tea"}, kw, vec, tt.opts)
			if !slices.Equal(ids(got), tt.want) {
				t.Errorf("order %v, want %v", ids(got), tt.want)
			}
			for _, f := range got {
				if f.Score < 0 || f.Score > 1 {
					t.Errorf("%s: score %v outside 0..1", f.Memory.ID, f.Score)
				}
			}
		})
	}
	got := memory.Fuse([]string{"tea"}, kw, vec, memory.FuseOptions{})
	if got[1].KeywordRank != 1 || got[1].VectorRank != 3 {
		t.Errorf("a ranks %d/%d, want 1/3", got[1].KeywordRank, got[1].VectorRank)
	}
	if got[3].VectorRank != 0 {
		t.Errorf("c vector rank %d, want 0", got[3].VectorRank)
	}
}

func TestSimilarityFixedPoints(t *testing.T) {
	e := memory.NewHashEmbedder(0)
	q := "User prefers concise weekly summaries"
	cos := func(a, b string) float64 { return memory.Cosine(e.Vector(a), e.Vector(b)) }
	same := memory.Similarity(memory.Terms(q), memory.Terms(q), cos(q, q))
	if math.Abs(same-1) > 1e-3 {
		t.Errorf("identical text scores %v, want 1", same)
	}
	other := "Deploy with blue green rollout"
	if s := memory.Similarity(memory.Terms(q), memory.Terms(other), max(0, cos(q, other))); s > 0.15 {
		t.Errorf("unrelated text scores %v, want near 0", s)
	}
	covering := "Every week the user wants summaries that are concise and prefers bullet points"
	if s := memory.Similarity(memory.Terms(q), memory.Terms(covering), cos(q, covering)); s < 0.5 {
		t.Errorf("a memory holding every query term scores %v, want >= 0.5", s)
	}
	if s := memory.Similarity(nil, memory.Terms(q), 0); s != 0 {
		t.Errorf("empty query scores %v", s)
	}
}

func TestHashEmbedder(t *testing.T) {
	e := memory.NewHashEmbedder(0)
	if e.Dims() != memory.DefaultDims || e.ModelID() != "novaos-hash-v1-256" {
		t.Fatalf("dims %d model %q", e.Dims(), e.ModelID())
	}
	vs, err := e.Embed(context.Background(), []string{"The cat sat on the mat", "The cat sat on the mat", "Quarterly revenue report", ""})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(vs[0], vs[1]) {
		t.Error("not deterministic")
	}
	for i, v := range vs[:3] {
		var n float64
		for _, x := range v {
			n += float64(x) * float64(x)
		}
		if math.Abs(n-1) > 1e-4 {
			t.Errorf("vector %d has norm² %v, want 1", i, n)
		}
	}
	if c := memory.Cosine(vs[0], vs[2]); c > 0.2 {
		t.Errorf("unrelated texts have cosine %v", c)
	}
	if c := memory.Cosine(e.Vector("colour preferences"), e.Vector("color preference")); c < 0.5 {
		t.Errorf("spelling variants have cosine %v, want >= 0.5", c)
	}
	if memory.Cosine(vs[3], vs[0]) != 0 {
		t.Error("an empty text should have a zero vector")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.Embed(ctx, []string{"x"}); err == nil {
		t.Error("Embed ignored a cancelled context")
	}
	if memory.NewHashEmbedder(64).ModelID() == e.ModelID() {
		t.Error("a different width must be a different model id")
	}
}

func TestTopK(t *testing.T) {
	tk := memory.NewTopK[string](3)
	for i, s := range []float64{0.1, 0.9, 0.5, 0.9, 0.3, 0.7} {
		tk.Offer(string(rune('a'+i)), s)
	}
	got, scores := tk.Sorted()
	if !slices.Equal(got, []string{"b", "d", "f"}) || !slices.Equal(scores, []float64{0.9, 0.9, 0.7}) {
		t.Errorf("Sorted = %v %v", got, scores)
	}
	if tk.Min() != 0.7 {
		t.Errorf("Min = %v", tk.Min())
	}
	empty := memory.NewTopK[int](0)
	empty.Offer(1, 1)
	if got, _ := empty.Sorted(); len(got) != 0 {
		t.Errorf("k=0 kept %v", got)
	}
}

func TestVectorRoundTrip(t *testing.T) {
	v := memory.NewHashEmbedder(32).Vector("round trip")
	got, err := memory.DecodeVector(memory.EncodeVector(v))
	if err != nil || !slices.Equal(got, v) {
		t.Fatalf("DecodeVector = %v, %v", got, err)
	}
	for _, bad := range [][]byte{{1, 2, 3}, {0, 0, 0xc0, 0x7f}, make([]byte, 4*(memory.MaxDims+1))} {
		if _, err := memory.DecodeVector(bad); err == nil {
			t.Errorf("DecodeVector(% x…) accepted damaged bytes", bad[:min(len(bad), 4)])
		}
	}
}

func FuzzDecodeVector(f *testing.F) {
	f.Add(memory.EncodeVector([]float32{1, -0.5, 0}))
	f.Add([]byte{0, 0, 0x80, 0x7f})
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := memory.DecodeVector(b)
		if err != nil {
			return
		}
		if got := memory.EncodeVector(v); string(got) != string(b) {
			// -0 and NaN payloads aside, a decoded vector re-encodes to
			// its bytes; NaN is refused, so only exact equality is left.
			t.Fatalf("re-encoded % x, want % x", got, b)
		}
	})
}

func TestTags(t *testing.T) {
	for _, tags := range [][]string{nil, {"a"}, {"a", "b c", "ü"}} {
		if got := memory.SplitTags(memory.JoinTags(tags)); !slices.Equal(got, tags) {
			t.Errorf("SplitTags(JoinTags(%q)) = %q", tags, got)
		}
	}
}

func TestSmooth(t *testing.T) {
	fused := memory.Fuse([]string{"name"}, []memory.Hit{hit("q", 3, "what did you name her"), hit("x", 1, "name tag")}, nil, memory.FuseOptions{K: 5, KeywordWeight: 1})
	adj := map[string][]memory.Memory{"q": {{ID: "answer", Content: "Pepper"}, {ID: "x", Content: "name tag"}}}
	got := memory.Smooth([]string{"name"}, fused, adj, 0.3)
	if !slices.Equal(ids(got), []string{"x", "q", "answer"}) { // x gains enough to pass q
		t.Fatalf("order %v", ids(got))
	}
	// q lends 0.3 of its 1/6 to each neighbour: x (1/7) gets 0.05 more.
	if d := got[0].RRF - (1.0/7 + 0.3/6); math.Abs(d) > 1e-9 {
		t.Errorf("x scores %v", got[0].RRF)
	}
	if d := got[2].RRF - 0.3/6; math.Abs(d) > 1e-9 || got[2].KeywordRank != 0 {
		t.Errorf("the neighbour joined as %+v", got[2])
	}
	if got := memory.Smooth(nil, fused, nil, 0.3); !slices.Equal(ids(got), ids(fused)) {
		t.Errorf("no neighbours changed the order: %v", ids(got))
	}
}

func TestQueryVectorWeighsRareWords(t *testing.T) {
	e := memory.NewHashEmbedder(0)
	q := "Caroline adopted a greyhound"
	common, rare := "Caroline Caroline went out", "a greyhound adopted"
	plain := e.Vector(q)
	if memory.Cosine(plain, e.Vector(common)) < memory.Cosine(e.QueryVector(q, func(string) float64 { return 1 }), e.Vector(common))-1e-6 {
		t.Error("a weight of 1 for every word is not the plain vector")
	}
	idf := func(term string) float64 {
		if term == "carolin" {
			return memory.QueryIDF(100, 90)
		}
		return memory.QueryIDF(100, 2)
	}
	w := e.QueryVector(q, idf)
	if memory.Cosine(w, e.Vector(rare)) <= memory.Cosine(plain, e.Vector(rare)) {
		t.Error("weighting did not favour the memory holding the rare words")
	}
	if memory.QueryIDF(100, 99) >= memory.QueryIDF(100, 1) {
		t.Error("QueryIDF does not fall with document frequency")
	}
}

func FuzzDecodeMemory(f *testing.F) {
	conf := 0.5
	b, _ := memory.EncodeMemory(&memory.Memory{ID: "m1", Partition: memory.Partition{Scope: memory.ScopeAgent, Owner: "a"},
		Content: "x", Type: memory.TypeSemantic, Tags: []string{"t"}, Confidence: &conf, Custom: []byte(`{"k":1}`), Version: 1})
	f.Add(b)
	f.Add([]byte(`{"partition":{"Scope":"platform"}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := memory.DecodeMemory(b)
		if err != nil {
			return
		}
		if !m.Partition.Scope.Valid() || !m.Type.Valid() {
			t.Fatalf("accepted %+v", m)
		}
		again, err := memory.EncodeMemory(m)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		if _, err := memory.DecodeMemory(again); err != nil {
			t.Fatalf("re-decode: %v", err)
		}
	})
}
