package identity_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/problem"
)

// revocations is a fake Options.Revoked: the runs that have ended, and
// every question it was asked.
type revocations struct {
	mu    sync.Mutex
	ended map[string]error
	asked []string
}

func (r *revocations) revoked(_ context.Context, c *identity.Claims) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.asked = append(r.asked, c.RunID)
	return r.ended[c.RunID]
}

func (r *revocations) end(run string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ended[run] = err
}

func (r *revocations) questions() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.asked...)
}

var errRunEnded = errors.New("run run-42 has ended (db row 17)")

func TestRevoked(t *testing.T) {
	ed := newTestKey(t, identity.EdDSA)
	src, _ := identity.NewStaticKeys(ed.Key)
	tests := []struct {
		name      string
		cacheSize int
	}{
		{"remembered tokens", 0},
		{"no cache", -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rev := &revocations{ended: map[string]error{}}
			v, err := identity.New(src, identity.Options{Issuer: testIssuer, Now: func() time.Time { return now },
				CacheSize: tc.cacheSize, Revoked: rev.revoked})
			if err != nil {
				t.Fatal(err)
			}
			tok := sign(t, ed, "EdDSA", mustJSON(t, header("EdDSA", ed.KeyID())), mustJSON(t, validClaims(now)))
			ctx := context.Background()
			for range 2 { // the second time from the cache, when there is one
				if _, err := v.Verify(ctx, tok); err != nil {
					t.Fatalf("before the run ended: %v", err)
				}
			}
			rev.end("run-42", errRunEnded)
			for range 2 {
				c, err := v.Verify(ctx, tok)
				if c != nil || !errors.Is(err, identity.ErrInvalid) || !errors.Is(err, identity.ErrRevoked) || !errors.Is(err, errRunEnded) {
					t.Fatalf("after the run ended: %v, %v; want ErrInvalid, ErrRevoked and the hook's error", c, err)
				}
				if err.Error() != "identity: token revoked" {
					t.Fatalf("message %q: the hook's error is for the log, not the client", err)
				}
			}
			if diff := cmp.Diff([]string{"run-42", "run-42", "run-42", "run-42"}, rev.questions()); diff != "" {
				t.Errorf("hook asked about (-want +got):\n%s", diff)
			}
		})
	}
}

// A token that fails its own checks is refused for that, before the hook
// is asked anything.
func TestRevokedAskedLast(t *testing.T) {
	ed := newTestKey(t, identity.EdDSA)
	src, _ := identity.NewStaticKeys(ed.Key)
	rev := &revocations{ended: map[string]error{"run-42": errRunEnded}}
	v, err := identity.New(src, identity.Options{Issuer: testIssuer, Now: func() time.Time { return now }, Revoked: rev.revoked})
	if err != nil {
		t.Fatal(err)
	}
	expired := validClaims(now)
	expired["exp"] = now.Add(-time.Hour).Unix()
	tok := sign(t, ed, "EdDSA", mustJSON(t, header("EdDSA", ed.KeyID())), mustJSON(t, expired))
	if _, err := v.Verify(context.Background(), tok); !errors.Is(err, identity.ErrExpired) || errors.Is(err, identity.ErrRevoked) {
		t.Fatalf("expired token of an ended run: %v, want ErrExpired alone", err)
	}
	if got := rev.questions(); len(got) != 0 {
		t.Fatalf("hook asked about %v for a token that did not verify", got)
	}
}

func TestMiddlewareRevoked(t *testing.T) {
	ed := newTestKey(t, identity.EdDSA)
	src, _ := identity.NewStaticKeys(ed.Key)
	rev := &revocations{ended: map[string]error{"run-42": errRunEnded}}
	v, err := identity.New(src, identity.Options{Issuer: testIssuer, Now: func() time.Time { return now }, Revoked: rev.revoked})
	if err != nil {
		t.Fatal(err)
	}
	tok := sign(t, ed, "EdDSA", mustJSON(t, header("EdDSA", ed.KeyID())), mustJSON(t, validClaims(now)))
	reached := false
	h := identity.Middleware(v, http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached = true }))
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.Header.Set("Authorization", "Bearer "+tok)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if reached || w.Code != http.StatusUnauthorized || w.Header().Get("WWW-Authenticate") != `Bearer realm="novaos", error="invalid_token"` {
		t.Fatalf("reached %v, status %d, WWW-Authenticate %q", reached, w.Code, w.Header().Get("WWW-Authenticate"))
	}
	var p problem.Problem
	if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil {
		t.Fatal(err)
	}
	if p.Detail != "identity: token revoked" || strings.Contains(w.Body.String(), "db row") || strings.Contains(w.Body.String(), tok[:20]) {
		t.Fatalf("problem %+v", p)
	}
}

func TestErrorUnwrapCause(t *testing.T) {
	e := &identity.Error{Kind: identity.ErrRevoked, Cause: errRunEnded}
	if !errors.Is(e, identity.ErrInvalid) || !errors.Is(e, identity.ErrRevoked) || !errors.Is(e, errRunEnded) || errors.Is(e, identity.ErrExpired) {
		t.Fatal("Unwrap does not give ErrInvalid, the kind and the cause")
	}
	if got := (&identity.Error{Kind: identity.ErrExpired}); errors.Is(got, errRunEnded) {
		t.Fatal("an error without a cause matches one")
	}
}
