package gate

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"novaos.dev/novaos/jcs"
)

// FingerprintScheme names how Fingerprint and FingerprintJSON compute a
// fingerprint, so a stored fingerprint can say which scheme made it and a
// later scheme can sit beside this one: SHA-256 over the RFC 8785
// canonical JSON of {"action_type":…,"context":…,"context_type":…},
// numbers held to Canonicalize's policy, written as lower-case hex.
const FingerprintScheme = "sha256-jcs-1"

// FingerprintJSON returns the fingerprint a standing verdict is bound to:
// the hex SHA-256 of the canonical form (see Canonicalize) of
// {"action_type":actionType,"context":context,"context_type":contextType}.
// The service computes it from the raw context it received; any encoding
// of the same content (member order, white space, escapes, 1.0 for 1)
// gives the same fingerprint, and any change of content a different one.
//
// context must be one JSON object. Strings are compared as written:
// "2026-01-02T00:00:00Z" and "2026-01-02T00:00:00+00:00" are different
// content to the fingerprint.
func FingerprintJSON(actionType, contextType string, context []byte) (string, error) {
	var errs []error
	for _, f := range []struct{ name, v string }{{"action_type", actionType}, {"context_type", contextType}} {
		switch {
		case f.v == "":
			errs = append(errs, fmt.Errorf("%s: required", f.name))
		case !utf8.ValidString(f.v):
			errs = append(errs, fmt.Errorf("%s: invalid UTF-8", f.name))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return "", fmt.Errorf("gate: fingerprint: %w", err)
	}
	// The envelope's names are fixed and already in JCS order, so the
	// canonical document is written around the context in one buffer.
	out := make([]byte, 0, len(context)+len(actionType)+len(contextType)+48)
	out = append(out, `{"action_type":`...)
	out = jcs.AppendString(out, actionType)
	out = append(out, `,"context":`...)
	ctxStart := len(out)
	out, err := jcs.AppendCanonical(out, context, fingerprintNumbers)
	if err != nil {
		return "", fmt.Errorf("gate: fingerprint: context: %w", err)
	}
	if out[ctxStart] != '{' {
		return "", errors.New("gate: fingerprint: context: not a JSON object")
	}
	out = append(out, `,"context_type":`...)
	out = jcs.AppendString(out, contextType)
	out = append(out, '}')
	sum := sha256.Sum256(out)
	var text [2 * sha256.Size]byte
	hex.Encode(text[:], sum[:])
	return string(text[:]), nil
}

// Fingerprint is FingerprintJSON of a typed context, encoded as the SDK
// sends it (encoding/json), so the SDK and the service agree on the
// fingerprint of every action the SDK submits.
func Fingerprint(actionType string, c Context) (string, error) {
	if c == nil {
		return "", errors.New("gate: fingerprint: context: required")
	}
	b, err := json.Marshal(c)
	if err != nil {
		return "", fmt.Errorf("gate: fingerprint: %w", err)
	}
	return FingerprintJSON(actionType, c.ContextType(), b)
}
