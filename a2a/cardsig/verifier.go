package cardsig

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/jwk"
)

// ErrNoKeys is returned by Verifier.VerifyCard when the Verifier names
// neither a JWKS URL nor a key set.
var ErrNoKeys = errors.New("cardsig: verifier has no JWKS URL and no key set")

// Verifier verifies a fetched card's signatures, for an agent card
// resolver (a2aclient.ResolverOptions.Verify). Set JWKSURL or Keys.
type Verifier struct {
	// JWKSURL is the JWK Set to verify against, fetched for every card
	// verified, with the HTTP client VerifyCard is given. It is the
	// caller's configuration, never a URL taken from the card: a card
	// cannot vouch for itself.
	JWKSURL string
	// Keys is a key set in hand, used when JWKSURL is empty.
	Keys *jwk.KeySet
	// Algorithms allowed (default: jwk.Algorithms).
	Algorithms []string
}

// VerifyCard verifies card with Verify against the Verifier's keys; hc
// (nil: FetchKeySet's default client) fetches JWKSURL. An unsigned card
// fails with ErrUnsigned, one whose signatures all fail with
// ErrInvalidSignature.
func (v *Verifier) VerifyCard(ctx context.Context, card *a2a.AgentCard, hc *http.Client) error {
	keys := v.Keys
	if v.JWKSURL != "" {
		var err error
		keys, err = jwk.FetchKeySet(ctx, v.JWKSURL, &jwk.FetchOptions{Client: hc})
		if err != nil {
			return fmt.Errorf("cardsig: verification keys: %w", err)
		}
	}
	if keys == nil {
		return ErrNoKeys
	}
	_, err := Verify(card, keys, &VerifyOptions{Algorithms: v.Algorithms})
	return err
}
