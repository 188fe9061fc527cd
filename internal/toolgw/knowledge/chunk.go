package knowledge

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Normalize is the text a document is stored, chunked and deduplicated
// as: valid UTF-8 (a byte that is not becomes U+FFFD), Unicode NFC, line
// breaks as "\n", no white space at the end of a line, and none before
// the first or after the last non-blank line. Two uploads that differ only
// in those are duplicates.
func Normalize(s string) string {
	s = norm.NFC.String(strings.ToValidUTF8(s, "\uFFFD"))
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	var b strings.Builder
	b.Grow(len(s))
	for line := range strings.SplitSeq(s, "\n") {
		b.WriteString(strings.TrimRightFunc(line, unicode.IsSpace))
		b.WriteByte('\n')
	}
	return strings.TrimSpace(b.String())
}

// Digest is the hex SHA-256 of normalised text, what duplicates are found
// by.
func Digest(normalized string) string {
	sum := sha256.Sum256([]byte(normalized))
	return hex.EncodeToString(sum[:])
}

// Chunk is one piece of a document: a verbatim span of its normalised
// text.
type Chunk struct {
	Text string
	// Start and End are the span in code points (as Python and
	// JavaScript index strings), End exclusive.
	Start, End int
	// ByteStart and ByteEnd are the same span in bytes.
	ByteStart, ByteEnd int
}

// ChunkOptions size chunks; zero fields mean the defaults.
type ChunkOptions struct {
	// MaxBytes bounds a chunk (default DefaultChunkBytes; at most
	// memory.MaxContentBytes, which a memory holds).
	MaxBytes int
	// OverlapBytes is how much of a chunk's end, in whole sentences, the
	// next chunk starts with (default DefaultChunkOverlap; at most half
	// of MaxBytes).
	OverlapBytes int
}

// Chunk sizes of the defaults: about 250 English words a chunk, enough
// for a passage to stand on its own and few enough that a match on its
// words ranks it, and two or three sentences of overlap, so a passage
// that straddles a boundary is whole in one of the two chunks.
const (
	DefaultChunkBytes   = 1500
	DefaultChunkOverlap = 200
)

func (o ChunkOptions) resolve() ChunkOptions {
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultChunkBytes
	}
	o.MaxBytes = max(o.MaxBytes, 16)
	if o.OverlapBytes < 0 {
		o.OverlapBytes = 0
	} else if o.OverlapBytes == 0 {
		o.OverlapBytes = min(DefaultChunkOverlap, o.MaxBytes/2)
	}
	o.OverlapBytes = min(o.OverlapBytes, o.MaxBytes/2)
	return o
}

// unit is an atomic piece of text a chunk is made of: a sentence, a line,
// or a piece of one too long for a chunk, never longer than MaxBytes.
// para is set when a blank line comes before it.
type unit struct {
	start, end int // bytes
	para       bool
}

// Split cuts normalised text (valid UTF-8: offsets in code points mean
// nothing otherwise) into chunks of whole sentences where it can:
// the text is cut into units at paragraph breaks (blank lines), line
// breaks and sentence ends ('.', '!' or '?' before white space); a unit
// longer than a chunk is cut at its last space that fits, or at a
// character boundary when it has none. Units are packed into chunks of
// at most MaxBytes; a chunk that is at least half full ends at a paragraph
// break rather than splitting the paragraph that follows. Each chunk after
// the first starts with the last units of the one before that fit in
// OverlapBytes. The work is linear in the length of the text.
func Split(text string, o ChunkOptions) []Chunk {
	o = o.resolve()
	units := splitUnits(text, o.MaxBytes)
	var out []Chunk
	pos := runeCursor{text: text}
	// fresh is the first unit no chunk holds yet: each chunk holds one.
	i, fresh := 0, 0
	for i < len(units) {
		// Pack units i..j-1, remembering the last paragraph break inside
		// the chunk at which it may end instead.
		j, lastPara := i+1, -1
		for j < len(units) && units[j].end-units[i].start <= o.MaxBytes {
			if units[j].para && j > fresh && units[j].start-units[i].start >= o.MaxBytes/2 {
				lastPara = j
			}
			j++
		}
		if j < len(units) && lastPara > 0 {
			j = lastPara
		}
		fresh = j
		s, e := units[i].start, units[j-1].end
		out = append(out, Chunk{Text: text[s:e], ByteStart: s, ByteEnd: e, Start: pos.at(s), End: pos.at(e)})
		if j == len(units) {
			break
		}
		// The next chunk starts with the last units of this one that fit
		// in the overlap, and must still reach a unit this one lacks.
		k := j
		for k-1 > i && e-units[k-1].start <= o.OverlapBytes && units[j].end-units[k-1].start <= o.MaxBytes {
			k--
		}
		i = k
	}
	return out
}

// splitUnits cuts text into units of at most max bytes, leading and
// trailing white space left out.
func splitUnits(text string, max int) []unit {
	var out []unit
	para := false
	add := func(s, e int) {
		for s < e {
			r, n := utf8.DecodeRuneInString(text[s:])
			if !unicode.IsSpace(r) {
				break
			}
			s += n
		}
		for e > s {
			r, n := utf8.DecodeLastRuneInString(text[s:e])
			if !unicode.IsSpace(r) {
				break
			}
			e -= n
		}
		if s == e {
			return
		}
		for e-s > max {
			cut := cutPoint(text, s, s+max)
			out = append(out, unit{start: s, end: trimRight(text, s, cut), para: para})
			para = false
			s = cut
			for s < e {
				r, n := utf8.DecodeRuneInString(text[s:])
				if !unicode.IsSpace(r) {
					break
				}
				s += n
			}
		}
		if s < e {
			out = append(out, unit{start: s, end: e, para: para})
			para = false
		}
	}
	start := 0
	for i := 0; i < len(text); i++ {
		switch c := text[i]; {
		case c == '\n':
			add(start, i)
			start = i + 1
			if i+1 < len(text) && text[i+1] == '\n' {
				para = true
			}
		case (c == '.' || c == '!' || c == '?') && i+1 < len(text) && (text[i+1] == ' ' || text[i+1] == '\t'):
			add(start, i+1)
			start = i + 1
		}
	}
	add(start, len(text))
	return out
}

// cutPoint is where a unit from s that must end by limit (< len(text)) is
// cut: at its last white space past s (the one at limit too, which ends a
// word that fits exactly), else at the last character boundary.
func cutPoint(text string, s, limit int) int {
	if i := strings.LastIndexFunc(text[s:limit+1], unicode.IsSpace); i > 0 {
		return s + i
	}
	for limit > s+1 && !utf8.RuneStart(text[limit]) {
		limit--
	}
	return limit
}

func trimRight(text string, s, e int) int {
	for e > s {
		r, n := utf8.DecodeLastRuneInString(text[s:e])
		if !unicode.IsSpace(r) {
			break
		}
		e -= n
	}
	return e
}

// runeCursor converts byte offsets into code-point offsets, moving from
// the last offset asked for: chunks advance through the text and step
// back only by an overlap, so the conversions cost linear time in all.
type runeCursor struct {
	text        string
	bytes, runs int
}

func (c *runeCursor) at(b int) int {
	if b >= c.bytes {
		c.runs += utf8.RuneCountInString(c.text[c.bytes:b])
	} else {
		c.runs -= utf8.RuneCountInString(c.text[b:c.bytes])
	}
	c.bytes = b
	return c.runs
}

// sentence is a sentence of a chunk, with its span in the chunk's text.
type sentence struct {
	text       string
	start, end int // bytes, in the chunk
}

// sentences cuts a chunk's text into its sentences (as Split's units,
// without the length bound).
func sentences(text string) []sentence {
	var out []sentence
	for _, u := range splitUnits(text, len(text)+1) {
		out = append(out, sentence{text: text[u.start:u.end], start: u.start, end: u.end})
	}
	return out
}
