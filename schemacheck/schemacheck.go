package schemacheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// DefaultMaxSchemaBytes bounds the encoded schema Validate compiles.
const DefaultMaxSchemaBytes = 256 << 10

// maxMessages bounds the messages one validation returns, so a huge value
// against a strict schema cannot flood an error text.
const maxMessages = 50

var printer = message.NewPrinter(language.English)

// Compile compiles schema (a json.RawMessage or []byte, else any value
// encoding/json encodes, such as a map[string]any) with every reference
// out of it refused. A schema over maxBytes encoded (DefaultMaxSchemaBytes
// when maxBytes <= 0) is refused before it is parsed.
func Compile(schema any, maxBytes int) (*jsonschema.Schema, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxSchemaBytes
	}
	raw, err := encode(schema)
	if err != nil {
		return nil, err
	}
	if len(raw) > maxBytes {
		return nil, fmt.Errorf("%d bytes, over the %d-byte limit", len(raw), maxBytes)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	switch doc.(type) {
	case map[string]any, bool:
	default:
		return nil, errors.New("a schema is a JSON object or a boolean")
	}
	comp := jsonschema.NewCompiler()
	comp.UseLoader(refusingLoader{})
	const loc = "urn:novaos:schema"
	if err := comp.AddResource(loc, doc); err != nil {
		return nil, err
	}
	return comp.Compile(loc)
}

// Value is v as the validator reads JSON (v encoded, then decoded with
// numbers kept exact). A json.RawMessage or []byte is taken as JSON.
func Value(v any) (any, error) {
	raw, err := encode(v)
	if err != nil {
		return nil, err
	}
	return jsonschema.UnmarshalJSON(bytes.NewReader(raw))
}

// Validate checks data against schema and returns one human-readable
// message per violation, "at <JSON pointer>: <rule>", in the order the
// validator finds them; none means data is valid. It never fails any
// other way: a schema that does not compile (Compile's limit and
// refusals included) gives a message "invalid schema: …", a value that
// does not encode one saying so.
func Validate(data, schema any) []string {
	sch, err := Compile(schema, 0)
	if err != nil {
		return []string{"invalid schema: " + err.Error()}
	}
	inst, err := Value(data)
	if err != nil {
		return []string{"the value does not encode as JSON: " + err.Error()}
	}
	return Messages(sch.Validate(inst))
}

// Messages turns a validation error into Validate's messages: the
// innermost causes (the rules the value broke, not the subschemas that
// hold them), each with its location, sorted. nil gives none.
func Messages(err error) []string {
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []string{err.Error()}
	}
	var out []string
	leaves(ve, &out)
	// The validator visits an object's properties in map order: sorted,
	// the same value gets the same messages every time.
	slices.Sort(out)
	if len(out) > maxMessages {
		n := len(out) - maxMessages
		out = append(out[:maxMessages], fmt.Sprintf("… and %d more", n))
	}
	return out
}

func leaves(ve *jsonschema.ValidationError, out *[]string) {
	if len(ve.Causes) > 0 {
		for _, c := range ve.Causes {
			leaves(c, out)
		}
		return
	}
	*out = append(*out, fmt.Sprintf("at %s: %s", Pointer(ve.InstanceLocation), ve.ErrorKind.LocalizedString(printer)))
}

// pointerEscaper escapes a JSON pointer token (RFC 6901).
var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

// Pointer writes an instance location as a JSON pointer; the root is "/".
func Pointer(loc []string) string {
	if len(loc) == 0 {
		return "/"
	}
	var b strings.Builder
	for _, t := range loc {
		b.WriteByte('/')
		b.WriteString(pointerEscaper.Replace(t))
	}
	return b.String()
}

func encode(v any) ([]byte, error) {
	switch r := v.(type) {
	case json.RawMessage:
		return r, nil
	case []byte:
		return r, nil
	}
	return json.Marshal(v)
}

// refusingLoader refuses every reference out of a schema: a URL or file
// the schema names is never read.
type refusingLoader struct{}

func (refusingLoader) Load(url string) (any, error) {
	if len(url) > 200 {
		url = url[:200] + "…"
	}
	return nil, fmt.Errorf("the schema refers to %q outside itself; external references are not fetched", url)
}
