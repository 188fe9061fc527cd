// Package cardsig signs and verifies A2A agent cards (A2A v1.0.1 §8.4).
//
// A signature is a detached JWS (RFC 7515) over the RFC 8785 canonical JSON
// of the card with its signatures removed and its empty values stripped, the
// way @a2a-js/sdk and a2a-python compute it, so cards signed by either
// verify here and the other way round.
//
// Verification takes its keys only from a key set the caller supplies —
// in memory, from a file, or fetched from a JWKS URL the caller names with
// [jwk.FetchKeySet] — and never from a "jku" inside the card: a card cannot
// vouch for itself. One valid signature is enough; an unsigned card
// ([ErrUnsigned]) and a card whose signatures all fail
// ([ErrInvalidSignature], with [ErrUnknownKey] when no signature names a key
// in the set) are told apart with errors.Is. Algorithms are an allow-list:
// EdDSA (Ed25519), ES256 and RS256. Keys and key sets are package jwk's.
//
//	key, _ := jwk.GenerateKey(jwk.EdDSA)
//	signed, _ := cardsig.Sign(card, key, nil)
//
//	keys, _ := jwk.FetchKeySet(ctx, "https://agents.example.com/.well-known/jwks.json", nil)
//	if _, err := cardsig.Verify(signed, keys, nil); errors.Is(err, cardsig.ErrUnsigned) { ... }
//
// A Verifier (a JWKS URL or a key set, and the algorithms) plugs into an
// agent card resolver: a2aclient.ResolverOptions.Verify verifies each card
// it fetches before caching it.
//
// What is covered: canonicalization reads the card through the A2A v1.0
// model ([a2a.AgentCard]), as the reference SDKs read it through their
// protobuf types, so fields outside the schema are not covered by a
// signature (and are not in the card Verify's caller holds, when it parsed
// the card with [a2a.Unmarshal]). Non-optional booleans that are false and
// empty strings, lists and objects are left out; an explicit false of an
// optional boolean (capabilities.streaming …) is kept.
package cardsig
