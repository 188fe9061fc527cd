package secret

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"log/slog"
)

// Redacted is what a Value renders as everywhere except Reveal; the
// PII-masking log handler (package pii) writes the same mask.
const Redacted = "[REDACTED]"

// Value is a secret string. The value is held by a closure, which fmt and
// reflection cannot look into, so even a Value printed as an unexported
// field of another struct shows an address, not the value. The zero
// Value is empty. Values are not comparable with ==; use Equal.
type Value struct {
	v func() string
}

// New wraps a value the caller holds.
func New(value string) Value { return Value{v: func() string { return value }} }

// Reveal returns the plaintext. Hand it to what needs it and keep it out
// of logs, errors and output.
func (s Value) Reveal() string {
	if s.v == nil {
		return ""
	}
	return s.v()
}

// IsZero reports whether the value is empty.
func (s Value) IsZero() bool { return s.Reveal() == "" }

// Equal reports whether candidate is the value, in time that depends on
// neither of them (both are hashed first, so not even their lengths are
// compared). An empty Value equals nothing, not even "".
func (s Value) Equal(candidate string) bool {
	v := s.Reveal()
	if v == "" {
		return false
	}
	a, b := sha256.Sum256([]byte(v)), sha256.Sum256([]byte(candidate))
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
}

// String returns Redacted.
func (s Value) String() string { return Redacted }

// GoString returns Redacted.
func (s Value) GoString() string { return Redacted }

// Format writes Redacted for every verb.
func (s Value) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(Redacted)) }

// MarshalJSON writes Redacted as a JSON string.
func (s Value) MarshalJSON() ([]byte, error) { return []byte(`"` + Redacted + `"`), nil }

// MarshalText writes Redacted.
func (s Value) MarshalText() ([]byte, error) { return []byte(Redacted), nil }

// LogValue logs Redacted.
func (s Value) LogValue() slog.Value { return slog.StringValue(Redacted) }
