// Package schematest validates JSON payloads in tests against the A2A v1.0
// JSON Schema that lives beside the repository at
// ../shared/a2a/a2a-v1.0.0.schema.json.
//
// Definitions are named as in the schema's "definitions" object ("Task",
// "Stream Response", "Agent Card", …):
//
//	func TestEmit(t *testing.T) {
//		body, _ := a2a.AppendTask(nil, task)
//		schematest.Validate(t, "Task", body)
//	}
//
// The schema is read and compiled once per test binary. When it cannot be
// found the calling test fails: the schema is part of the repository's
// checkout layout, not an optional extra.
package schematest
