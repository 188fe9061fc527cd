// Command approver approves a held gated write, as an operator would.
// It waits for the action named on its command line to be held, shows what
// an operator decides on, and approves it through the gate's operator API
// (the same calls as the operator page and novaos gate approve). The agent
// that submitted the write, blocked in gate.Write until now, then runs it.
//
// It reads NOVAOS_GATE_URL and NOVAOS_TOKEN (a token with the gate:operate
// scope).
//
//	go run ./examples/approver rf-2 "receipt checked"
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"novaos.dev/novaos/gate"
)

func main() {
	if len(os.Args) != 3 {
		log.Fatal("usage: approver ACTION_ID NOTE")
	}
	actionID, note := os.Args[1], os.Args[2]
	cfg, err := gate.ConfigFromEnv(nil)
	if err != nil {
		log.Fatal(err)
	}
	client, err := gate.NewClient(cfg, nil)
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	held, err := waitHeld(ctx, client, actionID)
	if err != nil {
		log.Fatal(err)
	}
	// What the operator page shows: the write as submitted, and why the
	// rules held it.
	fmt.Printf("%s %s by %s is held by rule %s: %s\n", held.ActionType, held.ActionID, held.AgentID, held.RuleIDCited, held.Rationale)
	fmt.Printf("the action: %s\n", held.Action)

	// An action is named by its session and its id; a decision binds to
	// the action as it was submitted.
	after, err := client.Decide(ctx, held.SessionID, held.ActionID, gate.OperatorDecision{Decision: gate.DecisionApprove, Note: note})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s is %s\n", after.ActionID, after.State)
}

// waitHeld polls the operator's list of held actions until actionID is in
// it, as an operator watching the page would.
func waitHeld(ctx context.Context, client *gate.Client, actionID string) (*gate.ActionRecord, error) {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		list, err := client.ListActions(ctx, &gate.ListQuery{States: []gate.ActionState{gate.ActionHeld}})
		if err != nil {
			return nil, err
		}
		for i := range list.Actions {
			if list.Actions[i].ActionID == actionID {
				return &list.Actions[i], nil
			}
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%s was not held: %w", actionID, ctx.Err())
		case <-tick.C:
		}
	}
}
