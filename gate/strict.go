package gate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxDocumentSize bounds what the strict decoders read: a verdict or an
// action far larger than this is a fault, not evidence.
const MaxDocumentSize = 4 << 20

// decodeStrict decodes one JSON object into v, refusing duplicate member
// names at any depth, unknown fields, and anything after the value.
// encoding/json alone keeps the last of two duplicate members, so
// {"verdict":"kill","verdict":"pass"} would decode as a pass; the token
// pass below is what closes that. encoding/json also matches member names
// to fields case-insensitively, so {"verdict":"kill","Verdict":"pass"} is
// the same duplicate: names are compared case-folded.
func decodeStrict(data []byte, v any) error {
	if len(data) > MaxDocumentSize {
		return fmt.Errorf("document of %d bytes exceeds %d", len(data), MaxDocumentSize)
	}
	if err := CheckStructure(data); err != nil {
		return err
	}
	// CheckStructure refused anything after the object already.
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// A StructureError is why CheckStructure refused a document.
type StructureError struct {
	// Problem is one of "not_object", "duplicate", "depth", "trailing"
	// and "syntax".
	Problem string
	// Path locates the offending member ($ is the document, $.a.b[2]
	// inside it); Key is the duplicated member name as written.
	Path, Key string
	Err       error // the underlying syntax error
}

func (e *StructureError) Error() string {
	switch e.Problem {
	case "not_object":
		return "expected a JSON object"
	case "duplicate":
		return fmt.Sprintf("duplicate member %q at %s", e.Key, e.Path)
	case "depth":
		return fmt.Sprintf("nesting deeper than %d at %s", maxDepth, e.Path)
	case "trailing":
		return "trailing data after the JSON value"
	}
	return fmt.Sprintf("malformed JSON at %s: %v", e.Path, e.Err)
}

func (e *StructureError) Unwrap() error { return e.Err }

// CheckStructure walks data's tokens and refuses, as a *StructureError,
// anything but one JSON object with no member named twice at any depth
// (names compared as encoding/json matches them to fields:
// case-insensitively), nested at most 64 deep, and nothing after it but
// white space. The strict decoders here and the platform's judge-verdict
// decoder share it.
func CheckStructure(data []byte) error {
	if quickClean(data) {
		return nil
	}
	return walkStructure(data)
}

// walkStructure is CheckStructure through encoding/json's tokens: slow,
// and the one that says what is wrong.
func walkStructure(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	t, err := dec.Token()
	if err != nil {
		return &StructureError{Problem: "syntax", Path: "$", Err: err}
	}
	if d, ok := t.(json.Delim); !ok || d != '{' {
		return &StructureError{Problem: "not_object", Path: "$"}
	}
	w := walker{dec: dec}
	if err := w.object(1); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return &StructureError{Problem: "trailing", Path: "$"}
	}
	return nil
}

// maxDepth bounds nesting so a hostile document cannot exhaust the stack.
const maxDepth = 64

// walker checks one document's tokens. The path to the current value is
// kept as steps and spelled out only for an error: most documents have
// none, and building every member's path cost more than the walk.
type walker struct {
	dec   *json.Decoder
	steps []pathStep
}

// pathStep is one step of a path: a member name, or an array index when
// the name is unset.
type pathStep struct {
	key   string
	index int
	isKey bool
}

func (w *walker) path() string {
	b := []byte("$")
	for _, st := range w.steps {
		if st.isKey {
			b = append(append(b, '.'), st.key...)
		} else {
			b = append(strconv.AppendInt(append(b, '['), int64(st.index), 10), ']')
		}
	}
	return string(b)
}

func (w *walker) fail(problem string, err error) error {
	return &StructureError{Problem: problem, Path: w.path(), Err: err}
}

func (w *walker) object(depth int) error {
	if depth > maxDepth {
		return w.fail("depth", nil)
	}
	var seen map[string]struct{}
	for w.dec.More() {
		t, err := w.dec.Token()
		if err != nil {
			return w.fail("syntax", err)
		}
		key, ok := t.(string)
		if !ok {
			return w.fail("syntax", errors.New("object key is not a string"))
		}
		folded := foldKey(key)
		if _, dup := seen[folded]; dup {
			w.steps = append(w.steps, pathStep{key: key, isKey: true})
			return &StructureError{Problem: "duplicate", Path: w.path(), Key: key}
		}
		if seen == nil {
			seen = make(map[string]struct{}, 8)
		}
		seen[folded] = struct{}{}
		w.steps = append(w.steps, pathStep{key: key, isKey: true})
		if err := w.value(depth); err != nil {
			return err
		}
		w.steps = w.steps[:len(w.steps)-1]
	}
	if _, err := w.dec.Token(); err != nil { // the closing brace
		return w.fail("syntax", err)
	}
	return nil
}

func (w *walker) value(depth int) error {
	t, err := w.dec.Token()
	if err != nil {
		return w.fail("syntax", err)
	}
	d, ok := t.(json.Delim)
	if !ok {
		return nil
	}
	switch d {
	case '{':
		return w.object(depth + 1)
	case '[':
		if depth+1 > maxDepth {
			return w.fail("depth", nil)
		}
		for i := 0; w.dec.More(); i++ {
			w.steps = append(w.steps, pathStep{index: i})
			if err := w.value(depth + 1); err != nil {
				return err
			}
			w.steps = w.steps[:len(w.steps)-1]
		}
		if _, err := w.dec.Token(); err != nil {
			return w.fail("syntax", err)
		}
		return nil
	}
	return w.fail("syntax", fmt.Errorf("unexpected %v", d))
}

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
