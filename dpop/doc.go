// Package dpop makes and checks DPoP proofs (RFC 9449) binding a token to a key.
//
// A client holding a [Key] (ECDSA P-256, ES256) sends, with every request
// made with a DPoP-bound token, a fresh proof: a JWT of type "dpop+jwt"
// naming the method, the URL, the token's hash and the newest nonce the
// server gave, signed with the key and carrying its public half. A
// server checks the proof with [Verify] against the request and the
// thumbprint ([Thumbprint], RFC 7638) the token was bound to, and hands
// out nonces with [Nonces].
//
//	key, _ := dpop.GenerateKey()
//	proof, _ := key.Proof(dpop.Claims{Method: "GET", URL: url, AccessToken: token, Nonce: nonce})
//	req.Header.Set("Authorization", "DPoP "+token)
//	req.Header.Set(dpop.Header, proof)
//
//	p, err := dpop.Verify(r.Header.Get(dpop.Header), dpop.Expect{Method: r.Method, URL: url,
//		AccessToken: token, JKT: boundJKT, Nonce: nonces.Valid, Now: time.Now()})
//
// A Key never prints its private half.
package dpop
