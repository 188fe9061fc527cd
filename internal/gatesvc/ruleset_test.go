package gatesvc

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"novaos.dev/novaos/gate"
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

// ParseRuleSet admits each bound exactly and refuses a step past it,
// naming what is wrong.
func TestParseRuleSetChecks(t *testing.T) {
	rules := func(n int) string {
		rs := make([]string, n)
		for i := range rs {
			rs[i] = `{"id":"r` + strconv.Itoa(i) + `","text":"t","when":"true","verdict":"hold"}`
		}
		return `"rules":[` + strings.Join(rs, ",") + `]`
	}
	aggs := func(n int) string {
		as := make([]string, n)
		for i := range as {
			as[i] = `{"name":"a` + strconv.Itoa(i) + `","action_type":"refund","measure":"count","window":"1h"}`
		}
		return `"aggregates":[` + strings.Join(as, ",") + `]`
	}
	agg := func(fields string) string {
		return `"rules":[],"aggregates":[{` + fields + `}]`
	}
	for _, tc := range []struct {
		name, doc string
		err       string // "" accepts
	}{
		{"most rules", rules(MaxRules), ""},
		{"too many rules", rules(MaxRules + 1), "rules: at most 500"},
		{"most aggregates", `"rules":[],` + aggs(MaxAggregates), ""},
		{"too many aggregates", `"rules":[],` + aggs(MaxAggregates+1), "aggregates: at most 64"},
		{"kill", `"rules":[{"id":"k","text":"t","when":"true","verdict":"kill"}]`, ""},
		{"judge-only", `"rules":[{"id":"j","text":"t"}]`, ""},
		{"a condition without a verdict", `"rules":[{"id":"c","text":"t","when":"true"}]`, "rules[0].verdict: hold or kill is required"},
		{"an unknown verdict", `"rules":[{"id":"c","text":"t","when":"true","verdict":"pass"}]`, `rules[0].verdict: "pass" is not hold or kill`},
		{"longest window", agg(`"name":"a","action_type":"x","measure":"sum","window":"26352h"`), ""},
		{"window too long", agg(`"name":"a","action_type":"x","measure":"sum","window":"26353h"`), "window: between 1ns and 3 years"},
		{"no window", agg(`"name":"a","action_type":"x","measure":"sum","window":"0s"`), "window: between 1ns and 3 years"},
		{"bad name", agg(`"name":"A","action_type":"x","measure":"sum","window":"1h"`), `name: "A" is not a lower-case identifier`},
		{"no action type", agg(`"name":"a","measure":"sum","window":"1h"`), "action_type: required"},
		{"bad measure", agg(`"name":"a","action_type":"x","measure":"avg","window":"1h"`), `measure: "avg" is not count or sum`},
		{"bad scope", agg(`"name":"a","action_type":"x","measure":"sum","window":"1h","scope":"team"`), `scope: "team" is not subject or tenant`},
		{"tenant scope", agg(`"name":"a","action_type":"x","measure":"sum","window":"1h","scope":"tenant","subject_field":"ignored"`), ""},
		{"a name twice", `"rules":[],"aggregates":[{"name":"a","action_type":"x","measure":"sum","window":"1h"},{"name":"a","action_type":"x","measure":"count","window":"1h"}]`, `aggregates[1].name: "a" twice`},
		{"two subjects for one type", `"rules":[],"aggregates":[{"name":"a","action_type":"x","measure":"sum","window":"1h","subject_field":"f"},{"name":"b","action_type":"x","measure":"count","window":"1h","subject_field":"g"}]`, `aggregates[1].subject_field: "g", but another aggregate of "x" files it under "f"`},
		{"one subject for one type", `"rules":[],"aggregates":[{"name":"a","action_type":"x","measure":"sum","window":"1h","subject_field":"f"},{"name":"b","action_type":"x","measure":"count","window":"1h"}]`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set, err := ParseRuleSet("acme", 1, []byte(`{`+tc.doc+`}`), nil)
			if tc.err == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if set != nil || !errors.Is(err, ErrInvalidRuleSet) || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("got %v, want ErrInvalidRuleSet with %q", err, tc.err)
			}
		})
	}
}

// A ledger entry is filed under the subject field the set names for its
// action type, else the context vertical's natural key.
func TestSubjectField(t *testing.T) {
	set, err := ParseRuleSet("acme", 1, []byte(`{"rules":[],"aggregates":[
		{"name":"a","action_type":"pay","measure":"sum","window":"1h","subject_field":"payee"},
		{"name":"b","action_type":"all","measure":"sum","window":"1h","scope":"tenant","subject_field":"nope"}]}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	var none *ruleSet
	for _, tc := range []struct {
		set               *ruleSet
		actionType, ctxTy string
		want              string
	}{
		{set, "pay", gate.ContextCS, "payee"},
		{set, "all", gate.ContextGeneric, "record_id"},
		{set, "refund", gate.ContextAP, "vendor_id"},
		{none, "refund", gate.ContextCS, "customer_id"},
		{none, "refund", gate.ContextGeneric, "record_id"},
	} {
		if got := tc.set.subjectField(tc.actionType, tc.ctxTy); got != tc.want {
			t.Errorf("subjectField(%s, %s) = %q, want %q", tc.actionType, tc.ctxTy, got, tc.want)
		}
	}
}

// A rule set document may be MaxRuleSetBytes long, not a byte more.
func TestRuleSetSizeLimit(t *testing.T) {
	doc := `{"rules":[]}`
	for _, tc := range []struct {
		size int
		ok   bool
	}{{MaxRuleSetBytes, true}, {MaxRuleSetBytes + 1, false}} {
		data := []byte(doc + strings.Repeat(" ", tc.size-len(doc)))
		_, err := ParseRuleSet("acme", 1, data, nil)
		if (err == nil) != tc.ok || (!tc.ok && !strings.Contains(err.Error(), "larger than")) {
			t.Fatalf("%d bytes: %v", tc.size, err)
		}
	}
}
