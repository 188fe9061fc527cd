package rules

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// benchRules are 20 predicates of the kinds real rule sets hold
// (thresholds, membership, string tests, aggregates, time windows); goRules
// are the same predicates written by hand, the floor CEL is compared to.
func benchRules() ([]Rule, []func(Activation) bool) {
	var rs []Rule
	var gs []func(Activation) bool
	args := func(a Activation) map[string]any { return a["action"].(map[string]any)["args"].(map[string]any) }
	typ := func(a Activation) string { return a["action"].(map[string]any)["type"].(string) }
	cx := func(a Activation) map[string]any { return a["ctx"].(map[string]any) }
	agg := func(a Activation) map[string]any { return a["agg"].(map[string]any) }
	for i := range 5 {
		limit := float64(1000 + 100*i)
		rs = append(rs,
			Rule{ID: fmt.Sprintf("amount-%d", i), When: fmt.Sprintf(`action.type == "refund" && action.args.amount > %d.0`, int(limit)), Verdict: Hold},
			Rule{ID: fmt.Sprintf("country-%d", i), When: fmt.Sprintf(`ctx.country in ["KP", "IR", "X%d"]`, i), Verdict: Kill},
			Rule{ID: fmt.Sprintf("agg-%d", i), When: fmt.Sprintf(`action.type == "refund" && agg.refunds_168h >= %d.0`, 5+i), Verdict: Hold},
			Rule{ID: fmt.Sprintf("prefix-%d", i), When: fmt.Sprintf(`action.args.customer_id.startsWith("vip-%d")`, i), Verdict: Hold},
		)
		prefix := fmt.Sprintf("vip-%d", i)
		country := fmt.Sprintf("X%d", i)
		minRefunds := float64(5 + i)
		gs = append(gs,
			func(a Activation) bool { return typ(a) == "refund" && args(a)["amount"].(float64) > limit },
			func(a Activation) bool {
				c := cx(a)["country"].(string)
				return c == "KP" || c == "IR" || c == country
			},
			func(a Activation) bool { return typ(a) == "refund" && toFloat(agg(a)["refunds_168h"]) >= minRefunds },
			func(a Activation) bool {
				id := args(a)["customer_id"].(string)
				return len(id) >= len(prefix) && id[:len(prefix)] == prefix
			},
		)
	}
	return rs, gs
}

func toFloat(v any) float64 {
	switch n := v.(type) {
	case int:
		return float64(n)
	case float64:
		return n
	}
	panic("not a number")
}

func benchAct() Activation {
	return Activation{
		"action": map[string]any{"type": "refund", "args": map[string]any{"amount": 640.0, "customer_id": "c-123"}},
		"ctx":    map[string]any{"country": "DE", "open_disputes": 0},
		"agg":    map[string]any{"refunds_168h": 2},
		"now":    time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC),
	}
}

// BenchmarkEvaluate20 compares the CEL set with the same predicates in Go;
// report the ratio of the two ns/op figures from one run.
func BenchmarkEvaluate20(b *testing.B) {
	rs, gs := benchRules()
	c, err := Compile(Set{Rules: rs}, nil)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.Run("cel", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if res := c.Evaluate(ctx, benchAct()); res.Verdict != Pass {
				b.Fatalf("verdict %v: %+v", res.Verdict, res.Matched)
			}
		}
	})
	b.Run("go", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			act := benchAct()
			v := Pass
			for i, g := range gs {
				if g(act) {
					v = max(v, rs[i].Verdict)
				}
			}
			if v != Pass {
				b.Fatal("verdict")
			}
		}
	})
}
