package webui

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestSameOrigin(t *testing.T) {
	for _, tc := range []struct {
		origin, host string
		want         bool
	}{
		{"http://a.test", "a.test", true},
		{"https://a.test", "a.test", true},
		{"http://a.test:8080", "a.test:8080", true},
		{"http://A.test:8080", "a.test:8080", true},
		{"http://a.test", "a.test:80", true},
		{"https://a.test", "a.test:443", true},
		{"https://a.test", "a.test:80", false},
		{"http://a.test:8081", "a.test:8080", false},
		{"http://b.test", "a.test", false},
		{"http://[::1]:8080", "[::1]:8080", true},
		{"http://[::1]:8080", "[::2]:8080", false},
		{"ftp://a.test", "a.test", false},
		{"null", "a.test", false},
		{"http://user@a.test", "a.test", false},
		{"http://a.test", "", false},
	} {
		if got := SameOrigin(tc.origin, tc.host); got != tc.want {
			t.Errorf("SameOrigin(%q, %q) = %v, want %v", tc.origin, tc.host, got, tc.want)
		}
	}
}

func TestCrossSite(t *testing.T) {
	for _, tc := range []struct {
		name    string
		origin  string
		fetch   string
		refused bool
	}{
		{name: "no headers (not a browser)"},
		{name: "same origin", origin: "http://a.test"},
		{name: "sec-fetch same-origin", fetch: "same-origin"},
		{name: "sec-fetch none (typed URL)", fetch: "none"},
		{name: "other origin", origin: "http://b.test", refused: true},
		{name: "opaque origin", origin: "null", refused: true},
		{name: "sec-fetch cross-site", fetch: "cross-site", refused: true},
		{name: "sec-fetch same-site", origin: "http://a.test", fetch: "same-site", refused: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "http://a.test/ui/x", nil)
			if tc.origin != "" {
				r.Header.Set("Origin", tc.origin)
			}
			if tc.fetch != "" {
				r.Header.Set("Sec-Fetch-Site", tc.fetch)
			}
			if got := CrossSite(r) != ""; got != tc.refused {
				t.Errorf("CrossSite = %q, want refused=%v", CrossSite(r), tc.refused)
			}
		})
	}
}

func TestSafetyHeaders(t *testing.T) {
	for _, csp := range []string{CSPNoScript, CSPScript} {
		h := http.Header{}
		SetSafetyHeaders(h, csp)
		for k, want := range map[string]string{"Content-Security-Policy": csp, "X-Content-Type-Options": "nosniff",
			"X-Frame-Options": "DENY", "Referrer-Policy": "same-origin", "Cache-Control": "no-store"} {
			if got := h.Get(k); got != want {
				t.Errorf("%s = %q, want %q", k, got, want)
			}
		}
	}
}

func TestRedact(t *testing.T) {
	err := errors.New("token tok-123 expired; tok-123 again")
	if got, want := Redact(err, "tok-123"), "token [token] expired; [token] again"; got != want {
		t.Errorf("Redact = %q, want %q", got, want)
	}
	if got := Redact(err, ""); got != err.Error() {
		t.Errorf("Redact with no token = %q", got)
	}
}
