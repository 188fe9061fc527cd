package gate

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
)

func TestPutRulesRefusesUndeclaredAggregates(t *testing.T) {
	const aggregates = `"aggregates": [{"name": "refunds_168h", "action_type": "issue_refund", "measure": "count", "window": "168h"}]`
	for _, tc := range []struct {
		name, when string
		missing    string // "" when the set is stored
	}{
		{"declared", `agg.refunds_168h >= 2.0`, ""},
		{"declared by index", `agg["refunds_168h"] >= 2.0`, ""},
		{"whole map", `size(agg) > 3`, ""},
		{"typo", `agg.refunds_168 >= 2.0`, "agg.refunds_168"},
		{"typo by index", `agg["refunds_7d"] > 1.0`, "agg.refunds_7d"},
		{"presence of a typo", `has(agg.refund_168h)`, "agg.refund_168h"},
		{"two typos, sorted", `agg.b > 1.0 || agg.a > 1.0 || agg.refunds_168h > 1.0`, "agg.a, agg.b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, nil)
			doc := `{"rules": [{"id": "r", "text": "r", "when": ` + strconv.Quote(tc.when) + `, "verdict": "kill"}], ` + aggregates + `}`
			_, err := f.svc.PutRules(context.Background(), "acme", "admin", []byte(doc))
			if tc.missing == "" {
				if err != nil {
					t.Fatalf("PutRules: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidRuleSet) || !strings.Contains(err.Error(), "read "+tc.missing+", which") {
				t.Fatalf("PutRules error = %v, want ErrInvalidRuleSet naming %s", err, tc.missing)
			}
			if _, err := f.store.RuleSet(context.Background(), "acme", 0); err == nil {
				t.Fatal("the refused set was stored")
			}
		})
	}
}
