package cardsig

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/go-jose/go-jose/v4"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/jwk"
)

// SignOptions adjust Sign; nil means none.
type SignOptions struct {
	// JKU, when set, is written to the protected header as "jku": where
	// the signer publishes its keys. It is informational: verifiers of
	// this package never fetch it.
	JKU string
	// Header is the signature's unprotected header (not signed).
	Header map[string]any
}

// Sign returns a copy of card with one more signature, made with the
// private key: a JWS with protected header {"alg", "kid", "typ": "JOSE"}
// over Canonicalize(card), payload detached. card is not modified.
func Sign(card *a2a.AgentCard, key *jwk.Key, opts *SignOptions) (*a2a.AgentCard, error) {
	if !key.IsPrivate() {
		return nil, errors.New("cardsig: sign: not a private key")
	}
	if key.KeyID() == "" {
		return nil, errors.New("cardsig: sign: key has no key id")
	}
	payload, err := Canonicalize(card)
	if err != nil {
		return nil, err
	}
	so := (&jose.SignerOptions{}).WithType("JOSE").WithHeader("kid", key.KeyID())
	if opts != nil && opts.JKU != "" {
		so = so.WithHeader("jku", opts.JKU)
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.SignatureAlgorithm(key.Algorithm()), Key: key.Signer()}, so)
	if err != nil {
		return nil, fmt.Errorf("cardsig: sign: %w", err)
	}
	jws, err := signer.Sign(payload)
	if err != nil {
		return nil, fmt.Errorf("cardsig: sign: %w", err)
	}
	compact, err := jws.DetachedCompactSerialize()
	if err != nil {
		return nil, fmt.Errorf("cardsig: sign: %w", err)
	}
	protected, signature, ok := strings.Cut(compact, "..")
	if !ok {
		return nil, errors.New("cardsig: sign: unexpected detached serialization")
	}
	sig := a2a.AgentCardSignature{Protected: protected, Signature: signature}
	if opts != nil && len(opts.Header) > 0 {
		sig.Header = maps.Clone(opts.Header)
	}
	out := *card
	out.Signatures = append(slices.Clip(slices.Clone(card.Signatures)), sig)
	return &out, nil
}
