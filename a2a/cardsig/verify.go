package cardsig

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/go-jose/go-jose/v4"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/jwk"
)

// Verification errors. Branch with errors.Is: an error wrapping
// ErrUnknownKey also wraps ErrInvalidSignature.
var (
	// ErrUnsigned: the card has no signatures.
	ErrUnsigned = errors.New("cardsig: card is not signed")
	// ErrInvalidSignature: the card has signatures and none verifies.
	ErrInvalidSignature = errors.New("cardsig: no valid card signature")
	// ErrUnknownKey: no signature names a key (kid) of the key set.
	ErrUnknownKey = errors.New("cardsig: signed by a key outside the key set")
)

// VerifyOptions adjust Verify; nil means the defaults.
type VerifyOptions struct {
	// Algorithms allowed, a subset of jwk.Algorithms (the default).
	Algorithms []string
}

// Verified names the signature that verified.
type Verified struct {
	KeyID     string
	Algorithm string
	// Index is the signature's position in card.Signatures.
	Index int
}

// maxSignatures bounds the work one card can ask for.
const maxSignatures = 16

// Verify checks card's signatures against keys and returns the first that
// verifies. Keys come from keys only: a "jku" in a signature header is
// ignored. A signature needs a protected "kid" and an allowed "alg" that
// fits its key.
func Verify(card *a2a.AgentCard, keys *jwk.KeySet, opts *VerifyOptions) (Verified, error) {
	if len(card.Signatures) == 0 {
		return Verified{}, ErrUnsigned
	}
	allowed := jwk.Algorithms
	if opts != nil && len(opts.Algorithms) > 0 {
		allowed = opts.Algorithms
	}
	algs := make([]jose.SignatureAlgorithm, 0, len(allowed))
	for _, a := range allowed {
		if !slices.Contains(jwk.Algorithms, a) {
			return Verified{}, fmt.Errorf("cardsig: algorithm %q is not supported", a)
		}
		algs = append(algs, jose.SignatureAlgorithm(a))
	}
	payload, err := Canonicalize(card)
	if err != nil {
		return Verified{}, err
	}
	var reasons []string
	unknown := 0
	sigs := card.Signatures
	if len(sigs) > maxSignatures {
		sigs = sigs[:maxSignatures]
	}
	for i, s := range sigs {
		v, err := verifyOne(s, payload, keys, algs)
		if err == nil {
			v.Index = i
			return v, nil
		}
		if errors.Is(err, ErrUnknownKey) {
			unknown++
		}
		reasons = append(reasons, fmt.Sprintf("signature %d: %v", i, err))
	}
	detail := strings.Join(reasons, "; ")
	if unknown == len(sigs) {
		return Verified{}, fmt.Errorf("%w: %w (%s)", ErrInvalidSignature, ErrUnknownKey, detail)
	}
	return Verified{}, fmt.Errorf("%w (%s)", ErrInvalidSignature, detail)
}

// unknownKidError is ErrUnknownKey for one signature.
type unknownKidError struct{ kid string }

func (e unknownKidError) Error() string        { return fmt.Sprintf("kid %q is not in the key set", e.kid) }
func (e unknownKidError) Is(target error) bool { return target == ErrUnknownKey }

func verifyOne(s a2a.AgentCardSignature, payload []byte, keys *jwk.KeySet, algs []jose.SignatureAlgorithm) (Verified, error) {
	if s.Protected == "" || s.Signature == "" || strings.Contains(s.Protected, ".") || strings.Contains(s.Signature, ".") {
		return Verified{}, errors.New("malformed JWS")
	}
	jws, err := jose.ParseDetached(s.Protected+".."+s.Signature, payload, algs)
	if err != nil {
		return Verified{}, fmt.Errorf("parse JWS: %w", err)
	}
	if len(jws.Signatures) != 1 {
		return Verified{}, errors.New("malformed JWS")
	}
	h := jws.Signatures[0].Protected
	if h.KeyID == "" {
		return Verified{}, errors.New("no kid in the protected header")
	}
	candidates, known := keys.Lookup(h.KeyID, h.Algorithm)
	if !known {
		return Verified{}, unknownKidError{h.KeyID}
	}
	if len(candidates) == 0 {
		return Verified{}, fmt.Errorf("kid %q: no key for alg %s", h.KeyID, h.Algorithm)
	}
	for _, k := range candidates {
		if err := jws.DetachedVerify(payload, k.PublicKey()); err == nil {
			return Verified{KeyID: h.KeyID, Algorithm: h.Algorithm}, nil
		}
	}
	return Verified{}, fmt.Errorf("kid %q: signature does not verify", h.KeyID)
}
