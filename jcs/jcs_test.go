package jcs

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"
)

func TestAppendString(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"empty", "", `""`},
		{"plain", "abc", `"abc"`},
		{"quote and backslash", `a"b\c`, `"a\"b\\c"`},
		{"short escapes", "\b\f\n\r\t", `"\b\f\n\r\t"`},
		{"other controls lower-case hex", "\x00\x01\x0b\x1f", `"\u0000\u0001\u000b\u001f"`},
		{"slash literal", "a/b", `"a/b"`},
		{"DEL and C1 literal", "\u007f\u0080\u009f", "\"\u007f\u0080\u009f\""},
		{"line separators literal", "\u2028\u2029", "\"\u2028\u2029\""},
		{"html characters literal", "<>&", `"<>&"`},
		{"non-ASCII literal", "Café ☕ 𝄞", `"Café ☕ 𝄞"`},
		{"escape at both ends", "\nx\n", `"\nx\n"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(AppendString(nil, tc.in)); got != tc.want {
				t.Errorf("AppendString(%q) = %s, want %s", tc.in, got, tc.want)
			}
			if got := string(AppendString([]byte("x"), []byte(tc.in))); got != "x"+tc.want {
				t.Errorf("AppendString(x, []byte(%q)) = %s, want x%s", tc.in, got, tc.want)
			}
		})
	}
}

func TestAppendStringAllocs(t *testing.T) {
	dst := make([]byte, 0, 64)
	s := "a \"quoted\"\tvalue"
	b := []byte(s)
	if n := testing.AllocsPerRun(100, func() {
		dst = AppendString(dst[:0], s)
		dst = AppendString(dst[:0], b)
	}); n != 0 {
		t.Errorf("AppendString allocates %v times into a buffer large enough", n)
	}
}

// TestAppendNumber checks the ECMAScript number form RFC 8785 §3.2.2.3
// asks for, on values from its Appendix B and around the notation
// boundaries.
func TestAppendNumber(t *testing.T) {
	for _, tc := range []struct {
		in   float64
		want string
	}{
		{0, "0"},
		{math.Copysign(0, -1), "0"},
		{1, "1"},
		{-1.5, "-1.5"},
		{5e-324, "5e-324"},
		{-5e-324, "-5e-324"},
		{1.7976931348623157e308, "1.7976931348623157e+308"},
		{9007199254740992, "9007199254740992"},
		{9007199254740994, "9007199254740994"},
		{295147905179352830000, "295147905179352830000"},
		{1e21, "1e+21"},
		{1e20, "100000000000000000000"},
		{999999999999999900000, "999999999999999900000"},
		{1e-6, "0.000001"},
		{1e-7, "1e-7"},
		{1.2345e-7, "1.2345e-7"},
		{0.30000000000000004, "0.30000000000000004"},
		{-5e-7, "-5e-7"},
		{333333333.3333332, "333333333.3333332"},
		{1.5e300, "1.5e+300"},
		{123.456, "123.456"},
		{1e-300, "1e-300"},
	} {
		if got := string(AppendNumber(nil, tc.in)); got != tc.want {
			t.Errorf("AppendNumber(%v) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

// es6Number is encoding/json's spelling of f, which follows ECMAScript's
// too, except that it keeps the sign of -0: an independent reference.
func es6Number(t testing.TB, f float64) string {
	b, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	if f == 0 {
		return "0"
	}
	return string(b)
}

// checkNumber: AppendNumber agrees with the reference, reads back as f
// and takes its digits from ShortestDigits.
func checkNumber(t testing.TB, f float64) {
	t.Helper()
	got := string(AppendNumber([]byte("x"), f))[1:]
	if want := es6Number(t, f); got != want {
		t.Fatalf("AppendNumber(%b) = %s, want %s", f, got, want)
	}
	back, err := strconv.ParseFloat(got, 64)
	if err != nil || back != f && !(f == 0 && back == 0) {
		t.Fatalf("AppendNumber(%b) = %s, which reads back as %v, %v", f, got, back, err)
	}
	var buf [32]byte
	digits, n := ShortestDigits(buf[:0], f)
	if len(digits) > 0 && (digits[0] == '0' || digits[len(digits)-1] == '0') {
		t.Fatalf("ShortestDigits(%b) = %s, %d: leading or trailing zero", f, digits, n)
	}
	if again := string(AppendDigits(nil, f < 0, digits, n)); again != got {
		t.Fatalf("AppendDigits(ShortestDigits(%b)) = %s, AppendNumber %s", f, again, got)
	}
}

func TestAppendNumberRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(8785, 1))
	for range 200000 {
		f := math.Float64frombits(rng.Uint64())
		if math.IsNaN(f) || math.IsInf(f, 0) {
			continue
		}
		checkNumber(t, f)
	}
	// Integers, short decimals and the notation boundaries, where random
	// bits rarely land.
	for e := -330; e <= 310; e++ {
		for _, m := range []float64{1, 1.5, 9.999999999999999, 1.0000000000000002} {
			f := m * math.Pow(10, float64(e))
			if math.IsInf(f, 0) {
				continue
			}
			checkNumber(t, f)
			checkNumber(t, -f)
			checkNumber(t, math.Nextafter(f, 0))
			checkNumber(t, math.Nextafter(f, math.Inf(1)))
		}
	}
	for i := range int64(100000) {
		checkNumber(t, float64(i*7919))
	}
}

func TestAppendNumberRefusesNonFinite(t *testing.T) {
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("AppendNumber(%v) did not panic", f)
				}
			}()
			AppendNumber(nil, f)
		}()
	}
}

// utf16Compare is the definition: encode both, compare code units.
func utf16Compare(a, b string) int {
	ua, ub := utf16.Encode([]rune(a)), utf16.Encode([]rune(b))
	return slices.Compare(ua, ub)
}

func TestCompare(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	runes := []rune{0, 'a', 'z', 0x7f, 0x80, 0x7ff, 0x800, 0xd000, 0xd7ff, 0xe000, 0xefff, 0xf000, 0xfb33, 0xffff, 0x10000, 0x1f600, 0x10ffff}
	gen := func() string {
		var b strings.Builder
		for range rng.IntN(4) {
			b.WriteRune(runes[rng.IntN(len(runes))])
		}
		return b.String()
	}
	for range 20000 {
		a, b := gen(), gen()
		want := utf16Compare(a, b)
		if got := Compare(a, b); got != want {
			t.Fatalf("Compare(%+q, %+q) = %d, want %d", a, b, got, want)
		}
		if got := Compare([]byte(a), []byte(b)); got != want {
			t.Fatalf("Compare([]byte(%+q), []byte(%+q)) = %d, want %d", a, b, got, want)
		}
	}
}

// RFC 8785 §3.2.3's example: the emoji (D83D DE00) sorts before U+FB33
// although its code point is larger.
func TestCompareRFC8785Example(t *testing.T) {
	names := []string{"\u20ac", "\r", "\ufb33", "1", "\U0001f600", "\u0080", "\u00f6"}
	slices.SortFunc(names, Compare)
	want := []string{"\r", "1", "\u0080", "\u00f6", "\u20ac", "\U0001f600", "\ufb33"}
	if !slices.Equal(names, want) {
		t.Errorf("sorted %+q, want %+q", names, want)
	}
}

// FuzzAppendString: the output is JSON that reads back as the input, has
// no escape JCS does not ask for, and is the same for a string and its
// bytes.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "abc", "\"\\\b\f\n\r\t\x00\x1f\x7f", "<>&\u2028/", "é😀\ufb33"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			return
		}
		out := AppendString(nil, s)
		if string(AppendString(nil, []byte(s))) != string(out) {
			t.Fatalf("string and []byte differ for %q", s)
		}
		var back string
		if err := json.Unmarshal(out, &back); err != nil || back != s {
			t.Fatalf("%q → %s → %q, %v", s, out, back, err)
		}
		escapes := 0
		for _, c := range []byte(s) {
			if c < 0x20 || c == '"' || c == '\\' {
				escapes++
			}
		}
		// Each escape is one backslash, and an escaped backslash two.
		if got, want := strings.Count(string(out), `\`), escapes+strings.Count(s, `\`); got != want {
			t.Fatalf("%q → %s: %d backslashes, want %d", s, out, got, want)
		}
	})
}

// FuzzCompare: Compare agrees with the definition on valid UTF-8, and is
// antisymmetric on any bytes.
func FuzzCompare(f *testing.F) {
	f.Add("a", "b")
	f.Add("\ufb33", "\U0001f600")
	f.Add("\uffff", "\U00010000x")
	f.Add("\xee", "\xf0")
	f.Fuzz(func(t *testing.T, a, b string) {
		got := Compare(a, b)
		if back := Compare(b, a); back != -got {
			t.Fatalf("Compare(%+q, %+q) = %d but reversed %d", a, b, got, back)
		}
		if (got == 0) != (a == b) {
			t.Fatalf("Compare(%+q, %+q) = %d", a, b, got)
		}
		if utf8.ValidString(a) && utf8.ValidString(b) {
			if want := utf16Compare(a, b); got != want {
				t.Fatalf("Compare(%+q, %+q) = %d, want %d", a, b, got, want)
			}
		}
	})
}

// FuzzAppendNumber over every bit pattern of a double.
func FuzzAppendNumber(f *testing.F) {
	for _, x := range []float64{0, 1, 1e21, 1e-7, 5e-324, math.MaxFloat64, 0.1} {
		f.Add(math.Float64bits(x))
	}
	f.Fuzz(func(t *testing.T, bits uint64) {
		x := math.Float64frombits(bits)
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return
		}
		checkNumber(t, x)
	})
}
