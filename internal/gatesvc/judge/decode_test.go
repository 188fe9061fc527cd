package judge

import (
	"errors"
	"strings"
	"testing"
)

var known = []string{"refund-disputes", "bank-change", "fourth-refund"}

func TestDecodeAccepts(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want Verdict
	}{
		{"pass", `{"verdict":"pass","rationale":"within policy"}`, Verdict{Verdict: "pass", Rationale: "within policy"}},
		{"hold with rule", ` {"verdict":"hold","rule_id_cited":"refund-disputes","rationale":"open dispute"}` + "\n",
			Verdict{Verdict: "hold", RuleIDCited: "refund-disputes", Rationale: "open dispute"}},
		{"kill with everything", `{"verdict":"kill","rule_id_cited":"bank-change","rule_ids":["bank-change","fourth-refund"],"rationale":"bank details changed 2 days ago","signals":["vendor.bank_changed_at"]}`,
			Verdict{Verdict: "kill", RuleIDCited: "bank-change", RuleIDs: []string{"bank-change", "fourth-refund"}, Rationale: "bank details changed 2 days ago", Signals: []string{"vendor.bank_changed_at"}}},
		{"pass listing relevant rules", `{"verdict":"pass","rule_ids":["fourth-refund"],"rationale":"only the second refund"}`,
			Verdict{Verdict: "pass", RuleIDs: []string{"fourth-refund"}, Rationale: "only the second refund"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Decode([]byte(tt.in), known)
			if err != nil {
				t.Fatal(err)
			}
			if got.Verdict != tt.want.Verdict || got.RuleIDCited != tt.want.RuleIDCited || got.Rationale != tt.want.Rationale ||
				strings.Join(got.RuleIDs, ",") != strings.Join(tt.want.RuleIDs, ",") || strings.Join(got.Signals, ",") != strings.Join(tt.want.Signals, ",") {
				t.Fatalf("got %+v, want %+v", *got, tt.want)
			}
		})
	}
}

func TestDecodeRejects(t *testing.T) {
	long := strings.Repeat("x", MaxRationaleBytes+1)
	tests := []struct {
		name   string
		in     string
		reason Reason
		field  string
	}{
		{"empty", ``, ReasonSyntax, ""},
		{"prose", `The action looks fine, pass.`, ReasonSyntax, ""},
		{"code fence", "```json\n{\"verdict\":\"pass\",\"rationale\":\"ok\"}\n```", ReasonSyntax, ""},
		{"truncated", `{"verdict":"pass","rationale":"o`, ReasonSyntax, ""},
		{"array at top", `[{"verdict":"pass","rationale":"ok"}]`, ReasonType, "$"},
		{"string at top", `"pass"`, ReasonType, "$"},
		{"duplicate verdict", `{"verdict":"kill","rule_id_cited":"bank-change","rationale":"r","verdict":"pass"}`, ReasonDuplicate, "$.verdict"},
		{"duplicate nested", `{"verdict":"pass","rationale":"r","rule_ids":[],"signals":[],"x":{"a":1,"a":2}}`, ReasonDuplicate, "$.x.a"},
		{"duplicate in array object", `{"verdict":"pass","rationale":"r","x":[{"k":1},{"k":1,"k":2}]}`, ReasonDuplicate, "$.x[1].k"},
		{"unknown field", `{"verdict":"pass","rationale":"r","override":true}`, ReasonUnknown, "$.override"},
		{"unknown field by case", `{"Verdict":"pass","rationale":"r"}`, ReasonUnknown, "$.Verdict"},
		{"trailing object", `{"verdict":"pass","rationale":"r"}{"verdict":"kill"}`, ReasonTrailing, ""},
		{"trailing text", `{"verdict":"pass","rationale":"r"} ok`, ReasonTrailing, ""},
		{"out of enum", `{"verdict":"approve","rationale":"r"}`, ReasonEnum, "$.verdict"},
		{"enum by case", `{"verdict":"PASS","rationale":"r"}`, ReasonEnum, "$.verdict"},
		{"verdict number", `{"verdict":1,"rationale":"r"}`, ReasonType, "$.verdict"},
		{"verdict null", `{"verdict":null,"rationale":"r"}`, ReasonType, "$.verdict"},
		{"rationale object", `{"verdict":"pass","rationale":{"text":"r"}}`, ReasonType, "$.rationale"},
		{"rule ids string", `{"verdict":"pass","rationale":"r","rule_ids":"bank-change"}`, ReasonType, "$.rule_ids"},
		{"rule ids with number", `{"verdict":"pass","rationale":"r","rule_ids":["bank-change",3]}`, ReasonType, "$.rule_ids"},
		{"missing verdict", `{"rationale":"r"}`, ReasonMissing, "$.verdict"},
		{"missing rationale", `{"verdict":"pass"}`, ReasonMissing, "$.rationale"},
		{"blank rationale", `{"verdict":"pass","rationale":"  "}`, ReasonMissing, "$.rationale"},
		{"hold without rule", `{"verdict":"hold","rationale":"r"}`, ReasonMissing, "$.rule_id_cited"},
		{"pass citing a rule", `{"verdict":"pass","rule_id_cited":"bank-change","rationale":"r"}`, ReasonType, "$.rule_id_cited"},
		{"unknown cited rule", `{"verdict":"kill","rule_id_cited":"made-up","rationale":"r"}`, ReasonUnknownRule, "$.rule_id_cited"},
		{"unknown listed rule", `{"verdict":"hold","rule_id_cited":"bank-change","rule_ids":["bank-change","nope"],"rationale":"r"}`, ReasonUnknownRule, "$.rule_ids[1]"},
		{"rationale too long", `{"verdict":"pass","rationale":"` + long + `"}`, ReasonTooLarge, "$.rationale"},
		{"too large", `{"verdict":"pass","rationale":"` + strings.Repeat("y", MaxVerdictBytes) + `"}`, ReasonTooLarge, ""},
		{"too deep", `{"verdict":"pass","rationale":"r","x":` + strings.Repeat("[", 70) + strings.Repeat("]", 70) + `}`, ReasonTooLarge, ""},
		{"not utf-8", "{\"verdict\":\"pass\",\"rationale\":\"\xff\"}", ReasonSyntax, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := Decode([]byte(tt.in), known)
			if err == nil {
				t.Fatalf("accepted: %+v", *v)
			}
			var de *DecodeError
			if !errors.As(err, &de) || !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %T %v is not a *DecodeError matching ErrMalformed", err, err)
			}
			if de.Reason != tt.reason {
				t.Errorf("reason %q, want %q (%v)", de.Reason, tt.reason, err)
			}
			if tt.field != "" && de.Field != tt.field {
				t.Errorf("field %q, want %q", de.Field, tt.field)
			}
			if len(de.Prefix) > EchoBytes || len(err.Error()) > 400 {
				t.Errorf("error echoes too much: %d bytes of prefix, %d of message", len(de.Prefix), len(err.Error()))
			}
		})
	}
}

func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"verdict":"pass","rationale":"ok"}`,
		`{"verdict":"kill","rule_id_cited":"bank-change","rationale":"r","verdict":"pass"}`,
		`{"verdict":"hold","rule_id_cited":"refund-disputes","rule_ids":["fourth-refund"],"rationale":"r","signals":["s"]}`,
		`{"a":{"b":[{"c":1}]}}`, `[]`, `{} {}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := Decode(data, known)
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) || len(de.Prefix) > EchoBytes {
				t.Fatalf("bad error %T %v", err, err)
			}
			return
		}
		switch v.Verdict {
		case "pass":
		case "hold", "kill":
			if v.RuleIDCited == "" {
				t.Fatalf("%s without a cited rule", v.Verdict)
			}
		default:
			t.Fatalf("accepted verdict %q", v.Verdict)
		}
	})
}
