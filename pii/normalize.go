package pii

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Normalize returns s as Scan reads it, so that text which only looks
// different to a machine is screened as what a reader sees:
//   - invisible characters are removed: format characters (Unicode Cf:
//     zero-width space and joiners, soft hyphen, bidirectional controls,
//     tag characters), other default-ignorable code points and variation
//     selectors, and control characters other than white space;
//   - the rest is put in NFKC form, which makes fullwidth and other
//     compatibility forms ("＠", "４", "：") their plain characters;
//   - combining marks left over (ones that compose with nothing) are
//     removed, so "4\u0301111…" reads as digits;
//   - every space, line and paragraph separator (no-break, thin,
//     ideographic, …) becomes a plain space;
//   - decimal digits of every script become ASCII digits.
//
// It takes time linear in len(s). Invalid UTF-8 bytes become U+FFFD.
// Normalize is for scanning only: text is stored as it was sent.
func Normalize(s string) string {
	if isPlain(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		if !invisible(r) {
			b.WriteRune(r)
		}
	}
	n := norm.NFKC.String(b.String())
	b.Reset()
	b.Grow(len(n))
	for _, r := range n {
		// NFKC never makes a format character of a visible one, but a
		// compatibility form may decompose into one.
		if unicode.In(r, unicode.Mn, unicode.Me) || invisible(r) {
			continue
		}
		if r != ' ' && unicode.In(r, unicode.Zs, unicode.Zl, unicode.Zp) {
			r = ' '
		} else if unicode.Is(unicode.Nd, r) {
			r = '0' + digitValue(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// isPlain reports whether s is printable ASCII and white space only, which
// Normalize leaves as it is.
func isPlain(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf || c < ' ' && c != '\t' && c != '\n' && c != '\r' || c == 0x7f {
			return false
		}
	}
	return true
}

// invisible reports whether r is removed before scanning: a character that
// shows nothing and separates nothing for a reader.
func invisible(r rune) bool {
	if r == '\t' || r == '\n' || r == '\r' || r == '\v' || r == '\f' {
		return false
	}
	return unicode.In(r, unicode.Cf, unicode.Cc, unicode.Other_Default_Ignorable_Code_Point, unicode.Variation_Selector)
}

// digitValue is the value of the decimal digit r. Unicode encodes each
// script's decimal digits as one contiguous run from zero to nine (runs of
// several sets of ten follow each other, as in the mathematical digits),
// so the value is r's distance from the start of its run, modulo ten. The
// longest run is fifty, which bounds the walk back.
func digitValue(r rune) rune {
	start := r
	for unicode.Is(unicode.Nd, start-1) {
		start--
	}
	return (r - start) % 10
}
