package upstream

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"novaos.dev/novaos/internal/httpapi"
	"novaos.dev/novaos/netguard"
	"novaos.dev/novaos/problem"
	"novaos.dev/novaos/tools"
)

// Problem types the admin API shares with the platform's other APIs.
const (
	problemInvalid            = "https://novaos.dev/problems/invalid-request"
	problemVersionConflict    = "https://novaos.dev/problems/version-conflict"
	problemPreconditionFailed = "https://novaos.dev/problems/precondition-failed"
	maxPutTries               = 3
)

// Routes serve the admin API of upstream servers at tools.ServersPath.
func (p *Provider) Routes() []httpapi.Route {
	route := func(pattern string, m httpapi.Methods) httpapi.Route {
		return httpapi.Route{Pattern: pattern, Handler: p.api.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			p.api.Route(w, r, m)
		}))}
	}
	return []httpapi.Route{
		route(tools.ServersPath, httpapi.Methods{http.MethodGet: p.serveList}),
		route(tools.ServersPath+"/{name}", httpapi.Methods{http.MethodGet: p.serveGet, http.MethodPut: p.servePut,
			http.MethodDelete: p.serveDelete}),
	}
}

// principal is who manages a tenant's servers.
type principal struct{ tenant, subject string }

// principalOf authenticates a caller of the admin API: the operator,
// naming the tenant with X-Tenant-ID, or a token of the tenant holding
// tools.ScopeAdmin (an X-Tenant-ID naming another tenant is refused).
func principalOf(r *http.Request) (principal, error) {
	c, err := httpapi.TenantCallerOf(r, true)
	if err == nil && !c.Admin {
		err = c.Need(tools.ScopeAdmin)
	}
	if err != nil {
		return principal{}, err
	}
	return principal{tenant: c.Tenant, subject: c.Subject}, nil
}

func (p *Provider) serveList(w http.ResponseWriter, r *http.Request) {
	pr, err := principalOf(r)
	if err != nil {
		p.api.Fail(w, r, err)
		return
	}
	list, err := p.store.ListServers(r.Context(), pr.tenant)
	if err != nil {
		p.api.Fail(w, r, err)
		return
	}
	out := tools.ServerList{Servers: make([]tools.ServerInfo, 0, len(list))}
	for i := range list {
		out.Servers = append(out.Servers, list[i].Info())
	}
	httpapi.WriteJSON(w, r, http.StatusOK, out)
}

func (p *Provider) serveGet(w http.ResponseWriter, r *http.Request) {
	pr, err := principalOf(r)
	if err != nil {
		p.api.Fail(w, r, err)
		return
	}
	name := r.PathValue("name")
	s, err := p.store.GetServer(r.Context(), pr.tenant, name)
	if err != nil {
		p.api.Fail(w, r, notFound(name, err))
		return
	}
	w.Header().Set("ETag", etag(s.Version))
	httpapi.WriteJSON(w, r, http.StatusOK, s.Info())
}

func (p *Provider) serveDelete(w http.ResponseWriter, r *http.Request) {
	pr, err := principalOf(r)
	if err != nil {
		p.api.Fail(w, r, err)
		return
	}
	name := r.PathValue("name")
	if err := p.store.DeleteServer(r.Context(), pr.tenant, name); err != nil {
		p.api.Fail(w, r, notFound(name, err))
		return
	}
	p.forget(key{pr.tenant, name})
	p.log.InfoContext(r.Context(), "upstream: server removed", "tenant_id", pr.tenant, "server", name, "caller", pr.subject)
	w.WriteHeader(http.StatusNoContent)
}

func (p *Provider) servePut(w http.ResponseWriter, r *http.Request) {
	pr, err := principalOf(r)
	if err != nil {
		p.api.Fail(w, r, err)
		return
	}
	name := r.PathValue("name")
	if !tools.ValidServerName(name) {
		p.api.Fail(w, r, invalid([]problem.FieldError{{Field: "name", Message: fmt.Sprintf(
			"1 to %d of a-z, 0-9, '_' and '-', starting with a letter, and none of the built-in servers (%s)",
			tools.MaxServerNameLen, strings.Join(tools.BuiltinServers, ", "))}}))
		return
	}
	cond, err := httpapi.ParseConditions(r)
	if err != nil {
		p.api.Fail(w, r, err)
		return
	}
	var in tools.ServerRequest
	if !p.api.Decode(w, r, &in, httpapi.Body{What: "the server"}) {
		return
	}
	ctx := r.Context()
	for range maxPutTries {
		cur, err := p.store.GetServer(ctx, pr.tenant, name)
		exists := err == nil
		if err != nil && !errors.Is(err, tools.ErrNotFound) {
			p.api.Fail(w, r, err)
			return
		}
		switch {
		case cond.Match > 0 && (!exists || cur.Version != cond.Match):
			p.api.Fail(w, r, preconditionFailed(fmt.Sprintf("the server is not at version %d", cond.Match)))
			return
		case cond.CreateOnly && exists:
			p.api.Fail(w, r, preconditionFailed("the server exists"))
			return
		}
		var prev *tools.UpstreamServer
		if exists {
			prev = &cur
		} else if err := p.roomFor(ctx, pr.tenant); err != nil {
			p.api.Fail(w, r, err)
			return
		}
		next, err := p.build(pr.tenant, name, &in, prev)
		if err != nil {
			p.api.Fail(w, r, err)
			return
		}
		stored, err := p.store.PutServer(ctx, next, cur.Version)
		if errors.Is(err, tools.ErrConflict) {
			if cond.Any() {
				p.api.Fail(w, r, preconditionFailed("the server changed meanwhile"))
				return
			}
			continue
		}
		if err != nil {
			p.api.Fail(w, r, err)
			return
		}
		p.forget(key{pr.tenant, name})
		p.log.InfoContext(ctx, "upstream: server registered", "tenant_id", pr.tenant, "server", name,
			"transport", stored.Transport, "version", stored.Version, "caller", pr.subject)
		w.Header().Set("ETag", etag(stored.Version))
		status := http.StatusOK
		if !exists {
			status = http.StatusCreated
			w.Header().Set("Location", tools.ServersPath+"/"+name)
		}
		httpapi.WriteJSON(w, r, status, stored.Info())
		return
	}
	p.api.Fail(w, r, tools.ErrConflict)
}

// roomFor refuses a new server to a tenant that has the most allowed.
func (p *Provider) roomFor(ctx context.Context, tenant string) error {
	list, err := p.store.ListServers(ctx, tenant)
	if err != nil {
		return err
	}
	if len(list) >= p.o.MaxServersPerTenant {
		return &problem.Problem{Type: tools.ProblemServerLimit, Status: http.StatusConflict, Title: "Conflict",
			Detail: fmt.Sprintf("the tenant has %d upstream servers, the most this server keeps", len(list))}
	}
	return nil
}

// build makes the registration a PUT asks for, checking every rule and
// sealing its values; prev is the registration it replaces, if any,
// whose values a null keeps.
func (p *Provider) build(tenant, name string, in *tools.ServerRequest, prev *tools.UpstreamServer) (tools.UpstreamServer, error) {
	var errs []problem.FieldError
	bad := func(field, format string, args ...any) {
		errs = append(errs, problem.FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
	}
	s := tools.UpstreamServer{TenantID: tenant, Name: name, Transport: in.Transport, URL: in.URL, Command: in.Command,
		Args: slices.Clone(in.Args), Disabled: in.Disabled, UpdatedAt: p.o.Now()}
	switch {
	case in.TimeoutMS < 0 || in.TimeoutMS > tools.MaxServerTimeout.Milliseconds():
		bad("timeout_ms", "from 1 to %d, or 0 for the default %d", tools.MaxServerTimeout.Milliseconds(), tools.DefaultServerTimeout.Milliseconds())
	default:
		s.Timeout = time.Duration(in.TimeoutMS) * time.Millisecond
	}
	switch in.Transport {
	case tools.TransportHTTP:
		if in.Command != "" || len(in.Args) > 0 || len(in.Env) > 0 {
			bad("transport", "an http server takes a url and headers, not a command, args or env")
		}
		p.checkURL(in.URL, bad)
	case tools.TransportStdio:
		if in.URL != "" || len(in.Headers) > 0 {
			bad("transport", "a stdio server takes a command, args and env, not a url or headers")
		}
		switch {
		case len(p.commands) == 0:
			bad("transport", "this server runs no stdio upstreams: the operator allowed no commands")
		case in.Command == "":
			bad("command", "required for a stdio server")
		case p.commands[in.Command] == "":
			bad("command", "%.80q is not a command the operator allowed", in.Command)
		}
		if len(in.Args) > tools.MaxServerArgs {
			bad("args", "more than %d", tools.MaxServerArgs)
		}
		for i, a := range in.Args {
			if len(a) > tools.MaxServerArgBytes || strings.ContainsRune(a, 0) {
				bad("args["+strconv.Itoa(i)+"]", "longer than %d bytes or holding NUL", tools.MaxServerArgBytes)
			}
		}
	default:
		bad("transport", "%q or %q", tools.TransportHTTP, tools.TransportStdio)
	}
	var prevCreds sealedCredentials
	if prev != nil && len(prev.SealedCredentials) > 0 && (hasNull(in.Headers) || hasNull(in.Env)) {
		c, err := p.openCredentials(prev)
		if err != nil {
			p.log.Error("upstream: stored credentials unusable", "tenant_id", tenant, "server", name, "err", err)
			return s, badRequest("the stored values cannot be opened on this server: send every value again instead of null")
		}
		prevCreds = c
	}
	var creds sealedCredentials
	s.Headers, creds.Headers = p.values("headers", in.Headers, prevCreds.Headers, true, bad)
	s.Env, creds.Env = p.values("env", in.Env, prevCreds.Env, false, bad)
	if len(errs) > 0 {
		return s, invalid(errs)
	}
	if err := s.Check(); err != nil {
		return s, err
	}
	if err := p.sealCredentials(&s, creds); err != nil {
		if errors.Is(err, errNoSealer) {
			return s, invalid([]problem.FieldError{{Field: "headers", Message: "this server keeps no key to seal values with"}})
		}
		return s, err
	}
	return s, nil
}

// checkURL applies the SSRF guard to an http server's URL.
func (p *Provider) checkURL(raw string, bad func(field, format string, args ...any)) {
	if raw == "" {
		bad("url", "required for an http server")
		return
	}
	if len(raw) > tools.MaxServerURLBytes {
		bad("url", "longer than %d bytes", tools.MaxServerURLBytes)
		return
	}
	_, host, err := netguard.ParseURL(raw)
	if err != nil {
		bad("url", "%s", strings.TrimPrefix(err.Error(), "netguard: "))
		return
	}
	var refused *netguard.RefusedError
	if err := p.guard.CheckHost(host); errors.As(err, &refused) {
		bad("url", "%s is a %s address; this server calls upstreams on public addresses only", host, refused.Class)
	} else if err != nil {
		bad("url", "%s", strings.TrimPrefix(err.Error(), "netguard: "))
	}
}

// values checks a request's header or environment values: names, sizes,
// and nulls keeping what prev holds. It returns the sorted names and the
// values to seal.
func (p *Provider) values(field string, in map[string]*string, prev map[string]string, header bool,
	bad func(field, format string, args ...any)) ([]string, map[string]string) {
	if len(in) == 0 {
		return nil, nil
	}
	most := tools.MaxServerHeaders
	if !header {
		most = tools.MaxServerEnv
	}
	if len(in) > most {
		bad(field, "more than %d", most)
		return nil, nil
	}
	names := make([]string, 0, len(in))
	out := map[string]string{}
	for raw, v := range in {
		name := raw
		if header {
			name = http.CanonicalHeaderKey(raw)
		}
		f := field + "[" + strconv.Quote(bounded(raw)) + "]"
		switch {
		case header && !validHeaderName(raw):
			bad(f, "not a header name")
			continue
		case header && tools.ReservedHeader(name):
			bad(f, "a header the MCP client sets itself")
			continue
		case !header && !validEnvName(raw):
			bad(f, "not a variable name: A-Z a-z 0-9 _, not starting with a digit")
			continue
		case !header && (strings.HasPrefix(raw, "LD_") || strings.HasPrefix(raw, "DYLD_")):
			bad(f, "a variable of the dynamic loader, which no registration may set")
			continue
		case slices.Contains(names, name):
			bad(f, "named twice")
			continue
		}
		switch {
		case v == nil:
			old, ok := prev[name]
			if !ok {
				bad(f, "null keeps a stored value, and none is stored")
				continue
			}
			out[name] = old
		case len(*v) > p.o.MaxCredentialBytes:
			bad(f, "longer than %d bytes", p.o.MaxCredentialBytes)
			continue
		case header && !validHeaderValue(*v), !header && strings.ContainsRune(*v, 0):
			bad(f, "holds a character a value may not (a control character, or NUL)")
			continue
		default:
			out[name] = *v
		}
		names = append(names, name)
	}
	slices.Sort(names)
	return names, out
}

func hasNull(m map[string]*string) bool {
	for _, v := range m {
		if v == nil {
			return true
		}
	}
	return false
}

func validHeaderName(n string) bool {
	if n == "" || len(n) > tools.MaxServerNameBytes {
		return false
	}
	for i := 0; i < len(n); i++ {
		c := n[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// validHeaderValue reports whether v is an RFC 9110 field value: no
// control characters but horizontal tab.
func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

func validEnvName(n string) bool {
	if n == "" || len(n) > tools.MaxServerNameBytes || n[0] >= '0' && n[0] <= '9' {
		return false
	}
	for i := 0; i < len(n); i++ {
		c := n[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

func etag(version int64) string { return `"` + strconv.FormatInt(version, 10) + `"` }

func badRequest(detail string) *problem.Problem {
	return &problem.Problem{Type: problemInvalid, Status: http.StatusBadRequest, Title: "Bad Request", Detail: detail}
}

func invalid(errs []problem.FieldError) *problem.Problem {
	return &problem.Problem{Type: problemInvalid, Status: http.StatusBadRequest, Title: "Bad Request",
		Detail: "the server breaks " + strconv.Itoa(len(errs)) + " rule(s)", Errors: errs}
}

func preconditionFailed(detail string) *problem.Problem {
	return &problem.Problem{Type: problemPreconditionFailed, Status: http.StatusPreconditionFailed, Title: "Precondition Failed",
		Detail: detail}
}

// notFound names the missing server in a store's ErrNotFound.
func notFound(name string, err error) error {
	if errors.Is(err, tools.ErrNotFound) {
		return &problem.Problem{Type: tools.ProblemServerNotFound, Status: http.StatusNotFound, Title: "Not Found",
			Detail: "no upstream server " + strconv.Quote(bounded(name)) + " in the tenant"}
	}
	return err
}

// problemFor maps the store's errors to problems.
func problemFor(err error) *problem.Problem {
	switch {
	case errors.Is(err, tools.ErrConflict):
		return &problem.Problem{Type: problemVersionConflict, Status: http.StatusConflict, Title: "Conflict",
			Detail: "it changed meanwhile; read it again and retry"}
	case errors.Is(err, tools.ErrInvalidServer):
		// The message is the check's own, naming the rule broken.
		return badRequest(strings.TrimPrefix(err.Error(), "tools: "))
	case errors.Is(err, errNoSealer):
		return badRequest("this server keeps no key to seal values with")
	}
	return nil
}
