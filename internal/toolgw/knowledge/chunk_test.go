package knowledge

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

func TestNormalize(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"line breaks", "a\r\nb\rc\n", "a\nb\nc"},
		{"trailing spaces", "one  \t\ntwo \n", "one\ntwo"},
		{"blank edges", "\n\n  \n  body\n\n\n", "body"},
		{"inner blank lines kept", "p1\n\n\np2", "p1\n\n\np2"},
		{"NFC", "cafe\u0301", "caf\u00e9"},
		{"leading indentation of the first line", "   x", "x"},
		{"only white space", " \n\t\r\n", ""},
	} {
		if got := Normalize(c.in); got != c.want {
			t.Errorf("%s: Normalize(%q) = %q, want %q", c.name, c.in, got, c.want)
		}
	}
	if Digest(Normalize("a\r\nb  ")) != Digest(Normalize("a\nb")) {
		t.Error("two spellings of one text have different digests")
	}
}

func texts(cs []Chunk) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Text)
	}
	return out
}

func TestSplit(t *testing.T) {
	for _, c := range []struct {
		name string
		text string
		o    ChunkOptions
		want []string
	}{
		{"short text is one chunk", "One. Two.", ChunkOptions{}, []string{"One. Two."}},
		{"empty text has none", "", ChunkOptions{}, nil},
		{"sentences packed, the last one overlapping",
			"Aaaa aaaa. Bbbb bbbb. Cccc cccc. Dddd dddd.", ChunkOptions{MaxBytes: 22, OverlapBytes: 10},
			[]string{"Aaaa aaaa. Bbbb bbbb.", "Bbbb bbbb. Cccc cccc.", "Cccc cccc. Dddd dddd."}},
		{"no overlap", "Aaaa aaaa. Bbbb bbbb. Cccc cccc.", ChunkOptions{MaxBytes: 22, OverlapBytes: -1},
			[]string{"Aaaa aaaa. Bbbb bbbb.", "Cccc cccc."}},
		{"a chunk half full ends at a paragraph break",
			"Aaaa aaaa aaaa.\n\nBbbb. Cccc cccc cccc cccc.", ChunkOptions{MaxBytes: 30, OverlapBytes: -1},
			[]string{"Aaaa aaaa aaaa.", "Bbbb. Cccc cccc cccc cccc."}},
		{"a long sentence is cut at spaces",
			"alpha beta gamma delta epsilon zeta eta theta", ChunkOptions{MaxBytes: 16, OverlapBytes: -1},
			[]string{"alpha beta gamma", "delta epsilon", "zeta eta theta"}},
		{"a word longer than a chunk is cut at character boundaries",
			strings.Repeat("é", 12), ChunkOptions{MaxBytes: 16, OverlapBytes: -1},
			[]string{strings.Repeat("é", 8), strings.Repeat("é", 4)}},
		{"lines are units", "first line\nsecond line", ChunkOptions{MaxBytes: 16, OverlapBytes: -1},
			[]string{"first line", "second line"}},
	} {
		got := Split(c.text, c.o)
		if d := cmp.Diff(c.want, texts(got)); d != "" {
			t.Errorf("%s: (-want +got):\n%s", c.name, d)
		}
		checkChunks(t, c.text, c.o, got)
	}
}

// The offsets are code points, as a Python caller indexes the text.
func TestSplitOffsets(t *testing.T) {
	text := "Ünïcödé first. Second one here."
	cs := Split(text, ChunkOptions{MaxBytes: 20, OverlapBytes: -1})
	if len(cs) != 2 {
		t.Fatalf("chunks %q", texts(cs))
	}
	runes := []rune(text)
	for _, c := range cs {
		if string(runes[c.Start:c.End]) != c.Text {
			t.Errorf("chunk %q: runes [%d:%d] are %q", c.Text, c.Start, c.End, string(runes[c.Start:c.End]))
		}
	}
}

// checkChunks holds chunks to Split's promises: each is a non-empty,
// trimmed, verbatim span of at most MaxBytes, at code-point offsets that
// match its byte offsets; chunks advance; every non-space character of
// the text is in one; and there are no more of them than a text of that
// length can need.
func checkChunks(t *testing.T, text string, o ChunkOptions, cs []Chunk) {
	t.Helper()
	o = o.resolve()
	covered := 0
	prevStart, prevEnd := -1, -1
	for i, c := range cs {
		if c.Text == "" || c.ByteEnd-c.ByteStart > o.MaxBytes || text[c.ByteStart:c.ByteEnd] != c.Text {
			t.Fatalf("chunk %d %q: bytes [%d:%d] of a text of %d, max %d", i, c.Text, c.ByteStart, c.ByteEnd, len(text), o.MaxBytes)
		}
		if strings.TrimSpace(c.Text) != c.Text || !utf8.ValidString(c.Text) && utf8.ValidString(text) {
			t.Fatalf("chunk %d %q is not trimmed or cuts a character", i, c.Text)
		}
		if utf8.ValidString(text) && (c.Start != utf8.RuneCountInString(text[:c.ByteStart]) || c.End != utf8.RuneCountInString(text[:c.ByteEnd])) {
			t.Fatalf("chunk %d: code points [%d:%d] do not match bytes [%d:%d]", i, c.Start, c.End, c.ByteStart, c.ByteEnd)
		}
		if c.ByteStart <= prevStart || c.ByteEnd <= prevEnd {
			t.Fatalf("chunk %d [%d:%d] does not advance past [%d:%d]", i, c.ByteStart, c.ByteEnd, prevStart, prevEnd)
		}
		for j := covered; j < c.ByteStart; j++ {
			if !unicode.IsSpace(rune(text[j])) && text[j] < utf8.RuneSelf {
				t.Fatalf("byte %d (%q) before chunk %d is in no chunk", j, text[j], i)
			}
		}
		covered = max(covered, c.ByteEnd)
		prevStart, prevEnd = c.ByteStart, c.ByteEnd
	}
	if rest := strings.TrimSpace(text[covered:]); rest != "" && utf8.ValidString(rest) {
		t.Fatalf("the text's end %q is in no chunk", rest)
	}
	// A chunk holds at least one new unit, and the units of a stretch of
	// MaxBytes number few: the count is bounded by the length.
	if bound := 2*len(text)/(o.MaxBytes/4) + 2; len(cs) > bound && len(text) > 0 {
		t.Fatalf("%d chunks for %d bytes, more than %d", len(cs), len(text), bound)
	}
}

func FuzzSplit(f *testing.F) {
	for _, s := range []string{
		"", "One. Two! Three? Four.\n\nFive six seven.\nEight",
		strings.Repeat("word ", 400), strings.Repeat("x", 5000), "a.\n\n\n\nb. c.  d.\t e",
		"日本語の文章。二つ目の文。\n\n段落", "\xff\xfe broken. utf8",
	} {
		f.Add(s, 40, 10)
	}
	f.Fuzz(func(t *testing.T, text string, maxBytes, overlap int) {
		if len(text) > 1<<16 {
			return
		}
		o := ChunkOptions{MaxBytes: maxBytes % 4096, OverlapBytes: overlap % 2048}
		checkChunks(t, text, o, Split(text, o))
		norm := Normalize(text)
		if Normalize(norm) != norm {
			t.Fatalf("Normalize is not idempotent on %q", text)
		}
		if !utf8.ValidString(norm) {
			t.Fatalf("Normalize(%q) is not valid UTF-8", text)
		}
		checkChunks(t, norm, o, Split(norm, o))
	})
}
