package usercontext

import "novaos.dev/novaos/secret"

// Redacted is what a Secret renders as everywhere except Reveal.
const Redacted = secret.Redacted

// Secret is an opened secret value, a secret.Value: String, GoString,
// every fmt verb, JSON, text marshalling and slog render Redacted, and
// Reveal is the one way to the plaintext. The zero Secret is empty.
type Secret = secret.Value

// NewSecret wraps a value the caller already holds, such as one read on
// the sealing side before it is sealed.
func NewSecret(value string) Secret { return secret.New(value) }
