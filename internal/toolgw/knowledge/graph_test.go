package knowledge

import (
	"strings"
	"testing"
)

func TestWordsAndRuns(t *testing.T) {
	for _, c := range []struct {
		text string
		want []string // names; a lone sentence-initial word to confirm marked "?"
	}{
		{"The Eiffel Tower stands in Paris.", []string{"Eiffel Tower", "Paris"}},
		{"Leonardo da Vinci met the Duke of Milan, and NASA called.", []string{"Leonardo da Vinci", "Duke of Milan", "NASA"}},
		{"Alice's cat met Bob. Carol left.", []string{"Alice?", "Bob", "Carol?"}},
		{"I think A is fine. Then came Mr. Smith.", []string{"Mr", "Smith?"}},
		// "meet" is written in lower case elsewhere: a common word.
		{"Meet Anna Karenina\nTolstoy wrote it", []string{"Anna Karenina", "Tolstoy?"}},
		{"Yesterday Anna left.", []string{"Yesterday Anna"}},
		{"One Two Three Four Five Six Seven words.", nil},
	} {
		var got []string
		for _, r := range runs(words(c.text)) {
			_, s, confirm := nameOf(r, map[string]bool{"meet": true})
			if s == "" {
				continue
			}
			if confirm {
				s += "?"
			}
			got = append(got, s)
		}
		if strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("%q: names %q, want %q", c.text, got, c.want)
		}
	}
}

func TestCommunities(t *testing.T) {
	// Two triangles joined by one light edge: two communities, not one
	// component.
	rels := []relationData{{A: 0, B: 1, Weight: 3}, {A: 1, B: 2, Weight: 3}, {A: 0, B: 2, Weight: 3},
		{A: 3, B: 4, Weight: 3}, {A: 4, B: 5, Weight: 3}, {A: 3, B: 5, Weight: 3}, {A: 2, B: 3, Weight: 1}}
	got := communities(7, rels)
	if len(got) != 2 || len(got[0]) != 3 || len(got[1]) != 3 || got[0][0] != 0 || got[1][0] != 3 {
		t.Errorf("communities = %v, want [0 1 2] and [3 4 5] (6 stands alone)", got)
	}
}

// FuzzGraph builds graphs of any text: no panic, every index in range,
// communities disjoint, and the stored form read back the same.
func FuzzGraph(f *testing.F) {
	for _, s := range []string{"Marie Curie met Pierre Curie in Paris. The Sorbonne hired Marie Curie.",
		"A B C. D'E F-G of H. O'Brien's dog. ÉCOLE Polytechnique. 日本 Tokyo", "", "of of of The The"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if len(text) > 1<<14 {
			return
		}
		var chunks []graphChunk
		for i, c := range Split(Normalize(text), ChunkOptions{MaxBytes: 64}) {
			chunks = append(chunks, graphChunk{ref: chunkRef{0, i}, text: c.Text})
		}
		g := buildGraph([]string{"doc"}, chunks, graphLimits{entities: 50, relationships: 100})
		b, err := encodeGraph(g)
		if err != nil {
			t.Fatal(err)
		}
		ix, err := decodeGraph(b)
		if err != nil {
			t.Fatalf("decode what was encoded: %v", err)
		}
		if len(ix.Entities) != len(g.Entities) || len(ix.Relationships) != len(g.Relationships) {
			t.Fatal("the graph changed in a round trip")
		}
		seen := map[int]bool{}
		for _, c := range ix.Communities {
			for _, m := range c {
				if seen[m] || ix.Entities[m].Community < 0 {
					t.Fatalf("entity %d is in two communities or marked in none", m)
				}
				seen[m] = true
			}
		}
		for _, e := range ix.mentionsIn(text) {
			if e < 0 || e >= len(ix.Entities) {
				t.Fatalf("mention of entity %d of %d", e, len(ix.Entities))
			}
		}
	})
}
