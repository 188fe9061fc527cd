package netguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
)

// ErrMalformed is wrapped by errors about a URL or host that is unusable
// as written, whatever the Policy; errors.As with *MalformedError gives
// the reason.
var ErrMalformed = errors.New("netguard: malformed destination")

// ErrRefused is wrapped by errors about a destination the Policy does not
// allow; errors.As with *RefusedError gives the host and its class.
var ErrRefused = errors.New("netguard: destination refused")

// MalformedError says why a URL or host is unusable.
type MalformedError struct {
	Reason string // never the whole URL, which may carry a token
}

func (e *MalformedError) Error() string { return "netguard: " + e.Reason }

// Unwrap makes errors.Is(err, ErrMalformed) hold.
func (e *MalformedError) Unwrap() error { return ErrMalformed }

func malformed(format string, args ...any) error {
	return &MalformedError{Reason: fmt.Sprintf(format, args...)}
}

// RefusedError says which host a Policy refused and why.
type RefusedError struct {
	Host  string // the host as checked: a name or an IP address
	Class Class
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("netguard: %s is a %s destination", e.Host, e.Class)
}

// Unwrap makes errors.Is(err, ErrRefused) hold.
func (e *RefusedError) Unwrap() error { return ErrRefused }

// Policy says which classes of destination are allowed. The zero Policy
// (and a nil *Policy) allows Public destinations only. Metadata and
// Reserved destinations are never allowed.
type Policy struct {
	// AllowLoopback allows 127/8, ::1, the unspecified addresses and
	// localhost names.
	AllowLoopback bool
	// AllowPrivate allows private, shared, link-local, unique-local and
	// the other non-routable unicast ranges (Class Private).
	AllowPrivate bool
}

// Allows reports whether the policy allows destinations of class c.
func (p *Policy) Allows(c Class) bool {
	switch c {
	case Public:
		return true
	case Loopback:
		return p != nil && p.AllowLoopback
	case Private:
		return p != nil && p.AllowPrivate
	}
	return false
}

// CheckAddr refuses an address whose class the policy does not allow.
func (p *Policy) CheckAddr(a netip.Addr) error {
	if c := ClassifyAddr(a); !p.Allows(c) {
		return &RefusedError{Host: a.WithZone("").String(), Class: c}
	}
	return nil
}

// CheckHost checks a host as CanonicalHost returns it (or as it would
// accept it): an IP literal by its class, a name by ClassifyHost.
func (p *Policy) CheckHost(host string) error {
	c, err := ClassifyHost(host)
	if err != nil {
		return err
	}
	if !p.Allows(c) {
		return &RefusedError{Host: host, Class: c}
	}
	return nil
}

// CheckURL parses raw with ParseURL and checks its host. It never
// resolves a name: the dial-time check (Control, Dialer) does that.
func (p *Policy) CheckURL(raw string) error {
	_, host, err := ParseURL(raw)
	if err != nil {
		return err
	}
	return p.CheckHost(host)
}

// ParseURL parses an absolute http or https URL the way a server about to
// connect to it should: it must have a host, in its standard spelling
// (CanonicalHost), no user information, no fragment, and a port, if any,
// from 1 to 65535. It returns the URL and its host, lower-cased, without
// brackets or trailing dot. It does not apply a Policy.
func ParseURL(raw string) (*url.URL, string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		// url.Parse's error repeats the URL, which may carry a token.
		return nil, "", malformed("URL does not parse")
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, "", malformed("want an absolute http:// or https:// URL")
	case u.Opaque != "" || u.Host == "":
		return nil, "", malformed("URL has no host")
	case u.User != nil:
		return nil, "", malformed("URL must not carry user information")
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return nil, "", malformed("URL must not have a fragment")
	}
	if port := u.Port(); port != "" {
		if err := checkPort(port); err != nil {
			return nil, "", err
		}
	} else if strings.HasSuffix(u.Host, ":") {
		return nil, "", malformed("URL has an empty port")
	}
	host, err := CanonicalHost(u.Hostname())
	if err != nil {
		return nil, "", err
	}
	return u, host, nil
}

func checkPort(port string) error {
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return malformed("port %.8q is outside 1-65535", port)
	}
	return nil
}

// CanonicalHost returns host (a URL's host without brackets or port)
// lower-cased and without a trailing dot, or an error wrapping
// ErrMalformed when it is neither a standard IP literal nor an ASCII host
// name: zones, non-ASCII names (use IDNA A-labels), bad labels and numeric
// spellings resolvers read as IPv4 (2130706433, 0x7f.1, 0177.0.0.1, 127.1)
// are refused.
func CanonicalHost(host string) (string, error) {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "" {
		return "", malformed("empty host")
	}
	if len(host) > 253 {
		return "", malformed("host is longer than 253 bytes")
	}
	if strings.Contains(host, ":") {
		a, err := netip.ParseAddr(host)
		if err != nil || !a.Is6() {
			return "", malformed("host %q is not an IPv6 address", host)
		}
		if a.Zone() != "" {
			return "", malformed("host must not carry an IPv6 zone")
		}
		return host, nil
	}
	if _, err := netip.ParseAddr(host); err == nil {
		// A dotted quad netip accepts is already the standard spelling:
		// it refuses leading zeros and short forms.
		return host, nil
	}
	for _, label := range strings.Split(host, ".") {
		if !validLabel(label) {
			return "", malformed("host %q is not a valid ASCII host name", host)
		}
	}
	// No top-level domain starts with a digit; a name whose last label
	// does is an IPv4 address in a spelling some resolver will read.
	if last := host[strings.LastIndexByte(host, '.')+1:]; last[0] >= '0' && last[0] <= '9' {
		return "", malformed("host %q looks like a numeric address in a non-standard form", host)
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

// loopbackNames and metadataNames are names that mean the same thing on
// every host; other names are judged by what they resolve to.
var (
	loopbackNames = []string{"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"}
	metadataNames = []string{"metadata.google.internal", "metadata.goog", "metadata", "instance-data", "instance-data.ec2.internal"}
)

// ClassifyHost canonicalizes host (CanonicalHost) and returns its class:
// an IP literal's by ClassifyAddr, Loopback for localhost names, Metadata
// for the metadata services' names, Public for any other name.
func ClassifyHost(host string) (Class, error) {
	h, err := CanonicalHost(host)
	if err != nil {
		return 0, err
	}
	if a, err := netip.ParseAddr(h); err == nil {
		return ClassifyAddr(a), nil
	}
	for _, n := range metadataNames {
		if h == n {
			return Metadata, nil
		}
	}
	for _, n := range loopbackNames {
		if h == n {
			return Loopback, nil
		}
	}
	if strings.HasSuffix(h, ".localhost") {
		return Loopback, nil
	}
	return Public, nil
}

// Control is a net.Dialer Control function: it refuses a connection to an
// address (already resolved, "ip:port") the policy does not allow, before
// the connection is attempted. An address that is not an IP and port is
// refused: it fails closed.
func (p *Policy) Control(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("netguard: dial %s %.64q: not an IP address and port: %w", network, address, ErrRefused)
	}
	if ap.Port() == 0 {
		return malformed("dial %s: port 0", network)
	}
	if err := p.CheckAddr(ap.Addr()); err != nil {
		return fmt.Errorf("netguard: dial %s: %w", network, err)
	}
	return nil
}

// Dialer returns a copy of d (nil: a zero net.Dialer) that runs Control
// before every connection, then d's own Control or ControlContext.
func (p *Policy) Dialer(d *net.Dialer) *net.Dialer {
	var g net.Dialer
	if d != nil {
		g = *d
	}
	if prev := g.ControlContext; prev != nil {
		g.ControlContext = func(ctx context.Context, network, address string, c syscall.RawConn) error {
			if err := p.Control(network, address, c); err != nil {
				return err
			}
			return prev(ctx, network, address, c)
		}
		return &g
	}
	prev := g.Control
	g.Control = func(network, address string, c syscall.RawConn) error {
		if err := p.Control(network, address, c); err != nil {
			return err
		}
		if prev != nil {
			return prev(network, address, c)
		}
		return nil
	}
	return &g
}

// CheckConn checks the remote address of an established connection: the
// check for a dial function the policy cannot hook before connecting (a
// caller's own DialContext). Nothing has been sent on a TCP connection
// yet when it is made; a connection without an IP remote address is
// refused.
func (p *Policy) CheckConn(c net.Conn) error {
	var ap netip.AddrPort
	switch a := c.RemoteAddr().(type) {
	case *net.TCPAddr:
		ap = a.AddrPort()
	case *net.UDPAddr:
		ap = a.AddrPort()
	default:
		return fmt.Errorf("netguard: connection to a %T: %w", a, ErrRefused)
	}
	if err := p.CheckAddr(ap.Addr()); err != nil {
		return fmt.Errorf("netguard: connected: %w", err)
	}
	return nil
}
