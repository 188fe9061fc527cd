package gate

import (
	"bytes"
	"encoding/json"
	"fmt"

	"novaos.dev/novaos/strictjson"
)

// MaxDocumentSize bounds what the strict decoders read: a verdict or an
// action far larger than this is a fault, not evidence.
const MaxDocumentSize = 4 << 20

// maxDepth bounds nesting so a hostile document cannot exhaust the stack.
const maxDepth = 64

// structure is what CheckStructure admits.
var structure = &strictjson.Options{Object: true, FoldCase: true, MaxDepth: maxDepth}

// decodeStrict decodes one JSON object into v, refusing duplicate member
// names at any depth, unknown fields, and anything after the value.
// encoding/json alone keeps the last of two duplicate members, so
// {"verdict":"kill","verdict":"pass"} would decode as a pass; the check
// before it is what closes that. encoding/json also matches member names
// to fields case-insensitively, so {"verdict":"kill","Verdict":"pass"} is
// the same duplicate: names are compared case-folded.
func decodeStrict(data []byte, v any) error {
	if err := checkDocument(data); err != nil {
		return err
	}
	// CheckStructure refused anything after the object already.
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// checkDocument refuses a document over MaxDocumentSize or one
// CheckStructure refuses.
func checkDocument(data []byte) error {
	if len(data) > MaxDocumentSize {
		return fmt.Errorf("document of %d bytes exceeds %d", len(data), MaxDocumentSize)
	}
	return CheckStructure(data)
}

// A StructureError is why CheckStructure refused a document. Its Problem
// is one of "not_object", "duplicate", "depth", "trailing" and "syntax";
// Path locates the offending member ($ is the document, $.a.b[2] inside
// it) and Key is the duplicated member name as written.
type StructureError = strictjson.Error

// CheckStructure refuses, as a *StructureError, anything but one JSON
// object with no member named twice at any depth (names compared as
// encoding/json matches them to fields: case-insensitively), nested at
// most 64 deep, and nothing after it but white space. The strict decoders
// here and the platform's judge-verdict decoder share it.
func CheckStructure(data []byte) error {
	return strictjson.Check(data, structure)
}
