package strictjson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// DefaultMaxDepth is the nesting bound when Options.MaxDepth is zero:
// encoding/json's own.
const DefaultMaxDepth = 10000

// Options say what Check refuses beyond malformed JSON, repeated member
// names and trailing data; nil means the defaults.
type Options struct {
	// Object requires the value to be a JSON object.
	Object bool
	// FoldCase compares member names the way encoding/json matches them
	// to struct fields, case-insensitively under Unicode simple folding,
	// so {"verdict":…,"Verdict":…} repeats a name. Otherwise names are
	// compared exactly, after their escapes are resolved.
	FoldCase bool
	// MaxDepth bounds nesting, the outermost container at depth 1; zero
	// means DefaultMaxDepth.
	MaxDepth int
	// Fields, when set, lists the member names the value may have,
	// matched exactly: a case variant of a listed name is unknown.
	Fields *Fields
}

// Fields describe the member names a value's objects may have. A nil
// *Fields admits any value.
type Fields struct {
	// Names maps each name an object may have to what its value may
	// hold.
	Names map[string]*Fields
	// Open admits names not in Names, their values described by Other.
	Open  bool
	Other *Fields
	// Items describes the elements of an array.
	Items *Fields
	// Union, when set, makes one member's value depend on another's.
	Union *Union
}

// A Union is an object whose member Tag, a string, says what the value of
// its member Body may hold: a tool call's arguments, by the tool's name.
// Body follows Variants[tag]; with no Tag, or a tag Variants does not
// list, it may hold anything. A Body read before its Tag is checked when
// its object closes, which reads Body's bytes again; a Tag first costs
// nothing more.
type Union struct {
	Tag, Body string
	Variants  map[string]*Fields
}

// variant returns the Fields of Body under tag.
func (u *Union) variant(tag string) *Fields { return u.Variants[tag] }

// member returns the Fields of the value of the member named name, and
// whether the name is admitted.
func (f *Fields) member(name []byte) (*Fields, bool) {
	if f == nil {
		return nil, true
	}
	if sub, ok := f.Names[string(name)]; ok {
		return sub, true
	}
	return f.Other, f.Open
}

func (f *Fields) union() *Union {
	if f == nil {
		return nil
	}
	return f.Union
}

func (f *Fields) items() *Fields {
	if f == nil {
		return nil
	}
	return f.Items
}

// The problems an Error reports.
const (
	Syntax    = "syntax"     // not JSON; Err says why
	NotObject = "not_object" // Options.Object, and the value is another kind
	Duplicate = "duplicate"  // a member name twice in one object
	Unknown   = "unknown"    // a member name Options.Fields does not list
	Depth     = "depth"      // nesting beyond Options.MaxDepth
	Trailing  = "trailing"   // something after the value
)

// An Error is why Check refused a document. It quotes member names, never
// values.
type Error struct {
	// Problem is one of Syntax, NotObject, Duplicate, Unknown, Depth and
	// Trailing.
	Problem string
	// Path locates the offending member or value as a JSONPath: $ is the
	// document, $.a.b[2] inside it, and a name that is not a plain word
	// is written ["na me"]. For a duplicate or unknown member it ends at
	// that member.
	Path string
	// Key is the duplicate or unknown member name, as read.
	Key string
	// Limit is the depth bound a Depth problem broke.
	Limit int
	// Err is the syntax error beneath a Syntax problem.
	Err error
}

func (e *Error) Error() string {
	switch e.Problem {
	case NotObject:
		return "expected a JSON object"
	case Duplicate:
		return fmt.Sprintf("duplicate member %s at %s", quoteName(e.Key), e.Path)
	case Unknown:
		return fmt.Sprintf("unknown member %s at %s", quoteName(e.Key), e.Path)
	case Depth:
		return fmt.Sprintf("nesting deeper than %d at %s", e.Limit, e.Path)
	case Trailing:
		return "trailing data after the JSON value"
	}
	return fmt.Sprintf("malformed JSON at %s: %v", e.Path, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Check refuses, as an *Error, anything in data but one JSON value that
// repeats no member name in any object, nests at most o.MaxDepth deep and
// has nothing after it but white space, and, as o says, is an object and
// uses only the names o.Fields lists. Its cost is linear in len(data).
func Check(data []byte, o *Options) error {
	if o == nil {
		o = &Options{}
	}
	c := config{Options: *o}
	if c.MaxDepth <= 0 {
		c.MaxDepth = DefaultMaxDepth
	}
	if quickClean(data, &c) {
		return nil
	}
	return walk(data, &c)
}

// Decode checks data with Check and decodes it into v with encoding/json,
// refusing fields v does not have unless allowUnknown is set.
func Decode(data []byte, v any, o *Options, allowUnknown bool) error {
	if err := Check(data, o); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if !allowUnknown {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(v); err != nil {
		return err
	}
	// Check refused anything after the value already.
	if _, err := dec.Token(); err != io.EOF {
		return &Error{Problem: Trailing, Path: "$"}
	}
	return nil
}

type config struct{ Options }

// key is the name set entry of a member name.
func (c *config) key(name []byte) string {
	if c.FoldCase {
		return foldKey(string(name))
	}
	return string(name)
}

// step is one step of a path: a member name, or an array index when
// isName is unset.
type step struct {
	name   string
	index  int
	isName bool
}

// render spells a path out; only an error needs it.
func render(steps []step) string {
	b := []byte("$")
	for _, st := range steps {
		switch {
		case !st.isName:
			b = append(strconv.AppendInt(append(b, '['), int64(st.index), 10), ']')
		case plainName(st.name):
			b = append(append(b, '.'), st.name...)
		default:
			b = append(append(append(b, '['), quoteName(st.name)...), ']')
		}
	}
	return string(b)
}

// plainName reports whether a name can stand after a dot in a path.
func plainName(s string) bool {
	if s == "" || len(s) > maxName {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// maxName is how much of a member name an error quotes.
const maxName = 64

// quoteName quotes a member name for an error, cut to maxName bytes.
func quoteName(s string) string {
	if len(s) > maxName {
		return strconv.Quote(strings.ToValidUTF8(s[:maxName], "")) + "…"
	}
	return strconv.Quote(s)
}
