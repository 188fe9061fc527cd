// Package hitl carries NovaOS's human-in-the-loop and progress conventions
// inside A2A messages.
//
// The conventions are human-in-the-loop requests (input, batch input, plan
// confirmation, information, success, error notification, execution
// progress) and the user's responses to them, progress reports, structured
// errors, and the two pauses an agent run can stop on, connector OAuth
// required and write confirmation required.
//
// The wire form is the NovaOS Python SDK's (its MessageBuilder), so agents
// and clients built on that SDK and ours understand each other. A
// message is a text part a generic client can show, then one data part
// per convention:
//
//	{"data": {"hitl": {"hitl_type": "plan_confirmation", "content": "Deploy?",
//	   "requires_user_action": true, "actions": [...], "metadata": {"plan": {...}}}},
//	 "metadata": {"mediaType": "application/vnd.novaos.metadata+json"}}
//
// The part is control data because of the marker in its own metadata
// (MetadataMediaType under PartKey), never because of the shape of its
// data: an agent's ordinary data part with a "hitl" key is output, not a
// pause. The data is an object keyed by convention (KeyHITL "hitl",
// KeyHITLResponse "hitl_response", KeyProgress "progress", KeyError
// "error", KeyOAuthRequired "oauth", KeyWriteConfirmation
// "write_confirmation"), each payload in snake_case with the Python SDK's field
// names (hitl_type, requires_user_action, session_id, error_type,
// action_id, input_value, auth_url, call_id, tool_name, …). A HITL
// request's kind-specific fields (plan, input_type, validation, fields,
// progress, result, error_type, recovery_suggestions) travel in its
// metadata, as the Python SDK's factories put them there; the two pauses carry
// extra fields merged beside their own. Skill metadata has its own marker,
// SkillMetadataMediaType, so platforms show it to callers while keeping
// control data for themselves. An agent usually sends such a message as
// the status message of an INPUT_REQUIRED or AUTH_REQUIRED (HITL,
// pauses), WORKING (progress) or FAILED (error) status update.
//
//	msg := hitl.NewMessage("Deploy to production?", hitl.PlanConfirmation("Deploy to production?", plan,
//		[]hitl.Action{{ID: "approve", Label: "Approve"}, {ID: "reject", Label: "Reject"}}))
//	…
//	found := hitl.Extract(task.Status.Message)
//	if found.HITL != nil { … show found.HITL.Actions … }
//	reply := hitl.NewResponseMessage("Approved", hitl.Response{ActionID: "approve", SessionID: found.HITL.SessionID})
//
// Builders (NewMessage, Embed, Part and the HITL constructors) write the
// A2A form only. Extract, ExtractTask and FromFrame read every form the
// Python SDK's parser reads: the tagged data part; the ACP-shaped part whose
// mediaType (or metadata "content_type") is the marker and whose content
// is the object as a JSON string; and the legacy form, the convention keys
// in the message's own metadata. Reading is tolerant (a malformed payload
// is skipped; Validate reports it), and the marker is recognised under any
// part-metadata key. Validate checks a message's A2A envelope and every
// payload it carries.
//
// # Choices
//
//   - Where the Python SDK's reference names a constant without printing
//     its value, its text decides: PartKey is "mediaType" (the metadata
//     key that SDK uses for a part's media type), the pause keys are
//     "oauth" and "write_confirmation" ("the oauth payload", "the
//     write_confirmation payload"). The golden messages under testdata are
//     built from that reference's text, with the sections they follow.
//   - The one-key objects an earlier version of this package wrote
//     ({"novaos.dev/hitl": {...}}, lowerCamelCase, in an untagged data
//     part) are not read: no release wrote them, and reading untagged data
//     is exactly what the marker exists to prevent. A task stored by such
//     a build still shows its text part.
//   - Unset optional fields are left out rather than written as null;
//     the comparison with the Python SDK's output is structural (same JSON
//     values), not byte for byte.
//
// The package imports only the standard library and package a2a.
package hitl
