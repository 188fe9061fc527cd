package builtin

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"novaos.dev/novaos/internal/toolgw"
	"novaos.dev/novaos/tools"
)

// HITLRequestInput is the human-input tool's name.
const HITLRequestInput = tools.Prefix + tools.ServerHITL + ".request_input"

// HITL returns the hitl server: novaos.hitl.request_input, listed so that
// clients see it exists, and failing closed on every call. There is no
// backend that holds a tool call open while a person answers; a run asks
// a person by pausing itself (input-required, with a HITL request in its
// status), which the platform turns into a pause a person resumes.
func HITL() toolgw.Provider {
	t := toolgw.Tool{Tool: tools.Tool{
		Name:  HITLRequestInput,
		Title: "Ask a person for input (unavailable)",
		Description: "Unavailable: there is no human-input backend, and every call fails with SERVICE_DISABLED. " +
			"To ask a person, pause the run with a HITL request (an input-required status) instead; the run resumes with the answer.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"prompt":{"type":"string","maxLength":10000,"description":"What to ask."},` +
			`"input_type":{"type":"string","maxLength":64,"default":"text","description":"The kind of answer wanted."}},` +
			`"required":["prompt"],"additionalProperties":false}`),
		Annotations: &tools.Annotations{ReadOnly: ptr(true), OpenWorld: ptr(false)},
	}}
	return newStatic(entry{tool: t, call: requestInput})
}

func requestInput(context.Context, *toolgw.Request) (*mcp.CallToolResult, error) {
	return nil, toolgw.Failf(tools.ReasonServiceDisabled, "no human-input backend: pause the run with a HITL request instead")
}
