// Package schematest validates JSON payloads in tests against the A2A v1.0
// JSON Schema. The schema is the A2A project's own bundle, embedded from
// testdata/a2a-v1.0.0.schema.json (testdata/README.md gives its source,
// version and licence), so the tests need no file outside the repository.
//
// Definitions are named as in the schema's "definitions" object ("Task",
// "Stream Response", "Agent Card", …):
//
//	func TestEmit(t *testing.T) {
//		body, _ := a2a.AppendTask(nil, task)
//		schematest.Validate(t, "Task", body)
//	}
//
// ValidateRequest and ValidateResponse check whole JSON-RPC exchanges, as
// recorded in golden files: a request's params against the method's request
// definition, and each result (one JSON object, or every event of a
// server-sent event stream) against the method's result definition.
//
// The schema is compiled once per test binary.
package schematest
