package hitl_test

import (
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
