package gate

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// compact normalises a literal document so round trips compare bytes.
func compact(t *testing.T, s string) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		t.Fatalf("bad literal: %v", err)
	}
	return b.String()
}

var observed = time.Date(2026, 9, 3, 2, 0, 1, 0, time.UTC)

func TestActionRoundTrip(t *testing.T) {
	changed := time.Date(2026, 8, 31, 9, 30, 0, 0, time.UTC)
	tests := []struct {
		name string
		doc  string
		want Action
	}{
		{
			name: "generic context with extras, seed quickstart",
			doc: `{"action_id":"act-1","action_type":"issue_refund","tenant_id":"acme","team_id":"support",
				"agent_id":"refund-bot","session_id":"s-1","context_type":"generic",
				"context":{"amount":240,"open_dispute_count":2,"record_id":"cust-4821","summary":"Refund $240.00 to cust-4821"},
				"evidence":[{"tool":"lookup_customer","arguments":{"customer_id":"cust-4821"},"result":{"plan":"annual"},
				"provenance":{"seq":1,"call_id":"c1","observed_at":"2026-09-03T02:00:01Z"}}],
				"reasoning":"Customer reported a double charge; verified in CRM."}`,
			want: Action{
				ActionID: "act-1", ActionType: "issue_refund", TenantID: "acme", TeamID: "support",
				AgentID: "refund-bot", SessionID: "s-1", ContextType: ContextGeneric,
				Context: GenericContext{RecordID: "cust-4821", Summary: "Refund $240.00 to cust-4821", Amount: new(240.0),
					Extra: map[string]any{"open_dispute_count": json.Number("2")}},
				Evidence: []Evidence{{Tool: "lookup_customer", Arguments: json.RawMessage(`{"customer_id":"cust-4821"}`),
					Result: json.RawMessage(`{"plan":"annual"}`), Provenance: Provenance{Sequence: 1, CallID: "c1", ObservedAt: observed}}},
				Reasoning: "Customer reported a double charge; verified in CRM.",
			},
		},
		{
			name: "ap context, resumed write, failed and truncated reads",
			doc: `{"action_id":"po-1234","action_type":"pay_invoice","tenant_id":"hallway","team_id":"field-ops",
				"agent_id":"po-agent","session_id":"nightly-2026-09-03","context_type":"ap",
				"context":{"vendor_id":"v-9","invoice_id":"inv-7","amount":1250.5,"currency":"EUR",
				"payee_account":"DE02100100109307118603","bank_details_changed_at":"2026-08-31T09:30:00Z"},
				"evidence":[{"tool":"vendor_history","error":"timeout","provenance":{"seq":1,"observed_at":"2026-09-03T02:00:01Z"}},
				{"tool":"bank_changes","result":"[\"2026-08-31\"]","provenance":{"seq":2,"observed_at":"2026-09-03T02:00:01Z","truncated":true,"original_bytes":90000}}],
				"resume":true}`,
			want: Action{
				ActionID: "po-1234", ActionType: "pay_invoice", TenantID: "hallway", TeamID: "field-ops",
				AgentID: "po-agent", SessionID: "nightly-2026-09-03", ContextType: ContextAP,
				Context: APContext{VendorID: "v-9", InvoiceID: "inv-7", Amount: 1250.5, Currency: "EUR",
					PayeeAccount: "DE02100100109307118603", BankDetailsChangedAt: &changed},
				Evidence: []Evidence{
					{Tool: "vendor_history", Error: "timeout", Provenance: Provenance{Sequence: 1, ObservedAt: observed}},
					{Tool: "bank_changes", Result: json.RawMessage(`"[\"2026-08-31\"]"`),
						Provenance: Provenance{Sequence: 2, ObservedAt: observed, Truncated: true, OriginalBytes: 90000}},
				},
				Resume: true,
			},
		},
		{
			name: "cs context, no evidence",
			doc: `{"action_id":"a-2","action_type":"issue_refund","tenant_id":"acme","team_id":"support","agent_id":"refund-bot",
				"session_id":"s-2","context_type":"cs","context":{"customer_id":"cust-1","ticket_id":"t-5","amount":0,
				"refunds_last_7d":3,"open_dispute_count":0,"exception_ticket_id":"EXC-44"},"evidence":[]}`,
			want: Action{
				ActionID: "a-2", ActionType: "issue_refund", TenantID: "acme", TeamID: "support", AgentID: "refund-bot",
				SessionID: "s-2", ContextType: ContextCS,
				Context: CSContext{CustomerID: "cust-1", TicketID: "t-5", Amount: new(0.0), RefundsLast7d: new(3),
					OpenDisputeCount: new(0), ExceptionTicketID: "EXC-44"},
				Evidence: []Evidence{},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeAction([]byte(tt.doc))
			if err != nil {
				t.Fatalf("DecodeAction: %v", err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Fatalf("decoded (-want +got):\n%s", d)
			}
			b, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(compact(t, tt.doc), string(b)); d != "" {
				t.Fatalf("re-encoded (-want +got):\n%s", d)
			}
		})
	}
}

func TestActionMarshalFillsContextType(t *testing.T) {
	a := Action{ActionID: "a", Context: CSContext{CustomerID: "c"}}
	b, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"context_type":"cs"`, `"evidence":[]`, `"context":{"customer_id":"c"}`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("%s lacks %s", b, want)
		}
	}
}

func TestDecodeActionRefuses(t *testing.T) {
	valid := `{"action_id":"a","action_type":"t","tenant_id":"x","team_id":"y","agent_id":"z","session_id":"s",
		"context_type":"generic","context":{"record_id":"r"},"evidence":[]}`
	if _, err := DecodeAction([]byte(valid)); err != nil {
		t.Fatalf("valid document refused: %v", err)
	}
	tests := []struct{ name, doc, want string }{
		{"duplicate top-level key", strings.Replace(valid, `"action_id":"a"`, `"action_id":"a","action_id":"b"`, 1), `duplicate member "action_id"`},
		{"duplicate inside context", strings.Replace(valid, `{"record_id":"r"}`, `{"record_id":"r","record_id":"q"}`, 1), `duplicate member "record_id"`},
		{"unknown top-level field", strings.Replace(valid, `"evidence":[]`, `"evidence":[],"override":true`, 1), `unknown field "override"`},
		{"unknown evidence field", strings.Replace(valid, `"evidence":[]`, `"evidence":[{"tool":"t","trusted":true,"provenance":{"seq":1,"observed_at":"2026-09-03T02:00:01Z"}}]`, 1), `unknown field "trusted"`},
		{"unknown ap field", strings.Replace(strings.Replace(valid, `"generic"`, `"ap"`, 1), `{"record_id":"r"}`, `{"vendor_id":"v","amount":1,"bank_changed":"x"}`, 1), `unknown field "bank_changed"`},
		{"unknown context type", strings.Replace(valid, `"generic"`, `"hr"`, 1), `"hr" is not generic, ap or cs`},
		{"context type mismatch absent", strings.Replace(valid, `"context_type":"generic",`, ``, 1), `"" is not generic, ap or cs`},
		{"trailing data", valid + ` {}`, "trailing data"},
		{"not an object", `[1]`, "expected a JSON object"},
		{"missing record id", strings.Replace(valid, `{"record_id":"r"}`, `{}`, 1), "record_id: required"},
		{"missing context", strings.Replace(valid, `{"record_id":"r"}`, `null`, 1), "context: required"},
		{"negative amount", strings.Replace(valid, `{"record_id":"r"}`, `{"record_id":"r","amount":-1}`, 1), "amount: must not be negative"},
		{"missing tenant", strings.Replace(valid, `"tenant_id":"x"`, `"tenant_id":""`, 1), "tenant_id: required"},
		{"evidence without provenance", strings.Replace(valid, `"evidence":[]`, `"evidence":[{"tool":"t"}]`, 1), "evidence[0].provenance.seq"},
		{"deep nesting", strings.Replace(valid, `{"record_id":"r"}`, `{"record_id":"r","x":`+strings.Repeat("[", 70)+strings.Repeat("]", 70)+`}`, 1), "nesting deeper"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeAction([]byte(tt.doc))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestGenericContextExtras(t *testing.T) {
	tests := []struct {
		name    string
		c       GenericContext
		want    string
		wantErr string
	}{
		{"named only", GenericContext{RecordID: "r"}, `{"record_id":"r"}`, ""},
		{"zero amount kept", GenericContext{RecordID: "r", Amount: new(0.0)}, `{"amount":0,"record_id":"r"}`, ""},
		{"extras sorted beside named", GenericContext{RecordID: "r", Extra: map[string]any{"z": 1, "a": "x"}}, `{"a":"x","record_id":"r","z":1}`, ""},
		{"extra shadows named", GenericContext{RecordID: "r", Extra: map[string]any{"amount": 5}}, "", "shadows a named field"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.c)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				if verr := tt.c.Validate(); verr == nil {
					t.Fatal("Validate accepted what Marshal refused")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tt.want {
				t.Fatalf("got %s, want %s", b, tt.want)
			}
		})
	}
}

func TestContextValidate(t *testing.T) {
	tests := []struct {
		name string
		c    Context
		want string // "" for valid
	}{
		{"generic ok", GenericContext{RecordID: "r", Amount: new(1.5)}, ""},
		{"generic no record", GenericContext{}, "record_id: required"},
		{"generic NaN amount", GenericContext{RecordID: "r", Amount: new(math.NaN())}, "amount: must be finite"},
		{"generic empty extra name", GenericContext{RecordID: "r", Extra: map[string]any{"": 1}}, "empty field name"},
		{"ap ok", APContext{VendorID: "v", Amount: 10, Currency: "USD"}, ""},
		{"ap zero amount", APContext{VendorID: "v"}, "amount: must be positive"},
		{"ap bad currency", APContext{VendorID: "v", Amount: 1, Currency: "usd"}, "not an ISO 4217 code"},
		{"ap no vendor", APContext{Amount: 1}, "vendor_id: required"},
		{"cs ok without amount", CSContext{CustomerID: "c"}, ""},
		{"cs negative count", CSContext{CustomerID: "c", RefundsLast7d: new(-1)}, "refunds_last_7d"},
		{"cs negative disputes", CSContext{CustomerID: "c", OpenDisputeCount: new(-2)}, "open_dispute_count"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.c.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("unexpected error %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestDecodeVerdict(t *testing.T) {
	expires := time.Date(2026, 9, 3, 2, 5, 0, 0, time.UTC)
	tests := []struct {
		name    string
		doc     string
		want    Verdict
		wantErr string
	}{
		{name: "pass", doc: `{"action_id":"a","session_id":"s","verdict":"pass"}`,
			want: Verdict{ActionID: "a", SessionID: "s", Verdict: Pass}},
		{name: "kill with rule and signals", doc: `{"action_id":"a","session_id":"s","verdict":"kill","rule_id_cited":"AP-1","rationale":"bank details changed 3 days ago","signals":["bank_details_changed_at"]}`,
			want: Verdict{ActionID: "a", SessionID: "s", Verdict: Kill, RuleIDCited: "AP-1", Rationale: "bank details changed 3 days ago", Signals: []string{"bank_details_changed_at"}}},
		{name: "hold with window", doc: `{"action_id":"a","session_id":"s","verdict":"hold","rule_id_cited":"CS-3","hold":{"action_id":"a","state":"pending","window_s":300,"expires_at":"2026-09-03T02:05:00Z"}}`,
			want: Verdict{ActionID: "a", SessionID: "s", Verdict: Hold, RuleIDCited: "CS-3", Hold: &HoldStatus{ActionID: "a", State: HoldPending, WindowS: 300, ExpiresAt: &expires}}},
		{name: "indefinite hold", doc: `{"action_id":"a","session_id":"s","verdict":"hold","rule_id_cited":"CS-3","hold":{"action_id":"a","state":"pending","window_s":0,"indefinite":true}}`,
			want: Verdict{ActionID: "a", SessionID: "s", Verdict: Hold, RuleIDCited: "CS-3", Hold: &HoldStatus{ActionID: "a", State: HoldPending, Indefinite: true}}},
		{name: "fail closed without rule", doc: `{"action_id":"a","session_id":"s","verdict":"kill","reason":"fail_closed_judge_timeout"}`,
			want: Verdict{ActionID: "a", SessionID: "s", Verdict: Kill, Reason: ReasonJudgeTimeout}},
		{name: "execution unconfirmed", doc: `{"action_id":"a","session_id":"s","verdict":"execution_unconfirmed"}`,
			want: Verdict{ActionID: "a", SessionID: "s", Verdict: ExecutionUnconfirmed}},
		{name: "already executed", doc: `{"action_id":"po-1","session_id":"s","verdict":"already_executed","acknowledged_at":"2026-09-03T02:05:00Z"}`,
			want: Verdict{ActionID: "po-1", SessionID: "s", Verdict: AlreadyExecuted, AcknowledgedAt: &expires}},
		{name: "already executed without time", doc: `{"action_id":"a","session_id":"s","verdict":"already_executed"}`, wantErr: "acknowledged_at"},
		{name: "ack time on a pass", doc: `{"action_id":"a","session_id":"s","verdict":"pass","acknowledged_at":"2026-09-03T02:05:00Z"}`, wantErr: "acknowledged_at"},
		{name: "unknown field in hold", doc: `{"action_id":"a","session_id":"s","verdict":"hold","rule_id_cited":"R","hold":{"action_id":"a","state":"pending","window_s":1,"approved":true}}`, wantErr: `unknown field "approved"`},
		{name: "resume refusal", doc: `{"action_id":"a","session_id":"s","verdict":"kill","reason":"resume_fingerprint_mismatch"}`,
			want: Verdict{ActionID: "a", SessionID: "s", Verdict: Kill, Reason: ResumeFingerprintMismatch}},
		{name: "shadow", doc: `{"action_id":"a","session_id":"s","verdict":"pass","shadow":true}`,
			want: Verdict{ActionID: "a", SessionID: "s", Verdict: Pass, Shadow: true}},
		{name: "duplicate verdict", doc: `{"action_id":"a","session_id":"s","verdict":"kill","rule_id_cited":"R","verdict":"pass"}`, wantErr: `duplicate member "verdict"`},
		{name: "duplicate differing in case", doc: `{"action_id":"a","session_id":"s","verdict":"kill","rule_id_cited":"R","Verdict":"pass"}`, wantErr: `duplicate member "Verdict"`},
		{name: "duplicate through the Kelvin sign", doc: "{\"action_id\":\"a\",\"session_id\":\"s\",\"verdict\":\"kill\",\"rule_id_cited\":\"R\",\"\u212Aind\":1,\"kind\":2}", wantErr: `duplicate member "kind"`},
		{name: "duplicate nested", doc: `{"action_id":"a","session_id":"s","verdict":"hold","rule_id_cited":"R","hold":{"action_id":"a","state":"denied","state":"approved","window_s":1}}`, wantErr: `duplicate member "state"`},
		{name: "unknown field", doc: `{"action_id":"a","session_id":"s","verdict":"pass","override":true}`, wantErr: `unknown field "override"`},
		{name: "out of enum", doc: `{"action_id":"a","session_id":"s","verdict":"approve"}`, wantErr: `"approve" is not pass`},
		{name: "case matters", doc: `{"action_id":"a","session_id":"s","verdict":"PASS"}`, wantErr: `"PASS" is not pass`},
		{name: "kill without rule or reason", doc: `{"action_id":"a","session_id":"s","verdict":"kill"}`, wantErr: "rule_id_cited: required"},
		{name: "hold without hold status", doc: `{"action_id":"a","session_id":"s","verdict":"hold","rule_id_cited":"R"}`, wantErr: "hold: required"},
		{name: "pass with reason", doc: `{"action_id":"a","session_id":"s","verdict":"pass","reason":"fail_closed_store"}`, wantErr: "a pass carries no reason"},
		{name: "unknown reason", doc: `{"action_id":"a","session_id":"s","verdict":"kill","reason":"fail_closed_whatever"}`, wantErr: "unknown code"},
		{name: "trailing", doc: `{"action_id":"a","session_id":"s","verdict":"pass"}x`, wantErr: "trailing data"},
		{name: "two documents", doc: `{"action_id":"a","session_id":"s","verdict":"pass"}{}`, wantErr: "trailing data"},
		{name: "empty", doc: ``, wantErr: "EOF"},
		{name: "null", doc: `null`, wantErr: "expected a JSON object"},
		{name: "missing ids", doc: `{"verdict":"pass"}`, wantErr: "action_id: required"},
		{name: "hold window negative", doc: `{"action_id":"a","session_id":"s","verdict":"hold","rule_id_cited":"R","hold":{"action_id":"a","state":"pending","window_s":-1}}`, wantErr: "window_s: must not be negative"},
		{name: "indefinite with window", doc: `{"action_id":"a","session_id":"s","verdict":"hold","rule_id_cited":"R","hold":{"action_id":"a","state":"pending","window_s":5,"indefinite":true}}`, wantErr: "indefinite:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := decoded(t, DecodeVerdict, tt.doc, tt.want, tt.wantErr)
			if !ok {
				return
			}
			b, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != compact(t, tt.doc) {
				t.Fatalf("re-encoded %s, want %s", b, tt.doc)
			}
		})
	}
}

func TestClaimAndAck(t *testing.T) {
	at := time.Date(2026, 9, 3, 8, 1, 0, 0, time.UTC)
	claims := []struct {
		name, doc string
		want      Claim
		wantErr   string
	}{
		{name: "granted", doc: `{"session_id":"s","action_id":"po-1","status":"granted","fencing_token":7,"claimed_at":"2026-09-03T08:01:00Z"}`,
			want: Claim{SessionID: "s", ActionID: "po-1", Status: ClaimGranted, FencingToken: 7, ClaimedAt: &at}},
		{name: "already executed", doc: `{"session_id":"s","action_id":"po-1","status":"already_executed","acknowledged_at":"2026-09-03T08:01:00Z"}`,
			want: Claim{SessionID: "s", ActionID: "po-1", Status: ClaimAlreadyExecuted, AcknowledgedAt: &at}},
		{name: "unconfirmed", doc: `{"session_id":"s","action_id":"po-1","status":"execution_unconfirmed"}`,
			want: Claim{SessionID: "s", ActionID: "po-1", Status: ClaimExecutionUnconfirmed}},
		{name: "granted without token", doc: `{"session_id":"s","action_id":"a","status":"granted","claimed_at":"2026-09-03T08:01:00Z"}`, wantErr: "fencing_token: required"},
		{name: "granted without time", doc: `{"session_id":"s","action_id":"a","status":"granted","fencing_token":1}`, wantErr: "claimed_at: required"},
		{name: "token on a refusal", doc: `{"session_id":"s","action_id":"a","status":"execution_unconfirmed","fencing_token":3}`, wantErr: "fencing_token"},
		{name: "already executed without time", doc: `{"session_id":"s","action_id":"a","status":"already_executed"}`, wantErr: "acknowledged_at: required"},
		{name: "negative token", doc: `{"session_id":"s","action_id":"a","status":"granted","fencing_token":-1,"claimed_at":"2026-09-03T08:01:00Z"}`, wantErr: "cannot unmarshal"},
		{name: "duplicate token", doc: `{"session_id":"s","action_id":"a","status":"granted","fencing_token":1,"fencing_token":2,"claimed_at":"2026-09-03T08:01:00Z"}`, wantErr: "duplicate member"},
		{name: "unknown status", doc: `{"session_id":"s","action_id":"a","status":"ok"}`, wantErr: `"ok" is not granted`},
	}
	for _, tt := range claims {
		t.Run("claim "+tt.name, func(t *testing.T) {
			got, ok := decoded(t, DecodeClaim, tt.doc, tt.want, tt.wantErr)
			if !ok {
				return
			}
			if b, _ := json.Marshal(got); string(b) != tt.doc {
				t.Fatalf("re-encoded %s", b)
			}
		})
	}

	a, err := DecodeAck([]byte(`{"session_id":"s","action_id":"po-1","acknowledged_at":"2026-09-03T08:01:00Z"}`))
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(Ack{SessionID: "s", ActionID: "po-1", AcknowledgedAt: at}, a); d != "" {
		t.Fatalf("(-want +got):\n%s", d)
	}
	if _, err := DecodeAck([]byte(`{"session_id":"s","action_id":"a"}`)); err == nil || !strings.Contains(err.Error(), "acknowledged_at: required") {
		t.Fatalf("ack without time: %v", err)
	}
	b, _ := json.Marshal(AckRequest{SessionID: "s", ActionID: "po-1", FencingToken: 7, ExecutedAt: at})
	if want := `{"session_id":"s","action_id":"po-1","fencing_token":7,"executed_at":"2026-09-03T08:01:00Z"}`; string(b) != want {
		t.Fatalf("ack request %s, want %s", b, want)
	}
	b, _ = json.Marshal(ClaimRequest{SessionID: "s", ActionID: "po-1"})
	if want := `{"session_id":"s","action_id":"po-1"}`; string(b) != want {
		t.Fatalf("claim request %s, want %s", b, want)
	}
}

func TestDecodeHoldStatus(t *testing.T) {
	decided := time.Date(2026, 9, 3, 8, 0, 0, 0, time.UTC)
	h, err := DecodeHoldStatus([]byte(`{"action_id":"a","state":"approved","window_s":0,"indefinite":true,"decided_by":"op-ana","decided_at":"2026-09-03T08:00:00Z"}`))
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(HoldStatus{ActionID: "a", State: HoldApproved, Indefinite: true, DecidedBy: "op-ana", DecidedAt: &decided}, h); d != "" {
		t.Fatalf("(-want +got):\n%s", d)
	}
	if _, err := DecodeHoldStatus([]byte(`{"action_id":"a","state":"maybe","window_s":1}`)); err == nil || !strings.Contains(err.Error(), `"maybe"`) {
		t.Fatalf("err = %v", err)
	}
}

// decoded runs one case of a strict decoder: with wantErr, the error must
// contain it; otherwise the document must decode to want. It returns what
// was decoded and whether the case goes on (no error was expected).
func decoded[T any](t *testing.T, decode func([]byte) (T, error), doc string, want T, wantErr string) (T, bool) {
	t.Helper()
	got, err := decode([]byte(doc))
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("err = %v, want one containing %q", err, wantErr)
		}
		return got, false
	}
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("(-want +got):\n%s", d)
	}
	return got, true
}
