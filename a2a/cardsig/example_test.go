package cardsig_test

import (
	"errors"
	"fmt"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/cardsig"
	"novaos.dev/novaos/jwk"
)

func Example() {
	card := &a2a.AgentCard{
		Name:        "echo",
		Description: "Echoes what it is sent",
		Version:     "1.0.0",
		Capabilities: a2a.AgentCapabilities{
			Streaming: a2a.Bool(true),
		},
	}

	// The publisher signs with its private key and publishes the public
	// key as a JWKS (here in memory; usually /.well-known/jwks.json).
	key, err := jwk.GenerateKey(jwk.EdDSA)
	if err != nil {
		panic(err)
	}
	signed, err := cardsig.Sign(card, key, nil)
	if err != nil {
		panic(err)
	}
	trusted := jwk.NewKeySet(key)

	// A client verifies with keys it chose to trust.
	v, err := cardsig.Verify(signed, trusted, nil)
	fmt.Println(v.Algorithm, err)

	_, err = cardsig.Verify(card, trusted, nil)
	fmt.Println(errors.Is(err, cardsig.ErrUnsigned))

	tampered := *signed
	tampered.Description = "Something else"
	_, err = cardsig.Verify(&tampered, trusted, nil)
	fmt.Println(errors.Is(err, cardsig.ErrInvalidSignature))

	canonical, _ := cardsig.Canonicalize(card)
	fmt.Println(string(canonical))
	// Output:
	// EdDSA <nil>
	// true
	// true
	// {"capabilities":{"streaming":true},"description":"Echoes what it is sent","name":"echo","version":"1.0.0"}
}
