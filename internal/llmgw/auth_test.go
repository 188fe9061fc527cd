package llmgw

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/httpapi"
	"novaos.dev/novaos/llm"
)

// verifier answers every token with its claims or its error.
type verifier struct {
	claims *identity.Claims
	err    error
}

func (v verifier) Verify(context.Context, string) (*identity.Claims, error) { return v.claims, v.err }
func (v verifier) Authenticator() httpapi.Authenticator                     { return nil }

// authenticate tells the caller why a token is refused (expired, revoked,
// not valid) and answers 503 when the token could not be checked at all,
// without saying more.
func TestAuthenticate(t *testing.T) {
	rejected := func(kind error) error {
		return fmt.Errorf("verify: %w", &identity.Error{Kind: kind, Reason: "the reason"})
	}
	good := claims("llm:model:*")
	tests := []struct {
		name   string
		noAuth bool
		v      verifier
		want   *caller
		err    *llm.APIError
	}{
		{name: "no token", noAuth: true,
			err: unauthorized("You didn't provide an API key: send the execution token as Authorization: Bearer <token>.")},
		{name: "a bad signature", v: verifier{err: rejected(identity.ErrBadSignature)},
			err: unauthorized("The execution token is not valid.")},
		{name: "expired", v: verifier{err: rejected(identity.ErrExpired)},
			err: unauthorized("The execution token has expired.")},
		{name: "revoked", v: verifier{err: rejected(identity.ErrRevoked)},
			err: unauthorized("The execution token has been revoked.")},
		{name: "the keys out of reach", v: verifier{err: fmt.Errorf("verify: %w", identity.ErrKeysUnavailable)},
			err: serverError(http.StatusServiceUnavailable, "The token could not be checked; retry shortly.")},
		{name: "verified without a tenant", v: verifier{claims: &identity.Claims{InstanceID: "inst-1", RunID: "run-1"}},
			err: unauthorized("The execution token names no usable tenant.")},
		{name: "verified", v: verifier{claims: &good},
			want: &caller{tenant: "acme", instance: "inst-1", run: "run-1", scopes: []string{"llm:model:*"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := &Service{deps: Deps{Tokens: tc.v}, log: slog.New(slog.DiscardHandler)}
			r := httptest.NewRequest(http.MethodGet, ModelsPath, nil)
			if !tc.noAuth {
				r.Header.Set("Authorization", "Bearer tok")
			}
			c, err := s.authenticate(r)
			if d := cmp.Diff(tc.err, err); d != "" {
				t.Errorf("error (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.want, c, cmp.AllowUnexported(caller{})); d != "" {
				t.Errorf("caller (-want +got):\n%s", d)
			}
		})
	}
	// The platform's own requests carry their caller in the context.
	platform := &caller{platform: true}
	r := httptest.NewRequest(http.MethodGet, ModelsPath, nil).WithContext(context.WithValue(context.Background(), platformKey{}, platform))
	if c, err := (&Service{deps: Deps{Tokens: verifier{err: errors.New("not asked")}}}).authenticate(r); c != platform || err != nil {
		t.Errorf("the platform's request: %+v, %v", c, err)
	}
}
