// Package authtest forges tokens for tests of what a server must refuse.
package authtest

import (
	"encoding/json"
	"testing"

	"github.com/go-jose/go-jose/v4"

	"novaos.dev/novaos/jwk"
)

// SignJWT signs claims as a JWT with key, naming its kid: what anyone
// holding key can make, whichever key set it belongs to.
func SignJWT(t testing.TB, key *jwk.Key, claims map[string]any) string {
	t.Helper()
	priv, err := key.PrivateJWK()
	if err != nil {
		t.Fatal(err)
	}
	var jk jose.JSONWebKey
	if err := jk.UnmarshalJSON(priv); err != nil {
		t.Fatal(err)
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.SignatureAlgorithm(key.Algorithm()),
		Key: jose.JSONWebKey{Key: jk.Key, KeyID: key.KeyID()}}, (&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		t.Fatal(err)
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	jws, err := signer.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jws.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}
