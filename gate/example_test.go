package gate_test

import (
	"context"
	"errors"
	"fmt"

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
	// gate: decode verdict: duplicate member "verdict"
}
