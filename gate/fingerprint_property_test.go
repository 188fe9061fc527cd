package gate

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"novaos.dev/novaos/jcs"
)

// The property tests generate contexts as trees of these nodes, so that
// they control both the content (for mutations) and how it is spelled
// (for equivalent encodings).
type (
	jObject struct{ members []jMember }
	jMember struct {
		name  string
		value any
	}
	jArray  []any
	jNumber float64
	jString string
	jBool   bool
	jNull   struct{}
)

var (
	propNames   = []string{"record_id", "amount", "currency", "a", "A", "b", "é", "e\u0301", "😀", "\ue000", "k/1", "x y", "", "tab\t", "Zeta"}
	propStrings = []string{"", "Acme", "acme", "DE89 3704", "line\nbreak", "quote\"d", "back\\slash", "sl/ash", "<&>", "\u2028", "ö", "😀x", "\x01\x1f", "\u00a0", "Ωmega"}
	propNumbers = []float64{0, 1, -1, 2, 10, 100, 0.1, 0.5, 12.5, 1234.56, 149.99, -0.01, 1e-7, 3e-9, 0.000001, 123456789, 9007199254740991, -9007199254740991, 5e-324, 1.7e-300}
)

func genValue(rng *rand.Rand, depth int) any {
	k := rng.IntN(10)
	if depth >= 3 && k >= 8 {
		k = rng.IntN(8)
	}
	switch k {
	case 0, 1:
		return jString(propStrings[rng.IntN(len(propStrings))])
	case 2, 3:
		if rng.IntN(2) == 0 {
			return jNumber(float64(rng.IntN(200001)-100000) / 100) // an amount in cents
		}
		return jNumber(propNumbers[rng.IntN(len(propNumbers))])
	case 4:
		return jNumber(float64(rng.IntN(1000)))
	case 5:
		return jBool(rng.IntN(2) == 0)
	case 6:
		return jNull{}
	case 7:
		return jString(fmt.Sprintf("id-%d", rng.IntN(1000)))
	case 8:
		return genObject(rng, depth+1)
	}
	a := jArray{}
	for range rng.IntN(4) {
		a = append(a, genValue(rng, depth+1))
	}
	return a
}

func genObject(rng *rand.Rand, depth int) *jObject {
	o := &jObject{}
	for range 1 + rng.IntN(6) {
		name := propNames[rng.IntN(len(propNames))]
		if rng.IntN(3) == 0 {
			name = fmt.Sprintf("f%d", rng.IntN(50))
		}
		if o.index(name) < 0 {
			o.members = append(o.members, jMember{name, genValue(rng, depth)})
		}
	}
	if depth == 0 && rng.IntN(3) > 0 { // a list, like a context's tags or line items
		items := jArray{}
		for range 2 + rng.IntN(3) {
			items = append(items, genValue(rng, 2))
		}
		o.members = append(o.members, jMember{"items", items})
	}
	return o
}

func (o *jObject) index(name string) int {
	return slices.IndexFunc(o.members, func(m jMember) bool { return m.name == name })
}

func clone(v any) any {
	switch v := v.(type) {
	case *jObject:
		c := &jObject{members: make([]jMember, len(v.members))}
		for i, m := range v.members {
			c.members[i] = jMember{m.name, clone(m.value)}
		}
		return c
	case jArray:
		c := make(jArray, len(v))
		for i := range v {
			c[i] = clone(v[i])
		}
		return c
	}
	return v
}

// equal is equality of JSON content: members as a set, numbers as doubles
// (so -0 equals 0), strings exactly.
func equal(a, b any) bool {
	switch a := a.(type) {
	case *jObject:
		b, ok := b.(*jObject)
		if !ok || len(a.members) != len(b.members) {
			return false
		}
		for _, m := range a.members {
			i := b.index(m.name)
			if i < 0 || !equal(m.value, b.members[i].value) {
				return false
			}
		}
		return true
	case jArray:
		b, ok := b.(jArray)
		return ok && slices.EqualFunc(a, b, equal)
	}
	return a == b
}

// encoder writes a tree as JSON; with vary set it picks, at random, among
// the spellings of the same content.
type encoder struct {
	rng  *rand.Rand
	vary bool
	sb   strings.Builder
}

func (e *encoder) coin(n int) bool { return e.vary && e.rng.IntN(n) == 0 }

func (e *encoder) space() {
	if e.coin(3) {
		e.sb.WriteString([]string{" ", "\n", "\t", "\r\n", "  "}[e.rng.IntN(5)])
	}
}

func (e *encoder) value(v any) {
	e.space()
	switch v := v.(type) {
	case *jObject:
		ms := slices.Clone(v.members)
		if e.vary {
			e.rng.Shuffle(len(ms), func(i, j int) { ms[i], ms[j] = ms[j], ms[i] })
		}
		e.sb.WriteByte('{')
		for i, m := range ms {
			if i > 0 {
				e.sb.WriteByte(',')
			}
			e.space()
			e.str(m.name)
			e.space()
			e.sb.WriteByte(':')
			e.value(m.value)
		}
		e.space()
		e.sb.WriteByte('}')
	case jArray:
		e.sb.WriteByte('[')
		for i, x := range v {
			if i > 0 {
				e.sb.WriteByte(',')
			}
			e.value(x)
		}
		e.space()
		e.sb.WriteByte(']')
	case jString:
		e.str(string(v))
	case jNumber:
		e.number(float64(v))
	case jBool:
		e.sb.WriteString(strconv.FormatBool(bool(v)))
	case jNull:
		e.sb.WriteString("null")
	}
	e.space()
}

func (e *encoder) hex4(r rune) {
	s := fmt.Sprintf("\\u%04x", r)
	if e.coin(2) {
		s = `\u` + strings.ToUpper(s[2:])
	}
	e.sb.WriteString(s)
}

func (e *encoder) str(s string) {
	e.sb.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			if e.coin(3) {
				e.hex4(r)
			} else {
				e.sb.WriteByte('\\')
				e.sb.WriteRune(r)
			}
		case r < 0x20:
			short := map[rune]string{'\b': `\b`, '\f': `\f`, '\n': `\n`, '\r': `\r`, '\t': `\t`}[r]
			if short != "" && !e.coin(3) {
				e.sb.WriteString(short)
			} else {
				e.hex4(r)
			}
		case r == '/' && e.coin(2):
			e.sb.WriteString(`\/`)
		case e.coin(4):
			if r > 0xFFFF {
				r -= 0x10000
				e.hex4(0xD800 + r>>10)
				e.hex4(0xDC00 + r&0x3FF)
			} else {
				e.hex4(r)
			}
		default:
			e.sb.WriteRune(r)
		}
	}
	e.sb.WriteByte('"')
}

// number writes x as Go does, or, varying, as M × 10^e spelt with extra
// trailing zeros, a moved decimal point and any exponent form: 1.0, 1e0,
// 10e-1, 0.10E+1 are all one.
func (e *encoder) number(x float64) {
	if !e.vary {
		e.sb.WriteString(strconv.FormatFloat(x, 'g', -1, 64))
		return
	}
	var buf [32]byte
	digits, n := jcs.ShortestDigits(buf[:0], x)
	if len(digits) == 0 {
		e.sb.WriteString([]string{"0", "-0", "0.0", "0e5", "-0.000E-3", "0.00"}[e.rng.IntN(6)])
		return
	}
	if x < 0 {
		e.sb.WriteByte('-')
	}
	m := string(digits) + strings.Repeat("0", e.rng.IntN(3))
	exp := n - len(m) // x = m × 10^exp
	p := e.rng.IntN(len(m) + 3)
	var intPart, frac string
	if p <= len(m) {
		intPart, frac = m[:len(m)-p], m[len(m)-p:]
	} else {
		frac = strings.Repeat("0", p-len(m)) + m
	}
	if intPart == "" {
		intPart = "0"
	}
	e.sb.WriteString(intPart)
	if frac != "" {
		e.sb.WriteString("." + frac)
	}
	if x := exp + p; x != 0 || e.coin(3) {
		e.sb.WriteString([]string{"e", "E"}[e.rng.IntN(2)])
		if x >= 0 && e.coin(2) {
			e.sb.WriteByte('+')
		}
		e.sb.WriteString(strconv.Itoa(x))
	}
}

func encode(v any, rng *rand.Rand, vary bool) []byte {
	e := &encoder{rng: rng, vary: vary}
	e.value(v)
	return []byte(e.sb.String())
}

// Equivalent encodings of a context never change its fingerprint.
func TestFingerprintEquivalentEncodings(t *testing.T) {
	rng := rand.New(rand.NewPCG(2026, 9))
	for i := range 2000 {
		ctx := genObject(rng, 0)
		plain := encode(ctx, rng, false)
		want, err := FingerprintJSON("refund", "generic", plain)
		if err != nil {
			t.Fatalf("case %d: %s: %v", i, plain, err)
		}
		for range 4 {
			variant := encode(ctx, rng, true)
			if got, err := FingerprintJSON("refund", "generic", variant); err != nil || got != want {
				t.Fatalf("case %d: %s\nfingerprints as %s, %v\n%s\nas %s", i, variant, got, err, plain, want)
			}
		}
	}
}

// mutation changes one thing in a context (a tree, with its action and
// context type) and reports whether it found something to change.
type mutation struct {
	name  string
	apply func(rng *rand.Rand, c *propCase) bool
}

type propCase struct {
	actionType, contextType string
	ctx                     *jObject
}

// pick returns a random slot holding a value of the tree that keep
// accepts, as a getter and setter, or false if there is none.
func pick(rng *rand.Rand, root *jObject, keep func(any) bool) (get func() any, set func(any), ok bool) {
	type slot struct {
		get func() any
		set func(any)
	}
	var slots []slot
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case *jObject:
			for i := range v.members {
				m := &v.members[i]
				if keep(m.value) {
					slots = append(slots, slot{func() any { return m.value }, func(x any) { m.value = x }})
				}
				walk(m.value)
			}
		case jArray:
			for i := range v {
				if keep(v[i]) {
					slots = append(slots, slot{func() any { return v[i] }, func(x any) { v[i] = x }})
				}
				walk(v[i])
			}
		}
	}
	if keep(root) {
		slots = append(slots, slot{func() any { return root }, nil})
	}
	walk(root)
	if len(slots) == 0 {
		return nil, nil, false
	}
	s := slots[rng.IntN(len(slots))]
	return s.get, s.set, true
}

func isLeaf(v any) bool {
	switch v.(type) {
	case *jObject, jArray:
		return false
	}
	return true
}

func isObject(v any) bool { _, ok := v.(*jObject); return ok }

func flipCase(rng *rand.Rand, s string) (string, bool) {
	rs := []rune(s)
	var letters []int
	for i, r := range rs {
		if unicode.ToUpper(r) != unicode.ToLower(r) {
			letters = append(letters, i)
		}
	}
	if len(letters) == 0 {
		return s, false
	}
	i := letters[rng.IntN(len(letters))]
	if unicode.IsUpper(rs[i]) {
		rs[i] = unicode.ToLower(rs[i])
	} else {
		rs[i] = unicode.ToUpper(rs[i])
	}
	return string(rs), true
}

var mutations = []mutation{
	{"change a leaf", func(rng *rand.Rand, c *propCase) bool {
		get, set, ok := pick(rng, c.ctx, isLeaf)
		if !ok {
			return false
		}
		old := get()
		for range 10 {
			if v := genValue(rng, 3); isLeaf(v) && !equal(v, old) {
				set(v)
				return true
			}
		}
		return false
	}},
	{"replace a leaf by its text", func(rng *rand.Rand, c *propCase) bool {
		get, set, ok := pick(rng, c.ctx, func(v any) bool { _, s := v.(jString); return isLeaf(v) && !s })
		if !ok {
			return false
		}
		var buf strings.Builder
		buf.Write(encode(get(), rng, false))
		set(jString(buf.String()))
		return true
	}},
	{"add a member", func(rng *rand.Rand, c *propCase) bool {
		get, _, _ := pick(rng, c.ctx, isObject)
		o := get().(*jObject)
		name := fmt.Sprintf("new%d", rng.IntN(1000))
		if o.index(name) >= 0 {
			return false
		}
		var v any = jNull{} // an added null is content too
		if rng.IntN(2) == 0 {
			v = genValue(rng, 2)
		}
		o.members = append(o.members, jMember{name, v})
		return true
	}},
	{"remove a member", func(rng *rand.Rand, c *propCase) bool {
		get, _, _ := pick(rng, c.ctx, func(v any) bool { o, ok := v.(*jObject); return ok && len(o.members) > 0 })
		if get == nil {
			return false
		}
		o := get().(*jObject)
		i := rng.IntN(len(o.members))
		o.members = slices.Delete(o.members, i, i+1)
		return true
	}},
	{"rename a member", func(rng *rand.Rand, c *propCase) bool {
		get, _, _ := pick(rng, c.ctx, func(v any) bool { o, ok := v.(*jObject); return ok && len(o.members) > 0 })
		if get == nil {
			return false
		}
		o := get().(*jObject)
		i := rng.IntN(len(o.members))
		name, ok := flipCase(rng, o.members[i].name)
		if !ok {
			name = o.members[i].name + "_"
		}
		if o.index(name) >= 0 {
			return false
		}
		o.members[i].name = name
		return true
	}},
	{"change the action type", func(rng *rand.Rand, c *propCase) bool {
		c.actionType, _ = flipCase(rng, c.actionType)
		return true
	}},
	{"change the context type", func(rng *rand.Rand, c *propCase) bool {
		c.contextType = []string{ContextAP, ContextCS, "Generic", "generic "}[rng.IntN(4)]
		return true
	}},
	{"step a number by one ulp", func(rng *rand.Rand, c *propCase) bool {
		get, set, ok := pick(rng, c.ctx, func(v any) bool { _, ok := v.(jNumber); return ok })
		if !ok {
			return false
		}
		x := float64(get().(jNumber))
		y := math.Nextafter(x, math.Inf([]int{1, -1}[rng.IntN(2)]))
		if math.Abs(y) > maxSafeInteger {
			y = math.Nextafter(x, -y)
		}
		set(jNumber(y))
		return true
	}},
	{"step a number by a cent", func(rng *rand.Rand, c *propCase) bool {
		get, set, ok := pick(rng, c.ctx, func(v any) bool { n, ok := v.(jNumber); return ok && math.Abs(float64(n)) < 1e12 })
		if !ok {
			return false
		}
		set(jNumber(float64(get().(jNumber)) + []float64{0.01, -0.01, 1, -1}[rng.IntN(4)]))
		return true
	}},
	{"change a string's case", func(rng *rand.Rand, c *propCase) bool {
		get, set, ok := pick(rng, c.ctx, func(v any) bool {
			s, ok := v.(jString)
			_, letters := flipCase(rng, string(s))
			return ok && letters
		})
		if !ok {
			return false
		}
		s, _ := flipCase(rng, string(get().(jString)))
		set(jString(s))
		return true
	}},
	{"swap two array elements", func(rng *rand.Rand, c *propCase) bool {
		get, _, ok := pick(rng, c.ctx, func(v any) bool { a, ok := v.(jArray); return ok && len(a) > 1 })
		if !ok {
			return false
		}
		a := get().(jArray)
		for range 5 {
			if i, j := rng.IntN(len(a)), rng.IntN(len(a)); i != j && !equal(a[i], a[j]) {
				a[i], a[j] = a[j], a[i]
				return true
			}
		}
		return false
	}},
	{"wrap a value in an array", func(rng *rand.Rand, c *propCase) bool {
		get, set, ok := pick(rng, c.ctx, isLeaf)
		if !ok {
			return false
		}
		set(jArray{get()})
		return true
	}},
}

// Any change of content, however small, changes the fingerprint.
func TestFingerprintMutations(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 2026))
	applied := map[string]int{}
	for i := range 2000 {
		base := propCase{"issue_refund", ContextGeneric, genObject(rng, 0)}
		want, err := FingerprintJSON(base.actionType, base.contextType, encode(base.ctx, rng, true))
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		for _, m := range mutations {
			c := propCase{base.actionType, base.contextType, clone(base.ctx).(*jObject)}
			if !m.apply(rng, &c) {
				continue
			}
			if equal(c.ctx, base.ctx) && c.actionType == base.actionType && c.contextType == base.contextType {
				t.Fatalf("case %d: %s changed nothing", i, m.name)
			}
			applied[m.name]++
			enc := encode(c.ctx, rng, true)
			got, err := FingerprintJSON(c.actionType, c.contextType, enc)
			if err != nil {
				t.Fatalf("case %d: %s: %s: %v", i, m.name, enc, err)
			}
			if got == want {
				t.Fatalf("case %d: %s left the fingerprint alone:\n%s\n%s", i, m.name, encode(base.ctx, rng, false), encode(c.ctx, rng, false))
			}
		}
	}
	for _, m := range mutations {
		if applied[m.name] < 500 {
			t.Errorf("%s applied only %d times", m.name, applied[m.name])
		}
	}
	t.Logf("mutations applied: %v", applied)
}

// maxSafeInteger is 2^53-1, beyond which Canonicalize refuses numbers.
const maxSafeInteger = 1<<53 - 1

func TestFingerprintGeneratorSpellsValidJSON(t *testing.T) {
	// The generator's own check: varied encodings stay valid JSON text.
	rng := rand.New(rand.NewPCG(3, 3))
	for range 200 {
		b := encode(genObject(rng, 0), rng, true)
		if !utf8.Valid(b) {
			t.Fatalf("invalid UTF-8: %q", b)
		}
		if !json.Valid(b) {
			t.Fatalf("%s: not one valid JSON value", b)
		}
	}
}
