package memory_test

import (
	"slices"
	"testing"

	"novaos.dev/novaos/memory"
)

func TestTerms(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"When did Caroline go to the LGBTQ support group?", []string{"carolin", "lgbtq", "support", "group"}},
		{"Caroline's painting", []string{"carolin", "paint"}},
		{"I'm running; she ran.", []string{"run", "ran"}},
		{"Café CRÈME in São Paulo", []string{"café", "crème", "são", "paulo"}},
		{"version 2 of v8", []string{"version", "2", "v8"}},
		{"not never", []string{"not", "never"}},
		{"", nil},
		{"!!! ???", nil},
	}
	for _, tt := range tests {
		if got := memory.Terms(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("Terms(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestStemMeetsInflections(t *testing.T) {
	groups := [][]string{
		{"love", "loves", "loved", "loving"},
		{"paint", "paints", "painted", "painting"},
		{"run", "running", "runs"},
		{"try", "tries", "tried"},
		{"box", "boxes"},
		{"summary", "summaries"},
		{"adopt", "adopted", "adopting", "adopts"},
		{"camp", "camping", "camped"},
	}
	for _, g := range groups {
		want := memory.Stem(g[0])
		for _, w := range g[1:] {
			if got := memory.Stem(w); got != want {
				t.Errorf("Stem(%q) = %q, Stem(%q) = %q: want them equal", w, got, g[0], want)
			}
		}
	}
	keep := [][2]string{{"news", "new"}, {"class", "clas"}, {"bus", "bu"}}
	for _, p := range keep {
		if memory.Stem(p[0]) == p[1] {
			t.Errorf("Stem(%q) = %q: over-stemmed", p[0], p[1])
		}
	}
}

func TestTermsDropsHugeTokens(t *testing.T) {
	blob := make([]byte, 100)
	for i := range blob {
		blob[i] = 'a' + byte(i%26)
	}
	if got := memory.Terms("key " + string(blob) + " door"); !slices.Equal(got, []string{"key", "door"}) {
		t.Errorf("Terms = %q", got)
	}
}

func FuzzTerms(f *testing.F) {
	f.Add("When did Caroline go to the LGBTQ support group?")
	f.Add("Ünïcödé ǅ İstanbul ﬁ 𝔘")
	f.Fuzz(func(t *testing.T, s string) {
		for _, term := range memory.Terms(s) {
			if term == "" {
				t.Fatal("empty term")
			}
			// Terms promise letters and digits only, so stores can put
			// them in full-text syntax unescaped.
			for _, r := range term {
				if !isLetterOrDigit(r) {
					t.Fatalf("term %q holds %q", term, r)
				}
			}
		}
	})
}
