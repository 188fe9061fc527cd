package agent

import (
	"net/http"
	"strings"
)

// blockedHeaders are headers owned by HTTP itself, by the platform or by
// the A2A protocol; a caller's custom headers never include them, so a
// skill that forwards CustomHeaders cannot be made to send a credential,
// trace context or framing header it did not choose. Lower-case.
var blockedHeaders = map[string]bool{
	// credentials
	"authorization": true, "proxy-authorization": true, "cookie": true,
	"set-cookie": true, "www-authenticate": true, "proxy-authenticate": true,
	"x-api-key": true,
	// hop-by-hop and framing
	"connection": true, "keep-alive": true, "proxy-connection": true,
	"te": true, "trailer": true, "transfer-encoding": true, "upgrade": true,
	"host": true, "content-length": true, "content-type": true,
	"content-encoding": true, "expect": true,
	// content negotiation and client identity, set by whoever sends
	"accept": true, "accept-encoding": true, "accept-charset": true,
	"accept-language": true, "user-agent": true, "origin": true,
	"referer": true, "cache-control": true, "pragma": true,
	// trace context
	"traceparent": true, "tracestate": true, "baggage": true,
	// proxies
	"forwarded": true, "via": true, "x-real-ip": true,
	"x-tenant-id": true,
}

// blockedPrefixes are header name prefixes reserved the same way.
var blockedPrefixes = []string{
	"x-novaos-", "a2a-", "x-a2a-", "x-forwarded-", "sec-", "if-", "access-control-",
}

// IsSafeCustomHeader reports whether a header with this name may be treated
// as a caller's custom header: read by a skill and forwarded on its
// outbound calls. Platform-owned (X-NovaOS-*), protocol (A2A-*), credential
// (Authorization, Cookie), trace-context (traceparent) and hop-by-hop
// headers are not, nor is anything that is not a valid header token.
func IsSafeCustomHeader(name string) bool {
	if name == "" || !validToken(name) {
		return false
	}
	n := strings.ToLower(name)
	if blockedHeaders[n] {
		return false
	}
	for _, p := range blockedPrefixes {
		if strings.HasPrefix(n, p) {
			return false
		}
	}
	return true
}

func validToken(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// customHeaders returns the safe headers of h, names lower-cased, several
// values of one header joined with ", ". It also drops any header the
// request's Connection header lists, since those are hop-by-hop too.
func customHeaders(h http.Header) map[string]string {
	out := map[string]string{}
	var hop map[string]bool
	for _, v := range h.Values("Connection") {
		for name := range strings.SplitSeq(v, ",") {
			if name = strings.ToLower(strings.TrimSpace(name)); name != "" {
				if hop == nil {
					hop = map[string]bool{}
				}
				hop[name] = true
			}
		}
	}
	for name, values := range h {
		if len(values) == 0 || !IsSafeCustomHeader(name) {
			continue
		}
		n := strings.ToLower(name)
		if hop[n] {
			continue
		}
		out[n] = strings.Join(values, ", ")
	}
	return out
}
