package identity

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"novaos.dev/novaos/problem"
	"novaos.dev/novaos/secret"
)

// BearerToken returns the token of h's one Authorization header in the
// Bearer scheme (RFC 6750 §2.1; the scheme name in any case). Several
// Authorization headers, another scheme or a token with spaces give ok
// false.
func BearerToken(h http.Header) (token string, ok bool) {
	vals := h.Values("Authorization")
	if len(vals) != 1 {
		return "", false
	}
	scheme, tok, found := strings.Cut(strings.TrimSpace(vals[0]), " ")
	if !found || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimLeft(tok, " ")
	if tok == "" || strings.ContainsAny(tok, " \t") {
		return "", false
	}
	return tok, true
}

// ErrNoCredentials is VerifyRequest's error for a request without one
// Bearer token (RFC 6750: answer 401 without an error code).
var ErrNoCredentials = errors.New("identity: no bearer token")

// VerifyRequest verifies r's bearer token, for a service that answers
// failures itself (an authenticator in a service framework) instead of
// through Middleware. It returns ErrNoCredentials, an error matching
// ErrInvalid, or ErrKeysUnavailable.
func (v *Verifier) VerifyRequest(r *http.Request) (*Claims, secret.Value, error) {
	tok, ok := BearerToken(r.Header)
	if !ok {
		return nil, secret.Value{}, ErrNoCredentials
	}
	c, err := v.Verify(r.Context(), tok)
	if err != nil {
		return nil, secret.Value{}, err
	}
	return c, secret.New(tok), nil
}

// Problem types of Middleware's answers.
const (
	ProblemInvalidToken      = "https://novaos.dev/problems/invalid-token"
	ProblemInsufficientScope = "https://novaos.dev/problems/insufficient-scope"
	ProblemKeysUnavailable   = "https://novaos.dev/problems/keys-unavailable"
)

// Middleware lets a request through to next only with a bearer token v
// verifies, and puts the claims and token in its context (FromContext,
// ExecutionFromContext). Otherwise it answers, as RFC 6750 §3 says:
//
//   - no token: 401, WWW-Authenticate: Bearer realm="novaos";
//   - a token v rejects: 401, WWW-Authenticate: Bearer realm="novaos",
//     error="invalid_token", and a problem+json body saying why (the
//     kind of error, never the token);
//   - keys that cannot be fetched: 503 with Retry-After.
//
// A caller's own X-NovaOS-* headers are removed before next sees the
// request, so nothing behind it mistakes them for the proxy's.
func Middleware(v *Verifier, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, tok, err := v.VerifyRequest(r)
		if errors.Is(err, ErrNoCredentials) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="novaos"`)
			writeProblem(w, http.StatusUnauthorized, ProblemInvalidToken, "a bearer token is required")
			return
		}
		if err != nil {
			if errors.Is(err, ErrKeysUnavailable) {
				w.Header().Set("Retry-After", "5")
				writeProblem(w, http.StatusServiceUnavailable, ProblemKeysUnavailable, "the keys to verify the token with are unavailable")
				return
			}
			w.Header().Set("WWW-Authenticate", `Bearer realm="novaos", error="invalid_token"`)
			writeProblem(w, http.StatusUnauthorized, ProblemInvalidToken, rejection(err))
			return
		}
		r2 := r.Clone(NewContext(r.Context(), c, tok))
		for name := range r2.Header {
			if strings.HasPrefix(strings.ToLower(name), "x-novaos-") {
				r2.Header.Del(name)
			}
		}
		next.ServeHTTP(w, r2)
	})
}

// RequireScope lets a request behind Middleware through only when its
// token grants scope; otherwise 403 with error="insufficient_scope".
func RequireScope(scope string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, ok := FromContext(r.Context())
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="novaos"`)
			writeProblem(w, http.StatusUnauthorized, ProblemInvalidToken, "a bearer token is required")
			return
		}
		if !c.HasScope(scope) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="novaos", error="insufficient_scope", scope="`+scope+`"`)
			writeProblem(w, http.StatusForbidden, ProblemInsufficientScope, "the token does not grant scope "+scope)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// rejection is the detail a client is told: the kind and reason, which
// hold no token, and nothing else.
func rejection(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Error()
	}
	return ErrInvalid.Error()
}

func writeProblem(w http.ResponseWriter, status int, typ, detail string) {
	w.Header().Set("Content-Type", problem.ContentType)
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(&problem.Problem{Type: typ, Title: http.StatusText(status), Status: status, Detail: detail})
}
