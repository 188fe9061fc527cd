package jcs

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// An Error is why Canonicalize refused its input.
type Error struct {
	// Problem is one of "syntax", "utf8" (invalid UTF-8 in a string),
	// "surrogate" (a \u escape naming half a surrogate pair), "duplicate",
	// "number_range" (beyond float64), "number_precision" (a number whose
	// decimal value no double writes back), "number_unsafe" (magnitude
	// beyond 2^53-1), "depth" and "trailing".
	Problem string
	// Offset is the byte offset in the input where the problem was found.
	Offset int
	// Detail says more; it quotes at most a short member name, never a
	// string value.
	Detail string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s at byte %d: %s", e.Problem, e.Offset, e.Detail)
}

// maxSafeInteger is 2^53-1, the largest magnitude below which every
// integer is a double (I-JSON, RFC 7493 section 2.2).
const maxSafeInteger = 1<<53 - 1

// defaultMaxDepth bounds nesting when Options.MaxDepth is zero, so a
// hostile document cannot exhaust the stack.
const defaultMaxDepth = 64

// Options say what Canonicalize refuses beyond what RFC 8785 does; nil
// means plain RFC 8785.
type Options struct {
	// ExactNumbers refuses numbers that two different amounts could
	// share a canonical form through: a number whose decimal value is not
	// exactly the value JCS writes back for it (0.30000000000000001 is
	// the double 0.3, and would canonicalize as 0.3), and any magnitude
	// beyond 2^53-1, where neighbouring integers fall on one double. Such
	// values belong in strings. Equal values spelled differently (1, 1.0,
	// 1e0, 10e-1) are all accepted and all canonicalize to 1. A
	// fingerprint of a document needs this; a signature over one does not.
	ExactNumbers bool
	// MaxDepth bounds nesting; zero means 64.
	MaxDepth int
}

// Canonicalize returns the RFC 8785 (JSON Canonicalization Scheme) form of
// the one JSON value in data: no white space, object members sorted by
// the UTF-16 code units of their names, strings with JCS's minimal
// escaping and numbers written as ECMAScript writes the double they
// denote. It refuses, as an *Error, what JCS refuses (invalid JSON or
// UTF-8, lone surrogates, duplicate member names, numbers beyond
// float64), what o refuses, nesting deeper than o.MaxDepth and anything
// but white space after the value.
//
// The work is linear in the input apart from sorting each object's member
// names.
func Canonicalize(data []byte, o *Options) ([]byte, error) {
	return AppendCanonical(make([]byte, 0, len(data)), data, o)
}

// AppendCanonical appends the canonical form of data to dst, as
// Canonicalize returns it, for a caller that writes a canonical document
// around it. On error dst's contents are unspecified.
func AppendCanonical(dst, data []byte, o *Options) ([]byte, error) {
	c := newCanonicalizer(data, o != nil && o.ExactNumbers, dst)
	if o != nil && o.MaxDepth > 0 {
		c.maxDepth = o.MaxDepth
	}
	if err := c.document(); err != nil {
		return nil, err
	}
	return c.out, nil
}

// canonicalizer writes the canonical form of in to out in one pass. An
// object's members are written in input order, each as "name":value, and
// reordered in place once the object closes; names, members and scratch
// are stacks and buffers shared by every object so that nothing is
// allocated per member.
type canonicalizer struct {
	in  []byte
	pos int
	out []byte
	// strict adds Options.ExactNumbers to plain JCS.
	strict   bool
	maxDepth int

	names   []byte   // decoded names of the members of the open objects
	members []member // the members of the open objects
	scratch []byte   // a decoded string value, or an object's body while it is reordered
}

// newCanonicalizer sizes the shared buffers for a typical document (a
// dozen members with short names), so that one rarely grows them; out is
// appended to.
func newCanonicalizer(in []byte, strict bool, out []byte) *canonicalizer {
	buf := make([]byte, 0, 512)
	return &canonicalizer{
		in: in, strict: strict, maxDepth: defaultMaxDepth, out: out,
		names: buf[:0:256], scratch: buf[256:256:512], members: make([]member, 0, 16),
	}
}

type member struct {
	name       [2]int // decoded name: names[name[0]:name[1]]
	start, end int    // canonical "name":value in out
}

func (c *canonicalizer) fail(problem string, at int, format string, args ...any) error {
	return &Error{Problem: problem, Offset: at, Detail: fmt.Sprintf(format, args...)}
}

func (c *canonicalizer) document() error {
	c.space()
	if c.pos == len(c.in) {
		return c.fail("syntax", c.pos, "no JSON value")
	}
	if err := c.value(0); err != nil {
		return err
	}
	c.space()
	if c.pos != len(c.in) {
		return c.fail("trailing", c.pos, "data after the JSON value")
	}
	return nil
}

func (c *canonicalizer) space() { c.pos = skipSpace(c.in, c.pos) }

// skipSpace returns the index of the first byte at or after i in in that
// is not JSON white space.
func skipSpace(in []byte, i int) int {
	for i < len(in) {
		switch in[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

func (c *canonicalizer) value(depth int) error {
	if c.pos == len(c.in) {
		return c.fail("syntax", c.pos, "unexpected end of input")
	}
	switch b := c.in[c.pos]; {
	case b == '{':
		return c.object(depth + 1)
	case b == '[':
		return c.array(depth + 1)
	case b == '"':
		start := len(c.scratch)
		s, err := c.str(c.scratch[:start])
		if err != nil {
			return err
		}
		c.scratch = s
		c.out = AppendString(c.out, s[start:])
		c.scratch = c.scratch[:start]
		return nil
	case b == 't':
		return c.literal("true")
	case b == 'f':
		return c.literal("false")
	case b == 'n':
		return c.literal("null")
	case b == '-' || '0' <= b && b <= '9':
		return c.number()
	}
	return c.fail("syntax", c.pos, "unexpected %q", c.in[c.pos])
}

func (c *canonicalizer) literal(word string) error {
	if !bytes.HasPrefix(c.in[c.pos:], []byte(word)) {
		return c.fail("syntax", c.pos, "invalid literal")
	}
	c.pos += len(word)
	c.out = append(c.out, word...)
	return nil
}

func (c *canonicalizer) array(depth int) error {
	if depth > c.maxDepth {
		return c.fail("depth", c.pos, "nesting deeper than %d", c.maxDepth)
	}
	c.pos++ // [
	c.out = append(c.out, '[')
	c.space()
	if c.pos < len(c.in) && c.in[c.pos] == ']' {
		c.pos++
		c.out = append(c.out, ']')
		return nil
	}
	for {
		c.space()
		if err := c.value(depth); err != nil {
			return err
		}
		c.space()
		if c.pos == len(c.in) {
			return c.fail("syntax", c.pos, "unterminated array")
		}
		switch c.in[c.pos] {
		case ',':
			c.pos++
			c.out = append(c.out, ',')
		case ']':
			c.pos++
			c.out = append(c.out, ']')
			return nil
		default:
			return c.fail("syntax", c.pos, "expected , or ] in array")
		}
	}
}

func (c *canonicalizer) object(depth int) error {
	if depth > c.maxDepth {
		return c.fail("depth", c.pos, "nesting deeper than %d", c.maxDepth)
	}
	open := c.pos
	c.pos++ // {
	c.out = append(c.out, '{')
	body := len(c.out)
	namesBase, membersBase := len(c.names), len(c.members)
	defer func() { c.names, c.members = c.names[:namesBase], c.members[:membersBase] }()

	c.space()
	if c.pos < len(c.in) && c.in[c.pos] == '}' {
		c.pos++
		c.out = append(c.out, '}')
		return nil
	}
	for {
		c.space()
		if c.pos == len(c.in) || c.in[c.pos] != '"' {
			return c.fail("syntax", c.pos, "expected a member name")
		}
		nameStart := len(c.names)
		names, err := c.str(c.names)
		if err != nil {
			return err
		}
		c.names = names
		m := member{name: [2]int{nameStart, len(c.names)}, start: len(c.out)}
		c.out = AppendString(c.out, c.names[nameStart:])
		c.space()
		if c.pos == len(c.in) || c.in[c.pos] != ':' {
			return c.fail("syntax", c.pos, "expected : after a member name")
		}
		c.pos++
		c.out = append(c.out, ':')
		c.space()
		if err := c.value(depth); err != nil {
			return err
		}
		m.end = len(c.out)
		c.members = append(c.members, m)
		c.space()
		if c.pos == len(c.in) {
			return c.fail("syntax", c.pos, "unterminated object")
		}
		if c.in[c.pos] == ',' {
			c.pos++
			c.out = append(c.out, ',')
			continue
		}
		if c.in[c.pos] != '}' {
			return c.fail("syntax", c.pos, "expected , or } in object")
		}
		c.pos++
		break
	}
	return c.order(open, body, c.members[membersBase:])
}

// order puts an object's members, written in input order from body on,
// into JCS order and closes the object. Input already in order (as
// encoding/json writes maps) is left where it is.
func (c *canonicalizer) order(open, body int, ms []member) error {
	name := func(m member) []byte { return c.names[m.name[0]:m.name[1]] }
	sorted := true
	for i := 1; i < len(ms); i++ {
		if Compare(name(ms[i-1]), name(ms[i])) >= 0 {
			sorted = false
			break
		}
	}
	if !sorted {
		slices.SortFunc(ms, func(a, b member) int { return Compare(name(a), name(b)) })
		for i := 1; i < len(ms); i++ {
			if bytes.Equal(name(ms[i-1]), name(ms[i])) {
				return c.fail("duplicate", open, "object has member %s twice", quoteShort(name(ms[i])))
			}
		}
		c.scratch = append(c.scratch[:0], c.out[body:]...)
		c.out = c.out[:body]
		for i, m := range ms {
			if i > 0 {
				c.out = append(c.out, ',')
			}
			c.out = append(c.out, c.scratch[m.start-body:m.end-body]...)
		}
		c.scratch = c.scratch[:0]
	}
	c.out = append(c.out, '}')
	return nil
}

// quoteShort quotes a member name for an error, cut to 40 bytes.
func quoteShort(name []byte) string {
	if len(name) > 40 {
		cut := 40
		for cut > 0 && !utf8.RuneStart(name[cut]) {
			cut--
		}
		return strconv.Quote(string(name[:cut])) + "…"
	}
	return strconv.Quote(string(name))
}

// str reads the string at c.pos and appends its decoded, validated UTF-8
// to dst.
func (c *canonicalizer) str(dst []byte) ([]byte, error) {
	open := c.pos
	c.pos++ // "
	for {
		start := c.pos
		for c.pos < len(c.in) {
			b := c.in[c.pos]
			if b < 0x20 || b == '"' || b == '\\' || b >= utf8.RuneSelf {
				break
			}
			c.pos++
		}
		dst = append(dst, c.in[start:c.pos]...)
		if c.pos == len(c.in) {
			return nil, c.fail("syntax", open, "unterminated string")
		}
		switch b := c.in[c.pos]; {
		case b == '"':
			c.pos++
			return dst, nil
		case b < 0x20:
			return nil, c.fail("syntax", c.pos, "control character U+%04X in a string", b)
		case b >= utf8.RuneSelf:
			r, n := utf8.DecodeRune(c.in[c.pos:])
			if r == utf8.RuneError && n == 1 {
				return nil, c.fail("utf8", c.pos, "invalid UTF-8 in a string")
			}
			dst = append(dst, c.in[c.pos:c.pos+n]...)
			c.pos += n
		default: // backslash
			var err error
			if dst, err = c.escape(dst); err != nil {
				return nil, err
			}
		}
	}
}

func (c *canonicalizer) escape(dst []byte) ([]byte, error) {
	at := c.pos
	if c.pos+1 >= len(c.in) {
		return nil, c.fail("syntax", at, "unterminated escape")
	}
	e := c.in[c.pos+1]
	c.pos += 2
	switch e {
	case '"', '\\', '/':
		return append(dst, e), nil
	case 'b':
		return append(dst, '\b'), nil
	case 'f':
		return append(dst, '\f'), nil
	case 'n':
		return append(dst, '\n'), nil
	case 'r':
		return append(dst, '\r'), nil
	case 't':
		return append(dst, '\t'), nil
	case 'u':
	default:
		return nil, c.fail("syntax", at, "invalid escape \\%c", e)
	}
	r, ok := c.hex4()
	if !ok {
		return nil, c.fail("syntax", at, "invalid \\u escape")
	}
	switch {
	case 0xDC00 <= r && r < 0xE000:
		return nil, c.fail("surrogate", at, "lone low surrogate \\u%04x", r)
	case 0xD800 <= r && r < 0xDC00:
		if c.pos+1 >= len(c.in) || c.in[c.pos] != '\\' || c.in[c.pos+1] != 'u' {
			return nil, c.fail("surrogate", at, "high surrogate \\u%04x without its low half", r)
		}
		c.pos += 2
		lo, ok := c.hex4()
		if !ok {
			return nil, c.fail("syntax", c.pos-2, "invalid \\u escape")
		}
		if lo < 0xDC00 || lo >= 0xE000 {
			return nil, c.fail("surrogate", at, "high surrogate \\u%04x followed by \\u%04x", r, lo)
		}
		r = 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00)
	}
	return utf8.AppendRune(dst, r), nil
}

func (c *canonicalizer) hex4() (rune, bool) {
	if c.pos+4 > len(c.in) {
		return 0, false
	}
	var r rune
	for _, b := range c.in[c.pos : c.pos+4] {
		switch {
		case '0' <= b && b <= '9':
			r = r<<4 | rune(b-'0')
		case 'a' <= b && b <= 'f':
			r = r<<4 | rune(b-'a'+10)
		case 'A' <= b && b <= 'F':
			r = r<<4 | rune(b-'A'+10)
		default:
			return 0, false
		}
	}
	c.pos += 4
	return r, true
}

func isDigit(b byte) bool { return '0' <= b && b <= '9' }

// number reads a number, checks it against the policy and writes it as
// ECMAScript would write the double it denotes.
func (c *canonicalizer) number() error {
	start := c.pos
	if c.in[c.pos] == '-' {
		c.pos++
	}
	intStart := c.pos
	switch {
	case c.pos == len(c.in) || !isDigit(c.in[c.pos]):
		return c.fail("syntax", start, "invalid number")
	case c.in[c.pos] == '0':
		c.pos++
	default:
		for c.pos < len(c.in) && isDigit(c.in[c.pos]) {
			c.pos++
		}
	}
	intEnd := c.pos
	fracStart, fracEnd := c.pos, c.pos
	if c.pos < len(c.in) && c.in[c.pos] == '.' {
		c.pos++
		fracStart = c.pos
		for c.pos < len(c.in) && isDigit(c.in[c.pos]) {
			c.pos++
		}
		if c.pos == fracStart {
			return c.fail("syntax", start, "invalid number: no digits after the point")
		}
		fracEnd = c.pos
	}
	var exp int64
	if c.pos < len(c.in) && (c.in[c.pos] == 'e' || c.in[c.pos] == 'E') {
		c.pos++
		neg := false
		if c.pos < len(c.in) && (c.in[c.pos] == '+' || c.in[c.pos] == '-') {
			neg = c.in[c.pos] == '-'
			c.pos++
		}
		expStart := c.pos
		for c.pos < len(c.in) && isDigit(c.in[c.pos]) {
			// Saturate: any exponent this large puts a non-zero value
			// far outside float64, and the checks below see that.
			if exp < 1e12 {
				exp = exp*10 + int64(c.in[c.pos]-'0')
			}
			c.pos++
		}
		if c.pos == expStart {
			return c.fail("syntax", start, "invalid number: no digits in the exponent")
		}
		if neg {
			exp = -exp
		}
	}
	neg := c.in[start] == '-'
	sig, point := significand(c.in[intStart:intEnd], c.in[fracStart:fracEnd])
	// The value is 0.sig × 10^e. strconv.ParseFloat gets it in that
	// normal form: it saturates long exponents, so a text like 0.(a
	// million zeros)1e1000001 would reach it as a different number.
	e := point + exp
	var f float64
	switch {
	case sig.len() == 0:
	case e > 400:
		return c.fail("number_range", start, "number beyond float64")
	case e < -400: // below the smallest denormal, 5e-324
	default:
		text := make([]byte, 0, 32)
		text = append(text, "0."...)
		text = sig.appendTo(text)
		text = append(text, 'e')
		text = strconv.AppendInt(text, e, 10)
		var err error
		if f, err = strconv.ParseFloat(string(text), 64); err != nil {
			return c.fail("number_range", start, "number beyond float64")
		}
	}
	if neg {
		f = -f
	}
	var buf [32]byte
	digits, n := ShortestDigits(buf[:0], f)
	if c.strict {
		if math.Abs(f) > maxSafeInteger {
			return c.fail("number_unsafe", start, "magnitude beyond 2^53-1; send it as a string")
		}
		if int64(n) != e && len(digits) > 0 || !sig.equal(digits) {
			return c.fail("number_precision", start, "decimal value is not exactly a double's shortest form (too many digits, or underflow)")
		}
	}
	c.out = AppendDigits(c.out, math.Signbit(f) && f != 0, digits, n)
	return nil
}

// digitRun is the significant digits of a number's text: the digits of
// its integer and fraction parts, read as one run, from first to last
// (both excluded from the zeros around them).
type digitRun struct {
	intPart, frac []byte
	first, last   int
}

func (d digitRun) at(i int) byte {
	if i < len(d.intPart) {
		return d.intPart[i]
	}
	return d.frac[i-len(d.intPart)]
}

func (d digitRun) len() int { return d.last - d.first }

func (d digitRun) appendTo(dst []byte) []byte {
	for i := d.first; i < d.last; i++ {
		dst = append(dst, d.at(i))
	}
	return dst
}

func (d digitRun) equal(digits []byte) bool {
	if d.len() != len(digits) {
		return false
	}
	for i, b := range digits {
		if d.at(d.first+i) != b {
			return false
		}
	}
	return true
}

// significand finds the significant digits of intPart.frac and the
// position of the point relative to them: intPart.frac = 0.digits ×
// 10^point.
func significand(intPart, frac []byte) (digitRun, int64) {
	d := digitRun{intPart: intPart, frac: frac, first: -1}
	for i := range len(intPart) + len(frac) {
		if d.at(i) != '0' {
			if d.first < 0 {
				d.first = i
			}
			d.last = i + 1
		}
	}
	if d.first < 0 {
		return digitRun{}, 0
	}
	return d, int64(len(intPart) - d.first)
}
