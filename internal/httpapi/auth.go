package httpapi

import (
	"context"
	"errors"
	"net/http"
	"net/netip"
	"strings"
	"sync/atomic"

	"novaos.dev/novaos/problem"
	"novaos.dev/novaos/secret"
)

// Errors an Authenticator wraps to refuse a request; API.Fail answers
// them with 401 (and a Bearer challenge) and 403 unless the service's own
// ProblemFor says otherwise.
var (
	// ErrUnauthenticated: the request carries no credentials the
	// Authenticator accepts (none, a wrong token, an expired one).
	ErrUnauthenticated = errors.New("httpapi: unauthenticated")
	// ErrForbidden: the Authenticator knows who is asking, or knows that
	// nobody could be accepted from there, and refuses.
	ErrForbidden = errors.New("httpapi: forbidden")
)

// Caller is who made a request, as an Authenticator established it. It
// never holds the credential itself.
type Caller struct {
	// Scheme says how the caller was established: SchemeAdminToken,
	// SchemeLoopback, or an Authenticator's own (an execution token).
	Scheme string
	// Subject names the caller in logs; never a secret.
	Subject string
	// Admin is set for the server's operator: the admin token, or a peer
	// on the server's own machine when no token is configured.
	Admin bool
	// Claims are an Authenticator's verified claims (tenant, agent,
	// scopes of an execution token), for the services that read them.
	Claims any
}

// Schemes of the AdminRule's callers, and of a platform execution
// token's bearer (whose Claims are its *identity.Claims).
const (
	SchemeAdminToken     = "admin-token"
	SchemeLoopback       = "loopback"
	SchemeExecutionToken = "execution-token"
)

// Authenticator establishes who made a request. It returns an error
// wrapping ErrUnauthenticated or ErrForbidden (or a *problem.Problem, answered as
// it is) to refuse the request; any other error is a 500. The platform's
// execution tokens plug in here beside the AdminRule.
type Authenticator interface {
	Authenticate(r *http.Request) (*Caller, error)
}

// AuthenticatorFunc adapts a function to an Authenticator.
type AuthenticatorFunc func(r *http.Request) (*Caller, error)

func (f AuthenticatorFunc) Authenticate(r *http.Request) (*Caller, error) { return f(r) }

type callerKey struct{}

// WithCaller returns ctx carrying c; API.Handler puts the caller of every
// request it authenticated in the request's context. It also notes c in
// ctx's CallerSlot (NoteCaller).
func WithCaller(ctx context.Context, c *Caller) context.Context {
	NoteCaller(ctx, c)
	return context.WithValue(ctx, callerKey{}, c)
}

// A CallerSlot receives the caller that the handlers below a middleware
// establish, for the middleware to read once they return: a context
// carries values down a call, never back up, and the access log and the
// request metrics are written above the handler that authenticates.
// It is safe for concurrent use.
type CallerSlot struct{ c atomic.Pointer[Caller] }

type callerSlotKey struct{}

// WithCallerSlot returns ctx with slot, which WithCaller and NoteCaller
// under it fill in.
func WithCallerSlot(ctx context.Context, slot *CallerSlot) context.Context {
	return context.WithValue(ctx, callerSlotKey{}, slot)
}

// NoteCaller records c in ctx's CallerSlot, if it has one: what an
// authentication outside API.Handler (a token middleware, an A2A call's
// identification) calls once it knows who is calling.
func NoteCaller(ctx context.Context, c *Caller) {
	if s, ok := ctx.Value(callerSlotKey{}).(*CallerSlot); ok && s != nil && c != nil {
		s.c.Store(c)
	}
}

// Caller is the caller last noted, or nil.
func (s *CallerSlot) Caller() *Caller { return s.c.Load() }

// CallerFrom returns the caller ctx carries, if any.
func CallerFrom(ctx context.Context) (*Caller, bool) {
	c, ok := ctx.Value(callerKey{}).(*Caller)
	return c, ok && c != nil
}

// WriteMode says who the AdminRule lets change a service.
type WriteMode int

const (
	// WritesLoopbackOnly: no admin token is configured; writes are
	// accepted from loopback peers only.
	WritesLoopbackOnly WriteMode = iota
	// WritesNeedToken: writes need the admin token, from any peer.
	WritesNeedToken
)

func (m WriteMode) String() string {
	if m == WritesNeedToken {
		return "admin-token"
	}
	return "loopback-only"
}

// AdminRule is the operator's Authenticator. With a Token, a request must
// carry "Authorization: Bearer <token>" (compared in constant time) from
// any peer; without one, the secure default, it must come from a loopback
// peer (RemoteAddr on 127.0.0.0/8 or ::1) and name the server in Host
// (NamesServer: localhost, a loopback address, or a name the Guard
// accepts), so a developer can act on their own machine and nobody else
// can. The Host rule holds for reads too: a page whose own name an
// attacker rebinds to 127.0.0.1 (DNS rebinding) reaches the server from a
// loopback peer, but its requests carry that name.
// Behind a reverse proxy on the same machine every peer looks local:
// configure a token there.
type AdminRule struct {
	Token secret.Value
}

var _ Authenticator = AdminRule{}

// Mode says which of the two rules applies.
func (a AdminRule) Mode() WriteMode {
	if a.Token.IsZero() {
		return WritesLoopbackOnly
	}
	return WritesNeedToken
}

// Authenticate applies the rule. Its errors never repeat what the request
// presented: a wrong token may be a near miss of the right one.
func (a AdminRule) Authenticate(r *http.Request) (*Caller, error) {
	if a.Mode() == WritesNeedToken {
		if tok, ok := BearerToken(r); ok && a.Token.Equal(tok) {
			return &Caller{Scheme: SchemeAdminToken, Subject: "admin", Admin: true}, nil
		}
		return nil, errors.Join(ErrUnauthenticated, errors.New("the admin token is missing or wrong"))
	}
	if !IsLoopbackPeer(r.RemoteAddr) {
		return nil, errors.Join(ErrForbidden, errors.New("no admin token is configured and the peer is not on this machine"))
	}
	if !NamesServer(r) {
		// A new Problem each time: WriteProblem fills in its Instance.
		return nil, errors.Join(ErrForbidden, &problem.Problem{Type: problem.TypeMisdirected, Status: http.StatusMisdirectedRequest,
			Title: "Misdirected Request", Detail: foreignHostDetail})
	}
	return &Caller{Scheme: SchemeLoopback, Subject: "loopback", Admin: true}, nil
}

// foreignHostDetail explains the 421 a loopback peer gets when it names
// the server by another name, as the Guard answers a write to a name that
// is not the server's.
const foreignHostDetail = "with no admin token configured, a request from this machine acts as the operator only when its Host names this server: " +
	"localhost, a loopback address, its listen address, its public URL's host or an allowed host " +
	"(a web page that rebinds its own name to this machine sends that name instead); " +
	"use http://127.0.0.1:<port> or http://localhost:<port>, or configure an admin token"

// IsLoopbackHost reports whether a Host header names a loopback address
// (127.0.0.0/8, ::1, also IPv4-mapped) or localhost (RFC 6761: also any
// name under .localhost), on any port. A browser sends the name of the
// URL it fetched, so a page served under any other name cannot produce
// one of these.
func IsLoopbackHost(hostHeader string) bool {
	host, _, ok := splitHost(hostHeader, "")
	return ok && isLoopbackName(host)
}

// BearerToken returns the token of r's "Authorization: Bearer <token>"
// header (the scheme is case-insensitive, RFC 9110 §11.1).
func BearerToken(r *http.Request) (string, bool) {
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimLeft(tok, " ")
	return tok, tok != ""
}

// IsLoopbackPeer reports whether remoteAddr (http.Request.RemoteAddr) is
// on 127.0.0.0/8 or ::1 (also as an IPv4-mapped address). A name is not an
// address, so "localhost:80" is not.
func IsLoopbackPeer(remoteAddr string) bool {
	ap, err := netip.ParseAddrPort(remoteAddr)
	if err != nil {
		return false
	}
	return ap.Addr().Unmap().IsLoopback()
}

// IsWrite reports whether a request with method may change something:
// anything but GET, HEAD and OPTIONS, so a method a service adds later is
// guarded too. It is the rule the Guard's Host and Origin checks use.
func IsWrite(method string) bool { return !safeMethod(method) }

// AdminOrToken establishes callers who are either the operator or a
// platform token's bearer: a request carrying the admin token (or, when
// none is configured, no token from this machine) is the AdminRule's
// caller; any other bearer token is tokens' to judge.
func AdminOrToken(admin secret.Value, tokens Authenticator) Authenticator {
	rule := AdminRule{Token: admin}
	return AuthenticatorFunc(func(r *http.Request) (*Caller, error) {
		tok, ok := BearerToken(r)
		if !ok || !admin.IsZero() && admin.Equal(tok) {
			return rule.Authenticate(r)
		}
		return tokens.Authenticate(r)
	})
}
