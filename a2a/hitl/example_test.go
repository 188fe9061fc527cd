package hitl_test

import (
	"encoding/json"
	"fmt"

	"novaos.dev/novaos/a2a/hitl"
)

// An agent pauses for a plan confirmation; the client reads the request
// from the status message and answers with the chosen action.
func Example() {
	ask := hitl.NewMessage("Deploy v2 to production?", hitl.PlanConfirmation("Deploy v2 to production?",
		map[string]any{"steps": []string{"drain", "deploy", "verify"}},
		[]hitl.Action{{ID: "approve", Label: "Approve"}, {ID: "reject", Label: "Reject"}}))
	fmt.Println(hitl.Validate(ask) == nil)

	found := hitl.Extract(ask)
	fmt.Println(found.Paused(), found.HITL.Type, found.HITL.Actions[0].ID)

	reply := hitl.NewResponseMessage("Approved", hitl.Response{ActionID: "approve", SessionID: "session-1"})
	fmt.Println(reply.Role, hitl.Extract(reply).Response.ActionID)
	// Output:
	// true
	// true plan_confirmation approve
	// ROLE_USER approve
}

// The wire form of a pause: the payload under its key, and the NovaOS
// marker in the part's own metadata.
func ExamplePart() {
	p := hitl.Part(&hitl.WriteConfirmation{CallID: "call-7", ToolName: "send_email"})
	b, _ := json.Marshal(p)
	fmt.Println(string(b))
	// Output:
	// {"data":{"write_confirmation":{"call_id":"call-7","tool_name":"send_email"}},"metadata":{"mediaType":"application/vnd.novaos.metadata+json"}}
}
