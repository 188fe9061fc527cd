package auth_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/go-jose/go-jose/v4"

	"novaos.dev/novaos/internal/auth"
)

func TestSignJWT(t *testing.T) {
	for _, alg := range []string{auth.RS256, auth.EdDSA} {
		t.Run(alg, func(t *testing.T) {
			iss, err := auth.Open("", auth.Options{Issuer: "https://novaos.test", Algorithm: alg})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			for _, typ := range []string{"", "JWT"} {
				if _, err := iss.SignJWT(ctx, typ, []byte(`{}`)); !errors.Is(err, auth.ErrClaims) {
					t.Errorf("SignJWT with typ %q: %v, want ErrClaims", typ, err)
				}
			}
			claims := []byte(`{"iss":"https://novaos.test","taskId":"t1"}`)
			tok, err := iss.SignJWT(ctx, "a2a-push+jwt", claims)
			if err != nil {
				t.Fatal(err)
			}
			jws, err := jose.ParseSignedCompact(tok, []jose.SignatureAlgorithm{jose.SignatureAlgorithm(alg)})
			if err != nil {
				t.Fatal(err)
			}
			h := jws.Signatures[0].Protected
			active := iss.PublicKeys()[0]
			if h.KeyID != active.KeyID() || h.ExtraHeaders[jose.HeaderType] != "a2a-push+jwt" {
				t.Errorf("header: kid %q (active %q), typ %v", h.KeyID, active.KeyID(), h.ExtraHeaders[jose.HeaderType])
			}
			payload, err := jws.Verify(active.PublicKey())
			if err != nil || !json.Valid(payload) || string(payload) != string(claims) {
				t.Errorf("payload %s, %v", payload, err)
			}
			// Not an execution token: the platform's verifier refuses it.
			if _, err := iss.Verify(ctx, tok); err == nil {
				t.Error("a push token verified as an execution token")
			}
		})
	}
}
