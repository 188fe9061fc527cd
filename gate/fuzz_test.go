package gate

import (
	"bytes"
	"encoding/json"
	"testing"
)

// Accepted documents must be valid and stable: decode → encode → decode
// gives the same encoding, so what the SDK acts on is what it would send.
func FuzzDecodeVerdict(f *testing.F) {
	for _, s := range []string{
		`{"action_id":"a","session_id":"s","verdict":"pass"}`,
		`{"action_id":"a","session_id":"s","verdict":"kill","rule_id_cited":"AP-1","rationale":"r","signals":["x"]}`,
		`{"action_id":"a","session_id":"s","verdict":"hold","rule_id_cited":"R","hold":{"action_id":"a","state":"pending","window_s":0,"indefinite":true}}`,
		`{"action_id":"a","session_id":"s","verdict":"kill","reason":"fail_closed_judge_timeout"}`,
		`{"action_id":"a","session_id":"s","verdict":"kill","rule_id_cited":"R","verdict":"pass"}`,
		`{"action_id":"a","session_id":"s","verdict":"pass"} {}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := DecodeVerdict(data)
		if err != nil {
			return
		}
		if err := v.Validate(); err != nil {
			t.Fatalf("accepted an invalid verdict: %v", err)
		}
		if v.Verdict == Pass && v.Reason != "" {
			t.Fatalf("accepted a pass with reason %q", v.Reason)
		}
		if CheckStructure(data) != nil {
			t.Fatal("accepted a document CheckStructure refuses")
		}
		b1, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		v2, err := DecodeVerdict(b1)
		if err != nil {
			t.Fatalf("re-decoding our own encoding %s: %v", b1, err)
		}
		b2, _ := json.Marshal(v2)
		if !bytes.Equal(b1, b2) {
			t.Fatalf("unstable encoding:\n%s\n%s", b1, b2)
		}
	})
}

func FuzzDecodeAction(f *testing.F) {
	for _, s := range []string{
		`{"action_id":"a","action_type":"t","tenant_id":"x","team_id":"y","agent_id":"z","session_id":"s","context_type":"generic","context":{"record_id":"r","amount":1.5,"n":12345678901234567890},"evidence":[]}`,
		`{"action_id":"a","action_type":"t","tenant_id":"x","team_id":"y","agent_id":"z","session_id":"s","context_type":"ap","context":{"vendor_id":"v","amount":3,"bank_details_changed_at":"2026-08-31T09:30:00+02:00"},"evidence":[{"tool":"q","result":{"k":[1,2]},"provenance":{"seq":1,"observed_at":"2026-09-03T02:00:01Z"}}],"resume":true}`,
		`{"action_id":"a","action_type":"t","tenant_id":"x","team_id":"y","agent_id":"z","session_id":"s","context_type":"cs","context":{"customer_id":"c","refunds_last_7d":3},"evidence":[],"reasoning":"r"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		submittedAgrees(t, data)
		a, err := DecodeAction(data)
		if err != nil {
			return
		}
		if err := a.Validate(); err != nil {
			t.Fatalf("accepted an invalid action: %v", err)
		}
		b1, err := json.Marshal(a)
		if err != nil {
			t.Fatalf("cannot encode an accepted action: %v", err)
		}
		a2, err := DecodeAction(b1)
		if err != nil {
			t.Fatalf("re-decoding our own encoding %s: %v", b1, err)
		}
		b2, _ := json.Marshal(a2)
		if !bytes.Equal(b1, b2) {
			t.Fatalf("unstable encoding:\n%s\n%s", b1, b2)
		}
	})
}

// submittedAgrees checks that DecodeSubmitted, the gate's one-pass read
// of a submitted action, accepts and refuses what DecodeActionUnvalidated
// does, decodes the same action, and returns the context member as a
// second decode of the document reads it.
func submittedAgrees(t *testing.T, data []byte) {
	t.Helper()
	want, wantErr := DecodeActionUnvalidated(data)
	got, raw, err := DecodeSubmitted(data)
	if (err == nil) != (wantErr == nil) {
		t.Fatalf("DecodeSubmitted error %v, DecodeActionUnvalidated %v", err, wantErr)
	}
	if err != nil {
		return
	}
	w1, _ := json.Marshal(want)
	w2, _ := json.Marshal(got)
	if !bytes.Equal(w1, w2) {
		t.Fatalf("DecodeSubmitted decoded\n%s\nDecodeActionUnvalidated\n%s", w2, w1)
	}
	var wire struct {
		Context json.RawMessage `json:"context"`
	}
	if err := json.Unmarshal(data, &wire); err != nil {
		t.Fatalf("an accepted document does not decode again: %v", err)
	}
	if !bytes.Equal(raw, wire.Context) {
		t.Fatalf("context %s, want %s", raw, wire.Context)
	}
}

// The smaller decoders share one target: whatever one accepts must
// re-encode to a document it accepts again, unchanged.
func FuzzDecodeOthers(f *testing.F) {
	for _, s := range []string{
		`{"action_id":"a","state":"pending","window_s":300,"expires_at":"2026-09-03T02:05:00Z"}`,
		`{"session_id":"s","action_id":"a","status":"granted","fencing_token":7,"claimed_at":"2026-09-03T08:01:00Z"}`,
		`{"session_id":"s","action_id":"a","status":"already_executed","acknowledged_at":"2026-09-03T08:01:00Z"}`,
		`{"session_id":"s","action_id":"a","acknowledged_at":"2026-09-03T08:01:00+02:00"}`,
		`{"session_id":"s","hold_window_s":0,"hold_indefinite":true}`,
		`{"tenant_id":"t","team_id":"t","agent_id":"a","session_id":"s","attach":true,"resume":true,"adopt_deployment_window":true}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		stable(t, data, DecodeHoldStatus)
		stable(t, data, DecodeClaim)
		stable(t, data, DecodeAck)
		stable(t, data, DecodeSessionInfo)
		stable(t, data, DecodeSessionRequest)
	})
}

func stable[T any](t *testing.T, data []byte, decode func([]byte) (T, error)) {
	t.Helper()
	v, err := decode(data)
	if err != nil {
		return
	}
	b1, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("cannot encode an accepted %T: %v", v, err)
	}
	v2, err := decode(b1)
	if err != nil {
		t.Fatalf("re-decoding our own encoding %s: %v", b1, err)
	}
	if b2, _ := json.Marshal(v2); !bytes.Equal(b1, b2) {
		t.Fatalf("unstable encoding of %T:\n%s\n%s", v, b1, b2)
	}
}
