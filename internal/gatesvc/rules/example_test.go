package rules_test

import (
	"context"
	"fmt"

	"novaos.dev/novaos/internal/gatesvc/rules"
)

func Example() {
	set, err := rules.Compile(rules.Set{Tenant: "t1", Version: 3, Rules: []rules.Rule{
		{ID: "refund-disputes", Text: "Hold refunds over 500 while the customer has an open dispute.",
			When: `action.type == "refund" && action.args.amount > 500 && ctx.open_disputes > 0`, Verdict: rules.Hold},
		{ID: "fourth-refund", Text: "Kill a customer's fourth refund within a week.",
			When: `action.type == "refund" && agg.refunds_168h >= 3`, Verdict: rules.Kill},
	}}, nil)
	if err != nil {
		fmt.Println("refuse every gated write:", err)
		return
	}
	res := set.Evaluate(context.Background(), rules.Activation{
		"action": map[string]any{"type": "refund", "args": map[string]any{"amount": 620}},
		"ctx":    map[string]any{"open_disputes": 1},
		"agg":    map[string]any{"refunds_168h": 1},
	})
	fmt.Println(res.Verdict)
	for _, m := range res.Matched {
		fmt.Println(m.RuleID, m.Verdict)
	}
	// Output:
	// hold
	// refund-disputes hold
}
