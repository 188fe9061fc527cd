package authproxy

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"net/url"

	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/problem"
)

// Defaults of Options.
const (
	// DefaultMaxBodyBytes bounds a request body.
	DefaultMaxBodyBytes = 10 << 20
)

// HealthPath is the proxy's own health check: GET or HEAD answers 200
// without a token, and never reaches the agent.
const HealthPath = "/healthz"

// Options tune a Proxy; nil means the defaults.
type Options struct {
	// MaxBodyBytes bounds a request body (DefaultMaxBodyBytes); negative
	// means no limit.
	MaxBodyBytes int64
	// Transport makes the requests to the agent; nil means a clone of
	// http.DefaultTransport.
	Transport http.RoundTripper
	// Logger receives requests the agent did not answer; nil discards.
	Logger *slog.Logger
}

// Proxy verifies execution tokens and forwards verified requests to one
// upstream agent. It is safe for concurrent use.
type Proxy struct {
	upstream *url.URL
	limited  bool // a body is bounded, by maxBody
	maxBody  int64
	log      *slog.Logger
	rp       *httputil.ReverseProxy
	verified http.Handler
}

var _ http.Handler = (*Proxy)(nil)

// New returns a proxy to upstream, an absolute http or https URL (its path
// is the prefix of every forwarded path), admitting the requests whose
// bearer token v verifies.
func New(upstream string, v *identity.Verifier, opts *Options) (*Proxy, error) {
	if v == nil {
		return nil, errors.New("authproxy: no verifier")
	}
	u, err := url.Parse(upstream)
	if err != nil {
		if ue, ok := errors.AsType[*url.Error](err); ok {
			err = ue.Err // its text quotes the URL, credentials included
		}
		return nil, fmt.Errorf("authproxy: upstream: %w", err)
	}
	if u.User != nil {
		return nil, errors.New("authproxy: upstream URL carries credentials: the agent is called with the caller's token, never the proxy's")
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("authproxy: upstream %q is not an absolute http or https URL", upstream)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("authproxy: upstream %s has a query or fragment", u.Redacted())
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	limited := o.MaxBodyBytes >= 0
	if o.MaxBodyBytes == 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.Transport == nil {
		o.Transport = http.DefaultTransport.(*http.Transport).Clone()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	p := &Proxy{upstream: u, limited: limited, maxBody: o.MaxBodyBytes, log: o.Logger}
	p.rp = &httputil.ReverseProxy{
		Rewrite:   p.rewrite,
		Transport: o.Transport,
		// Every write is flushed at once: an agent's SSE stream reaches
		// the caller frame by frame, never held in a buffer.
		FlushInterval: -1,
		ErrorHandler:  p.proxyError,
		ErrorLog:      slog.NewLogLogger(o.Logger.Handler(), slog.LevelWarn),
	}
	p.verified = identity.Middleware(v, http.HandlerFunc(p.forward))
	return p, nil
}

// ServeHTTP answers the health check itself and hands every other request
// to the verifier, which lets only verified ones through to the agent.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == HealthPath && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		w.Write([]byte(`{"status":"ok"}` + "\n"))
		return
	}
	p.verified.ServeHTTP(w, r)
}

// forward proxies a verified request, its body bounded.
func (p *Proxy) forward(w http.ResponseWriter, r *http.Request) {
	if p.limited {
		if r.ContentLength > p.maxBody {
			p.tooLarge(w)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, p.maxBody)
	}
	p.rp.ServeHTTP(w, r)
}

// rewrite aims the request at the agent and sets the verified X-NovaOS-*
// headers; identity.Middleware removed the caller's own, in any case,
// before the request got here. It runs after the hop-by-hop headers (and
// any the caller named in Connection) are gone, so nothing the caller
// sends can remove what is set here.
func (p *Proxy) rewrite(pr *httputil.ProxyRequest) {
	pr.SetURL(p.upstream)
	pr.SetXForwarded()
	h := pr.Out.Header
	e, ok := identity.ExecutionFromContext(pr.In.Context())
	if !ok {
		return // not behind the verifier: forward no identity at all
	}
	for _, f := range []struct{ name, v string }{
		{identity.HeaderUserID, e.UserID}, {identity.HeaderTenantID, e.TenantID}, {identity.HeaderRunID, e.RunID},
		{identity.HeaderAgentID, e.AgentID}, {identity.HeaderInstanceID, e.InstanceID},
		{identity.HeaderExecutionToken, e.Token.Reveal()},
		{identity.HeaderAgentName, e.AgentName}, {identity.HeaderConversationID, e.ConversationID},
	} {
		if f.v != "" {
			h.Set(f.name, f.v)
		}
	}
}

// proxyError answers a request the agent did not: 413 for a body over the
// limit, else 502. The log line names the method and path, never a header
// or the query.
func (p *Proxy) proxyError(w http.ResponseWriter, r *http.Request, err error) {
	if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
		p.tooLarge(w)
		return
	}
	if r.Context().Err() != nil {
		// The caller went away; there is no one to answer.
		return
	}
	if ue, ok := errors.AsType[*url.Error](err); ok {
		err = ue.Err // its text quotes the URL, query included
	}
	p.log.Warn("authproxy: the agent did not answer", "method", r.Method, "path", r.URL.Path, "err", err)
	writeProblem(w, http.StatusBadGateway, "https://novaos.dev/problems/bad-gateway", "the agent behind the proxy did not answer")
}

func (p *Proxy) tooLarge(w http.ResponseWriter) {
	writeProblem(w, http.StatusRequestEntityTooLarge, problem.TypeBodyTooLarge,
		fmt.Sprintf("the request body is larger than %d bytes", p.maxBody))
}

func writeProblem(w http.ResponseWriter, status int, typ, detail string) {
	w.Header().Set("Content-Type", problem.ContentType)
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(&problem.Problem{Type: typ, Title: http.StatusText(status), Status: status, Detail: detail})
}
