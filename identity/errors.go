package identity

import (
	"errors"
	"fmt"
)

// ErrInvalid is matched (errors.Is) by every error that rejects a token:
// the caller answers 401. The kinds below say why; each is matched too.
var ErrInvalid = errors.New("identity: invalid token")

// Why a token was rejected. An error from Verify matches ErrInvalid and
// exactly one of these.
var (
	// ErrMalformed: not a compact JWS of JSON objects, a header or claim
	// of the wrong type, a duplicate member, a forbidden header (crit,
	// b64, jku, jwk, x5u, x5c), a typ other than JWT, no kid, an invalid
	// scope, or larger than Options.MaxTokenBytes.
	ErrMalformed = errors.New("identity: malformed token")
	// ErrAlgorithm: the header's alg is not on the allow-list ("none",
	// HS256 and every algorithm but EdDSA, ES256 and RS256 always are
	// not), or does not fit the key the kid names.
	ErrAlgorithm = errors.New("identity: algorithm not allowed")
	// ErrUnknownKey: no key with the token's kid, even after a refresh.
	ErrUnknownKey = errors.New("identity: unknown signing key")
	// ErrBadSignature: the signature does not verify under the key.
	ErrBadSignature = errors.New("identity: bad signature")
	// ErrIssuer: the iss claim is not the expected issuer.
	ErrIssuer = errors.New("identity: wrong issuer")
	// ErrAudience: the aud claim does not name the expected audience.
	ErrAudience = errors.New("identity: wrong audience")
	// ErrExpired: exp is past, by more than the leeway.
	ErrExpired = errors.New("identity: token expired")
	// ErrNotYetValid: nbf or iat is in the future, by more than the
	// leeway.
	ErrNotYetValid = errors.New("identity: token not yet valid")
	// ErrMissingClaim: a required claim (exp, tenant_id) is absent or
	// empty.
	ErrMissingClaim = errors.New("identity: required claim missing")
	// ErrRevoked: the token verified, but Options.Revoked says it no
	// longer holds (the run it was minted for has ended, say).
	ErrRevoked = errors.New("identity: token revoked")
)

// ErrKeysUnavailable is returned, without ErrInvalid, when the keys could
// not be fetched and none cached name the token's kid: the token may be
// good, so the caller answers 503, not 401.
var ErrKeysUnavailable = errors.New("identity: verification keys unavailable")

// Error is a rejected token: Kind is one of the Err… values above, Reason
// says what was wrong in words that never include the token.
type Error struct {
	Kind   error
	Reason string
	// Cause is the error of Options.Revoked behind an ErrRevoked, for the
	// server's log; Error leaves it out, so a client is never told more
	// than Reason.
	Cause error
}

func (e *Error) Error() string {
	if e.Reason == "" {
		return e.Kind.Error()
	}
	return e.Kind.Error() + ": " + e.Reason
}

// Unwrap lets errors.Is match ErrInvalid, the kind, and the cause if any.
func (e *Error) Unwrap() []error {
	if e.Cause != nil {
		return []error{ErrInvalid, e.Kind, e.Cause}
	}
	return []error{ErrInvalid, e.Kind}
}

func invalid(kind error, format string, args ...any) error {
	return &Error{Kind: kind, Reason: fmt.Sprintf(format, args...)}
}

// quote renders an attacker-chosen header value for an error message:
// quoted and cut short, so a log line stays one short line.
func quote(s string) string {
	const max = 64
	if len(s) > max {
		s = s[:max] + "…"
	}
	return fmt.Sprintf("%q", s)
}
