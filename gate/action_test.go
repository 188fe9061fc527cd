package gate

import (
	"strings"
	"testing"
)

// DecodeSubmitted refuses what the strict decoders refuse and returns the
// context as it was sent.
func TestDecodeSubmitted(t *testing.T) {
	const ok = `{"action_id":"a","action_type":"t","tenant_id":"x","session_id":"s","context_type":"generic","context":{"record_id":"r", "amount": 1.50},"evidence":[]}`
	tests := []struct {
		name, doc   string
		wantContext string // "" when refused
	}{
		{"accepted, context as sent", ok, `{"record_id":"r", "amount": 1.50}`},
		{"no context", `{"action_id":"a","action_type":"t","tenant_id":"x","session_id":"s","evidence":[]}`, "null"},
		{"repeated member", `{"action_id":"a","action_id":"b","action_type":"t","tenant_id":"x","session_id":"s"}`, ""},
		{"repeated member in another case", `{"action_id":"a","Action_ID":"b","action_type":"t","tenant_id":"x","session_id":"s"}`, ""},
		{"unknown member", `{"action_id":"a","action_type":"t","tenant_id":"x","session_id":"s","extra":1}`, ""},
		{"trailing data", ok + `{}`, ""},
		{"not an object", `[1]`, ""},
		{"too large", `{"reasoning":"` + strings.Repeat("x", MaxDocumentSize) + `"}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, raw, err := DecodeSubmitted([]byte(tt.doc))
			if tt.wantContext == "" {
				if err == nil {
					t.Fatalf("accepted %q as %+v", tt.doc, a)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := string(raw); got != tt.wantContext && !(tt.wantContext == "null" && got == "") {
				t.Errorf("context %s, want %s", got, tt.wantContext)
			}
			if a.ActionID != "a" || a.SessionID != "s" {
				t.Errorf("action %+v", a)
			}
		})
	}
}
