// Package schemacheck validates JSON values against untrusted JSON Schemas.
//
// The schemas come from someone else: a caller's output schema, a tool's
// input schema, a connector's params schema. Such a schema may refer to
// nothing outside itself. The validator's default loader reads file: URLs,
// and a loader that followed http: would turn validation into a request to
// any address the schema names (an internal service, a cloud metadata
// endpoint). Compile installs a loader that refuses every external
// reference: a $ref to a URL or a file fails compilation with an error
// saying so, and nothing is read. References within the schema
// ("#/$defs/…") resolve, and "$schema" names the drafts the validator
// embeds (draft-04 to 2020-12, the default) without a fetch.
//
//	errs := schemacheck.Validate(map[string]any{"age": -1}, schema)
//	// ["at /age: minimum: got -1, want 0"]
package schemacheck
