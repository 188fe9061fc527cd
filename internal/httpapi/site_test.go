package httpapi

import (
	"context"
	"net"
	"strings"
	"testing"
)

func loopbackAddr(port int) net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port} }

func TestHostAllowed(t *testing.T) {
	tests := []struct {
		name       string
		addr       net.Addr
		publicURL  string
		allow      []string
		checkHost  bool
		allowed    []string
		disallowed []string
	}{
		{
			name: "loopback only", addr: loopbackAddr(8080), checkHost: true,
			allowed: []string{"localhost:8080", "LOCALHOST.:8080", "127.0.0.1:8080", "[::1]:8080",
				"[0:0:0:0:0:0:0:1]:8080", "127.0.0.1:08080"},
			disallowed: []string{"evil.attacker.test", "evil.attacker.test:8080", "localhost:8081", "127.0.0.1",
				"localhost", "127.0.0.2:8080", "", "::1:8080", "[::1", "[::1]x", "localhost:", "localhost:0",
				"localhost:99999", "a b:8080", "[127.0.0.1]:8080"},
		},
		{
			name: "loopback with loopback public URL", addr: loopbackAddr(8080), publicURL: "http://localhost:9000",
			checkHost: true, allowed: []string{"localhost:9000", "localhost:8080"}, disallowed: []string{"example.com:9000"},
		},
		{
			name: "public URL elsewhere", addr: loopbackAddr(8080), publicURL: "https://novaos.example.com",
			checkHost: false, allowed: []string{"novaos.example.com", "novaos.example.com:443", "localhost:8080"},
			disallowed: []string{"novaos.example.com:8443", "evil.attacker.test"},
		},
		{
			name: "allowed hosts", addr: &net.TCPAddr{IP: net.IPv4zero, Port: 8080},
			allow:     []string{"proxy.test", "other.test:3000", "[::2]:4000", "10.0.0.5"},
			checkHost: true,
			allowed:   []string{"proxy.test", "proxy.test:1", "other.test:3000", "[::2]:4000", "10.0.0.5:8080", "localhost:8080"},
			disallowed: []string{"other.test:3001", "other.test", "[::2]:4001", "0.0.0.0:8080",
				"sub.proxy.test"},
		},
		{
			name: "all interfaces", addr: &net.TCPAddr{IP: net.IPv4zero, Port: 8080}, checkHost: false,
			allowed: []string{"localhost:8080"}, disallowed: []string{"0.0.0.0:8080", "10.0.0.5:8080"},
		},
		{
			name: "IPv6 loopback listener", addr: &net.TCPAddr{IP: net.IPv6loopback, Port: 80}, checkHost: true,
			allowed: []string{"[::1]", "[::1]:80", "localhost", "127.0.0.1:80"}, disallowed: []string{"[::1]:81"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := newSite(tt.addr, tt.publicURL, tt.allow, nil)
			if err != nil {
				t.Fatal(err)
			}
			if s.checkHost != tt.checkHost {
				t.Errorf("checkHost = %v, want %v", s.checkHost, tt.checkHost)
			}
			for _, h := range tt.allowed {
				if !s.hostAllowed(h) {
					t.Errorf("Host %q refused, want allowed", h)
				}
			}
			for _, h := range tt.disallowed {
				if s.hostAllowed(h) {
					t.Errorf("Host %q allowed, want refused", h)
				}
			}
		})
	}
}

func TestOriginAllowed(t *testing.T) {
	s, err := newSite(loopbackAddr(8080), "", []string{"proxy.test"},
		[]string{"https://App.Example.com:443/", "http://localhost:3000", "http://[::1]:5000"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		origin string
		want   bool
	}{
		{"http://localhost:8080", true},
		{"http://127.0.0.1:8080", true},
		{"https://127.0.0.1:8080", true},
		{"http://[::1]:8080", true},
		{"https://app.example.com", true},
		{"http://localhost:3000", true},
		{"http://[::1]:5000", true},
		{"http://proxy.test", true},
		{"https://proxy.test:8443", true},
		{"http://localhost", false}, // port 80, not the server's
		{"http://localhost:8081", false},
		{"https://app.example.com:8443", false},
		{"http://app.example.com", false},
		{"https://App.Example.com", false}, // browsers send lower case: exact match
		{"https://evil.attacker.test", false},
		{"null", false},
		{"file://", false},
		{"http://localhost:8080/path", false},
		{"http://user@localhost:8080", false},
		{"ftp://localhost:8080", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := s.originAllowed(tt.origin); got != tt.want {
			t.Errorf("originAllowed(%q) = %v, want %v", tt.origin, got, tt.want)
		}
	}
}

func TestNewSiteRefusesBadConfiguration(t *testing.T) {
	tests := []struct {
		name      string
		publicURL string
		allow     []string
		cors      []string
	}{
		{name: "public URL without scheme", publicURL: "novaos.example.com"},
		{name: "public URL ftp", publicURL: "ftp://novaos.example.com"},
		{name: "allowed host with path", allow: []string{"proxy.test/x"}},
		{name: "allowed host with bad port", allow: []string{"proxy.test:0"}},
		{name: "allowed host empty", allow: []string{""}},
		{name: "allowed host URL", allow: []string{"http://proxy.test"}},
		{name: "CORS wildcard", cors: []string{"*"}},
		{name: "CORS null", cors: []string{"null"}},
		{name: "CORS path", cors: []string{"https://app.example.com/app"}},
		{name: "CORS no scheme", cors: []string{"app.example.com"}},
		{name: "CORS query", cors: []string{"https://app.example.com?x=1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := newSite(loopbackAddr(8080), tt.publicURL, tt.allow, tt.cors); err == nil {
				t.Error("accepted, want an error")
			}
		})
	}
}

func TestNormalizeOrigin(t *testing.T) {
	tests := map[string]string{
		"https://App.Example.com:443/": "https://app.example.com",
		"HTTP://localhost:80":          "http://localhost",
		"http://localhost:3000":        "http://localhost:3000",
		"http://[0:0::1]:3000":         "http://[::1]:3000",
		"https://example.com:0443":     "https://example.com",
	}
	for in, want := range tests {
		got, err := normalizeOrigin(in)
		if err != nil || got != want {
			t.Errorf("normalizeOrigin(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

// The Host parser and the names at their edges: the listen address is a
// name, the longest Host and the highest port are taken, and a name with
// a space, DEL or a bracket is not a name.
func TestSiteEdges(t *testing.T) {
	s, err := newSite(&net.TCPAddr{IP: net.IPv4(10, 1, 2, 3), Port: 8080}, "", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("a", 300-len(".localhost:80")) + ".localhost:80"
	for host, want := range map[string]bool{
		"10.1.2.3:8080":   true,
		"10.1.2.3:8081":   false,
		"localhost:8080":  true,
		long:              true,
		"a" + long:        false,
		"localhost:65535": true,
	} {
		got := s.hostAllowed(host)
		if host == long || host == "a"+long || host == "localhost:65535" {
			got = IsLoopbackHost(host)
		}
		if got != want {
			t.Errorf("%.40q: %v, want %v", host, got, want)
		}
	}
	for _, bad := range []string{"proxy test", "proxy\x7f", "a[b", "a]b", "a/b", "a@b", `a\b`, "proxy\x1f"} {
		if _, err := newSite(loopbackAddr(8080), "", []string{bad}, nil); err == nil {
			t.Errorf("allowed host %q accepted", bad)
		}
	}
	var c *Caller
	if _, ok := CallerFrom(WithCaller(context.Background(), c)); ok {
		t.Error("CallerFrom found a nil caller")
	}
	if got, ok := CallerFrom(WithCaller(context.Background(), &Caller{Subject: "x"})); !ok || got.Subject != "x" {
		t.Errorf("CallerFrom = %v, %v", got, ok)
	}
}
