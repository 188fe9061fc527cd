package builtin

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"novaos.dev/novaos/internal/instrument"
	"novaos.dev/novaos/internal/toolgw"
	"novaos.dev/novaos/netguard"
	"novaos.dev/novaos/tools"
)

// Resolver finds the addresses of a host name. *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// DefaultConnectTimeout bounds connecting (and the TLS handshake) to a
// caller's URL.
const DefaultConnectTimeout = 5 * time.Second

// Limits of what a caller may put in a request, stated in the tools'
// schemas too.
const (
	// maxURLBytes is the longest URL a tool takes, as the registry's.
	maxURLBytes = 2048
	// maxHeaders, maxHeaderName and maxHeaderValue bound the headers a
	// caller adds.
	maxHeaders     = 32
	maxHeaderName  = 64
	maxHeaderValue = 2048
)

// outbound is an HTTP client for URLs callers give: no proxy (the guard
// must see the address a connection reaches), no cookie jar, and every
// address checked against the policy before it is dialled.
type outbound struct {
	policy   *netguard.Policy
	resolver Resolver
	dialer   *net.Dialer
	client   *http.Client
}

func newOutbound(policy *netguard.Policy, res Resolver, tlsConf *tls.Config, connect time.Duration,
	checkRedirect func(*http.Request, []*http.Request) error) *outbound {
	var pol netguard.Policy // a copy: the options cannot change it after
	if policy != nil {
		pol = *policy
	}
	policy = &pol
	if res == nil {
		res = net.DefaultResolver
	}
	o := &outbound{policy: policy, resolver: res, dialer: policy.Dialer(&net.Dialer{Timeout: connect})}
	tr := &http.Transport{
		Proxy:               nil,
		DialContext:         o.dial,
		TLSClientConfig:     tlsConf,
		TLSHandshakeTimeout: connect,
		ForceAttemptHTTP2:   true,
		MaxIdleConns:        64,
		MaxIdleConnsPerHost: 4,
		IdleConnTimeout:     90 * time.Second,
	}
	if checkRedirect == nil {
		// A redirect is not followed: the caller gives the final URL.
		checkRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	}
	// The call's trace context (the gateway's span) goes with each request.
	o.client = &http.Client{Transport: instrument.Transport(tr), CheckRedirect: checkRedirect}
	return o
}

// dial connects to a caller's host: the name resolved here and every
// address checked against the policy before it is dialled (the dialer
// checks it once more), so a name that resolves to a refused address is
// refused however it got there, a rebinding included.
func (o *outbound) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, portText, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	port, err := strconv.ParseUint(portText, 10, 16)
	if err != nil || port == 0 {
		return nil, fmt.Errorf("builtin: port %.8q: %w", portText, netguard.ErrMalformed)
	}
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else if addrs, err = o.resolver.LookupNetIP(ctx, "ip", host); err != nil {
		return nil, fmt.Errorf("resolve %s: %w", host, err)
	}
	var first error
	for _, a := range addrs {
		a = a.Unmap()
		if err := o.policy.CheckAddr(a); err != nil {
			if first == nil {
				first = &resolvedRefused{name: host, err: err}
			}
			continue
		}
		c, err := o.dialer.DialContext(ctx, network, netip.AddrPortFrom(a, uint16(port)).String())
		if err == nil {
			return c, nil
		}
		if first == nil {
			first = err
		}
	}
	if first == nil {
		first = fmt.Errorf("resolve %s: no addresses", host)
	}
	return nil, first
}

// checkURL reads a caller's URL: an absolute http(s) URL in netguard's
// standard spelling, https unless allowHTTP, whose host the policy
// allows as written (a name is judged again when it is dialled). A
// refusal is a result the caller reads; it never repeats the URL, which
// may carry a secret.
func (o *outbound) checkURL(raw string, allowHTTP bool) (*url.URL, string, *mcp.CallToolResult) {
	if len(raw) > maxURLBytes {
		return nil, "", invalidf("the URL is longer than %d bytes", maxURLBytes)
	}
	u, host, err := netguard.ParseURL(raw)
	if err != nil {
		return nil, "", guardResult(err)
	}
	if u.Scheme != "https" && !allowHTTP {
		return nil, "", invalidf("the URL must be https")
	}
	if err := o.policy.CheckHost(host); err != nil {
		return nil, "", guardResult(err)
	}
	return u, host, nil
}

// guardResult is netguard's refusal of a destination as a result.
func guardResult(err error) *mcp.CallToolResult {
	var re *netguard.RefusedError
	if errors.As(err, &re) {
		return toolgw.ErrorResult(tools.ReasonPolicyDenied, fmt.Sprintf("%s is a %s destination, which the platform does not reach", re.Host, re.Class))
	}
	var me *netguard.MalformedError
	if errors.As(err, &me) {
		return invalidf("the URL is not usable: %s", me.Reason)
	}
	return toolgw.ErrorResult(tools.ReasonPolicyDenied, "the destination is refused")
}

// failure says what became of an exchange that got no HTTP answer. ctx
// is the exchange's own (bounded by timeout), parent the call's. A
// destination the guard refused at dial time, or a redirect refused, is
// a result the caller reads; a timeout or an unreachable host is an
// error (the call could not be made).
func failure(parent, ctx context.Context, err error, what string, timeout time.Duration) (*mcp.CallToolResult, error) {
	var rr *redirectRefused
	var dr *resolvedRefused
	var re *netguard.RefusedError
	switch {
	case errors.As(err, &rr):
		return toolgw.ErrorResult(tools.ReasonPolicyDenied, rr.reason), nil
	case errors.As(err, &dr) && errors.As(dr.err, &re):
		return toolgw.ErrorResult(tools.ReasonPolicyDenied, fmt.Sprintf("%s resolves to %s, a %s destination, which the platform does not reach", dr.name, re.Host, re.Class)), nil
	case errors.Is(err, netguard.ErrRefused), errors.Is(err, netguard.ErrMalformed):
		return guardResult(err), nil
	case parent.Err() != nil:
		return nil, fmt.Errorf("builtin: %s: %w", what, parent.Err())
	case ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded):
		return nil, toolgw.Failf(tools.ReasonTimeout, "%s gave no answer within %s", what, timeout)
	}
	return nil, toolgw.Failf(tools.ReasonUnavailable, "%s could not be reached: %s", what, errText(err))
}

// errText is err's text without the URL a *url.Error repeats, which may
// carry a secret.
func errText(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return clip(err.Error(), 300)
}

// resolvedRefused is a name that resolved to an address the policy
// refuses.
type resolvedRefused struct {
	name string
	err  error // a *netguard.RefusedError
}

func (e *resolvedRefused) Error() string { return e.name + " resolves to " + e.err.Error() }
func (e *resolvedRefused) Unwrap() error { return e.err }

// redirectRefused is a redirect a fetch does not follow.
type redirectRefused struct{ reason string }

func (e *redirectRefused) Error() string { return e.reason }

// forbiddenHeaders are the request headers a caller may not set: the
// transport's and the platform's own (Accept-Encoding included, so a body
// comes back decoded), and those that would let a call speak for someone
// else or carry cookies.
var forbiddenHeaders = map[string]bool{
	"host": true, "content-length": true, "content-type": true, "content-encoding": true,
	"transfer-encoding": true, "connection": true, "keep-alive": true, "upgrade": true,
	"te": true, "trailer": true, "expect": true, "forwarded": true, "via": true,
	"cookie": true, "cookie2": true, "x-tenant-id": true, "mcp-session-id": true,
	"http2-settings": true, "accept-encoding": true, "x-real-ip": true, "true-client-ip": true,
}

// forbiddenPrefixes start forbidden header names.
var forbiddenPrefixes = []string{"proxy-", "sec-", "x-forwarded-", "x-novaos-", ":"}

// checkHeaders refuses headers a caller may not send: too many, a name
// that is not an HTTP token, is forbidden or is given twice in different
// case, a value too long or with a control character. Its messages name
// headers, never values.
func checkHeaders(h map[string]string) *mcp.CallToolResult {
	if len(h) > maxHeaders {
		return invalidf("at most %d headers", maxHeaders)
	}
	seen := make(map[string]bool, len(h))
	for name, v := range h {
		if name == "" || len(name) > maxHeaderName || !isToken(name) {
			return invalidf("header name %.64q is not an HTTP token of at most %d bytes", name, maxHeaderName)
		}
		lower := strings.ToLower(name)
		if seen[lower] {
			return invalidf("header %s is given twice", name)
		}
		seen[lower] = true
		if forbiddenHeaders[lower] {
			return invalidf("header %s is set by the platform or not allowed", name)
		}
		for _, p := range forbiddenPrefixes {
			if strings.HasPrefix(lower, p) {
				return invalidf("header %s is set by the platform or not allowed", name)
			}
		}
		if len(v) > maxHeaderValue {
			return invalidf("header %s is longer than %d bytes", name, maxHeaderValue)
		}
		for i := 0; i < len(v); i++ {
			if c := v[i]; c < 0x20 && c != '\t' || c == 0x7f {
				return invalidf("header %s holds a control character", name)
			}
		}
	}
	return nil
}

// isToken reports whether s is an HTTP token (RFC 9110 §5.6.2) without
// the backquote, which the schema's pattern leaves out too.
func isToken(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
			continue
		}
		if !strings.ContainsRune("!#$%&'*+-.^_|~", rune(c)) {
			return false
		}
	}
	return s != ""
}

// headersSchema is the JSON Schema of a headers argument.
const headersSchema = `{"type":"object","maxProperties":32,` +
	`"propertyNames":{"pattern":"^[A-Za-z0-9!#$%&'*+.^_|~-]{1,64}$"},` +
	`"additionalProperties":{"type":"string","maxLength":2048},` +
	`"description":"Extra request headers. Names the transport or the platform sets (Host, Content-Type, Cookie, Connection, Proxy-*, Sec-*, X-Forwarded-*, X-NovaOS-*, X-Tenant-ID, …) are refused."}`
