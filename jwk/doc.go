// Package jwk reads, writes and generates JSON Web Keys (RFC 7517).
//
// A [Key] is one signing key, private or public, for EdDSA (Ed25519),
// ES256 (ECDSA P-256) or RS256 (RSA of 2048 bits or more); a [KeySet] is
// a set of public keys to verify with, a JWKS. Keys without a "kid" take
// their RFC 7638 thumbprint as key id. A key never shows its private
// material when printed or marshalled: [Key.MarshalJSON] writes the public
// key, and [Key.PrivateJWK] is the one way to export the private one.
//
//	key, _ := jwk.GenerateKey(jwk.EdDSA)
//	priv, _ := key.PrivateJWK()  // store it; keep the file private
//	jwks, _ := json.Marshal(jwk.NewKeySet(key)) // publish the public half
//
//	set, _ := jwk.FetchKeySet(ctx, "https://issuer.example.com/.well-known/jwks.json", nil)
//	keys, _ := set.Lookup(kid, jwk.EdDSA)
//
// Package a2a/cardsig signs agent cards and package identity verifies
// tokens with these keys. The package sits at the bottom of the module's
// imports: it depends on the standard library and go-jose only.
package jwk
