package runspage

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"novaos.dev/novaos/gateway"
)

// FuzzPause: whatever a paused run's payload holds (an agent wrote it),
// the run page renders, and nothing from it becomes markup.
func FuzzPause(f *testing.F) {
	for _, s := range []string{
		`{"type":"hitl","payload":{"hitl":{"hitl_type":"input_request","content":"Q?","actions":[{"id":"a","label":"A"}],"metadata":{"input_type":"select","validation":{"required":true,"options":[{"value":"x"}]}}}}}`,
		`{"type":"tool.write_confirmation_required","payload":{"tool_name":"t","call_id":"c","write_confirmation":{"call_id":"c","tool_name":"t","to":"<b>"}},"call_id":"c"}`,
		`{"type":"connector.oauth_required","payload":{"connector":"g","auth_url":"javascript:alert(1)"}}`,
		`{"type":"hitl","payload":{"hitl":7}}`, `null`, `[]`, `{"payload":"x"}`,
	} {
		f.Add([]byte(s))
	}
	h := &handler{path: DefaultPath}
	f.Fuzz(func(t *testing.T, raw []byte) {
		run := &gateway.Run{ID: "r", Status: gateway.StatusWaitingUser, Pause: raw}
		d := pageData{Base: DefaultPath, User: &Principal{Actor: "a"}, Run: h.runView(run, nil)}
		var buf bytes.Buffer
		if err := pages.ExecuteTemplate(&buf, "run.html", d); err != nil {
			t.Fatalf("pause %q: %v", raw, err)
		}
		if d.Run.Pause == nil || d.Run.Pause.Kind == "" {
			t.Fatalf("pause %q: no reply box", raw)
		}
		if bytes.Contains(bytes.ToLower(buf.Bytes()), []byte("<script>")) {
			t.Fatalf("pause %q became markup", raw)
		}
	})
}

func FuzzSummary(f *testing.F) {
	for _, s := range []string{`{"content":"hi"}`, `{"status":"FAILED","reason":"x"}`, `{"message":""}`, `[1]`, `"\u003c"`, `nope`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		s := summary(json.RawMessage(raw))
		if n := utf8.RuneCountInString(s); n > maxSummary+1 {
			t.Fatalf("summary of %d characters", n)
		}
		if len(raw) > 0 && strings.TrimSpace(string(raw)) != "" && s == "" && !json.Valid(raw) {
			t.Fatalf("summary of %q is empty", raw)
		}
	})
}
