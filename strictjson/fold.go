package strictjson

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// foldKey maps a member name to one representative of its case-folding
// class, the way encoding/json matches names to fields: each rune becomes
// the smallest rune of its simple-fold orbit, so "K", "k" and the Kelvin
// sign all fold together.
func foldKey(s string) string {
	// ASCII first: a letter's orbit is its two cases, plus a non-ASCII
	// rune for K and S, so its least member is the upper case.
	ascii, lower := true, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf {
			ascii = false
			break
		}
		lower = lower || ('a' <= c && c <= 'z')
	}
	if ascii {
		if !lower {
			return s
		}
		b := []byte(s)
		for i, c := range b {
			if 'a' <= c && c <= 'z' {
				b[i] = c - 'a' + 'A'
			}
		}
		return string(b)
	}
	return foldRunes(s)
}

// foldRunes is foldKey rune by rune, for any text.
func foldRunes(s string) string {
	var b strings.Builder
	for _, r := range s {
		least := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			least = min(least, f)
		}
		b.WriteRune(least)
	}
	return b.String()
}
