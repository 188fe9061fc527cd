package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// anyPort marks a name accepted on every port (an AllowHosts entry without
// one).
const anyPort = "*"

// site is the set of names a server answers to, as host -> ports, and the
// origins allowed to make CORS requests.
type site struct {
	names map[string][]string
	// checkHost says whether writes must carry one of names in Host.
	checkHost bool
	// cors holds the listed origins as browsers serialize them; nil when
	// CORS is off.
	cors map[string]bool
}

// newSite collects the server's own names: the loopback names and the
// listen address on its port, the public URL's host and port, and the
// extra allowed hosts. Host is checked on writes when the server is
// loopback-only (listens on loopback and has no public URL elsewhere), or
// whenever extra hosts are configured.
func newSite(addr net.Addr, publicURL string, allowHosts, corsOrigins []string) (*site, error) {
	s := &site{names: map[string][]string{}}
	loopback := false
	if tcp, ok := addr.(*net.TCPAddr); ok {
		port := strconv.Itoa(tcp.Port)
		for _, h := range []string{"localhost", "127.0.0.1", "::1"} {
			s.add(h, port)
		}
		if tcp.IP != nil && !tcp.IP.IsUnspecified() {
			s.add(tcp.IP.String(), port)
		}
		loopback = tcp.IP != nil && tcp.IP.IsLoopback()
	}
	if publicURL != "" {
		u, err := url.Parse(publicURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("httpapi: public URL: want an absolute http or https URL")
		}
		host, port, ok := splitHost(u.Host, defaultPort(u.Scheme))
		if !ok {
			return nil, fmt.Errorf("httpapi: public URL: bad host %q", u.Host)
		}
		s.add(host, port)
		loopback = loopback && isLoopbackName(host)
	}
	for _, a := range allowHosts {
		host, port, ok := splitHost(a, anyPort)
		if !ok || strings.ContainsAny(a, "/@?#") {
			return nil, fmt.Errorf("httpapi: allowed host %q: want a host name or address, optionally with :port", a)
		}
		s.add(host, port)
	}
	s.checkHost = loopback || len(allowHosts) > 0
	for _, o := range corsOrigins {
		n, err := normalizeOrigin(o)
		if err != nil {
			return nil, fmt.Errorf("httpapi: CORS origin %q: %w", o, err)
		}
		if s.cors == nil {
			s.cors = map[string]bool{}
		}
		s.cors[n] = true
	}
	return s, nil
}

type siteKey struct{}

// connContext marks every request of a connection the Guard's Server
// accepted with the Guard's names, for AdminRule (NamesServer).
func (g *Guard) connContext(ctx context.Context, nc net.Conn) context.Context {
	return context.WithValue(connContext(ctx, nc), siteKey{}, g.site)
}

// NamesServer reports whether r's Host names the server it reached:
// localhost or a loopback address on any port (IsLoopbackHost), or, for
// a request served by a Guard's Server, one of the names the Guard
// accepts writes for (the listen address, the public URL's host and the
// allowed hosts). A page whose own name an attacker rebinds to this
// machine sends none of them.
func NamesServer(r *http.Request) bool {
	if IsLoopbackHost(r.Host) {
		return true
	}
	s, ok := r.Context().Value(siteKey{}).(*site)
	return ok && s.hostAllowed(r.Host)
}

func (s *site) add(host, port string) {
	s.names[host] = append(s.names[host], port)
}

// hostAllowed reports whether a Host header names this server. A Host
// without a port names the default port of http or https, as a client
// behind a proxy on either sends it.
func (s *site) hostAllowed(hostHeader string) bool {
	host, port, ok := splitHost(hostHeader, "")
	if !ok {
		return false
	}
	for _, p := range s.names[host] {
		if p == anyPort || p == port || (port == "" && (p == "80" || p == "443")) {
			return true
		}
	}
	return false
}

// originAllowed reports whether a request's Origin header is this server's
// own origin (scheme http or https on one of its names) or a listed one.
func (s *site) originAllowed(origin string) bool {
	if s.cors[origin] {
		return true
	}
	scheme, rest, ok := strings.Cut(origin, "://")
	if !ok || (scheme != "http" && scheme != "https") || rest == "" || strings.ContainsAny(rest, "/?#@") {
		return false
	}
	host, port, ok := splitHost(rest, defaultPort(scheme))
	if !ok {
		return false
	}
	for _, p := range s.names[host] {
		if p == anyPort || p == port {
			return true
		}
	}
	return false
}

func defaultPort(scheme string) string {
	if scheme == "https" {
		return "443"
	}
	return "80"
}

// splitHost splits "host", "host:port", "[v6]" or "[v6]:port" into a
// canonical host (lower case, no trailing dot, an IP in its shortest form,
// IPv6 without brackets) and its port, def when none is given. It is the
// one parser of Host headers, Origins and configured names here, so all
// three compare alike.
func splitHost(hp, def string) (host, port string, ok bool) {
	if hp == "" || len(hp) > 300 {
		return "", "", false
	}
	host, port = hp, def
	switch i := strings.LastIndexByte(hp, ':'); {
	case strings.HasPrefix(hp, "["):
		end := strings.IndexByte(hp, ']')
		if end < 0 {
			return "", "", false
		}
		host = hp[1:end]
		switch rest := hp[end+1:]; {
		case rest == "":
		case rest[0] == ':' && validPort(rest[1:]):
			port = rest[1:]
		default:
			return "", "", false
		}
		a, err := netip.ParseAddr(host)
		if err != nil || !a.Is6() || a.Zone() != "" {
			return "", "", false
		}
		host = a.String() // canonical: [0::1] is ::1

	case i >= 0:
		if strings.IndexByte(hp[:i], ':') >= 0 {
			return "", "", false // a bare IPv6 address: Host must bracket it
		}
		host, port = hp[:i], hp[i+1:]
		if !validPort(port) {
			return "", "", false
		}
	}
	for i := 0; i < len(host); i++ {
		// Names on the wire are ASCII (IDNA A-labels); nothing else names
		// this server.
		if c := host[i]; c <= ' ' || c >= 0x7f || strings.IndexByte("[]/@\\", c) >= 0 {
			return "", "", false
		}
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "" || strings.HasPrefix(host, ".") || strings.HasSuffix(host, ".") || strings.Contains(host, "..") {
		return "", "", false
	}
	return host, strings.TrimLeft(port, "0"), true
}

// validPort accepts 1 to 65535 (leading zeros dropped by the caller).
func validPort(p string) bool {
	if p == "" || len(p) > 5 {
		return false
	}
	n := 0
	for i := 0; i < len(p); i++ {
		if p[i] < '0' || p[i] > '9' {
			return false
		}
		n = n*10 + int(p[i]-'0')
	}
	return n >= 1 && n <= 65535
}

func isLoopbackName(host string) bool {
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// normalizeOrigin writes a configured origin as a browser sends it in
// Origin: lower-case scheme and host, no default port, no path.
func normalizeOrigin(o string) (string, error) {
	if o == "*" || o == "null" {
		return "", errors.New("want an origin such as https://app.example.com; wildcards and null are not accepted")
	}
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return "", errors.New("want scheme://host[:port] with scheme http or https and nothing after")
	}
	scheme := strings.ToLower(u.Scheme)
	host, port, ok := splitHost(u.Host, defaultPort(scheme))
	if !ok {
		return "", errors.New("bad host")
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != defaultPort(scheme) {
		host += ":" + port
	}
	return scheme + "://" + host, nil
}
