package gate

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestFingerprintJSON(t *testing.T) {
	// The scheme pinned: SHA-256 of exactly this canonical document.
	doc := `{"action_type":"refund","context":{"amount":12.5,"note":"<é>","record_id":"r-1"},"context_type":"generic"}`
	sum := sha256.Sum256([]byte(doc))
	want := hex.EncodeToString(sum[:])

	for _, ctx := range []string{
		`{"record_id":"r-1","amount":12.5,"note":"<é>"}`,
		`{ "note" : "\u003c\u00e9\u003e", "amount": 1250e-2, "record_id": "r\u002d1" }`,
		"\n{\"amount\":12.50,\r\n\t\"record_id\":\"r-1\",\"note\":\"<\\u00E9>\"}\n",
	} {
		got, err := FingerprintJSON("refund", "generic", []byte(ctx))
		if err != nil || got != want {
			t.Errorf("FingerprintJSON(%s) = %s, %v; want %s", ctx, got, err, want)
		}
	}

	// It is the canonical form of the envelope written out in full.
	env, err := json.Marshal(map[string]any{
		"context_type": "generic", "action_type": "refund",
		"context": json.RawMessage(`{"record_id":"r-1","amount":12.5,"note":"<é>"}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	canon, err := Canonicalize(env)
	if err != nil || string(canon) != doc {
		t.Fatalf("Canonicalize(envelope) = %s, %v; want %s", canon, err, doc)
	}
}

func TestFingerprintRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, actionType, contextType, context, wantErr string
	}{
		{"no action type", "", "generic", `{}`, "action_type: required"},
		{"no context type", "refund", "", `{}`, "context_type: required"},
		{"action type not UTF-8", "re\xfffund", "generic", `{}`, "action_type: invalid UTF-8"},
		{"context not an object", "refund", "generic", `["a"]`, "not a JSON object"},
		{"null context", "refund", "generic", `null`, "not a JSON object"},
		{"no context", "refund", "generic", ``, "syntax"},
		{"duplicate member", "refund", "generic", `{"amount":1,"amount":2}`, "duplicate"},
		{"unsafe amount", "refund", "generic", `{"amount":12345678901234567}`, "number_unsafe"},
		{"lossy amount", "refund", "generic", `{"amount":0.30000000000000001}`, "number_precision"},
		{"trailing", "refund", "generic", `{} {}`, "trailing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fp, err := FingerprintJSON(tc.actionType, tc.contextType, []byte(tc.context))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || fp != "" {
				t.Fatalf("FingerprintJSON = %q, %v; want an error with %q", fp, err, tc.wantErr)
			}
		})
	}
	if _, err := Fingerprint("refund", nil); err == nil {
		t.Error("Fingerprint of a nil context succeeded")
	}
	big := 1e16
	if _, err := Fingerprint("refund", GenericContext{RecordID: "r", Amount: &big}); err == nil || !strings.Contains(err.Error(), "number_unsafe") {
		t.Errorf("Fingerprint of an amount beyond 2^53: %v", err)
	}
}

func intp(i int) *int { return &i }

func agreementContexts() []Context {
	amount := 1234.56
	zero := 0.0
	changed := time.Date(2026, 11, 30, 9, 15, 0, 123456789, time.FixedZone("CET", 3600))
	return []Context{
		GenericContext{RecordID: "r-1"},
		GenericContext{RecordID: "r-2", Summary: "refund <double> charge & more\u2028", Amount: &amount},
		GenericContext{RecordID: "r-3", Amount: &zero, Extra: map[string]any{
			"open_dispute_count": 3,
			"ratio":              json.Number("1.50"),
			"exact":              json.Number("10e-1"),
			"flags":              []any{true, false, nil},
			"nested":             map[string]any{"b": "😀", "a": []any{1.5, "x/y"}},
			"Ünïcode":            "ö",
			"\ue000":             1,
			"😀":                  2,
		}},
		APContext{VendorID: "v-9", Amount: 9000, Currency: "EUR", PayeeAccount: "DE89370400440532013000"},
		APContext{VendorID: "v-9", VendorName: "Acme \"GmbH\"", InvoiceID: "inv-1", PONumber: "po-7",
			Amount: 0.1, Currency: "USD", BankDetailsChangedAt: &changed, Summary: "tab\there"},
		CSContext{CustomerID: "c-1"},
		CSContext{CustomerID: "c-2", TicketID: "t-1", OrderID: "o-1", Amount: &amount, Currency: "GBP",
			RefundsLast7d: intp(0), OpenDisputeCount: intp(2), ExceptionTicketID: "x-1", Summary: "promise"},
	}
}

// The SDK fingerprints the typed context; the service fingerprints the
// raw context of the action it received, or the typed context it decoded
// from it. All three agree for every context type.
func TestFingerprintAgreement(t *testing.T) {
	for i, c := range agreementContexts() {
		sdk, err := Fingerprint("pay", c)
		if err != nil {
			t.Fatalf("%d: %v", i, err)
		}
		a := Action{ActionID: "a", ActionType: "pay", TenantID: "t", TeamID: "m", AgentID: "g", SessionID: "s", Context: c}
		wire, err := json.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		var raw struct {
			ActionType  string          `json:"action_type"`
			ContextType string          `json:"context_type"`
			Context     json.RawMessage `json:"context"`
		}
		if err := json.Unmarshal(wire, &raw); err != nil {
			t.Fatal(err)
		}
		service, err := FingerprintJSON(raw.ActionType, raw.ContextType, raw.Context)
		if err != nil || service != sdk {
			t.Errorf("%d (%s): service %s, %v; SDK %s", i, c.ContextType(), service, err, sdk)
		}
		decoded, err := DecodeAction(wire)
		if err != nil {
			t.Fatalf("%d: %v", i, err)
		}
		again, err := Fingerprint(decoded.ActionType, decoded.Context)
		if err != nil || again != sdk {
			t.Errorf("%d (%s): decoded context %s, %v; SDK %s", i, c.ContextType(), again, err, sdk)
		}
		// Another client's encoding of the same context (indented, HTML
		// characters unescaped) is the same content.
		var indented bytes.Buffer
		enc := json.NewEncoder(&indented)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "   ")
		if err := enc.Encode(json.RawMessage(raw.Context)); err != nil {
			t.Fatal(err)
		}
		if other, err := FingerprintJSON("pay", c.ContextType(), indented.Bytes()); err != nil || other != sdk {
			t.Errorf("%d: re-encoded context %s, %v; SDK %s", i, other, err, sdk)
		}
		// A different action type or context type is another commitment.
		for _, d := range [][2]string{{"Pay", c.ContextType()}, {"pay", c.ContextType() + "x"}} {
			if fp, _ := FingerprintJSON(d[0], d[1], raw.Context); fp == sdk {
				t.Errorf("%d: %v fingerprints as the original", i, d)
			}
		}
	}
}

// A Python client writes amounts as floats (100.0) and orders members as
// it likes; its contexts fingerprint as the Go SDK's typed ones do.
func TestFingerprintOtherClients(t *testing.T) {
	amount := 100.0
	for _, tc := range []struct {
		raw string
		c   Context
	}{
		{`{"summary": "x", "amount": 100.0, "record_id": "r"}`, GenericContext{RecordID: "r", Summary: "x", Amount: &amount}},
		{`{"currency": "EUR", "amount": 1.0E2, "vendor_id": "v"}`, APContext{VendorID: "v", Amount: 100, Currency: "EUR"}},
		{`{"refunds_last_7d": 1, "customer_id": "c", "amount": 100.00}`, CSContext{CustomerID: "c", Amount: &amount, RefundsLast7d: intp(1)}},
	} {
		want, err := Fingerprint("act", tc.c)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := FingerprintJSON("act", tc.c.ContextType(), []byte(tc.raw)); err != nil || got != want {
			t.Errorf("%s: %s, %v; want %s", tc.raw, got, err, want)
		}
	}
}

func benchmarkContext() GenericContext {
	amount := 149.99
	return GenericContext{RecordID: "ord-2026-118842", Summary: "Refund the duplicate charge on the November invoice", Amount: &amount,
		Extra: map[string]any{
			"customer_id":        "cus_8f3a2b",
			"currency":           "EUR",
			"open_dispute_count": 0,
			"refunds_last_7d":    1,
			"channel":            "email",
			"priority":           "normal",
			"tags":               []any{"billing", "duplicate"},
		}}
}

// BenchmarkFingerprint against BenchmarkFingerprintBaselineMarshal: the
// price of the fingerprint over the json.Marshal it starts with.
func BenchmarkFingerprint(b *testing.B) {
	c := benchmarkContext()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Fingerprint("refund", c); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFingerprintBaselineMarshal(b *testing.B) {
	c := benchmarkContext()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := json.Marshal(c); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFingerprintJSON(b *testing.B) {
	raw, err := json.Marshal(benchmarkContext())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		if _, err := FingerprintJSON("refund", ContextGeneric, raw); err != nil {
			b.Fatal(err)
		}
	}
}
