package gate

import (
	"encoding/json"
	"testing"
)

// BenchmarkCheckStructure is the duplicate-member check on a submitted
// action of the size an agent sends (context, two pieces of evidence),
// against a plain encoding/json decode of the same document into any.
func BenchmarkCheckStructure(b *testing.B) {
	amount := 42.5
	doc, err := json.Marshal(Action{ActionID: "a-1", ActionType: "issue_refund", TenantID: "acme", TeamID: "support",
		AgentID: "refund-bot", SessionID: "s-1", Reasoning: "the customer was charged twice for one order",
		Context: CSContext{CustomerID: "c-17", Amount: &amount, Currency: "EUR"},
		Evidence: []Evidence{
			{Tool: "lookup_order", Arguments: json.RawMessage(`{"order_id":"o-9","fields":["total","status"]}`), Result: json.RawMessage(`{"total":42.5,"status":"charged","charges":[{"id":"ch-1"},{"id":"ch-2"}]}`)},
			{Tool: "lookup_customer", Arguments: json.RawMessage(`{"customer_id":"c-17"}`), Result: json.RawMessage(`{"name":"Ada","tier":"gold","since":"2019-04-01"}`)},
		}})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(doc)))
	b.Run("check", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := CheckStructure(doc); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("baseline-unmarshal-any", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var v any
			if err := json.Unmarshal(doc, &v); err != nil {
				b.Fatal(err)
			}
		}
	})
}
