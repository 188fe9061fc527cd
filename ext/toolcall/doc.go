// Package toolcall is the tool-call-v1 extension: live progress of an
// agent's tool calls.
//
// Each event in the life of a tool call an agent makes (started, completed,
// failed) is carried in the metadata of a status-update message under the
// extension URI, so a streaming client can show tool progress live.
//
//	md := toolcall.Metadata(toolcall.Payload{ToolCallID: "call_1", Name: "file_bug", Phase: toolcall.PhaseCompleted, Result: "BUG-12"})
//	// md == {"https://proto-labs.ai/a2a/ext/tool-call-v1": {"toolCallId":"call_1","name":"file_bug","phase":"completed","result":"BUG-12"}}
//	p, ok, err := toolcall.Parse(statusMessage.Metadata)
//
// The wire shape is {toolCallId, name, phase, args?, result?, error?}. The
// events of one call share its toolCallId. Consumers should tolerate a
// missing "started" event and deduplicate on toolCallId and phase. An agent
// built with package agent emits these events when a skill calls
// Context.StartToolCall and then Complete or Fail on the returned call.
package toolcall
