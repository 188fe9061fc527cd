package httpapi

import (
	"strings"
	"testing"
)

// FuzzSplitHost feeds Host headers, Origins and configured names through
// the one parser they share: it never panics, its canonical form parses to
// itself, and the Host and Origin checks agree with it.
func FuzzSplitHost(f *testing.F) {
	for _, s := range []string{"localhost:8080", "[::1]:8080", "[0:0::1]", "127.0.0.1", "LOCALHOST.", "evil.attacker.test:80",
		"[::1", "::1:80", "a:b:c", ":80", "[]:1", "x:065535", "[fe80::1%eth0]:1", "http://localhost:8080", "https://[::1]"} {
		f.Add(s)
	}
	s, err := newSite(loopbackAddr(8080), "https://novaos.example.com", []string{"proxy.test"}, []string{"https://app.example.com"})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, in string) {
		allowed := s.hostAllowed(in)
		_ = s.originAllowed(in)
		host, port, ok := splitHost(in, "")
		if !ok {
			if allowed {
				t.Fatalf("hostAllowed(%q) with a host that does not parse", in)
			}
			return
		}
		hp := host
		if strings.Contains(host, ":") {
			hp = "[" + host + "]"
		}
		if port != "" {
			hp += ":" + port
		}
		h2, p2, ok := splitHost(hp, "")
		if !ok || h2 != host || p2 != port {
			t.Fatalf("splitHost(%q) = %q %q; its canonical form %q gives %q %q %v", in, host, port, hp, h2, p2, ok)
		}
		if s.hostAllowed(hp) != allowed {
			t.Fatalf("hostAllowed(%q) = %v but hostAllowed(%q) = %v", in, allowed, hp, !allowed)
		}
		if o, err := normalizeOrigin("http://" + hp); err == nil && s.originAllowed(o) != s.hostAllowed(strings.TrimPrefix(o, "http://")+portIfNone(o)) {
			// An origin naming the server is allowed exactly when its host is.
			t.Fatalf("origin %q and its host disagree", o)
		}
	})
}

// portIfNone gives an http origin without a port its default one, so its
// host can be checked as a Host header naming port 80.
func portIfNone(o string) string {
	rest := strings.TrimPrefix(o, "http://")
	if strings.HasSuffix(rest, "]") || !strings.Contains(rest, ":") {
		return ":80"
	}
	return ""
}
