package usercontext

import (
	"errors"
	"fmt"
)

// Errors. Branch on them with errors.Is. None of them ever carries a
// secret value, key material or ciphertext; a secret's name and an
// envelope's kid may appear, since both travel in the clear anyway.
var (
	// ErrOpen is every failure to open a delivered envelope. Returned as
	// is (wrapped with the secret's name) when a well-formed envelope did
	// not authenticate: the wrong key, a tampered field or a delivery
	// (tenant, instance, run, name) other than the one it was sealed for.
	// Those causes are deliberately indistinguishable: telling them apart
	// would be a decryption oracle.
	ErrOpen = errors.New("usercontext: sealed envelope did not open")
	// ErrFormat is an envelope or payload that is malformed or names a
	// version or suite this package does not speak. errors.Is(err,
	// ErrOpen) holds for it too.
	ErrFormat = fmt.Errorf("%w: malformed envelope", ErrOpen)
	// ErrKeyUnavailable is an envelope naming a kid the key ring does not
	// hold: a key that rotated out of its overlap window, a revoked key or
	// a missing key mount. errors.Is(err, ErrOpen) holds for it too.
	ErrKeyUnavailable = fmt.Errorf("%w: no recipient key for the envelope's kid", ErrOpen)
	// ErrNotDelivered is a secret the request did not carry, or a request
	// that did not activate the user-context extension at all. Nothing
	// cryptographic happened, so it is not an ErrOpen.
	ErrNotDelivered = errors.New("usercontext: secret not delivered")
	// ErrDelivery is a Delivery with an empty or non-UTF-8 field: sealing
	// refuses it, and opening refuses it before touching the envelope.
	ErrDelivery = errors.New("usercontext: incomplete delivery")
	// ErrPlaintext is a value Seal refuses: not UTF-8, or larger than
	// MaxSecretSize.
	ErrPlaintext = errors.New("usercontext: secret value not sealable")
	// ErrKey is a key (a JWK, a key file) that does not parse. The error
	// names the offending member or file, never its content.
	ErrKey = errors.New("usercontext: invalid key")
)

func formatErr(what string) error { return fmt.Errorf("%w: %s", ErrFormat, what) }

// keyUnavailable names the kid, which comes off the wire: quoted, and cut
// short so that a forged envelope cannot flood a log line.
func keyUnavailable(kid string) error {
	const limit = 64
	if len(kid) > limit {
		kid = kid[:limit] + "…"
	}
	return fmt.Errorf("%w %q", ErrKeyUnavailable, kid)
}
