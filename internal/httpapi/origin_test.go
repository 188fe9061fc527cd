package httpapi

import (
	"context"
	"net/http/httptest"
	"testing"
)

func TestOwnOrigin(t *testing.T) {
	s, err := newSite(loopbackAddr(8080), "https://nova.example.com", []string{"proxy.test"}, []string{"https://app.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		guard  bool
		host   string
		origin string
		want   bool
	}{
		{"listen address", true, "127.0.0.1:8080", "http://127.0.0.1:8080", true},
		{"loopback name on the port", true, "127.0.0.1:8080", "http://localhost:8080", true},
		{"public URL", true, "nova.example.com", "https://nova.example.com", true},
		{"allowed host on any port", true, "proxy.test", "https://proxy.test:8443", true},
		{"a CORS origin is not the server's own", true, "nova.example.com", "https://app.example.com", false},
		{"another port of localhost", true, "127.0.0.1:8080", "http://localhost:3000", false},
		{"another site", true, "nova.example.com", "https://evil.example", false},
		{"public URL on another scheme's port", true, "nova.example.com", "http://nova.example.com", false},
		{"null", true, "nova.example.com", "null", false},
		{"a path", true, "127.0.0.1:8080", "http://127.0.0.1:8080/x", false},
		{"no Guard: the request's Host", false, "agents.example:9000", "http://agents.example:9000", true},
		{"no Guard: default port", false, "agents.example", "https://agents.example", true},
		{"no Guard: another host", false, "agents.example:9000", "http://evil.example:9000", false},
		{"no Guard: another port", false, "agents.example:9000", "http://agents.example:9001", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/ws", nil)
			r.Host = tt.host
			if tt.guard {
				r = r.WithContext(context.WithValue(r.Context(), siteKey{}, s))
			}
			if got := OwnOrigin(r, tt.origin); got != tt.want {
				t.Errorf("OwnOrigin(%q) with Host %q = %v, want %v", tt.origin, tt.host, got, tt.want)
			}
		})
	}
}
