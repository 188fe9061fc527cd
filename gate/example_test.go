package gate_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"novaos.dev/novaos/gate"
)

// A resumed session must bring each write's own action id; the write is
// refused before any request, with the same error type as every other stop.
func ExampleValidateWrite() {
	ctx := gate.WithSession(context.Background(), gate.Session{
		TenantID: "hallway", TeamID: "field-ops", AgentID: "po-agent",
		ID: "nightly-2026-09-03", Attach: true, Resume: true, Resumable: true,
		MaxHold: gate.AdoptDeploymentWindow,
	})
	err := gate.ValidateWrite(ctx, "")
	var kill *gate.KillError
	if errors.As(err, &kill) {
		fmt.Println(kill.Reason, kill.FailedClosed())
	}
	fmt.Println(err)
	fmt.Println(gate.ValidateWrite(ctx, "po-1234"))
	// Output:
	// fail_closed_config true
	// [fail_closed_config] gate: write failed closed: a write in a resumed session must supply its own action id (verdict=kill session=nightly-2026-09-03)
	// <nil>
}

// A verdict is decoded strictly: the duplicate verdict below would decode
// as a pass with encoding/json alone.
func ExampleDecodeVerdict() {
	v, err := gate.DecodeVerdict([]byte(`{"action_id":"a1","session_id":"s1","verdict":"kill","rule_id_cited":"AP-1","rationale":"bank details changed 3 days ago"}`))
	fmt.Println(gate.NewKillError(v), err)
	_, err = gate.DecodeVerdict([]byte(`{"action_id":"a1","session_id":"s1","verdict":"kill","rule_id_cited":"AP-1","verdict":"pass"}`))
	fmt.Println(err)
	// Output:
	// gate: write blocked: bank details changed 3 days ago (verdict=kill rule=AP-1 action=a1 session=s1) <nil>
	// gate: decode verdict: duplicate member "verdict" at $.verdict
}

// The action a gated write submits: the context the rules see (here with
// an extra field a rule keys off), the buffered reads with their
// provenance, and the agent's reasoning.
func ExampleAction() {
	a := gate.Action{
		ActionID: "act-1", ActionType: "issue_refund",
		TenantID: "acme", TeamID: "support", AgentID: "refund-bot", SessionID: "s-1",
		Context: gate.GenericContext{
			RecordID: "cust-4821", Summary: "Refund $240.00 to cust-4821", Amount: new(240.0),
			Extra: map[string]any{"open_dispute_count": 2},
		},
		Evidence: []gate.Evidence{{
			Tool: "lookup_customer", Arguments: json.RawMessage(`{"customer_id":"cust-4821"}`),
			Result:     json.RawMessage(`{"disputes":2}`),
			Provenance: gate.Provenance{Sequence: 1, ObservedAt: time.Date(2026, 9, 3, 2, 0, 1, 0, time.UTC)},
		}},
		Reasoning: "Customer reported a double charge; verified in CRM.",
	}
	fmt.Println(a.Validate())
	b, _ := json.MarshalIndent(a, "", "  ")
	fmt.Println(string(b))
	// Output:
	// <nil>
	// {
	//   "action_id": "act-1",
	//   "action_type": "issue_refund",
	//   "tenant_id": "acme",
	//   "team_id": "support",
	//   "agent_id": "refund-bot",
	//   "session_id": "s-1",
	//   "context_type": "generic",
	//   "context": {
	//     "amount": 240,
	//     "open_dispute_count": 2,
	//     "record_id": "cust-4821",
	//     "summary": "Refund $240.00 to cust-4821"
	//   },
	//   "evidence": [
	//     {
	//       "tool": "lookup_customer",
	//       "arguments": {
	//         "customer_id": "cust-4821"
	//       },
	//       "result": {
	//         "disputes": 2
	//       },
	//       "provenance": {
	//         "seq": 1,
	//         "observed_at": "2026-09-03T02:00:01Z"
	//       }
	//     }
	//   ],
	//   "reasoning": "Customer reported a double charge; verified in CRM."
	// }
}
