package a2aclient

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/secret"
)

// Secret is a credential value, a secret.Value: String, GoString, every fmt
// verb, JSON and slog redact it, even as an unexported field of another
// struct, so it cannot leak through a log line or an error message. Make
// one with secret.New; Reveal reads it.
type Secret = secret.Value

// AuthProvider adds credentials to a call. It runs after the interceptors'
// Before, on every call, so a credential that rotates is read afresh.
type AuthProvider interface {
	Authenticate(ctx context.Context, call *Call) error
}

// AuthFunc adapts a function to an AuthProvider.
type AuthFunc func(ctx context.Context, call *Call) error

// Authenticate calls f.
func (f AuthFunc) Authenticate(ctx context.Context, call *Call) error { return f(ctx, call) }

// Bearer sends "Authorization: Bearer <token>".
func Bearer(token Secret) AuthProvider {
	return AuthFunc(func(_ context.Context, call *Call) error {
		call.Header.Set("Authorization", "Bearer "+token.Reveal())
		return nil
	})
}

// DefaultAPIKeyHeader is the header APIKey uses when given none (the
// NovaOS card builder's apiKey scheme).
const DefaultAPIKeyHeader = "X-API-Key"

// APIKey sends key in header (DefaultAPIKeyHeader when header is "").
func APIKey(header string, key Secret) AuthProvider {
	if header == "" {
		header = DefaultAPIKeyHeader
	}
	return AuthFunc(func(_ context.Context, call *Call) error {
		call.Header.Set(header, key.Reveal())
		return nil
	})
}

// Credential is a stored credential: a bearer token or an API key.
type Credential struct {
	// Scheme is "bearer" or "apiKey".
	Scheme string
	// Header is the API key's header (DefaultAPIKeyHeader when empty).
	Header string
	Value  Secret
}

// ErrNoCredential is returned by a CredentialStore that holds nothing for a
// session.
var ErrNoCredential = errors.New("a2aclient: no credential for session")

// CredentialStore returns the credential of a session.
type CredentialStore interface {
	Credential(ctx context.Context, sessionID string) (Credential, error)
}

// MemoryCredentials is an in-memory CredentialStore, safe for concurrent use.
type MemoryCredentials struct {
	mu sync.RWMutex
	m  map[string]Credential
}

// Set stores c for sessionID.
func (s *MemoryCredentials) Set(sessionID string, c Credential) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = make(map[string]Credential)
	}
	s.m[sessionID] = c
}

// Delete forgets sessionID's credential.
func (s *MemoryCredentials) Delete(sessionID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, sessionID)
}

// Credential implements CredentialStore.
func (s *MemoryCredentials) Credential(_ context.Context, sessionID string) (Credential, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	c, ok := s.m[sessionID]
	if !ok {
		return Credential{}, ErrNoCredential
	}
	return c, nil
}

// SessionAuth authenticates each call with the credential store's entry for
// the call's session (WithSession). A call without a session, or whose
// session has no credential, is sent without credentials when optional is
// true and fails with ErrNoCredential otherwise.
func SessionAuth(store CredentialStore, optional bool) AuthProvider {
	return AuthFunc(func(ctx context.Context, call *Call) error {
		c, err := store.Credential(ctx, call.SessionID)
		if err != nil {
			if optional && errors.Is(err, ErrNoCredential) {
				return nil
			}
			return fmt.Errorf("a2aclient: credential: %w", err)
		}
		switch c.Scheme {
		case "bearer", "Bearer", "":
			return Bearer(c.Value).Authenticate(ctx, call)
		case "apiKey", "apikey":
			return APIKey(c.Header, c.Value).Authenticate(ctx, call)
		}
		return fmt.Errorf("a2aclient: credential scheme %q not supported", c.Scheme)
	})
}

// APIKeyEnv is the environment variable NovaOS tools read a service API
// key from. This package reads no environment: the program does, and
// passes the value to RequireAPIKey.
const APIKeyEnv = "ACP_API_KEY"

// ErrNoAPIKey is returned by RequireAPIKey for an empty key.
var ErrNoAPIKey = errors.New("a2aclient: API key is empty")

// RequireAPIKey is APIKey for a key the program read from its
// configuration (such as the APIKeyEnv variable): an empty or blank key
// is an error (ErrNoAPIKey) instead of a header with no value.
func RequireAPIKey(header string, key Secret) (AuthProvider, error) {
	if strings.TrimSpace(key.Reveal()) == "" {
		return nil, ErrNoAPIKey
	}
	return APIKey(header, key), nil
}

// CredentialService returns the credential a call presents for one of
// the security schemes of the agent's card, by the scheme's name (its key
// in the card's securitySchemes; "" when the client has no card or the
// card declares no scheme). It returns ErrNoCredential when it has
// nothing for the scheme. It is asked on every call, so it can hand out a
// token it refreshed.
type CredentialService interface {
	SchemeCredential(ctx context.Context, scheme string, call *Call) (Secret, error)
}

// CredentialServiceFunc adapts a function to a CredentialService.
type CredentialServiceFunc func(ctx context.Context, scheme string, call *Call) (Secret, error)

// SchemeCredential calls f.
func (f CredentialServiceFunc) SchemeCredential(ctx context.Context, scheme string, call *Call) (Secret, error) {
	return f(ctx, scheme, call)
}

// SchemeCredentials is an in-memory CredentialService keyed by session
// (the call's WithSession, "" for calls without one) and scheme name.
// Safe for concurrent use; the zero value is empty and usable.
type SchemeCredentials struct {
	mu sync.RWMutex
	m  map[[2]string]Secret
}

// Set stores value for scheme under sessionID ("" for calls without a
// session).
func (s *SchemeCredentials) Set(sessionID, scheme string, value Secret) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = make(map[[2]string]Secret)
	}
	s.m[[2]string{sessionID, scheme}] = value
}

// Delete forgets the credential of scheme under sessionID.
func (s *SchemeCredentials) Delete(sessionID, scheme string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, [2]string{sessionID, scheme})
}

// SchemeCredential implements CredentialService.
func (s *SchemeCredentials) SchemeCredential(_ context.Context, scheme string, call *Call) (Secret, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	v, ok := s.m[[2]string{call.SessionID, scheme}]
	if !ok {
		return Secret{}, ErrNoCredential
	}
	return v, nil
}

var _ CredentialService = (*SchemeCredentials)(nil)

// SchemeAuth authenticates each call with a credential from svc for the
// security schemes the agent's card asks for. The schemes are tried in
// the card's order: each securityRequirements entry in turn (the scheme
// names within one entry in sorted order), then, for a card that declares
// schemes but no requirement, every declared scheme by name; a scheme a
// requirement names but securitySchemes does not declare, and mTLS (a
// transport matter, not a header), are skipped. The first scheme svc has a
// credential for is sent in the shape the scheme declares:
//
//   - apiKey: in the header it names (DefaultAPIKeyHeader when unnamed), or
//     as a cookie; an API key in the query is not supported (an error);
//   - http: "Authorization: <scheme> <value>" ("Bearer" for bearer);
//   - oauth2 and openIdConnect: "Authorization: Bearer <value>".
//
// Without a card, or with a card that declares no scheme, svc is asked for
// scheme "" and the credential is sent as a bearer token. When svc has
// nothing for any scheme (ErrNoCredential), fallback authenticates the
// call (nil: the call goes without credentials). Other errors of svc fail
// the call.
func SchemeAuth(svc CredentialService, fallback AuthProvider) AuthProvider {
	return AuthFunc(func(ctx context.Context, call *Call) error {
		for _, name := range cardSchemes(call.Card) {
			var scheme a2a.SecurityScheme
			if name != "" {
				scheme = call.Card.SecuritySchemes[name]
				if scheme.MTLS != nil {
					continue
				}
			}
			v, err := svc.SchemeCredential(ctx, name, call)
			if errors.Is(err, ErrNoCredential) {
				continue
			}
			if err != nil {
				return fmt.Errorf("a2aclient: credential for scheme %q: %w", name, err)
			}
			return presentCredential(call, name, scheme, v)
		}
		if fallback != nil {
			return fallback.Authenticate(ctx, call)
		}
		return nil
	})
}

// cardSchemes lists the scheme names SchemeAuth tries, in order.
func cardSchemes(card *a2a.AgentCard) []string {
	if card == nil || len(card.SecuritySchemes) == 0 {
		return []string{""}
	}
	var out []string
	seen := make(map[string]bool)
	for _, req := range card.SecurityRequirements {
		for _, name := range slices.Sorted(maps.Keys(req.Schemes)) {
			if _, declared := card.SecuritySchemes[name]; declared && !seen[name] {
				seen[name] = true
				out = append(out, name)
			}
		}
	}
	if len(card.SecurityRequirements) == 0 {
		out = slices.Sorted(maps.Keys(card.SecuritySchemes))
	}
	return out
}

// presentCredential puts v on call in the shape scheme declares.
func presentCredential(call *Call, name string, scheme a2a.SecurityScheme, v Secret) error {
	switch {
	case scheme.APIKey != nil:
		switch strings.ToLower(scheme.APIKey.Location) {
		case "", "header":
			header := scheme.APIKey.Name
			if header == "" {
				header = DefaultAPIKeyHeader
			}
			call.Header.Set(header, v.Reveal())
			return nil
		case "cookie":
			call.Header.Add("Cookie", (&http.Cookie{Name: scheme.APIKey.Name, Value: v.Reveal()}).String())
			return nil
		}
		return fmt.Errorf("a2aclient: scheme %q: an API key in the %s is not supported", name, scheme.APIKey.Location)
	case scheme.HTTPAuth != nil:
		s := scheme.HTTPAuth.Scheme
		if s == "" || strings.EqualFold(s, "bearer") {
			s = "Bearer"
		}
		call.Header.Set("Authorization", s+" "+v.Reveal())
		return nil
	}
	// oauth2, openIdConnect, or no scheme at all: a bearer token.
	call.Header.Set("Authorization", "Bearer "+v.Reveal())
	return nil
}
