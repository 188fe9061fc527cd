package registry

import (
	"fmt"
	"net/netip"
	"net/url"
	"strings"
)

// Policy says which agent URLs are acceptable. The registry applies one to
// every registration and update; the Client applies its own to records it
// sends and to records it connects to, so a misconfigured or compromised
// registry cannot send it elsewhere.
//
// A nil or zero Policy accepts any public host and refuses loopback,
// private, link-local and other non-public addresses.
type Policy struct {
	// AllowedHostSuffixes, when non-empty, restricts hosts: a suffix with
	// a leading dot (".example.com") matches hosts below it; one without
	// ("example.com") matches that host and hosts below it. It always
	// applies, also to loopback hosts AllowLoopback lets through.
	AllowedHostSuffixes []string
	// AllowLoopback accepts localhost, *.localhost, 127.0.0.0/8 and ::1.
	AllowLoopback bool
	// AllowPrivate accepts private (10/8, 172.16/12, 192.168/16, fc00::/7),
	// shared (100.64/10), link-local and unspecified addresses.
	AllowPrivate bool
}

// Check parses raw and applies the policy. The URL must be an absolute
// http or https URL with a host, no user information and no fragment, at
// most MaxURLLen bytes. Host names must be ASCII (IDNA A-labels for
// international names), compared without case and without a trailing dot.
// It returns an error wrapping ErrURLNotAllowed when the policy refuses
// the host, or ErrInvalid when the URL itself is unusable.
func (p *Policy) Check(raw string) error {
	var pol Policy
	if p != nil {
		pol = *p
	}
	host, err := parseAgentURL(raw)
	if err != nil {
		return err
	}
	if addr, err := netip.ParseAddr(host); err == nil {
		addr = addr.Unmap()
		switch {
		case addr.IsLoopback():
			if !pol.AllowLoopback {
				return fmt.Errorf("registry: host %s is a loopback address: %w", host, ErrURLNotAllowed)
			}
		case !isPublic(addr):
			if !pol.AllowPrivate {
				return fmt.Errorf("registry: host %s is not a public address: %w", host, ErrURLNotAllowed)
			}
		}
	} else if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		if !pol.AllowLoopback {
			return fmt.Errorf("registry: host %s is a loopback name: %w", host, ErrURLNotAllowed)
		}
	}
	if len(pol.AllowedHostSuffixes) > 0 && !hostAllowed(host, pol.AllowedHostSuffixes) {
		return fmt.Errorf("registry: host %s is outside the allowed host suffixes: %w", host, ErrURLNotAllowed)
	}
	return nil
}

// parseAgentURL returns the URL's host, lower-cased, without brackets and
// without a trailing dot.
func parseAgentURL(raw string) (string, error) {
	if len(raw) > MaxURLLen {
		return "", fmt.Errorf("registry: URL is longer than %d bytes: %w", MaxURLLen, ErrInvalid)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("registry: URL does not parse: %w", ErrInvalid)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return "", fmt.Errorf("registry: URL must be an absolute http:// or https:// URL: %w", ErrInvalid)
	case u.Opaque != "" || u.Host == "":
		return "", fmt.Errorf("registry: URL has no host: %w", ErrInvalid)
	case u.User != nil:
		return "", fmt.Errorf("registry: URL must not carry user information: %w", ErrInvalid)
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return "", fmt.Errorf("registry: URL must not have a fragment: %w", ErrInvalid)
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if host == "" {
		return "", fmt.Errorf("registry: URL has no host: %w", ErrInvalid)
	}
	if _, err := netip.ParseAddr(host); err == nil {
		if strings.Contains(host, "%") {
			return "", fmt.Errorf("registry: URL host must not carry an IPv6 zone: %w", ErrInvalid)
		}
		return host, nil
	}
	for _, label := range strings.Split(host, ".") {
		if !validLabel(label) {
			return "", fmt.Errorf("registry: URL host %q is not a valid ASCII host name: %w", host, ErrInvalid)
		}
	}
	// A name whose last label is numeric ("2130706433", "0x7f.1") is an
	// IPv4 address in a form some resolvers accept; refuse the ambiguity.
	last := host[strings.LastIndexByte(host, '.')+1:]
	if last[0] >= '0' && last[0] <= '9' {
		return "", fmt.Errorf("registry: URL host %q looks like a numeric address in a non-standard form: %w", host, ErrInvalid)
	}
	return host, nil
}

func validLabel(l string) bool {
	if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
		return false
	}
	for i := 0; i < len(l); i++ {
		c := l[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

var nonPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("64:ff9b:1::/48"),
	netip.MustParsePrefix("2001:db8::/32"),
}

func isPublic(a netip.Addr) bool {
	if a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() || a.IsInterfaceLocalMulticast() ||
		a.IsMulticast() || a.IsUnspecified() || a.IsLoopback() {
		return false
	}
	for _, p := range nonPublic {
		if p.Contains(a) {
			return false
		}
	}
	return true
}

func hostAllowed(host string, suffixes []string) bool {
	for _, s := range suffixes {
		s = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(s)), ".")
		if s == "" || s == "." {
			continue
		}
		if strings.HasPrefix(s, ".") {
			if strings.HasSuffix(host, s) {
				return true
			}
			continue
		}
		if host == s || strings.HasSuffix(host, "."+s) {
			return true
		}
	}
	return false
}
