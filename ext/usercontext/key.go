package usercontext

import (
	"crypto/ecdh"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// PrivateKey is one recipient key an agent opens envelopes with. It
// renders as its kid only: printing, logging or marshalling it never shows
// key material.
type PrivateKey struct {
	kid  string
	priv *ecdh.PrivateKey
	pub  []byte // the public half, derived once: it is mixed into every key derivation
}

// Recipient is what the sealing side holds: the recipient's kid and
// public key.
type Recipient struct {
	KID    string
	Public *ecdh.PublicKey
}

// NewPrivateKey wraps an X25519 private key filed under kid; an empty kid
// means the key's Thumbprint.
func NewPrivateKey(kid string, priv *ecdh.PrivateKey) (*PrivateKey, error) {
	if priv == nil || priv.Curve() != ecdh.X25519() {
		return nil, fmt.Errorf("%w: not an X25519 private key", ErrKey)
	}
	pub := priv.PublicKey().Bytes()
	if kid == "" {
		kid = thumbprint(pub)
	}
	return &PrivateKey{kid: kid, priv: priv, pub: pub}, nil
}

// GenerateKey returns a fresh key whose kid is its Thumbprint.
func GenerateKey() (*PrivateKey, error) {
	priv, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("usercontext: generate key: %w", err)
	}
	return NewPrivateKey("", priv)
}

// KID returns the key id envelopes sealed to this key name.
func (k *PrivateKey) KID() string { return k.kid }

// Recipient returns the public half, for sealing.
func (k *PrivateKey) Recipient() Recipient { return Recipient{KID: k.kid, Public: k.priv.PublicKey()} }

// String renders the kid only.
func (k *PrivateKey) String() string { return "usercontext.PrivateKey(" + k.kid + ")" }

// GoString renders the kid only.
func (k *PrivateKey) GoString() string { return k.String() }

// Format renders the kid only, whatever the verb.
func (k *PrivateKey) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(k.String())) }

// MarshalJSON writes the public JWK, never the private one.
func (k *PrivateKey) MarshalJSON() ([]byte, error) { return k.PublicJWK() }

// jwk is an OKP JSON Web Key (RFC 8037).
type jwk struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	KID string `json:"kid,omitempty"`
	X   string `json:"x"`
	D   string `json:"d,omitempty"`
}

// PublicJWK returns the public key as a JWK with its kid.
func (k *PrivateKey) PublicJWK() ([]byte, error) {
	return json.Marshal(jwk{Kty: "OKP", Crv: "X25519", KID: k.kid, X: b64.EncodeToString(k.pub)})
}

// PrivateJWK returns the private JWK, the content of a key file. It is key
// material: write it to the key directory and nowhere else.
func (k *PrivateKey) PrivateJWK() ([]byte, error) {
	return json.Marshal(jwk{Kty: "OKP", Crv: "X25519", KID: k.kid,
		X: b64.EncodeToString(k.pub), D: b64.EncodeToString(k.priv.Bytes())})
}

// ParsePrivateJWK parses a private X25519 JWK: kty "OKP", crv "X25519" and
// d (32 bytes, unpadded base64url) are required; x, when present, must be
// d's public key; kid, when present, names the key, else its Thumbprint.
// Member names are matched exactly; other members are ignored. Errors
// name the member, never its value.
func ParsePrivateJWK(b []byte) (*PrivateKey, error) { return parsePrivateJWK(b, "") }

// parsePrivateJWK is ParsePrivateJWK with the kid to use when the JWK has
// no kid member ("" for the thumbprint).
func parsePrivateJWK(b []byte, kid string) (*PrivateKey, error) {
	j, err := parseJWK(b)
	if err != nil {
		return nil, err
	}
	d, ok := b64Decode(j.D)
	if !ok || len(d) != keySize {
		return nil, fmt.Errorf("%w: d must be 32 bytes of unpadded base64url", ErrKey)
	}
	priv, err := ecdh.X25519().NewPrivateKey(d)
	clear(d)
	if err != nil {
		return nil, fmt.Errorf("%w: d", ErrKey)
	}
	if j.KID != "" {
		kid = j.KID
	}
	k, err := NewPrivateKey(kid, priv)
	if err != nil {
		return nil, err
	}
	if j.X != "" && j.X != b64.EncodeToString(k.pub) {
		return nil, fmt.Errorf("%w: x is not the public key of d", ErrKey)
	}
	return k, nil
}

// ParsePublicJWK parses a public X25519 JWK into a Recipient; its kid is
// the JWK's kid member, else the key's Thumbprint. A private member d is
// ignored.
func ParsePublicJWK(b []byte) (Recipient, error) {
	j, err := parseJWK(b)
	if err != nil {
		return Recipient{}, err
	}
	x, ok := b64Decode(j.X)
	if !ok || len(x) != keySize {
		return Recipient{}, fmt.Errorf("%w: x must be 32 bytes of unpadded base64url", ErrKey)
	}
	pub, err := ecdh.X25519().NewPublicKey(x)
	if err != nil {
		return Recipient{}, fmt.Errorf("%w: x", ErrKey)
	}
	kid := j.KID
	if kid == "" {
		kid = thumbprint(x)
	}
	return Recipient{KID: kid, Public: pub}, nil
}

// parseJWK reads the OKP members with exact names (encoding/json would
// also match "D" or "KTY").
func parseJWK(b []byte) (jwk, error) {
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil || m == nil {
		return jwk{}, fmt.Errorf("%w: not a JSON object", ErrKey)
	}
	var j jwk
	for _, f := range [...]struct {
		name string
		dst  *string
	}{{"kty", &j.Kty}, {"crv", &j.Crv}, {"kid", &j.KID}, {"x", &j.X}, {"d", &j.D}} {
		v, present := m[f.name]
		if !present {
			continue
		}
		s, ok := v.(string)
		if !ok {
			return jwk{}, fmt.Errorf("%w: %s is not a string", ErrKey, f.name)
		}
		*f.dst = s
	}
	if j.Kty != "OKP" || j.Crv != "X25519" {
		return jwk{}, fmt.Errorf("%w: kty must be OKP and crv X25519", ErrKey)
	}
	return j, nil
}

// Thumbprint returns the RFC 7638 thumbprint of an X25519 public key: the
// unpadded base64url SHA-256 of {"crv":"X25519","kty":"OKP","x":"…"}
// (RFC 8037 §2 members in lexical order, no whitespace). It is the
// conventional kid.
func Thumbprint(pub *ecdh.PublicKey) string { return thumbprint(pub.Bytes()) }

func thumbprint(pub []byte) string {
	sum := sha256.Sum256([]byte(`{"crv":"X25519","kty":"OKP","x":"` + b64.EncodeToString(pub) + `"}`))
	return b64.EncodeToString(sum[:])
}

// WriteKeyFile writes k's private JWK to dir/{kid}.jwk, readable by its
// owner only, refusing to overwrite an existing file. It is how a key is
// provisioned for a KeyRing.
func WriteKeyFile(dir string, k *PrivateKey) error {
	if !validKID(k.kid) {
		return fmt.Errorf("%w: kid %q cannot be a file name", ErrKey, k.kid)
	}
	b, err := k.PrivateJWK()
	if err != nil {
		return err
	}
	defer clear(b)
	name := filepath.Join(dir, k.kid+keyFileExt)
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("usercontext: write key file: %w", err)
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(name)
		return fmt.Errorf("usercontext: write key file: %w", err)
	}
	return nil
}

// validKID reports whether kid can name a key file: 1 to 128 characters
// of [A-Za-z0-9._-], not starting with a dot. Every RFC 7638 thumbprint
// qualifies; nothing that could leave the directory does.
func validKID(kid string) bool {
	if kid == "" || len(kid) > 128 || kid[0] == '.' {
		return false
	}
	for i := 0; i < len(kid); i++ {
		c := kid[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}
