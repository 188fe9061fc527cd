package pii

import (
	"runtime"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/text/unicode/norm"
)

// TestScanNormalised: text that reads as personal data or a credential is
// found however it is spelled with invisible characters, unusual spaces or
// compatibility forms.
func TestScanNormalised(t *testing.T) {
	rep := strings.Repeat
	tests := []struct {
		name string
		in   string
		want []Kind
	}{
		{"zero-width space in an email", "jane\u200b@example.com", []Kind{KindEmail}},
		{"zero-width spaces all through an email", "j\u200ba\u200bn\u200be@ex\u200bample.c\u200bom", []Kind{KindEmail}},
		{"word joiner and BOM in an email", "jane\u2060@\ufeffexample.com", []Kind{KindEmail}},
		{"fullwidth at sign", "jane\uff20example.com", []Kind{KindEmail}},
		{"fullwidth email", "ｊａｎｅ＠ｅｘａｍｐｌｅ．ｃｏｍ", []Kind{KindEmail}},
		{"dotted card", "card 4111.1111.1111.1111", []Kind{KindCard}},
		{"slashed card", "4111/1111/1111/1111", []Kind{KindCard}},
		{"spaced dashes in a card", "4111 - 1111 - 1111 - 1111", []Kind{KindCard}},
		{"fullwidth card digits", "card ４１１１ １１１１ １１１１ １１１１", []Kind{KindCard}},
		{"no-break spaces in a card", "4111\u00a01111\u00a01111\u00a01111", []Kind{KindCard}},
		{"zero-width spaces in a card", "4111\u200b1111\u200b1111\u200b1111", []Kind{KindCard}},
		{"Arabic-Indic card digits", "٤١١١١١١١١١١١١١١١", []Kind{KindCard}},
		{"combining marks on card digits", "4\u03011\u0301" + "11 1111 1111 1111", []Kind{KindCard}},
		{"no-break spaces around a password colon", "password\u00a0:\u00a0hunter22", []Kind{KindPassword}},
		{"narrow no-break and ideographic spaces", "password\u202f=\u3000hunter22", []Kind{KindPassword}},
		{"fullwidth colon", "password\uff1ahunter22", []Kind{KindPassword}},
		{"soft hyphen in the word", "pass\u00adword: hunter22", []Kind{KindPassword}},
		{"zero-width joiner in the word", "pass\u200dword=hunter22", []Kind{KindPassword}},
		{"fullwidth word", "ｐａｓｓｗｏｒｄ： hunter22", []Kind{KindPassword}},
		{"no-break spaces in an SSN", "SSN 123\u00a045\u00a06789", []Kind{KindSSN}},
		{"fullwidth phone", "call ＋４４ ２０ ７９４６ ０９５８", []Kind{KindPhone}},
		{"zero-width space in an API key", "ghp_" + rep("x", 20) + "\u200b" + rep("x", 16), []Kind{KindAPIKey}},
		{"tag characters in a JWT", "eyJhbGciOiJFZERTQSJ9.\U000e0041eyJzdWIiOiJhZ2VudCJ9." + rep("Zm9v", 6), []Kind{KindJWT}},

		{"accents stay text", "Café Zoë naïve résumé, ½ price", nil},
		{"dotted order number fails Luhn", "Order 4111.1111.1111.1112 was refunded.", nil},
		{"version and date with odd spaces", "Release\u00a02.4.1 shipped on 2024\u201103\u201115.", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Scan(tt.in); !slices.Equal(got, tt.want) {
				t.Errorf("Scan(%+q) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}

func TestNormalize(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"plain ASCII\tstays\n", "plain ASCII\tstays\n"},
		{"a\u200bb\u200cc\u200dd\u2060e\ufeff\u00adf", "abcdef"},
		{"\u00a0\u2002\u2009\u202f\u3000\u2028\u2029", "       "},
		{"\uff21\uff20\uff11", "A@1"},
		{"e\u0301", "\u00e9"},
		{"e\u200b\u0301", "\u00e9"},
		{"4\u0301", "4"},
		{"٠١٢٣٤٥٦٧٨٩ ०९ 𝟎𝟗 𝟘", "0123456789 09 09 0"},
		{"a\x01b\x7fc", "abc"},
		{"\ufe0f\U000e0001x", "x"},
		{"bad \xff byte", "bad \ufffd byte"},
		{"\x80", "\ufffd"},
		{"a\x7fb", "ab"},
		{"é\t\n\r\v\f.", "é\t\n\r\v\f."},
		{"é 1 ½", "é 1 1⁄2"},
	} {
		if got := Normalize(tt.in); got != tt.want {
			t.Errorf("Normalize(%+q) = %+q, want %+q", tt.in, got, tt.want)
		}
	}
}

// TestScanLinear: the screen's work grows with its input, not faster;
// measured in bytes allocated, which no load on the machine changes
// (quadratic work would allocate 256 times as much for 16 times the text).
func TestScanLinear(t *testing.T) {
	unit := "ａ\u200b4\u00a0\u0301ب password: x 4111.1111 "
	allocated := func(n int) uint64 {
		s := strings.Repeat(unit, n)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_ = Scan(s)
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	small, large := allocated(100), allocated(1600)
	if large > 40*small {
		t.Errorf("Scan of 16 times the text allocated %d bytes against %d", large, small)
	}
}

// TestDigitValue: every decimal digit of Unicode, ASCII included, has its
// value, which relies on Unicode's digit runs being whole sets of ten.
func TestDigitValue(t *testing.T) {
	n := 0
	for _, rt := range unicode.Nd.R16 {
		if rt.Stride != 1 || (rt.Hi-rt.Lo+1)%10 != 0 {
			t.Errorf("digits %U-%U are not whole runs of ten", rt.Lo, rt.Hi)
		}
		for r := rune(rt.Lo); r <= rune(rt.Hi); r++ {
			if got := digitValue(r); got != (r-rune(rt.Lo))%10 {
				t.Errorf("digitValue(%U) = %d", r, got)
			}
			n++
		}
	}
	for _, rt := range unicode.Nd.R32 {
		if rt.Stride != 1 || (rt.Hi-rt.Lo+1)%10 != 0 {
			t.Errorf("digits %U-%U are not whole runs of ten", rt.Lo, rt.Hi)
		}
		for r := rune(rt.Lo); r <= rune(rt.Hi); r++ {
			if got := digitValue(r); got != (r-rune(rt.Lo))%10 {
				t.Errorf("digitValue(%U) = %d", r, got)
			}
			n++
		}
	}
	if n < 600 {
		t.Errorf("%d decimal digits checked; the table looks wrong", n)
	}
}

// insertAll puts ins after every rune of s.
func insertAll(s, ins string) string {
	var b strings.Builder
	for _, r := range s {
		b.WriteRune(r)
		b.WriteString(ins)
	}
	return b.String()
}

// widen spells printable ASCII in its fullwidth forms.
func widen(s string) string {
	return strings.Map(func(r rune) rune {
		if r > ' ' && r < 0x7f {
			return r + 0xfee0
		}
		return r
	}, s)
}

// FuzzScanNormalised: the screen answers alike for text and for any
// spelling of it that Normalize makes the same (format characters put
// anywhere, fullwidth forms, another normal form, unusual spaces), so
// what it flags stays flagged however it is disguised.
func FuzzScanNormalised(f *testing.F) {
	for _, s := range []string{"", "jane@example.com", "4111 1111 1111 1111", "4111.1111.1111.1111", "password: hunter22",
		"SSN 123-45-6789", "+44 20 7946 0958", "e\u0301 ١٢٣", "sk-proj-" + strings.Repeat("a1B2", 8)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			t.Skip("the service refuses invalid UTF-8 before screening")
		}
		want, wantKinds := Normalize(s), Scan(s)
		if again := Normalize(want); again != want {
			t.Fatalf("Normalize is not idempotent on %+q: %+q then %+q", s, want, again)
		}
		variants := map[string]string{
			"zero-width space": insertAll(s, "\u200b"),
			"format mix":       insertAll(s, "\u200d\u00ad\u2060\ufeff\u200e"),
			"fullwidth":        widen(s),
			"NFD":              norm.NFD.String(s),
			"NFKD":             norm.NFKD.String(s),
			"no-break spaces":  strings.ReplaceAll(s, " ", "\u00a0"),
			"ideographic":      strings.ReplaceAll(s, " ", "\u3000"),
		}
		for name, v := range variants {
			if got := Normalize(v); got != want {
				t.Errorf("%s: Normalize(%+q) = %+q, want %+q as for %+q", name, v, got, want, s)
			}
			if got := Scan(v); !slices.Equal(got, wantKinds) {
				t.Errorf("%s: Scan(%+q) = %v, want %v as for %+q", name, v, got, wantKinds, s)
			}
		}
		if d := cmp.Diff(wantKinds, scan(want)); d != "" {
			t.Errorf("Scan differs from scanning the normal form (-Scan +scan):\n%s", d)
		}
	})
}
