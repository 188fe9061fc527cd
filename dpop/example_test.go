package dpop_test

import (
	"fmt"
	"time"

	"novaos.dev/novaos/dpop"
)

func Example() {
	key, _ := dpop.GenerateKey()
	nonces := dpop.NewNonces(nil, 0)
	now := time.Now()
	url := "https://platform.example.com/api/v1/delivery/discovery"

	// The client signs a proof for its request, with the server's nonce.
	proof, _ := key.Proof(dpop.Claims{Method: "GET", URL: url, AccessToken: "the-token", Nonce: nonces.Issue(now)})

	// The server checks it against the request and the token's binding.
	_, err := dpop.Verify(proof, dpop.Expect{Method: "GET", URL: url, AccessToken: "the-token",
		JKT: key.Thumbprint(), Nonce: nonces.Valid, Now: now})
	fmt.Println(err)
	// Output: <nil>
}
