package builtin

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"novaos.dev/novaos/internal/toolgw"
	"novaos.dev/novaos/netguard"
	"novaos.dev/novaos/tools"
)

// HTTPFetch is the fetch tool's name.
const HTTPFetch = tools.Prefix + tools.ServerHTTP + ".fetch"

// Defaults of HTTPOptions.
const (
	DefaultFetchTimeout  = 30 * time.Second
	DefaultMaxFetchBytes = 1 << 20
	DefaultMaxRedirects  = 5
)

// HTTPOptions configure the http server. Zero fields mean the defaults.
type HTTPOptions struct {
	// AllowedDomains are the hosts a fetch may reach, for every tenant:
	// an exact host name ("api.example.com") or IP address, or a suffix
	// pattern ("*.example.com": any name ending in .example.com, not
	// example.com itself). Compared without case or a trailing dot. Empty,
	// the tool answers SERVICE_DISABLED.
	AllowedDomains []string
	// Policy says which addresses an allowed host may resolve to, checked
	// when it is dialled; nil means public addresses only, whatever the
	// allow-list says.
	Policy *netguard.Policy
	// Resolver resolves host names (net.DefaultResolver).
	Resolver Resolver
	// AllowHTTP lets fetches (and their redirects) use plain http://; by
	// default only https:// is followed.
	AllowHTTP bool
	// TLSConfig, when set, is the TLS client configuration (a private CA).
	TLSConfig *tls.Config
	// Timeout bounds one fetch, redirects and reading the body included
	// (DefaultFetchTimeout); ConnectTimeout bounds each connection and TLS
	// handshake (DefaultConnectTimeout).
	Timeout        time.Duration
	ConnectTimeout time.Duration
	// MaxFetchBytes bounds the body read (DefaultMaxFetchBytes); a longer
	// body is cut there and the answer says truncated.
	MaxFetchBytes int64
	// MaxRedirects bounds the redirects followed (DefaultMaxRedirects);
	// each is checked against the allow-list and the policy.
	MaxRedirects int
	// Logger hears fetches (the host, never the URL or header values);
	// nil discards.
	Logger *slog.Logger
}

func (o *HTTPOptions) withDefaults() HTTPOptions {
	var v HTTPOptions
	if o != nil {
		v = *o
	}
	if v.Timeout <= 0 {
		v.Timeout = DefaultFetchTimeout
	}
	if v.ConnectTimeout <= 0 {
		v.ConnectTimeout = DefaultConnectTimeout
	}
	if v.MaxFetchBytes <= 0 {
		v.MaxFetchBytes = DefaultMaxFetchBytes
	}
	if v.MaxRedirects <= 0 {
		v.MaxRedirects = DefaultMaxRedirects
	}
	if v.Logger == nil {
		v.Logger = slog.New(slog.DiscardHandler)
	}
	return v
}

// HTTP returns the http server: novaos.http.fetch, a GET or HEAD of a URL
// on an allow-listed domain. An entry of AllowedDomains that is not a
// host name, an IP address or "*." and a host name is an error.
func HTTP(opts *HTTPOptions) (toolgw.Provider, error) {
	o := opts.withDefaults()
	allow, err := parseDomains(o.AllowedDomains)
	if err != nil {
		return nil, err
	}
	f := &fetcher{o: o, allow: allow}
	f.out = newOutbound(o.Policy, o.Resolver, o.TLSConfig, o.ConnectTimeout, f.checkRedirect)
	schema := fmt.Sprintf(`{"type":"object","properties":{`+
		`"url":{"type":"string","minLength":1,"maxLength":%d,"description":"An absolute https URL on an allowed domain."},`+
		`"method":{"type":"string","enum":["GET","HEAD"],"default":"GET"},`+
		`"headers":%s},"required":["url"],"additionalProperties":false}`, maxURLBytes, headersSchema)
	t := toolgw.Tool{
		Tool: tools.Tool{
			Name:  HTTPFetch,
			Title: "Fetch a URL",
			Description: "GETs (or HEADs) a URL on a domain the operator allows, following at most " +
				fmt.Sprint(o.MaxRedirects) + " redirects, each of them checked against the allow-list and the platform's SSRF guard. " +
				"No cookies and no platform credentials are sent. " +
				`Answers {"status": <HTTP status>, "url": <final URL>, "headers": {<a safe subset: Content-Type, Content-Length, ` +
				`Last-Modified, ETag, Cache-Control, Location, …>}, "body": <text, invalid UTF-8 replaced>, "truncated": <true when ` +
				`the body was cut at ` + fmt.Sprint(o.MaxFetchBytes) + ` bytes>, "content_type": <Content-Type>}; a non-2xx status is ` +
				`an answer, not an error. With no domains allowed the tool answers SERVICE_DISABLED.`,
			InputSchema: json.RawMessage(schema),
			OutputSchema: json.RawMessage(`{"type":"object","properties":{"status":{"type":"integer"},"url":{"type":"string"},` +
				`"headers":{"type":"object","additionalProperties":{"type":"string"}},"body":{"type":"string"},` +
				`"truncated":{"type":"boolean"},"content_type":{"type":"string"}},` +
				`"required":["status","url","headers","body","truncated","content_type"]}`),
			Annotations: &tools.Annotations{ReadOnly: ptr(true), Idempotent: ptr(true), OpenWorld: ptr(true)},
		},
		Timeout: o.Timeout,
	}
	return newStatic(entry{tool: t, call: f.fetch}), nil
}

// domains is a parsed allow-list.
type domains struct {
	exact    map[string]bool
	suffixes []string // ".example.com"
}

func parseDomains(list []string) (*domains, error) {
	d := &domains{exact: map[string]bool{}}
	for _, raw := range list {
		s := strings.TrimSpace(raw)
		suffix := strings.HasPrefix(s, "*.")
		if suffix {
			s = s[2:]
		}
		s = strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
		host, err := netguard.CanonicalHost(s)
		if err != nil {
			return nil, fmt.Errorf("builtin: allowed domain %.80q: %w", raw, err)
		}
		if _, err := netip.ParseAddr(host); err == nil && suffix {
			return nil, fmt.Errorf("builtin: allowed domain %.80q: a pattern needs a host name, not an address: %w", raw, netguard.ErrMalformed)
		}
		if suffix {
			d.suffixes = append(d.suffixes, "."+host)
		} else {
			d.exact[host] = true
		}
	}
	return d, nil
}

func (d *domains) empty() bool { return len(d.exact) == 0 && len(d.suffixes) == 0 }

// allows reports whether host, as netguard.ParseURL returns it, is on the
// list.
func (d *domains) allows(host string) bool {
	if d.exact[host] {
		return true
	}
	for _, s := range d.suffixes {
		if strings.HasSuffix(host, s) {
			return true
		}
	}
	return false
}

type fetcher struct {
	o     HTTPOptions
	allow *domains
	out   *outbound
}

type fetchArgs struct {
	URL     string            `json:"url"`
	Method  string            `json:"method"`
	Headers map[string]string `json:"headers"`
}

// safeResponseHeaders are the response headers a fetch answers with: what
// describes the content and its caching, nothing that sets state
// (Set-Cookie) or speaks of the server's authentication.
var safeResponseHeaders = []string{
	"Content-Type", "Content-Length", "Content-Language", "Content-Disposition", "Content-Encoding",
	"Last-Modified", "ETag", "Cache-Control", "Expires", "Date", "Age", "Location", "Retry-After",
}

// maxResponseHeaderValue bounds each header value answered.
const maxResponseHeaderValue = 1024

func (f *fetcher) fetch(parent context.Context, r *toolgw.Request) (*mcp.CallToolResult, error) {
	if f.allow.empty() {
		return nil, toolgw.Failf(tools.ReasonServiceDisabled, "no domains are allowed")
	}
	var a fetchArgs
	if res := decodeArgs(r.Arguments, &a); res != nil {
		return res, nil
	}
	switch a.Method {
	case "":
		a.Method = http.MethodGet
	case http.MethodGet, http.MethodHead:
	default:
		return invalidf("method must be GET or HEAD"), nil
	}
	if res := checkHeaders(a.Headers); res != nil {
		return res, nil
	}
	u, host, res := f.out.checkURL(a.URL, f.o.AllowHTTP)
	if res != nil {
		return res, nil
	}
	if !f.allow.allows(host) {
		return toolgw.ErrorResult(tools.ReasonPolicyDenied, fmt.Sprintf("%s is not on the allowed domains", host)), nil
	}
	ctx, cancel := context.WithTimeout(parent, f.o.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, a.Method, u.String(), nil)
	if err != nil {
		return invalidf("the URL is not usable"), nil
	}
	for k, v := range a.Headers {
		req.Header.Set(k, v)
	}
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", "novaos-http/1")
	}
	log := f.o.Logger.With("tool", HTTPFetch, "host", host, "tenant", r.Caller.Tenant, "call_id", r.CallID)
	resp, err := f.out.client.Do(req)
	if err != nil {
		log.Info("builtin: fetch failed", "err", errText(err))
		return failure(parent, ctx, err, "the URL", f.o.Timeout)
	}
	defer resp.Body.Close()
	body, truncated, err := readCapped(resp.Body, f.o.MaxFetchBytes)
	if err != nil {
		log.Info("builtin: fetch body cut short", "err", errText(err))
		return failure(parent, ctx, err, "the URL", f.o.Timeout)
	}
	headers := map[string]string{}
	for _, name := range safeResponseHeaders {
		if vs := resp.Header.Values(name); len(vs) > 0 {
			headers[name] = clip(strings.Join(vs, ", "), maxResponseHeaderValue)
		}
	}
	log.Debug("builtin: fetched", "status", resp.StatusCode, "bytes", len(body), "truncated", truncated)
	return toolgw.JSONResult(map[string]any{
		"status": resp.StatusCode, "url": resp.Request.URL.String(), "headers": headers,
		"body": body, "truncated": truncated, "content_type": clip(resp.Header.Get("Content-Type"), maxResponseHeaderValue),
	})
}

// readCapped reads at most limit bytes of r as text: cut at a rune
// boundary, invalid UTF-8 replaced; truncated is set when r held more.
func readCapped(r io.Reader, limit int64) (text string, truncated bool, err error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return "", false, err
	}
	if int64(len(b)) > limit {
		truncated = true
		b = b[:limit]
		// Drop a rune the cut split, at most utf8.UTFMax-1 bytes.
		for i := 1; i < utf8.UTFMax && i <= len(b); i++ {
			if utf8.RuneStart(b[len(b)-i]) {
				if !utf8.FullRune(b[len(b)-i:]) {
					b = b[:len(b)-i]
				}
				break
			}
		}
	}
	return strings.ToValidUTF8(string(b), "\uFFFD"), truncated, nil
}

// checkRedirect follows a redirect only within the allow-list, the scheme
// rule and the policy, and at most MaxRedirects times.
func (f *fetcher) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > f.o.MaxRedirects {
		return &redirectRefused{fmt.Sprintf("more than %d redirects", f.o.MaxRedirects)}
	}
	next := *req.URL
	next.Fragment, next.RawFragment = "", "" // a Location's fragment is never sent
	u, host, err := netguard.ParseURL(next.String())
	if err != nil {
		return &redirectRefused{"a redirect goes to a URL that is not usable"}
	}
	if u.Scheme != "https" && !f.o.AllowHTTP {
		return &redirectRefused{"a redirect leaves https"}
	}
	if err := f.out.policy.CheckHost(host); err != nil {
		var re *netguard.RefusedError
		if errors.As(err, &re) {
			return &redirectRefused{fmt.Sprintf("a redirect goes to %s, a %s destination", re.Host, re.Class)}
		}
		return &redirectRefused{"a redirect goes to a host that is not usable"}
	}
	if !f.allow.allows(host) {
		return &redirectRefused{fmt.Sprintf("a redirect goes to %s, which is not on the allowed domains", host)}
	}
	return nil
}
