package a2a

import "testing"

func TestCodeForReason(t *testing.T) {
	for code := range codes {
		e := &Error{Code: code}
		got, ok := CodeForReason(e.Reason())
		if !ok || got != code {
			t.Errorf("CodeForReason(%q) = %d, %v; want %d, true", e.Reason(), got, ok, code)
		}
	}
	for _, reason := range []string{"", "A2A_ERROR", "task_not_found", "UNKNOWN"} {
		if code, ok := CodeForReason(reason); ok {
			t.Errorf("CodeForReason(%q) = %d, true; want no code", reason, code)
		}
	}
}
