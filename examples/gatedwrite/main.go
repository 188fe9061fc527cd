// Command gatedwrite runs two refunds through the NovaOS governance gate.
// Each goes through gate.Write, and the server's rules let the small one
// run and stop the large one. It reads NOVAOS_GATE_URL and
// NOVAOS_TOKEN (a token with the gate:submit scope).
package main

import (
	"context"
	"errors"
	"fmt"
	"log"

	"novaos.dev/novaos/gate"
)

// Refund is the write the gate judges.
type Refund struct {
	ID       string
	Customer string
	Amount   float64
}

// issueRefund stands in for the payment system: it runs only when the
// gate grants the write.
func issueRefund(ctx context.Context, r Refund) (string, error) {
	return fmt.Sprintf("refunded %.2f to %s", r.Amount, r.Customer), nil
}

func main() {
	cfg, err := gate.ConfigFromEnv(nil)
	if err != nil {
		log.Fatal(err)
	}
	client, err := gate.NewClient(cfg, nil)
	if err != nil {
		log.Fatal(err)
	}
	refund := gate.Write(client, gate.WriteSpec[Refund]{
		ActionType: "issue_refund",
		// The context is what the rules see and what an approval binds.
		Context: func(r Refund) (gate.Context, error) {
			return gate.CSContext{CustomerID: r.Customer, Amount: &r.Amount}, nil
		},
		ActionID: func(r Refund) (string, error) { return r.ID, nil },
	}, issueRefund)

	session := gate.Session{TenantID: "acme", TeamID: "support", AgentID: "refund-bot"}
	err = client.Run(context.Background(), session, func(ctx context.Context) error {
		_ = gate.SetReasoning(ctx, "The customer was charged twice; the CRM shows both charges.")
		for _, r := range []Refund{{"rf-1", "c-42", 30}, {"rf-2", "c-42", 5000}} {
			res, err := refund(ctx, r)
			var kill *gate.KillError
			switch {
			case errors.As(err, &kill):
				fmt.Printf("%s: stopped by the gate (%s, rule %s): %s\n", r.ID, kill.Verdict, kill.RuleIDCited, kill.Rationale)
			case err != nil:
				return err
			default:
				fmt.Printf("%s: %s\n", r.ID, res)
			}
		}
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
}
