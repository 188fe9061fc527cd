package runspage

import (
	"encoding/json"
	"strings"
	"testing"
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
