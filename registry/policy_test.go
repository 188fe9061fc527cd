package registry

import (
	"errors"
	"net/netip"
	"net/url"
	"strings"
	"testing"
)

func TestPolicyCheck(t *testing.T) {
	suffixes := &Policy{AllowedHostSuffixes: []string{".agents.example.com", "example.org", "LOCALHOST."}}
	loop := &Policy{AllowLoopback: true}
	priv := &Policy{AllowPrivate: true}
	tests := []struct {
		name   string
		policy *Policy
		url    string
		want   error // nil, ErrURLNotAllowed or ErrInvalid
	}{
		{"public https", nil, "https://agent.example.com/a2a", nil},
		{"public http with port and query", nil, "http://agent.example.com:8080/a2a?x=1", nil},
		{"upper-case host and trailing dot", nil, "https://Agent.Example.COM./", nil},
		{"public IPv4", nil, "http://93.184.215.14/", nil},
		{"public IPv6", nil, "http://[2606:4700::1111]:80/", nil},

		{"relative", nil, "/agents/echo", ErrInvalid},
		{"no scheme", nil, "agent.example.com:443", ErrInvalid},
		{"ftp", nil, "ftp://agent.example.com/", ErrInvalid},
		{"javascript", nil, "javascript:alert(1)", ErrInvalid},
		{"no host", nil, "http:///path", ErrInvalid},
		{"user info", nil, "https://user:pw@agent.example.com/", ErrInvalid},
		{"fragment", nil, "https://agent.example.com/#x", ErrInvalid},
		{"unicode host", nil, "https://ägent.example.com/", ErrInvalid},
		{"decimal IPv4", nil, "http://2130706433/", ErrInvalid},
		{"hex IPv4", nil, "http://0x7f.1/", ErrInvalid},
		{"bad label", nil, "http://-bad-.example.com/", ErrInvalid},
		{"zone", nil, "http://[fe80::1%25eth0]/", ErrInvalid},
		{"too long", nil, "https://agent.example.com/" + strings.Repeat("a", MaxURLLen), ErrInvalid},
		{"unparsable", nil, "http://[::1/", ErrInvalid},

		{"loopback v4 refused", nil, "http://127.0.0.1:8080/agents/echo", ErrURLNotAllowed},
		{"loopback v4 range", nil, "http://127.9.9.9/", ErrURLNotAllowed},
		{"loopback v6 refused", nil, "http://[::1]:8080/", ErrURLNotAllowed},
		{"v4-mapped loopback", nil, "http://[::ffff:127.0.0.1]/", ErrURLNotAllowed},
		{"localhost refused", nil, "http://localhost:8080/", ErrURLNotAllowed},
		{"sub.localhost refused", nil, "http://a.localhost/", ErrURLNotAllowed},
		{"loopback opted in", loop, "http://127.0.0.1:8080/agents/echo", nil},
		{"localhost opted in", loop, "http://localhost:8080/", nil},
		{"loopback opt-in is not private opt-in", loop, "http://10.0.0.1/", ErrURLNotAllowed},

		{"private 10/8", nil, "http://10.1.2.3/", ErrURLNotAllowed},
		{"private 192.168", nil, "http://192.168.0.10/", ErrURLNotAllowed},
		{"link-local metadata", nil, "http://169.254.169.254/latest", ErrURLNotAllowed},
		{"shared 100.64/10", nil, "http://100.64.0.1/", ErrURLNotAllowed},
		{"unspecified", nil, "http://0.0.0.0:8080/", ErrURLNotAllowed},
		{"unique local v6", nil, "http://[fd00::1]/", ErrURLNotAllowed},
		{"private opted in", priv, "http://10.1.2.3/", nil},

		// IPv6 forms that carry an IPv4 address, and ports: these passed
		// before the policy was netguard's.
		{"v4-compatible loopback", nil, "http://[::127.0.0.1]/", ErrURLNotAllowed},
		{"v4-compatible loopback hex", nil, "http://[::7f00:1]/", ErrURLNotAllowed},
		{"v4-compatible metadata", nil, "http://[::169.254.169.254]/", ErrURLNotAllowed},
		{"v4-translated loopback", nil, "http://[::ffff:0:7f00:1]/", ErrURLNotAllowed},
		{"NAT64 loopback", nil, "http://[64:ff9b::127.0.0.1]/", ErrURLNotAllowed},
		{"NAT64 metadata", nil, "http://[64:ff9b::a9fe:a9fe]/", ErrURLNotAllowed},
		{"NAT64 local-use loopback", nil, "http://[64:ff9b:1:7f00:1::]/", ErrURLNotAllowed},
		{"6to4 loopback", nil, "http://[2002:7f00:1::1]/", ErrURLNotAllowed},
		{"6to4 metadata", nil, "http://[2002:a9fe:a9fe::1]/", ErrURLNotAllowed},
		{"6to4 private", nil, "http://[2002:a00:1::1]/", ErrURLNotAllowed},
		{"Teredo loopback client", nil, "http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/", ErrURLNotAllowed},
		{"Teredo metadata client", nil, "http://[2001:0:4136:e378:8000:63bf:5601:5601]/", ErrURLNotAllowed},
		{"ISATAP loopback", nil, "http://[2606:4700::5efe:7f00:1]/", ErrURLNotAllowed},
		{"site-local", nil, "http://[fec0::1]/", ErrURLNotAllowed},
		{"multicast", priv, "http://[ff02::1]/", ErrURLNotAllowed},
		{"metadata even with private opted in", priv, "http://169.254.169.254/", ErrURLNotAllowed},
		{"metadata name", priv, "http://metadata.google.internal/", ErrURLNotAllowed},
		{"NAT64 of a public address", nil, "http://[64:ff9b::93.184.215.14]/", nil},
		{"port 0", nil, "http://agent.example.com:0/", ErrInvalid},
		{"port 99999", nil, "http://agent.example.com:99999/", ErrInvalid},
		{"port 65536 on loopback opted in", loop, "http://127.0.0.1:65536/", ErrInvalid},
		{"port 65535", nil, "http://agent.example.com:65535/", nil},
		{"octal loopback", loop, "http://0177.0.0.1/", ErrInvalid},
		{"short loopback", loop, "http://127.1/", ErrInvalid},
		{"private opt-in is not loopback opt-in", priv, "http://127.0.0.1/", ErrURLNotAllowed},

		{"suffix with dot matches below", suffixes, "https://weather.agents.example.com/", nil},
		{"suffix with dot does not match itself", suffixes, "https://agents.example.com/", ErrURLNotAllowed},
		{"suffix without dot matches itself", suffixes, "https://example.org/", nil},
		{"suffix without dot matches below", suffixes, "https://a.b.example.org/", nil},
		{"suffix needs a label boundary", suffixes, "https://evilexample.org/", ErrURLNotAllowed},
		{"lookalike", suffixes, "https://agents.example.com.evil.example/", ErrURLNotAllowed},
		{"outside", suffixes, "https://example.net/", ErrURLNotAllowed},
		{"suffixes still refuse loopback", suffixes, "http://localhost/", ErrURLNotAllowed},
		{"loopback needs opt-in and suffix", &Policy{AllowedHostSuffixes: []string{"localhost"}, AllowLoopback: true}, "http://localhost:9/", nil},
		{"opted-in loopback outside suffixes", &Policy{AllowedHostSuffixes: []string{".example.com"}, AllowLoopback: true}, "http://127.0.0.1/", ErrURLNotAllowed},
		{"only empty suffixes refuse all", &Policy{AllowedHostSuffixes: []string{"", "."}}, "https://example.com/", ErrURLNotAllowed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.policy.Check(tc.url)
			switch {
			case tc.want == nil && err != nil:
				t.Fatalf("Check(%q) = %v, want nil", tc.url, err)
			case tc.want != nil && !errors.Is(err, tc.want):
				t.Fatalf("Check(%q) = %v, want %v", tc.url, err, tc.want)
			case tc.want == ErrInvalid && errors.Is(err, ErrURLNotAllowed):
				t.Fatalf("Check(%q) = %v: a malformed URL is not a refused host", tc.url, err)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	ok := func() *Agent {
		return &Agent{Name: "weather-1.v2_x", URL: "https://weather.example.com/", Capabilities: []string{"Forecast"},
			Tags: []string{"beta"}, Domains: []string{"weather.example.com"}, Status: StatusMaintenance,
			Metadata: map[string]any{"k": "v"}}
	}
	if err := Validate(ok(), nil); err != nil {
		t.Fatalf("Validate(valid) = %v", err)
	}
	long := func(n int) string { return strings.Repeat("x", n) }
	many := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = "x"
		}
		return out
	}
	tests := []struct {
		name   string
		mutate func(a *Agent)
		fields []string
		url    bool // the refusal is a policy one
	}{
		{"no name", func(a *Agent) { a.Name = "" }, []string{"name"}, false},
		{"upper-case name", func(a *Agent) { a.Name = "Weather" }, []string{"name"}, false},
		{"name with slash", func(a *Agent) { a.Name = "a/b" }, []string{"name"}, false},
		{"name starting with dash", func(a *Agent) { a.Name = "-a" }, []string{"name"}, false},
		{"name too long", func(a *Agent) { a.Name = long(MaxNameLen + 1) }, []string{"name"}, false},
		{"name longest", func(a *Agent) { a.Name = long(MaxNameLen) }, nil, false},
		{"reserved name", func(a *Agent) { a.Name = "search" }, []string{"name"}, false},
		{"uuid name", func(a *Agent) { a.Name = "0190a1b2-0000-4000-8000-000000000001" }, []string{"name"}, false},
		{"no url", func(a *Agent) { a.URL = "" }, []string{"url"}, false},
		{"relative url", func(a *Agent) { a.URL = "/x" }, []string{"url"}, false},
		{"loopback url", func(a *Agent) { a.URL = "http://127.0.0.1/" }, []string{"url"}, true},
		{"description too long", func(a *Agent) { a.Description = long(MaxDescriptionLen + 1) }, []string{"description"}, false},
		{"description not UTF-8", func(a *Agent) { a.Description = "\xff" }, []string{"description"}, false},
		{"too many capabilities", func(a *Agent) { a.Capabilities = many(MaxListItems + 1) }, []string{"capabilities"}, false},
		{"empty capability", func(a *Agent) { a.Capabilities = []string{"ok", " "} }, []string{"capabilities[1]"}, false},
		{"punctuation capability", func(a *Agent) { a.Capabilities = []string{"!!!"} }, []string{"capabilities[0]"}, false},
		{"capability too long", func(a *Agent) { a.Capabilities = []string{long(MaxCapabilityLen + 1)} }, []string{"capabilities[0]"}, false},
		{"tag too long", func(a *Agent) { a.Tags = []string{long(MaxTagLen + 1)} }, []string{"tags[0]"}, false},
		{"domain too long", func(a *Agent) { a.Domains = []string{long(MaxDomainLen + 1)} }, []string{"domains[0]"}, false},
		{"bad status", func(a *Agent) { a.Status = "Active!" }, []string{"status"}, false},
		{"metadata too large", func(a *Agent) { a.Metadata = map[string]any{"k": long(MaxMetadataBytes)} }, []string{"metadata"}, false},
		{"several at once", func(a *Agent) { a.Name, a.URL, a.Status = "", "", "X" }, []string{"name", "url", "status"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := ok()
			tc.mutate(a)
			err := Validate(a, nil)
			if tc.fields == nil {
				if err != nil {
					t.Fatalf("Validate = %v, want nil", err)
				}
				return
			}
			var ve *ValidationError
			if !errors.As(err, &ve) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("Validate = %v, want a *ValidationError wrapping ErrInvalid", err)
			}
			var got []string
			for _, f := range ve.Fields {
				got = append(got, f.Field)
			}
			if strings.Join(got, ",") != strings.Join(tc.fields, ",") {
				t.Errorf("fields %v, want %v (%v)", got, tc.fields, err)
			}
			if errors.Is(err, ErrURLNotAllowed) != tc.url {
				t.Errorf("errors.Is(err, ErrURLNotAllowed) = %v, want %v", !tc.url, tc.url)
			}
		})
	}
}

// Check never panics, and what it accepts is an http(s) URL with a host.
func FuzzPolicyCheck(f *testing.F) {
	for _, s := range []string{"https://a.example.com/", "http://127.0.0.1:8080/", "http://[::1]/", "http://0x7f.1/",
		"https://user@a.example.com/", "javascript:x", "http://a..b/", "http://%41/"} {
		f.Add(s, false, false)
	}
	f.Fuzz(func(t *testing.T, raw string, loop, priv bool) {
		p := &Policy{AllowLoopback: loop, AllowPrivate: priv, AllowedHostSuffixes: []string{"example.com", ".localhost"}}
		if p.Check(raw) != nil {
			return
		}
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.User != nil {
			t.Fatalf("Check accepted %q", raw)
		}
		if ip, err := netip.ParseAddr(strings.TrimSuffix(u.Hostname(), ".")); err == nil && ip.Unmap().IsLoopback() && !loop {
			t.Fatalf("Check accepted loopback %q", raw)
		}
	})
}
