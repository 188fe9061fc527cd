package a2aclient

import (
	"context"
	"errors"
	"fmt"
	"sync"

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
