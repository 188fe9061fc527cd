package gate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"
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
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	t, err := dec.Token()
	if err != nil {
		return &StructureError{Problem: "syntax", Path: "$", Err: err}
	}
	if d, ok := t.(json.Delim); !ok || d != '{' {
		return &StructureError{Problem: "not_object", Path: "$"}
	}
	if err := walkObject(dec, "$", 1); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return &StructureError{Problem: "trailing", Path: "$"}
	}
	return nil
}

// maxDepth bounds nesting so a hostile document cannot exhaust the stack.
const maxDepth = 64

func walkObject(dec *json.Decoder, path string, depth int) error {
	if depth > maxDepth {
		return &StructureError{Problem: "depth", Path: path}
	}
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return &StructureError{Problem: "syntax", Path: path, Err: err}
		}
		key, ok := t.(string)
		if !ok {
			return &StructureError{Problem: "syntax", Path: path, Err: errors.New("object key is not a string")}
		}
		field := path + "." + key
		folded := foldKey(key)
		if seen[folded] {
			return &StructureError{Problem: "duplicate", Path: field, Key: key}
		}
		seen[folded] = true
		if err := walkValue(dec, field, depth); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return &StructureError{Problem: "syntax", Path: path, Err: err}
	}
	return nil
}

func walkValue(dec *json.Decoder, path string, depth int) error {
	t, err := dec.Token()
	if err != nil {
		return &StructureError{Problem: "syntax", Path: path, Err: err}
	}
	d, ok := t.(json.Delim)
	if !ok {
		return nil
	}
	switch d {
	case '{':
		return walkObject(dec, path, depth+1)
	case '[':
		if depth+1 > maxDepth {
			return &StructureError{Problem: "depth", Path: path}
		}
		for i := 0; dec.More(); i++ {
			if err := walkValue(dec, fmt.Sprintf("%s[%d]", path, i), depth+1); err != nil {
				return err
			}
		}
		if _, err := dec.Token(); err != nil {
			return &StructureError{Problem: "syntax", Path: path, Err: err}
		}
		return nil
	}
	return &StructureError{Problem: "syntax", Path: path, Err: fmt.Errorf("unexpected %v", d)}
}

// foldKey maps a member name to one representative of its case-folding
// class, the way encoding/json matches names to fields: each rune becomes
// the smallest rune of its simple-fold orbit, so "K", "k" and the Kelvin
// sign all fold together.
func foldKey(s string) string {
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
