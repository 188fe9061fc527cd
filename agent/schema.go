package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// MaxOutputSchemaBytes bounds the encoded output schema
// ValidateAgainstSchema compiles: the schema is the caller's input.
const MaxOutputSchemaBytes = 256 << 10

// maxSchemaMessages bounds the messages one validation returns, so a huge
// result against a strict schema cannot flood a task's error text.
const maxSchemaMessages = 50

var schemaPrinter = message.NewPrinter(language.English)

// ValidateAgainstSchema checks data (any value encoding/json encodes, or a
// json.RawMessage) against a JSON Schema (a map[string]any as
// PlatformContext.OutputSchema holds it, or a json.RawMessage) and returns
// one human-readable message per violation, "at <JSON pointer>: <rule>", in
// the order the validator finds them; none means data is valid.
//
// The schema is untrusted input, so it never fails any other way: a schema
// that does not compile (an invalid pattern, a malformed document, one over
// MaxOutputSchemaBytes) gives a message, not an error or a panic. A $ref
// outside the schema itself (a URL, a file) is never fetched: it fails
// validation with a message saying so, which stops a caller from turning
// validation into a request to an internal address. "$schema" names the
// JSON Schema drafts the validator knows (draft-04 to 2020-12, the
// default) without a fetch.
func ValidateAgainstSchema(data, schema any) []string {
	sch, err := compileSchema(schema)
	if err != nil {
		return []string{"invalid schema: " + err.Error()}
	}
	inst, err := jsonValue(data)
	if err != nil {
		return []string{"the value does not encode as JSON: " + err.Error()}
	}
	err = sch.Validate(inst)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []string{err.Error()}
	}
	var out []string
	leafMessages(ve, &out)
	if len(out) > maxSchemaMessages {
		n := len(out) - maxSchemaMessages
		out = append(out[:maxSchemaMessages], fmt.Sprintf("… and %d more", n))
	}
	return out
}

// OutputSchema returns the JSON Schema the caller asked the skill's
// structured output to match (the platform context's output_schema), nil
// when it gave none.
func (c *Context) OutputSchema() map[string]any { return c.pc.OutputSchema }

// ValidateOutput checks v against OutputSchema with ValidateAgainstSchema;
// with no output schema every value passes. A skill that extracts
// structured data calls it before returning, and fails with the messages
// rather than hand back a result the caller cannot use:
//
//	if errs := c.ValidateOutput(extracted); len(errs) > 0 {
//		return agent.Result{Status: agent.StatusFailed, Error: strings.Join(errs, "; ")}, nil
//	}
func (c *Context) ValidateOutput(v any) []string {
	if c.pc.OutputSchema == nil {
		return nil
	}
	return ValidateAgainstSchema(v, c.pc.OutputSchema)
}

// compileSchema compiles schema with every reference out of it refused.
func compileSchema(schema any) (*jsonschema.Schema, error) {
	raw, ok := schema.(json.RawMessage)
	if !ok {
		var err error
		if raw, err = json.Marshal(schema); err != nil {
			return nil, err
		}
	}
	if len(raw) > MaxOutputSchemaBytes {
		return nil, fmt.Errorf("%d bytes, over the %d-byte limit", len(raw), MaxOutputSchemaBytes)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	if _, ok := doc.(map[string]any); !ok {
		if _, isBool := doc.(bool); !isBool {
			return nil, errors.New("a schema is a JSON object or a boolean")
		}
	}
	comp := jsonschema.NewCompiler()
	// The default loader reads file: URLs; this one reads nothing.
	comp.UseLoader(refusingLoader{})
	const loc = "urn:novaos:output-schema"
	if err := comp.AddResource(loc, doc); err != nil {
		return nil, err
	}
	return comp.Compile(loc)
}

// jsonValue is v as the validator reads JSON: decoded with UseNumber, so
// large integers keep their precision.
func jsonValue(v any) (any, error) {
	raw, ok := v.(json.RawMessage)
	if !ok {
		var err error
		if raw, err = json.Marshal(v); err != nil {
			return nil, err
		}
	}
	return jsonschema.UnmarshalJSON(bytes.NewReader(raw))
}

// leafMessages appends the innermost causes of ve: the rules the value
// broke, not the subschemas that contain them.
func leafMessages(ve *jsonschema.ValidationError, out *[]string) {
	if len(ve.Causes) > 0 {
		for _, c := range ve.Causes {
			leafMessages(c, out)
		}
		return
	}
	loc := "/" + strings.Join(escapePointer(ve.InstanceLocation), "/")
	*out = append(*out, fmt.Sprintf("at %s: %s", loc, ve.ErrorKind.LocalizedString(schemaPrinter)))
}

// escapePointer escapes JSON pointer tokens (RFC 6901).
func escapePointer(toks []string) []string {
	out := make([]string, len(toks))
	for i, t := range toks {
		out[i] = strings.NewReplacer("~", "~0", "/", "~1").Replace(t)
	}
	return out
}

// refusingLoader refuses every reference out of a schema: a URL or file a
// caller's schema names is never read.
type refusingLoader struct{}

func (refusingLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("the schema refers to %q outside itself; external references are not fetched", truncate(url, 200))
}
