// Package extmeta builds, merges and reads the metadata fragments of A2A
// extensions.
//
// It is the shared machinery of the metadata extensions in ext/cost,
// ext/confidence, ext/worldstate and ext/toolcall: an extension's data
// travels in the metadata map of an A2A object (a Message, an Artifact),
// keyed by the extension's URI. This package builds such fragments, merges
// them, finds one in a metadata map and reads its fields with type checks
// that name the offending field.
//
// Most programs use the extension packages and never import this one:
//
//	md := extmeta.Merge(
//		cost.Metadata(cost.Payload{Usage: cost.Usage{InputTokens: 1500, OutputTokens: 420}}),
//		confidence.Metadata(confidence.Payload{Confidence: 0.92}),
//	)
//	p, ok, err := cost.Parse(md)
//
// A fragment's value is the payload's JSON encoding (a json.RawMessage), so
// it is written in the payload's field order, cannot be changed through a
// shared reference, and is masked like any other JSON value by the agent
// SDK's PII masking. After a trip over the wire the value is the
// map[string]any any JSON decoder produces; Parse accepts both, and the
// payload type itself.
//
// Every malformed payload is reported as an *Error, which matches
// ErrInvalid with errors.Is.
package extmeta
