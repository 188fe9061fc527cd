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
	if err := checkDuplicates(data); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}

// checkDuplicates walks the token stream and reports the first object
// that names a member twice. It also refuses a document that is not a
// single object.
func checkDuplicates(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	t, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := t.(json.Delim); !ok || d != '{' {
		return errors.New("expected a JSON object")
	}
	return walkObject(dec, 1)
}

// maxDepth bounds nesting so a hostile document cannot exhaust the stack.
const maxDepth = 64

func walkObject(dec *json.Decoder, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("nesting deeper than %d", maxDepth)
	}
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		key, ok := t.(string)
		if !ok {
			return errors.New("object key is not a string")
		}
		folded := foldKey(key)
		if seen[folded] {
			return fmt.Errorf("duplicate member %q", key)
		}
		seen[folded] = true
		if err := walkValue(dec, depth); err != nil {
			return err
		}
	}
	_, err := dec.Token() // the closing brace
	return err
}

func walkValue(dec *json.Decoder, depth int) error {
	t, err := dec.Token()
	if err != nil {
		return err
	}
	d, ok := t.(json.Delim)
	if !ok {
		return nil
	}
	switch d {
	case '{':
		return walkObject(dec, depth+1)
	case '[':
		if depth+1 > maxDepth {
			return fmt.Errorf("nesting deeper than %d", maxDepth)
		}
		for dec.More() {
			if err := walkValue(dec, depth+1); err != nil {
				return err
			}
		}
		_, err := dec.Token()
		return err
	}
	return fmt.Errorf("unexpected %v", d)
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
