package judge

import (
	"novaos.dev/novaos/gate"

	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Verdict is a decoded, validated judge verdict.
type Verdict struct {
	Verdict     string   `json:"verdict"`                 // "pass", "hold" or "kill"
	RuleIDCited string   `json:"rule_id_cited,omitempty"` // the deciding rule; required unless pass
	RuleIDs     []string `json:"rule_ids,omitempty"`      // every rule the judge found relevant
	Rationale   string   `json:"rationale"`
	Signals     []string `json:"signals,omitempty"` // evidence the decision rests on
}

// Limits on a verdict.
const (
	MaxVerdictBytes   = 16 << 10
	MaxRationaleBytes = 4 << 10
	MaxListItems      = 32
	MaxSignalBytes    = 512
	// EchoBytes bounds how much of the model's output an error quotes.
	EchoBytes = 64
)

// Reason classifies why a verdict was rejected.
type Reason string

// Reasons a verdict is rejected.
const (
	ReasonSyntax      Reason = "syntax"        // not one JSON object
	ReasonDuplicate   Reason = "duplicate_key" // a key twice in one object, at any depth
	ReasonUnknown     Reason = "unknown_field"
	ReasonTrailing    Reason = "trailing_data"
	ReasonType        Reason = "wrong_type"
	ReasonMissing     Reason = "missing_field"
	ReasonEnum        Reason = "bad_verdict"
	ReasonUnknownRule Reason = "unknown_rule"
	ReasonTooLarge    Reason = "too_large"
)

// ErrMalformed is matched by every *DecodeError.
var ErrMalformed = errors.New("judge: malformed verdict")

// DecodeError says what was wrong with a verdict. Prefix holds at most
// EchoBytes of the model output, since that output may be large or carry
// text an attacker planted in the evidence.
type DecodeError struct {
	Reason Reason
	Field  string // JSON path of the offending member, if any
	Detail string
	Prefix string
}

func (e *DecodeError) Error() string {
	var b strings.Builder
	b.WriteString("judge: malformed verdict: ")
	b.WriteString(string(e.Reason))
	if e.Field != "" {
		fmt.Fprintf(&b, " at %s", bound(e.Field))
	}
	if e.Detail != "" {
		b.WriteString(": " + e.Detail)
	}
	fmt.Fprintf(&b, " (output begins %q)", e.Prefix)
	return b.String()
}

func (e *DecodeError) Is(target error) bool { return target == ErrMalformed }

func prefix(data []byte) string {
	if len(data) > EchoBytes {
		data = data[:EchoBytes]
	}
	return strings.ToValidUTF8(string(data), "")
}

// Decode reads data as exactly one verdict object and checks it against
// known, the rule ids the judge was shown. Every failure is a *DecodeError.
func Decode(data []byte, known []string) (*Verdict, error) {
	fail := func(r Reason, field, format string, args ...any) error {
		return &DecodeError{Reason: r, Field: field, Detail: bound(fmt.Sprintf(format, args...)), Prefix: prefix(data)}
	}
	if len(data) > MaxVerdictBytes {
		return nil, fail(ReasonTooLarge, "", "%d bytes, limit %d", len(data), MaxVerdictBytes)
	}
	if !utf8.Valid(data) {
		return nil, fail(ReasonSyntax, "", "not UTF-8")
	}
	if err := checkStructure(data); err != nil {
		var de *DecodeError
		if errors.As(err, &de) {
			de.Prefix = prefix(data)
			return nil, de
		}
		return nil, fail(ReasonSyntax, "", "%v", err)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(data, &obj); err != nil {
		return nil, fail(ReasonType, "$", "not an object")
	}
	v := &Verdict{}
	for k, raw := range obj {
		field := "$." + k
		var err error
		switch k {
		case "verdict":
			err = decodeString(raw, &v.Verdict)
		case "rule_id_cited":
			err = decodeString(raw, &v.RuleIDCited)
		case "rule_ids":
			err = decodeStrings(raw, &v.RuleIDs)
		case "rationale":
			err = decodeString(raw, &v.Rationale)
		case "signals":
			err = decodeStrings(raw, &v.Signals)
		default:
			return nil, fail(ReasonUnknown, field, "")
		}
		if err != nil {
			return nil, fail(ReasonType, field, "%v", err)
		}
	}
	for _, req := range []string{"verdict", "rationale"} {
		if _, ok := obj[req]; !ok {
			return nil, fail(ReasonMissing, "$."+req, "")
		}
	}
	switch v.Verdict {
	case "pass", "hold", "kill":
	default:
		return nil, fail(ReasonEnum, "$.verdict", "want pass, hold or kill")
	}
	if strings.TrimSpace(v.Rationale) == "" {
		return nil, fail(ReasonMissing, "$.rationale", "empty")
	}
	if len(v.Rationale) > MaxRationaleBytes {
		return nil, fail(ReasonTooLarge, "$.rationale", "%d bytes, limit %d", len(v.Rationale), MaxRationaleBytes)
	}
	if len(v.RuleIDs) > MaxListItems || len(v.Signals) > MaxListItems {
		return nil, fail(ReasonTooLarge, "", "more than %d rule ids or signals", MaxListItems)
	}
	for i, s := range v.Signals {
		if len(s) > MaxSignalBytes {
			return nil, fail(ReasonTooLarge, fmt.Sprintf("$.signals[%d]", i), "%d bytes", len(s))
		}
	}
	knownSet := make(map[string]bool, len(known))
	for _, id := range known {
		knownSet[id] = true
	}
	// A hold or kill must say which rule decided it, or an operator
	// cannot check it; a pass citing a rule is contradictory.
	switch {
	case v.Verdict != "pass" && v.RuleIDCited == "":
		return nil, fail(ReasonMissing, "$.rule_id_cited", "required for %s", v.Verdict)
	case v.Verdict == "pass" && v.RuleIDCited != "":
		return nil, fail(ReasonType, "$.rule_id_cited", "a pass cites no rule")
	}
	if v.RuleIDCited != "" && !knownSet[v.RuleIDCited] {
		return nil, fail(ReasonUnknownRule, "$.rule_id_cited", "%q", v.RuleIDCited)
	}
	for i, id := range v.RuleIDs {
		if !knownSet[id] {
			return nil, fail(ReasonUnknownRule, fmt.Sprintf("$.rule_ids[%d]", i), "%q", id)
		}
	}
	return v, nil
}

func bound(s string) string {
	if len(s) > 2*EchoBytes {
		return strings.ToValidUTF8(s[:2*EchoBytes], "") + "…"
	}
	return s
}

func decodeString(raw json.RawMessage, dst *string) error {
	if len(raw) == 0 || raw[0] != '"' {
		return fmt.Errorf("want a string, got %s", kind(raw))
	}
	return json.Unmarshal(raw, dst)
}

func decodeStrings(raw json.RawMessage, dst *[]string) error {
	if len(raw) == 0 || raw[0] != '[' {
		return fmt.Errorf("want an array of strings, got %s", kind(raw))
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return err
	}
	out := make([]string, len(items))
	for i, it := range items {
		if err := decodeString(it, &out[i]); err != nil {
			return fmt.Errorf("item %d: %w", i, err)
		}
	}
	*dst = out
	return nil
}

func kind(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// checkStructure refuses anything but one JSON object with no member
// named twice at any depth (encoding/json would silently keep the last,
// which is how {"verdict":"kill",…,"verdict":"pass"} becomes a pass) and
// nothing after it (gate.CheckStructure, shared with the SDK's decoders).
func checkStructure(data []byte) error {
	var se *gate.StructureError
	if err := gate.CheckStructure(data); !errors.As(err, &se) {
		return err
	}
	switch se.Problem {
	case "not_object":
		return &DecodeError{Reason: ReasonType, Field: "$", Detail: "want an object"}
	case "duplicate":
		return &DecodeError{Reason: ReasonDuplicate, Field: se.Path}
	case "depth":
		return &DecodeError{Reason: ReasonTooLarge, Field: se.Path, Detail: "nested too deep"}
	case "trailing":
		return &DecodeError{Reason: ReasonTrailing, Detail: "data after the object"}
	}
	return se
}
