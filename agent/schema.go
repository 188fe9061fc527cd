package agent

import "novaos.dev/novaos/schemacheck"

// MaxOutputSchemaBytes bounds the encoded output schema
// ValidateAgainstSchema compiles: the schema is the caller's input.
const MaxOutputSchemaBytes = schemacheck.DefaultMaxSchemaBytes

// ValidateAgainstSchema checks data (any value encoding/json encodes, or a
// json.RawMessage) against a JSON Schema (a map[string]any as
// PlatformContext.OutputSchema holds it, or a json.RawMessage) and returns
// one human-readable message per violation, "at <JSON pointer>: <rule>",
// sorted (so by location); none means data is valid.
//
// The schema is untrusted input, so it never fails any other way: a schema
// that does not compile (an invalid pattern, a malformed document, one over
// MaxOutputSchemaBytes) gives a message, not an error or a panic. A $ref
// outside the schema itself (a URL, a file) is never fetched: it fails
// validation with a message saying so (package schemacheck).
func ValidateAgainstSchema(data, schema any) []string {
	return schemacheck.Validate(data, schema)
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
