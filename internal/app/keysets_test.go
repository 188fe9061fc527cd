package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/cardsig"
	"novaos.dev/novaos/gate"
	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/app"
	"novaos.dev/novaos/internal/auth/authtest"
	"novaos.dev/novaos/jwk"
	"novaos.dev/novaos/netguard"
)

// keySetKids fetches the JWKS at url and returns its kids.
func keySetKids(t *testing.T, url string) []string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d", url, resp.StatusCode)
	}
	set, err := jwk.ParseKeySet(body)
	if err != nil {
		t.Fatal(err)
	}
	var kids []string
	for _, k := range set.Keys() {
		kids = append(kids, k.KeyID())
	}
	return kids
}

// The agent-card key and the token keys are published as two key sets:
// a JWT signed with the card key (tenant victim, every memory scope and
// the gate's admin) is refused by a verifier of the server's JWKS, and a
// card verifies against the card key set only.
func TestCardKeyKeptApartFromTokenKeys(t *testing.T) {
	for _, alg := range []string{jwk.EdDSA, jwk.ES256} {
		t.Run(alg, func(t *testing.T) {
			cardKey, err := jwk.GenerateKey(alg)
			if err != nil {
				t.Fatal(err)
			}
			srv := start(t, &app.Options{DataDir: t.TempDir(), Agents: app.AgentOptions{CardKey: cardKey}})
			ctx := context.Background()

			if diff := cmp.Diff([]string{srv.Issuer().KeyID()}, keySetKids(t, srv.URL()+app.JWKSPath)); diff != "" {
				t.Errorf("token key set (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{cardKey.KeyID()}, keySetKids(t, srv.URL()+app.CardJWKSPath)); diff != "" {
				t.Errorf("card key set (-want +got):\n%s", diff)
			}

			now := time.Now()
			forged := authtest.SignJWT(t, cardKey, map[string]any{
				"iss": srv.URL(), "aud": identity.DefaultAudience, "sub": "attacker", "tenant_id": "victim", "agent_id": "attacker",
				"scopes": []string{"memory:*", gate.ScopeAdmin}, "iat": now.Unix(), "nbf": now.Unix(), "exp": now.Add(time.Hour).Unix(),
			})
			v, err := identity.NewJWKSVerifier(srv.URL(), srv.URL(), &identity.JWKSOptions{Policy: &netguard.Policy{AllowLoopback: true}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if c, err := v.Verify(ctx, forged); !errors.Is(err, identity.ErrUnknownKey) {
				t.Fatalf("a token signed with the card key: claims %v, err %v; want ErrUnknownKey", c != nil, err)
			}
			// The same verifier takes the server's own tokens.
			own, err := srv.Issuer().Mint(ctx, identity.Claims{TenantID: "acme", AgentID: "a", Scopes: []string{"memory:read:run"}}, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := v.Verify(ctx, own); err != nil {
				t.Fatalf("the server's own token: %v", err)
			}
			// The server refuses the forged token too.
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL()+gate.APIPath+"/audit", nil)
			req.Header.Set("Authorization", "Bearer "+forged)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("the gate's audit with a card-key token: %d, want 401", resp.StatusCode)
			}

			// Cards verify against the card key set, not the token keys.
			status, body := get(t, srv.URL()+"/agents/echo/.well-known/agent-card.json")
			var card a2a.AgentCard
			if err := json.Unmarshal(body, &card); status != http.StatusOK || err != nil {
				t.Fatalf("card: %d %v", status, err)
			}
			for _, tc := range []struct {
				path string
				ok   bool
			}{{app.CardJWKSPath, true}, {app.JWKSPath, false}} {
				keys, err := jwk.FetchKeySet(ctx, srv.URL()+tc.path, nil)
				if err != nil {
					t.Fatal(err)
				}
				_, err = cardsig.Verify(&card, keys, nil)
				if (err == nil) != tc.ok {
					t.Errorf("card verified with %s: %v, want ok %v", tc.path, err, tc.ok)
				}
			}
		})
	}
}

// Without a card key there is no card key set.
func TestNoCardKeySetWithoutCardKey(t *testing.T) {
	srv := start(t, &app.Options{DataDir: t.TempDir()})
	if status, _ := get(t, srv.URL()+app.CardJWKSPath); status != http.StatusNotFound {
		t.Errorf("GET %s without a card key: %d, want 404", app.CardJWKSPath, status)
	}
	if kids := keySetKids(t, srv.URL()+app.JWKSPath); !slices.Equal(kids, []string{srv.Issuer().KeyID()}) {
		t.Errorf("token key set %v", kids)
	}
}
