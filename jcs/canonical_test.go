package jcs

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// jcsOnly canonicalizes without the ExactNumbers policy: plain RFC 8785,
// which the RFC's own examples need.
func jcsOnly(data []byte) ([]byte, error) { return Canonicalize(data, nil) }

// exact canonicalizes with the ExactNumbers policy, as fingerprints do.
func exact(data []byte) ([]byte, error) { return Canonicalize(data, &Options{ExactNumbers: true}) }

func canonProblem(err error) string {
	var ce *Error
	if errors.As(err, &ce) {
		return ce.Problem
	}
	return ""
}

func TestCanonicalizeRFC8785Numbers(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "rfc8785", "numbers.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		hexBits, want, _ := strings.Cut(line, " ")
		bits, err := strconv.ParseUint(hexBits, 16, 64)
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		rows++
		v := math.Float64frombits(bits)
		if want == "error" {
			if !math.IsNaN(v) && !math.IsInf(v, 0) {
				t.Errorf("%s: marked error but is %v", hexBits, v)
			}
			continue
		}
		if got := string(AppendNumber(nil, v)); got != want {
			t.Errorf("%s (%v): got %s, want %s", hexBits, v, got, want)
		}
		// The serialization reads back as itself, and Go's own spelling
		// of the double canonicalizes to it.
		for _, in := range []string{want, strconv.FormatFloat(v, 'g', -1, 64), strconv.FormatFloat(v, 'e', 20, 64)} {
			if got, err := jcsOnly([]byte(in)); err != nil || string(got) != want {
				t.Errorf("%s: jcs(%s) = %s, %v; want %s", hexBits, in, got, err, want)
			}
		}
		got, err := exact([]byte(want))
		switch {
		case math.Abs(v) > maxSafeInteger:
			if canonProblem(err) != "number_unsafe" {
				t.Errorf("Canonicalize(%s) = %s, %v; want number_unsafe", want, got, err)
			}
		case err != nil || string(got) != want:
			t.Errorf("Canonicalize(%s) = %s, %v", want, got, err)
		}
	}
	if rows != 26 {
		t.Fatalf("read %d Appendix B rows, want 26", rows)
	}
}

func readVector(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "rfc8785", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestCanonicalizeRFC8785Examples(t *testing.T) {
	// Section 3.2.3: sorting by UTF-16 code units puts the emoji
	// (D83D DE00) before U+FB33 although its code point is larger.
	want := readVector(t, "sorting.canonical.json")
	got, err := exact(readVector(t, "sorting.json"))
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("sorting example:\n got %s, %v\nwant %s", got, err, want)
	}

	// Section 3.2.2's numbers include 333333333.33333329 (the double
	// 333333333.3333333) and 1E30, which plain JCS writes and our policy
	// refuses.
	in := readVector(t, "example.json")
	want = readVector(t, "example.canonical.json")
	if got, err := jcsOnly(in); err != nil || !bytes.Equal(got, want) {
		t.Errorf("example, plain JCS:\n got %s, %v\nwant %s", got, err, want)
	}
	if _, err := exact(in); canonProblem(err) != "number_precision" {
		t.Errorf("Canonicalize(example) error = %v, want number_precision", err)
	}
}

func TestCanonicalize(t *testing.T) {
	deep := func(n int, open, close string) string {
		return strings.Repeat(open, n) + strings.Repeat(close, n)
	}
	for _, tc := range []struct {
		name, in string
		want     string // when accepted
		problem  string // when refused
	}{
		{name: "sorted members, no space", in: " {\"b\" : 1 ,\n\t\"a\":2}\r\n", want: `{"a":2,"b":1}`},
		{name: "nested sorting", in: `{"b":[{"d":1,"c":2}],"a":{"z":null,"y":true}}`, want: `{"a":{"y":true,"z":null},"b":[{"c":2,"d":1}]}`},
		{name: "prefix first", in: `{"ab":1,"a":2,"":3}`, want: `{"":3,"a":2,"ab":1}`},
		{name: "case differs is not a duplicate", in: `{"a":1,"A":2}`, want: `{"A":2,"a":1}`},
		{name: "supplementary before U+E000", in: `{"\ue000":1,"😀":2,"\uffff":3}`, want: "{\"😀\":2,\"\ue000\":1,\"\uffff\":3}"},
		{name: "empty containers", in: `[ {}, [ ], {"a":[]} ]`, want: `[{},[],{"a":[]}]`},
		{name: "scalars", in: `[true,false,null,"x"]`, want: `[true,false,null,"x"]`},
		{name: "top-level string", in: ` "x" `, want: `"x"`},

		{name: "zero", in: `0`, want: `0`},
		{name: "minus zero", in: `[-0,-0.0,-0e-10,0e10]`, want: `[0,0,0,0]`},
		{name: "spellings of one", in: `[1,1.0,1e0,10e-1,1E+0,0.1e1,100e-2]`, want: `[1,1,1,1,1,1,1]`},
		{name: "fractions", in: `[0.1,0.1000,4.50,2e-3,-1.25]`, want: `[0.1,0.1,4.5,0.002,-1.25]`},
		{name: "small exponents", in: `[0.000001,1e-7,123e-9,5e-324]`, want: `[0.000001,1e-7,1.23e-7,5e-324]`},
		{name: "largest safe integers", in: `[9007199254740991,-9007199254740991]`, want: `[9007199254740991,-9007199254740991]`},
		{name: "2^53", in: `9007199254740992`, problem: "number_unsafe"},
		{name: "2^53+1", in: `9007199254740993`, problem: "number_unsafe"},
		{name: "1e21", in: `1e21`, problem: "number_unsafe"},
		{name: "negative beyond 2^53", in: `-1e300`, problem: "number_unsafe"},
		{name: "more digits than a double", in: `0.30000000000000001`, problem: "number_precision"},
		{name: "underflow to zero", in: `1e-400`, problem: "number_precision"},
		{name: "underflow to a denormal", in: `4.9e-324`, problem: "number_precision"},
		{name: "overflow", in: `1e400`, problem: "number_range"},
		{name: "negative overflow", in: `[-1e400]`, problem: "number_range"},
		{name: "huge exponent of zero", in: `0e99999999999999999999`, want: `0`},
		{name: "huge exponent", in: `1e99999999999999999999`, problem: "number_range"},
		{name: "tiny exponent", in: `1e-99999999999999999999`, problem: "number_precision"},

		{name: "escapes of ordinary characters", in: `"\u0041\/\u00e9\u20AC"`, want: `"A/é€"`},
		{name: "short escapes", in: `"\b\f\n\r\t\"\\"`, want: `"\b\f\n\r\t\"\\"`},
		{name: "other controls", in: `"\u0000\u000B\u001f"`, want: `"\u0000\u000b\u001f"`},
		{name: "DEL and C1 literal", in: `"\u007f\u0080\u009f"`, want: "\"\u007f\u0080\u009f\""},
		{name: "line separators literal", in: `"\u2028\u2029"`, want: "\"\u2028\u2029\""},
		{name: "html characters literal", in: `"\u003c\u003e\u0026"`, want: `"<>&"`},
		{name: "surrogate pair", in: `"\ud83d\ude00"`, want: `"😀"`},
		{name: "lone high surrogate", in: `"\uD83D"`, problem: "surrogate"},
		{name: "lone low surrogate", in: `"\ude00"`, problem: "surrogate"},
		{name: "high surrogate then letter", in: `"\ud83d\u0041"`, problem: "surrogate"},
		{name: "high surrogate then text", in: `"\ud83dx"`, problem: "surrogate"},
		{name: "invalid UTF-8", in: "\"\xff\"", problem: "utf8"},
		{name: "encoded surrogate", in: "\"\xed\xa0\x80\"", problem: "utf8"},
		{name: "overlong", in: "\"\xc0\xaf\"", problem: "utf8"},
		{name: "truncated sequence", in: "\"\xe2\x82\"", problem: "utf8"},
		{name: "invalid UTF-8 in a name", in: "{\"\xff\":1}", problem: "utf8"},
		{name: "raw control", in: "\"\x01\"", problem: "syntax"},
		{name: "bad escape", in: `"\x"`, problem: "syntax"},
		{name: "short \\u", in: `"\u12"`, problem: "syntax"},
		{name: "non-hex \\u", in: `"\u12g4"`, problem: "syntax"},
		{name: "unterminated string", in: `"abc`, problem: "syntax"},

		{name: "duplicate", in: `{"a":1,"a":2}`, problem: "duplicate"},
		{name: "duplicate after unescaping", in: `{"a":1,"\u0061":2}`, problem: "duplicate"},
		{name: "duplicate, equal values", in: `{"x":{"a":1,"b":0,"a":1}}`, problem: "duplicate"},
		{name: "duplicate empty name", in: `{"":1,"":1}`, problem: "duplicate"},

		{name: "empty", in: ``, problem: "syntax"},
		{name: "only space", in: " \n", problem: "syntax"},
		{name: "unclosed object", in: `{`, problem: "syntax"},
		{name: "unclosed array", in: `[1`, problem: "syntax"},
		{name: "trailing comma in array", in: `[1,]`, problem: "syntax"},
		{name: "trailing comma in object", in: `{"a":1,}`, problem: "syntax"},
		{name: "missing colon", in: `{"a" 1}`, problem: "syntax"},
		{name: "number name", in: `{1:2}`, problem: "syntax"},
		{name: "missing comma", in: `[1 2]`, problem: "syntax"},
		{name: "leading zero", in: `01`, problem: "trailing"},
		{name: "point without digits", in: `1.`, problem: "syntax"},
		{name: "leading point", in: `.5`, problem: "syntax"},
		{name: "plus sign", in: `+1`, problem: "syntax"},
		{name: "empty exponent", in: `1e`, problem: "syntax"},
		{name: "double minus", in: `--1`, problem: "syntax"},
		{name: "NaN", in: `NaN`, problem: "syntax"},
		{name: "Infinity", in: `[-Infinity]`, problem: "syntax"},
		{name: "short literal", in: `tru`, problem: "syntax"},
		{name: "single quotes", in: `'a'`, problem: "syntax"},
		{name: "byte order mark", in: "\ufeff{}", problem: "syntax"},
		{name: "form feed is not space", in: "\f{}", problem: "syntax"},
		{name: "two values", in: `{} {}`, problem: "trailing"},
		{name: "text after", in: `{}x`, problem: "trailing"},

		{name: "64 arrays", in: deep(64, "[", "]"), want: deep(64, "[", "]")},
		{name: "65 arrays", in: deep(65, "[", "]"), problem: "depth"},
		{name: "64 objects", in: strings.Repeat(`{"a":`, 63) + `{}` + strings.Repeat(`}`, 63), want: strings.Repeat(`{"a":`, 63) + `{}` + strings.Repeat(`}`, 63)},
		{name: "65 mixed", in: strings.Repeat(`{"a":[`, 32) + `{}` + strings.Repeat(`]}`, 32), problem: "depth"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := exact([]byte(tc.in))
			if tc.problem != "" {
				if canonProblem(err) != tc.problem {
					t.Fatalf("Canonicalize(%q) = %q, %v; want problem %s", tc.in, got, err, tc.problem)
				}
				return
			}
			if err != nil || string(got) != tc.want {
				t.Fatalf("Canonicalize(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
			}
			if again, err := exact(got); err != nil || !bytes.Equal(again, got) {
				t.Fatalf("not idempotent: %q → %q, %v", got, again, err)
			}
		})
	}
}

func TestCanonicalizeLarge(t *testing.T) {
	const size = 1 << 20
	var members, reversed, numbers, escapes, arrays bytes.Buffer
	members.WriteString("{")
	for i := 0; members.Len() < size; i++ {
		if i > 0 {
			members.WriteString(",")
		}
		fmt.Fprintf(&members, `"k%07d":%d`, i, i)
	}
	members.WriteString("}")
	n := 0
	reversed.WriteString("{")
	for i := 100000; reversed.Len() < size; i-- {
		if n > 0 {
			reversed.WriteString(",")
		}
		n++
		fmt.Fprintf(&reversed, `"%s%07d":[%d.50]`, strings.Repeat("x", 2), i, i)
	}
	reversed.WriteString("}")
	numbers.WriteString("[")
	for i := 0; numbers.Len() < size; i++ {
		if i > 0 {
			numbers.WriteString(",")
		}
		fmt.Fprintf(&numbers, "%d.%03de-%d", i, i%1000, i%7)
	}
	numbers.WriteString("]")
	escapes.WriteString(`"`)
	for escapes.Len() < size {
		escapes.WriteString(`\u00e9\ud83d\ude00\n\/abc`)
	}
	escapes.WriteString(`"`)
	arrays.WriteString("[")
	for i := 0; arrays.Len() < size; i++ {
		if i > 0 {
			arrays.WriteString(",")
		}
		arrays.WriteString(strings.Repeat("[", 60) + `{"b":1,"a":2}` + strings.Repeat("]", 60))
	}
	arrays.WriteString("]")
	// Every level of a deep, unsorted object copies its body once to
	// reorder it: 64 levels at most, so still linear.
	deepObjects := strings.Repeat(`{"b":`, 63) + `"` + strings.Repeat("y", size) + `"` + strings.Repeat(`,"a":0}`, 63)
	// A long run of zeros inside one number is walked once.
	longNumber := "0." + strings.Repeat("0", size) + "1e" + strconv.Itoa(size+1)

	for _, tc := range []struct {
		name string
		in   []byte
	}{
		{"members in order", members.Bytes()},
		{"members reversed", reversed.Bytes()},
		{"numbers", numbers.Bytes()},
		{"escapes", escapes.Bytes()},
		{"nested arrays", arrays.Bytes()},
		{"long number", []byte(longNumber)},
		{"deep unsorted objects", []byte(deepObjects)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			got, err := exact(tc.in)
			elapsed := time.Since(start)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d bytes in %v", len(tc.in), elapsed)
			if elapsed > time.Minute {
				t.Fatalf("%d bytes took %v", len(tc.in), elapsed)
			}
			if !json.Valid(got) {
				t.Fatal("output is not valid JSON")
			}
			equalJSON(t, tc.in, got)
		})
	}
	if got, _ := exact([]byte(longNumber)); string(got) != "1" {
		t.Fatalf("long number canonicalizes to %s, want 1", got)
	}
}

// equalJSON fails unless a and b decode (reference decoder: encoding/json
// with numbers kept as text) to the same value, numbers compared exactly
// as decimals.
func equalJSON(t testing.TB, a, b []byte) {
	t.Helper()
	va, err := refDecode(a)
	if err != nil {
		t.Fatalf("reference decode of input: %v", err)
	}
	vb, err := refDecode(b)
	if err != nil {
		t.Fatalf("reference decode of output: %v", err)
	}
	if path, ok := sameValue(va, vb, "$"); !ok {
		t.Fatalf("values differ at %s", path)
	}
}

// refObject keeps every member as decoded, duplicates included.
type refObject struct {
	names  []string
	values []any
}

func refDecode(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := refValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("trailing data: %v", err)
	}
	return v, nil
}

func refValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch tok {
	case json.Delim('{'):
		o := &refObject{}
		for dec.More() {
			name, err := dec.Token()
			if err != nil {
				return nil, err
			}
			v, err := refValue(dec)
			if err != nil {
				return nil, err
			}
			o.names = append(o.names, name.(string))
			o.values = append(o.values, v)
		}
		_, err := dec.Token()
		return o, err
	case json.Delim('['):
		a := []any{}
		for dec.More() {
			v, err := refValue(dec)
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
		_, err := dec.Token()
		return a, err
	}
	return tok, nil
}

func (o *refObject) hasDuplicate() bool {
	seen := map[string]bool{}
	for _, n := range o.names {
		if seen[n] {
			return true
		}
		seen[n] = true
	}
	return false
}

func decimal(n json.Number) *big.Float {
	// Zero may carry any exponent, even one big.ParseFloat cannot hold.
	mantissa, _, _ := strings.Cut(strings.ToLower(string(n)), "e")
	if strings.Trim(mantissa, "-0.") == "" {
		return new(big.Float)
	}
	f, _, err := big.ParseFloat(string(n), 10, 4096, big.ToNearestEven)
	if err != nil {
		return nil
	}
	return f
}

func sameValue(a, b any, path string) (string, bool) {
	switch a := a.(type) {
	case *refObject:
		b, ok := b.(*refObject)
		if !ok || len(a.names) != len(b.names) {
			return path, false
		}
		index := make(map[string]int, len(b.names))
		for i, n := range b.names {
			index[n] = i
		}
		for i, n := range a.names {
			j, ok := index[n]
			if !ok {
				return path + "." + n, false
			}
			if p, ok := sameValue(a.values[i], b.values[j], path+"."+n); !ok {
				return p, false
			}
		}
		return "", true
	case []any:
		b, ok := b.([]any)
		if !ok || len(a) != len(b) {
			return path, false
		}
		for i := range a {
			if p, ok := sameValue(a[i], b[i], fmt.Sprintf("%s[%d]", path, i)); !ok {
				return p, false
			}
		}
		return "", true
	case json.Number:
		b, ok := b.(json.Number)
		if !ok {
			return path, false
		}
		fa, fb := decimal(a), decimal(b)
		if fa == nil || fb == nil || fa.Cmp(fb) != 0 {
			return path, false
		}
		return "", true
	}
	return path, a == b
}

func anyDuplicate(v any) bool {
	switch v := v.(type) {
	case *refObject:
		if v.hasDuplicate() {
			return true
		}
		for _, x := range v.values {
			if anyDuplicate(x) {
				return true
			}
		}
	case []any:
		for _, x := range v {
			if anyDuplicate(x) {
				return true
			}
		}
	}
	return false
}

// FuzzCanonicalize: whatever Canonicalize accepts is valid JSON, its
// canonical form is a fixed point, and it equals the input in value as a
// reference decoder reads both; what encoding/json rejects, or what has a
// duplicate member, it refuses; nothing panics.
func FuzzCanonicalize(f *testing.F) {
	for _, s := range []string{
		`{"b":1,"a":[1.0,2e0,-0,"x\u0041\/"]}`,
		`{"\u20ac":1,"\r":2,"\ufb33":3,"1":4,"\ud83d\ude00":5,"\u0080":6,"\u00f6":7}`,
		`[0.1,1e-7,9007199254740991,0.000001,123456789.125]`,
		`{"a":1,"a":2}`,
		`"\ud83d"`,
		`[1e400, 0.30000000000000001]`,
		"{\"a\":\"\xff\"}",
		`{"record_id":"r-1","amount":12.5,"nested":{"list":[true,null,{"k":"v"}]}}`,
		` [ ] `,
		`[0.000e11111111111111111111111111111,-0E-99999999999999999999]`,
		`{} x`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		out, err := exact(data)
		ref, refErr := refDecode(data)
		if err != nil {
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("error %v is not a *Error", err)
			}
			return
		}
		if refErr != nil || !json.Valid(data) {
			t.Fatalf("accepted %q, which encoding/json rejects: %v", data, refErr)
		}
		if !utf8.Valid(data) {
			t.Fatalf("accepted invalid UTF-8 %q", data)
		}
		if anyDuplicate(ref) {
			t.Fatalf("accepted %q, which has a duplicate member", data)
		}
		if !json.Valid(out) {
			t.Fatalf("output %q is not valid JSON", out)
		}
		again, err := exact(out)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("not idempotent: %q → %q → %q, %v", data, out, again, err)
		}
		equalJSON(t, data, out)
		// Plain JCS accepts whatever the policy accepts, and agrees.
		if lax, err := jcsOnly(data); err != nil || !bytes.Equal(lax, out) {
			t.Fatalf("plain JCS of %q = %q, %v; want %q", data, lax, err, out)
		}
	})
}

// Options.MaxDepth moves the nesting bound both ways.
func TestCanonicalizeMaxDepth(t *testing.T) {
	deep := func(n int) []byte { return []byte(strings.Repeat("[", n) + strings.Repeat("]", n)) }
	for _, tc := range []struct {
		name    string
		depth   int
		o       *Options
		problem string
	}{
		{"default", 64, nil, ""},
		{"beyond the default", 65, nil, "depth"},
		{"raised", 1000, &Options{MaxDepth: 1000}, ""},
		{"beyond the raised", 1001, &Options{MaxDepth: 1000}, "depth"},
		{"lowered", 3, &Options{MaxDepth: 2}, "depth"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Canonicalize(deep(tc.depth), tc.o)
			if got := canonProblem(err); got != tc.problem {
				t.Errorf("problem %q (%v), want %q", got, err, tc.problem)
			}
		})
	}
}
