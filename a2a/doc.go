// Package a2a defines the A2A v1.0.1 wire model and its JSON encoding.
//
// It holds messages, parts, tasks, artifacts, stream events, agent cards,
// push-notification configs, the JSON-RPC 2.0 envelope and error codes, the
// SSE codec, and A2A-Version / A2A-Extensions negotiation.
//
// Writes are strict proto3 JSON: lowerCamelCase field names, enum value names
// (TASK_STATE_COMPLETED, ROLE_USER), RFC 3339 UTC timestamps with millisecond
// precision, and empty fields omitted. Reads are tolerant where that is
// unambiguous: [Unmarshal] accepts snake_case field names as well, ignores
// unknown fields, maps unknown enum values to the UNSPECIFIED value and
// accepts enum numbers and v0.3 spellings. They are strict where tolerance
// would let two readers see different documents: field names are matched
// exactly (a key in another case, "METHOD" or "Metadata", is an unknown key
// and ignored, where encoding/json alone would fill the field with it), and
// a key repeated in any object, free-form metadata and data parts included,
// is refused with a [*DuplicateKeyError] ([DecodeRequest] answers -32600
// for the envelope, [DecodeParams] -32602 for params, both naming the key).
//
// An artifact is versioned without a field of its own, because A2A's
// Artifact has a closed set of fields: [Artifact.Revision] reads the
// counter from its metadata ([ArtifactRevisionKey], written only once it
// is past [DefaultArtifactRevision]), [Artifact.Revised] makes the next
// revision with the same id, name and description (parts replaced, or
// appended as a streamed chunk is), and [TaskArtifactUpdateEvent.ApplyTo]
// folds a stream's artifact updates into the list a caller keeps. The
// counter stays in metadata rather than being lifted into a field when
// read, so every binding (JSON, gRPC, v0.3) carries it with no codec of
// its own; a value that is not a whole number at least the default (a
// boolean among them) reads as the default.
//
// The package depends on the standard library only, so agents, clients and
// servers can share it without pulling in a transport.
//
//	msg := a2a.NewMessage(a2a.RoleUser, a2a.TextPart("hello"))
//	body, _ := json.Marshal(a2a.SendMessageRequest{Message: msg})
//	var task a2a.Task
//	if err := a2a.Unmarshal(data, &task); err != nil { ... }
//	if task.Status.State.Terminal() { ... }
package a2a
