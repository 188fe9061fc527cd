package runspage

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSummary(t *testing.T) {
	for _, tc := range []struct{ payload, want string }{
		{`{"content":"hello","message":"no"}`, "hello"},
		{`{"message":"thinking"}`, "thinking"},
		{`{"status":"FAILED","reason":"boom"}`, "FAILED: boom"},
		{`{"status":"RUNNING"}`, "RUNNING"},
		{`{"artifact_id":"a1","parts":[{"text":"one "},{"data":{}},{"text":"two"}]}`, "artifact a1: one two"},
		{`{"artifact_id":"a1","name":"Report","parts":[{"data":{"x":1}}]}`, "artifact Report"},
		{`{"x":"\u003cb\u003e"}`, "{\n  \"x\": \"<b>\"\n}"},
		{`[1,2]`, "[\n  1,\n  2\n]"},
		{`not json`, "not json"},
		{`{"content":"` + strings.Repeat("é", maxSummary+5) + `"}`, strings.Repeat("é", maxSummary) + "…"},
	} {
		if got := summary(json.RawMessage(tc.payload)); got != tc.want {
			t.Errorf("summary(%.60s) = %.80q, want %.80q", tc.payload, got, tc.want)
		}
	}
}

func TestTypeClass(t *testing.T) {
	for in, want := range map[string]string{"message.delta": "t-message-delta", "tool.write_confirmation_required": "t-tool-write-confirmation-required",
		`x" onload="y`: "t-x--onload--y"} {
		if got := typeClass(in); got != want {
			t.Errorf("typeClass(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestTextHelpers(t *testing.T) {
	for in, want := range map[string]string{"abc": "Abc.", "zed.": "Zed.", "{x": "{x.", "`x": "`x.", "Done": "Done.", " ": "", "a": "A."} {
		if got := sentence(in); got != want {
			t.Errorf("sentence(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{"a..z09": "t-a--z09", "`{/:": "t-----"} {
		if got := typeClass(in); got != want {
			t.Errorf("typeClass(%q) = %q, want %q", in, got, want)
		}
	}
	exact := strings.Repeat("é", maxSummary)
	if got := cut(exact); got != exact {
		t.Error("cut changed a string of exactly maxSummary characters")
	}
	if got := shorten("abcd", 4); got != "abcd" {
		t.Errorf("shorten at the length = %q", got)
	}
	if got := shorten("abcé", 4); got != "abc…" {
		t.Errorf("shorten inside a rune = %q", got)
	}
	for seg, ok := range map[string]bool{strings.Repeat("r", 256): true, strings.Repeat("r", 257): false, "": false, "a%2Fb": true, "%zz": false} {
		if _, got := unescape(seg); got != ok {
			t.Errorf("unescape(%.20q…) ok = %v, want %v", seg, got, ok)
		}
	}
}

func rawPause(t *testing.T, typ, callID string, payload map[string]any) json.RawMessage {
	t.Helper()
	p, err := json.Marshal(payload)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(map[string]any{"type": typ, "payload": json.RawMessage(p), "call_id": callID})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestPauseOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		raw  json.RawMessage
		want pauseView
	}{
		{"write confirmation: call id from the payload, no extra", rawPause(t, "tool.write_confirmation_required", "",
			map[string]any{"tool_name": "mail.send", "call_id": "c-9", "content": "Send?"}),
			pauseView{Kind: "write", Tool: "mail.send", CallID: "c-9", Content: "Send?"}},
		{"write confirmation: the pause's call id wins", rawPause(t, "tool.write_confirmation_required", "c-1",
			map[string]any{"call_id": "c-9", "write_confirmation": map[string]any{"call_id": "c-1", "tool_name": "t", "to": "bob"}}),
			pauseView{Kind: "write", CallID: "c-1", Details: "{\n  \"to\": \"bob\"\n}"}},
		{"oauth without a host", rawPause(t, "connector.oauth_required", "", map[string]any{"auth_url": "https://"}),
			pauseView{Kind: "oauth", RawURL: "https://"}},
		{"oauth over http", rawPause(t, "connector.oauth_required", "", map[string]any{"auth_url": "http://a.test/x", "connector": "c"}),
			pauseView{Kind: "oauth", RawURL: "http://a.test/x", AuthURL: "http://a.test/x", Connector: "c"}},
		{"hitl without content or input type", rawPause(t, "hitl", "", map[string]any{"content": "outer", "hitl": map[string]any{"hitl_type": "input_request"}}),
			pauseView{Kind: "hitl", HITLType: "input_request", Content: "outer", InputType: "text"}},
		{"hitl textarea with a plan", rawPause(t, "hitl", "", map[string]any{"hitl": map[string]any{"hitl_type": "plan_confirmation", "content": "inner",
			"metadata": map[string]any{"input_type": "textarea", "plan": map[string]any{"steps": 2}}}}),
			pauseView{Kind: "hitl", HITLType: "plan_confirmation", Content: "inner", Textarea: true, Plan: "{\n  \"steps\": 2\n}"}},
		{"hitl boolean", rawPause(t, "hitl", "", map[string]any{"hitl": map[string]any{"hitl_type": "input_request", "metadata": map[string]any{"input_type": "boolean"}}}),
			pauseView{Kind: "hitl", HITLType: "input_request", Options: []option{{"true", "Yes"}, {"false", "No"}}}},
		{"hitl that does not decode", rawPause(t, "hitl", "", map[string]any{"hitl": 7}), pauseView{Kind: "text"}},
		{"not a pause", json.RawMessage(`"x"`), pauseView{Kind: "text"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(&tc.want, pauseOf(tc.raw), cmp.AllowUnexported(option{})); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
