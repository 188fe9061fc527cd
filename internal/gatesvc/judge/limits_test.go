package judge

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"

	"novaos.dev/novaos/secret"
)

// verdictWith is a valid kill verdict with the given rationale, rule ids
// and signals.
func verdictWith(rationale string, ruleIDs, signals []string) string {
	if ruleIDs == nil {
		ruleIDs = []string{}
	}
	if signals == nil {
		signals = []string{}
	}
	b, err := json.Marshal(map[string]any{"verdict": "kill", "rule_id_cited": "bank-change", "rationale": rationale,
		"rule_ids": ruleIDs, "signals": signals})
	if err != nil {
		panic(err)
	}
	return string(b)
}

// Each limit of Decode admits a verdict exactly at it and refuses one a
// byte or an item over it.
func TestDecodeLimits(t *testing.T) {
	ids := func(n int) []string {
		return strings.Split(strings.Repeat("bank-change,", n)[:n*len("bank-change,")-1], ",")
	}
	signals := func(n int) []string { return strings.Split(strings.Repeat("s,", n)[:2*n-1], ",") }
	padded := func(n int) string { // a valid verdict padded with trailing spaces to n bytes
		v := verdictWith("r", nil, nil)
		return v + strings.Repeat(" ", n-len(v))
	}
	tests := []struct {
		name  string
		in    string
		field string // of the refusal; "-" accepts
	}{
		{"verdict at the limit", padded(MaxVerdictBytes), "-"},
		{"verdict over the limit", padded(MaxVerdictBytes + 1), ""},
		{"rationale at the limit", verdictWith(strings.Repeat("x", MaxRationaleBytes), nil, nil), "-"},
		{"rationale over the limit", verdictWith(strings.Repeat("x", MaxRationaleBytes+1), nil, nil), "$.rationale"},
		{"rule ids at the limit", verdictWith("r", ids(MaxListItems), nil), "-"},
		{"rule ids over the limit", verdictWith("r", ids(MaxListItems+1), nil), ""},
		{"signals at the limit", verdictWith("r", nil, signals(MaxListItems)), "-"},
		{"signals over the limit", verdictWith("r", nil, signals(MaxListItems+1)), ""},
		{"a signal at the limit", verdictWith("r", nil, []string{strings.Repeat("s", MaxSignalBytes)}), "-"},
		{"a signal over the limit", verdictWith("r", nil, []string{"s", strings.Repeat("s", MaxSignalBytes+1)}), "$.signals[1]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decode([]byte(tt.in), known)
			if tt.field == "-" {
				if err != nil {
					t.Fatalf("refused at the limit: %v", err)
				}
				return
			}
			var de *DecodeError
			if !errors.As(err, &de) || de.Reason != ReasonTooLarge || de.Field != tt.field {
				t.Fatalf("got %v, want too_large at %q", err, tt.field)
			}
		})
	}
}

// A refusal names what the model sent instead of the wanted type.
func TestDecodeNamesTheKind(t *testing.T) {
	for in, want := range map[string]string{
		`{"verdict":7,"rationale":"r"}`:                    "got a number",
		`{"verdict":{},"rationale":"r"}`:                   "got an object",
		`{"verdict":true,"rationale":"r"}`:                 "got a boolean",
		`{"verdict":null,"rationale":"r"}`:                 "got null",
		`{"verdict":"pass","rationale":"r","signals":"s"}`: "got a string",
		`{"verdict":"pass","rationale":["r"]}`:             "got an array",
	} {
		if _, err := Decode([]byte(in), known); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Decode(%s) = %v, want it to say %q", in, err, want)
		}
	}
}

// bound keeps 2×EchoBytes of a text, marking a cut; cut keeps n bytes.
func TestBoundAndCut(t *testing.T) {
	at := strings.Repeat("b", 2*EchoBytes)
	if got := bound(at); got != at {
		t.Errorf("bound of %d bytes cut it: %q", len(at), got)
	}
	if got := bound(at + "c"); got != at+"…" {
		t.Errorf("bound of %d bytes = %q, want the first %d and a mark", len(at)+1, got, 2*EchoBytes)
	}
	if got := cut("abcd", 4); got != "abcd" {
		t.Errorf("cut at the length = %q", got)
	}
	if got := cut("abcde", 4); got != "abcd [truncated at 4 bytes]" {
		t.Errorf("cut over the length = %q", got)
	}
	if got := cut("aé", 2); got != "a [truncated at 2 bytes]" {
		t.Errorf("cut inside a rune = %q", got)
	}
}

// The prompt says when there are no rules, and only then; the schema
// lists the rule ids when there are some, and only then (an empty enum is
// an invalid schema). A judge built with zero options uses the default
// evidence limit, not zero.
func TestPromptAndSchema(t *testing.T) {
	j := New("http://127.0.0.1:1/v1", "m", secret.Value{}, &Options{})
	evidence := strings.Repeat("e", 100)
	for _, tc := range []struct {
		rules []Rule
		none  bool
	}{{nil, true}, {[]Rule{{ID: "r1", Text: "no refunds"}}, false}} {
		msgs, err := j.messages(Request{Action: "a", Rules: tc.rules, Evidence: []Evidence{{Source: "t #1", Content: evidence}}})
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(msgs[0].Content, "(none: answer pass)"); got != tc.none {
			t.Errorf("%d rules: the prompt says none: %v", len(tc.rules), got)
		}
		if !strings.Contains(msgs[1].Content, evidence+`"`) {
			t.Errorf("evidence of 100 bytes was cut: %s", msgs[1].Content)
		}
	}
	for _, ids := range [][]string{nil, {"r1", "r2"}} {
		var f struct {
			Schema struct {
				Schema struct {
					Properties struct {
						RuleIDs struct {
							Items map[string]any `json:"items"`
						} `json:"rule_ids"`
					} `json:"properties"`
				} `json:"schema"`
			} `json:"json_schema"`
		}
		if err := json.Unmarshal(responseFormat(ids), &f); err != nil {
			t.Fatal(err)
		}
		enum, ok := f.Schema.Schema.Properties.RuleIDs.Items["enum"]
		if ok != (len(ids) > 0) {
			t.Errorf("%d ids: rule_ids enum %v", len(ids), enum)
		}
		if ok && len(enum.([]any)) != len(ids) {
			t.Errorf("enum %v, want %s", enum, strconv.Quote(strings.Join(ids, ",")))
		}
	}
}
