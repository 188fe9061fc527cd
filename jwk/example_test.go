package jwk_test

import (
	"encoding/json"
	"fmt"

	"novaos.dev/novaos/jwk"
)

func Example() {
	// The signer generates a key and keeps its private JWK.
	key, err := jwk.GenerateKey(jwk.EdDSA)
	if err != nil {
		panic(err)
	}
	priv, err := key.PrivateJWK()
	if err != nil {
		panic(err)
	}
	restored, err := jwk.ParseKey(priv)
	if err != nil {
		panic(err)
	}
	fmt.Println(restored.IsPrivate(), restored.KeyID() == key.KeyID())

	// It publishes the public half as a JWKS; a verifier reads the set
	// and picks the key a signature names.
	published, err := json.Marshal(jwk.NewKeySet(key))
	if err != nil {
		panic(err)
	}
	set, err := jwk.ParseKeySet(published)
	if err != nil {
		panic(err)
	}
	found, known := set.Lookup(key.KeyID(), jwk.EdDSA)
	fmt.Println(len(found), known, found[0].IsPrivate())
	_, known = set.Lookup("another-kid", jwk.EdDSA)
	fmt.Println(known)
	// Output:
	// true true
	// 1 true false
	// false
}
