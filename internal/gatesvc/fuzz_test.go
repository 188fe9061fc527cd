package gatesvc

import (
	"context"
	"errors"
	"testing"
)

// A rule set document from an administrator is parsed, checked and
// compiled without panicking, and whatever it accepts it accepts again.
func FuzzParseRuleSet(f *testing.F) {
	f.Add([]byte(refundRules))
	f.Add([]byte(`{"shadow":true,"rules":[{"id":"k","text":"t","when":"true","verdict":"kill"}]}`))
	f.Add([]byte(`{"rules":[{"id":"a","text":"a"},{"id":"a","text":"b"}]}`))
	f.Add([]byte(`{"rules":[],"aggregates":[{"name":"n","action_type":"x","measure":"sum","window":"1h","scope":"tenant"}]}`))
	f.Add([]byte(`{"rules":[{"id":"x","text":"x","when":"evidence.all(e, evidence.all(g, e.seq < g.seq))","verdict":"hold"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		set, err := ParseRuleSet("acme", 1, data, nil)
		if err != nil {
			if !errors.Is(err, ErrInvalidRuleSet) {
				t.Fatalf("error %v does not match ErrInvalidRuleSet", err)
			}
			return
		}
		again, err := ParseRuleSet("acme", 1, data, nil)
		if err != nil || again.hash != set.hash {
			t.Fatalf("accepted once, then %v", err)
		}
	})
}

// Whatever an agent submits gets a valid verdict or a request error,
// never a panic or an unclassified failure.
func FuzzSubmit(f *testing.F) {
	fx := newFixture(f, nil)
	if _, err := fx.svc.PutRules(context.Background(), "acme", "admin", []byte(refundRules)); err != nil {
		f.Fatal(err)
	}
	fx.open("s1", 300, true)
	f.Add(action("s1", "a1", "refund", 20, "c1", false), true)
	f.Add(action("s1", "a2", "refund", 900, "c1", false), false)
	f.Add(action("s1", "a1", "refund", 21, "c1", true), true)
	f.Add([]byte(`{"action_id":"x","action_type":"t","tenant_id":"acme","team_id":"t","agent_id":"a","session_id":"s1","context_type":"generic","context":{"record_id":"r","amount":1e308},"evidence":[]}`), true)
	f.Add([]byte(`{"action_id":"x","action_id":"y"}`), false)
	f.Fuzz(func(t *testing.T, raw []byte, claim bool) {
		v, err := fx.svc.Submit(context.Background(), agent, raw, claim)
		if err != nil {
			if !errors.Is(err, ErrBadRequest) && !errors.Is(err, ErrSessionState) && !errors.Is(err, ErrForbidden) {
				t.Fatalf("unclassified error: %v", err)
			}
			return
		}
		if err := v.Validate(); err != nil {
			t.Fatalf("invalid verdict %+v: %v", v, err)
		}
	})
}
