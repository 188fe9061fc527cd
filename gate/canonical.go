package gate

import (
	"fmt"

	"novaos.dev/novaos/jcs"
)

// A CanonicalError is why Canonicalize refused its input. Its Problem is
// one of "syntax", "utf8" (invalid UTF-8 in a string), "surrogate" (a \u
// escape naming half a surrogate pair), "duplicate", "number_range"
// (beyond float64), "number_precision" (a number whose decimal value no
// double writes back), "number_unsafe" (magnitude beyond 2^53-1), "depth"
// and "trailing"; Offset is the byte offset in the input where the
// problem was found, and Detail quotes at most a short member name, never
// a string value.
type CanonicalError = jcs.Error

// fingerprintNumbers is the number policy of fingerprints.
var fingerprintNumbers = &jcs.Options{ExactNumbers: true}

// Canonicalize returns the RFC 8785 (JSON Canonicalization Scheme) form of
// the one JSON value in data: no white space, object members sorted by
// the UTF-16 code units of their names, strings with JCS's minimal
// escaping and numbers written as ECMAScript writes the double they
// denote.
//
// Beyond what JCS refuses (invalid JSON or UTF-8, lone surrogates,
// duplicate member names, numbers beyond float64), Canonicalize refuses
// numbers that two different amounts could share a canonical form
// through: a number whose decimal value is not exactly the value JCS
// writes back for it (0.30000000000000001 is the double 0.3, and would
// fingerprint as 0.3), and any magnitude beyond 2^53-1, where neighbouring
// integers fall on one double. Such values belong in strings. Equal
// values spelled differently (1, 1.0, 1e0, 10e-1) are all accepted and
// all canonicalize to 1. Nesting is limited to 64 levels, and nothing but
// white space may follow the value.
//
// The work is linear in the input apart from sorting each object's member
// names.
func Canonicalize(data []byte) ([]byte, error) {
	out, err := jcs.Canonicalize(data, fingerprintNumbers)
	if err != nil {
		return nil, fmt.Errorf("gate: canonicalize: %w", err)
	}
	return out, nil
}
