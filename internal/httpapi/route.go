package httpapi

import (
	"net"
	"net/http"
	"strconv"
	"strings"
)

// Route is one http.ServeMux pattern and the handler a service serves at
// it.
type Route struct {
	Pattern string
	Handler http.Handler
}

// ListenURL is the base URL of a listener bound to addr, configured as
// configured. An unspecified address (0.0.0.0, ::, or none) is not one a
// client can dial, so it becomes loopback, IPv4 unless the configured host
// was an IPv6 literal; remote clients then need a public URL.
func ListenURL(configured string, addr net.Addr) string {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok {
		return "http://" + addr.String()
	}
	ip := tcp.IP
	if ip == nil || ip.IsUnspecified() {
		ip = net.IPv4(127, 0, 0, 1)
		if host, _, err := net.SplitHostPort(configured); err == nil && strings.Contains(host, ":") {
			ip = net.IPv6loopback
		}
	}
	return "http://" + net.JoinHostPort(ip.String(), strconv.Itoa(tcp.Port))
}
