package usercontext

import (
	"fmt"
	"log/slog"

	"novaos.dev/novaos/pii"
)

// Redacted is what a Secret renders as everywhere except Reveal: the
// same mask the PII-masking log handler writes.
const Redacted = pii.RedactedMask

// Secret is an opened secret value. It never shows its value: String,
// GoString, every fmt verb, JSON, text marshalling and slog all render
// Redacted. The value is held by a closure, which fmt and reflection
// cannot look into, so even a Secret printed as an unexported field of
// another struct shows an address, not the value. Reveal is the one way
// to the plaintext. The zero Secret is empty. Secrets are not comparable
// with ==; compare the revealed values where that is really needed.
type Secret struct {
	v func() string
}

func newSecret(s string) Secret { return Secret{v: func() string { return s }} }

// NewSecret wraps a value the caller already holds, such as one read on
// the sealing side before it is sealed.
func NewSecret(value string) Secret { return newSecret(value) }

// Reveal returns the plaintext. Hand it to what needs it and keep it out
// of logs, errors and task output.
func (s Secret) Reveal() string {
	if s.v == nil {
		return ""
	}
	return s.v()
}

// IsZero reports whether the secret is empty.
func (s Secret) IsZero() bool { return s.Reveal() == "" }

// String returns Redacted.
func (s Secret) String() string { return Redacted }

// GoString returns Redacted.
func (s Secret) GoString() string { return Redacted }

// Format writes Redacted for every verb.
func (s Secret) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(Redacted)) }

// MarshalJSON writes Redacted as a JSON string.
func (s Secret) MarshalJSON() ([]byte, error) { return []byte(`"` + Redacted + `"`), nil }

// MarshalText writes Redacted.
func (s Secret) MarshalText() ([]byte, error) { return []byte(Redacted), nil }

// LogValue logs Redacted.
func (s Secret) LogValue() slog.Value { return slog.StringValue(Redacted) }
