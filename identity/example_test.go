package identity_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/jwk"
)

func Example() {
	// The issuer's key; a Go agent would take the platform's instead with
	// identity.NewJWKSVerifier(gatewayURL, issuer, nil, nil).
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	jk := jose.JSONWebKey{Key: priv, Algorithm: "EdDSA", KeyID: "k1"}
	pubJSON, _ := jk.Public().MarshalJSON()
	pub, _ := jwk.ParseKey(pubJSON)

	keys, _ := identity.NewStaticKeys(pub)
	v, _ := identity.New(keys, identity.Options{Issuer: "https://novaos.example.com"})

	signer, _ := jose.NewSigner(jose.SigningKey{Algorithm: jose.EdDSA, Key: jk},
		(&jose.SignerOptions{}).WithType("JWT"))
	token, _ := jwt.Signed(signer).Claims(identity.Claims{
		Issuer: "https://novaos.example.com", Audience: []string{identity.DefaultAudience},
		Expiry: time.Now().Add(time.Minute), TenantID: "acme", AgentID: "mailer",
		Scopes: []string{"memory:read:*", "memory:write:agent"},
	}).Serialize()

	claims, err := v.Verify(context.Background(), token)
	fmt.Println(claims.TenantID, claims.AgentID, err)
	fmt.Println(claims.HasScope("memory:read:tenant"), claims.HasScope("memory:write:user"))

	_, err = v.Verify(context.Background(), token+"x")
	fmt.Println(errors.Is(err, identity.ErrInvalid))
	// Output:
	// acme mailer <nil>
	// true false
	// true
}
