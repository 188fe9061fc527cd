package auth

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/httpapi"
)

// The OAuth 2.1 authorization server of the platform's tokens, for MCP
// clients that discover how to authenticate from a resource's metadata
// (RFC 9728) and then this server's (RFC 8414).
const (
	AuthServerMetadataPath = "/.well-known/oauth-authorization-server"
	TokenPath              = "/oauth/token"
	// maxTokenRequestBytes bounds a token request's form.
	maxTokenRequestBytes = 16 << 10
)

// oauthRoutes serve the authorization server's metadata and its token
// endpoint, under base, the server's public URL.
func (i *Issuer) oauthRoutes(base string) []httpapi.Route {
	return []httpapi.Route{
		{Pattern: "GET " + AuthServerMetadataPath, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Cache-Control", "public, max-age=3600")
			httpapi.WriteJSON(w, r, http.StatusOK, map[string]any{
				"issuer":                                base,
				"token_endpoint":                        base + TokenPath,
				"jwks_uri":                              base + JWKSPath,
				"grant_types_supported":                 []string{"client_credentials"},
				"token_endpoint_auth_methods_supported": []string{"client_secret_basic", "client_secret_post"},
				// No authorization code flow: no browser takes part. The
				// endpoint is named because clients require one.
				"authorization_endpoint":           base + TokenPath,
				"response_types_supported":         []string{},
				"code_challenge_methods_supported": []string{"S256"},
			})
		})},
		{Pattern: "POST " + TokenPath, Handler: http.HandlerFunc(i.serveToken)},
	}
}

// serveToken is the token endpoint's client credentials grant, where the
// client's secret is a platform token (the one an operator minted for the
// client, `novaos token mint`): it answers a new token with the same
// identity, its scopes narrowed to the scope asked for, living at most
// DefaultTTL and never past the secret's own expiry. Nothing is granted
// that the secret does not hold.
func (i *Issuer) serveToken(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	r.Body = http.MaxBytesReader(w, r.Body, maxTokenRequestBytes)
	if err := r.ParseForm(); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_request", "the request is not a form of at most 16 KiB")
		return
	}
	if gt := r.PostForm.Get("grant_type"); gt != "client_credentials" {
		oauthError(w, http.StatusBadRequest, "unsupported_grant_type", "only client_credentials is supported")
		return
	}
	_, secret, ok := r.BasicAuth()
	if ok {
		// RFC 6749 §2.3.1: the secret is form-encoded inside Basic.
		if s, err := url.QueryUnescape(secret); err == nil {
			secret = s
		}
	} else {
		secret = r.PostForm.Get("client_secret")
	}
	if secret == "" {
		w.Header().Set("WWW-Authenticate", `Basic realm="novaos"`)
		oauthError(w, http.StatusUnauthorized, "invalid_client", "the client's secret (a platform token) is required")
		return
	}
	c, err := i.Verify(r.Context(), secret)
	if err != nil {
		if errors.Is(err, identity.ErrInvalid) {
			w.Header().Set("WWW-Authenticate", `Basic realm="novaos"`)
			oauthError(w, http.StatusUnauthorized, "invalid_client", "the client's secret is not a valid platform token")
			return
		}
		oauthError(w, http.StatusServiceUnavailable, "temporarily_unavailable", "the token keys cannot be read")
		return
	}
	next := *c
	next.ID, next.IssuedAt, next.NotBefore, next.Expiry, next.Audience = "", time.Time{}, time.Time{}, time.Time{}, nil
	if asked := strings.Fields(r.PostForm.Get("scope")); len(asked) > 0 {
		var granted []string
		for _, s := range asked {
			if identity.AnyScopeMatches(c.Scopes, s) && !slices.Contains(granted, s) {
				granted = append(granted, s)
			}
		}
		if len(granted) == 0 {
			oauthError(w, http.StatusBadRequest, "invalid_scope", "the secret grants none of the scopes asked for")
			return
		}
		next.Scopes = granted
	}
	ttl := i.opts.DefaultTTL
	if left := time.Until(c.Expiry); left < ttl {
		ttl = left
	}
	if ttl < time.Second {
		oauthError(w, http.StatusBadRequest, "invalid_grant", "the secret expires too soon")
		return
	}
	tok, err := i.Mint(r.Context(), next, ttl)
	if err != nil {
		oauthError(w, http.StatusInternalServerError, "server_error", "the token could not be signed")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"access_token": tok, "token_type": "Bearer",
		"expires_in": int(ttl / time.Second), "scope": strings.Join(next.Scopes, " ")})
}

// oauthError answers an RFC 6749 §5.2 error.
func oauthError(w http.ResponseWriter, status int, code, desc string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": code, "error_description": desc})
}
