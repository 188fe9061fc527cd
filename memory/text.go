package memory

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxTermBytes drops "words" longer than any real one (base64 blobs, hex
// dumps): they can only match themselves and would bloat the index.
const maxTermBytes = 48

// Terms turns text into the terms both keyword search and the default
// embedder work on: lower-cased runs of letters and digits (diacritics
// kept), English stop words left out, each word reduced by Stem. Stores
// index a memory as the terms of its content and tags, and search with
// the terms of the query, so SQLite and PostgreSQL match the same words
// whatever their own text-search configuration would do.
//
// The result holds only letters and digits, so a store may put terms in
// its full-text query syntax without escaping anything else.
func Terms(text string) []string {
	var out []string
	forEachWord(text, func(w string) {
		if isStopWord(w) {
			return
		}
		if s := Stem(w); s != "" {
			out = append(out, s)
		}
	})
	return out
}

// forEachWord calls fn with each lower-cased word of text. An apostrophe
// inside a word ends it ("caroline's" gives "caroline" and "s", and "s" is
// a stop word).
func forEachWord(text string, fn func(string)) {
	var b strings.Builder
	flush := func() {
		if b.Len() > 0 && b.Len() <= maxTermBytes {
			fn(b.String())
		}
		b.Reset()
	}
	for _, r := range text {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(unicode.ToLower(r))
			continue
		}
		if unicode.Is(unicode.Mn, r) && b.Len() > 0 {
			continue // a combining mark belongs to the letter before it
		}
		flush()
	}
	flush()
}

// Stem reduces an English word to a stem so that inflected forms meet:
// plurals, -ing, -ed, -ly and a final silent e ("loves", "loved",
// "loving" and "love" all give "lov"). It is a light stemmer: it never
// maps two common words of different meaning together as aggressive
// stemmers do ("university"/"universe"), and leaves words of other
// scripts and short words alone.
func Stem(w string) string {
	if len(w) < 4 || !isASCIILower(w) {
		return w
	}
	if _, ok := unstemmed[w]; ok {
		return w
	}
	switch {
	case strings.HasSuffix(w, "ies") && len(w) > 4:
		w = w[:len(w)-3] + "y"
	case strings.HasSuffix(w, "sses"):
		w = w[:len(w)-2]
	case strings.HasSuffix(w, "es") && hasAnySuffix(w[:len(w)-2], "sh", "ch", "x", "z", "ss"):
		w = w[:len(w)-2]
	case strings.HasSuffix(w, "s") && !hasAnySuffix(w, "ss", "us", "is", "ous"):
		w = w[:len(w)-1]
	}
	switch {
	case strings.HasSuffix(w, "ingly") && hasVowel(w[:len(w)-5]) && len(w) > 7:
		w = undouble(w[:len(w)-5])
	case strings.HasSuffix(w, "edly") && hasVowel(w[:len(w)-4]) && len(w) > 6:
		w = undouble(w[:len(w)-4])
	case strings.HasSuffix(w, "ing") && hasVowel(w[:len(w)-3]) && len(w) > 5:
		w = undouble(w[:len(w)-3])
	case strings.HasSuffix(w, "ied") && len(w) > 4:
		w = w[:len(w)-3] + "y"
	case strings.HasSuffix(w, "eed"):
		w = w[:len(w)-1]
	case strings.HasSuffix(w, "ed") && hasVowel(w[:len(w)-2]) && len(w) > 4:
		w = undouble(w[:len(w)-2])
	case strings.HasSuffix(w, "ly") && len(w) > 5:
		w = w[:len(w)-2]
	}
	if strings.HasSuffix(w, "y") && len(w) > 3 && !isVowel(w[len(w)-2]) {
		w = w[:len(w)-1] + "i" // "happy"/"happiness"/"happier" and "tries"/"try" meet
	}
	if strings.HasSuffix(w, "e") && len(w) > 3 && !strings.HasSuffix(w, "ee") {
		w = w[:len(w)-1]
	}
	return w
}

// unstemmed are words whose ending only looks like an inflection.
var unstemmed = map[string]struct{}{
	"news": {}, "series": {}, "species": {}, "always": {}, "perhaps": {}, "lens": {},
	"christmas": {}, "thing": {}, "during": {}, "sing": {}, "bring": {}, "spring": {},
	"string": {}, "wing": {}, "king": {}, "ring": {}, "swing": {}, "morning": {}, "evening": {},
}

func hasAnySuffix(w string, suffixes ...string) bool {
	for _, s := range suffixes {
		if strings.HasSuffix(w, s) {
			return true
		}
	}
	return false
}

func isASCIILower(w string) bool {
	for i := 0; i < len(w); i++ {
		if c := w[i]; c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}

func isVowel(c byte) bool { return strings.IndexByte("aeiouy", c) >= 0 }

func hasVowel(w string) bool { return strings.ContainsAny(w, "aeiouy") }

// undouble turns "runn" (from "running") into "run", but keeps the double
// letters English doubles for their own sake ("fall", "pass", "buzz").
func undouble(w string) string {
	n := len(w)
	if n >= 3 && w[n-1] == w[n-2] && !isVowel(w[n-1]) && strings.IndexByte("lsz", w[n-1]) < 0 {
		return w[:n-1]
	}
	return w
}

func isStopWord(w string) bool {
	if utf8.RuneCountInString(w) == 1 && !unicode.IsDigit(rune(w[0])) {
		return true // single letters: the tails of contractions and initials
	}
	_, ok := stopWords[w]
	return ok
}

// stopWords are English function words: frequent everywhere, so they rank
// nothing, and they make up half of a conversational question. Question
// words are among them ("when did …"): the answer's memory rarely repeats
// them. Negations are not: "not" and "never" change what a memory says.
var stopWords = func() map[string]struct{} {
	m := map[string]struct{}{}
	for _, w := range strings.Fields(`
		a about above after again against all am an and any are as at be because been
		before being below between both but by can could did do does doing down during each
		few for from further had has have having he her here hers herself him himself his
		how i if in into is it its itself just me more most my myself of off on once only or
		other our ours ourselves out over own same she should so some such than that the
		their theirs them themselves then there these they this those through to too under
		until up very was we were what when where which while who whom why will with would
		you your yours yourself yourselves s t d ll m re ve also us let get got go went gone
		going did doesn isn aren wasn weren hasn haven hadn won wouldn shouldn couldn
		may might must shall much many one two yes ok okay oh hey hi hello thanks thank really
		like just lot lots something anything everything thing things way kind sort`) {
		m[w] = struct{}{}
	}
	return m
}()
