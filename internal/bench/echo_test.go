package bench

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestEchoHandler(t *testing.T) {
	tests := []struct {
		name       string
		method     string
		body       string
		wantStatus int
		wantJSON   string
	}{
		{"object", http.MethodPost, `{"b":[1,2.50,"x"],"a":{"n":null}}`, 200, `{"a":{"n":null},"b":[1,2.50,"x"]}`},
		{"big integer kept exactly", http.MethodPost, `{"n":12345678901234567890}`, 200, `{"n":12345678901234567890}`},
		{"invalid JSON", http.MethodPost, `{"a":`, 400, ""},
		{"too large", http.MethodPost, `"` + strings.Repeat("x", maxEchoBody) + `"`, 400, ""},
		{"GET", http.MethodGet, "", 405, ""},
	}
	h := EchoHandler()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(tc.method, "/", strings.NewReader(tc.body)))
			if rec.Code != tc.wantStatus {
				t.Fatalf("status %d, want %d (%s)", rec.Code, tc.wantStatus, rec.Body)
			}
			if tc.wantJSON == "" {
				return
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			if diff := cmp.Diff(decodeJSON(t, tc.wantJSON), decodeJSON(t, rec.Body.String())); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

func decodeJSON(t *testing.T, s string) any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decode %q: %v", s, err)
	}
	return v
}
