package jwk

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// Signature algorithms (JWS "alg" values).
const (
	EdDSA = "EdDSA" // Ed25519
	ES256 = "ES256" // ECDSA P-256 with SHA-256
	RS256 = "RS256" // RSASSA-PKCS1-v1_5 with SHA-256, keys of 2048 bits or more
)

// Algorithms are the algorithms this package supports, in order of
// preference: the default allow-list of its users (card signatures,
// tokens).
var Algorithms = []string{EdDSA, ES256, RS256}

// minRSABits is the smallest RSA modulus accepted for signing or
// verifying.
const minRSABits = 2048

// Key is a JSON Web Key (RFC 7517) for one of the supported algorithms,
// private (to sign) or public (to verify). Its String, Format and
// MarshalJSON never reveal private material: MarshalJSON writes the public
// key; PrivateJWK is the one way to export the private one.
type Key struct {
	jwk jose.JSONWebKey
}

// GenerateKey returns a new private key for alg (EdDSA, ES256 or RS256,
// RSA with 3072 bits). Its key id is its RFC 7638 thumbprint.
func GenerateKey(alg string) (*Key, error) {
	var (
		priv crypto.PrivateKey
		err  error
	)
	switch alg {
	case EdDSA:
		_, priv, err = ed25519.GenerateKey(rand.Reader)
	case ES256:
		priv, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case RS256:
		priv, err = rsa.GenerateKey(rand.Reader, 3072)
	default:
		return nil, fmt.Errorf("jwk: algorithm %q: want EdDSA, ES256 or RS256", alg)
	}
	if err != nil {
		return nil, fmt.Errorf("jwk: generate %s key: %w", alg, err)
	}
	k := &Key{jwk: jose.JSONWebKey{Key: priv, Algorithm: alg, Use: "sig"}}
	if err := k.setThumbprintID(); err != nil {
		return nil, err
	}
	return k, nil
}

// GenerateRSAKey returns a new RS256 private key with a modulus of bits
// (2048 or more): GenerateKey's RS256 key is 3072 bits, and a signer that
// signs often may choose the smaller, faster key. Its key id is its RFC
// 7638 thumbprint.
func GenerateRSAKey(bits int) (*Key, error) {
	if bits < minRSABits {
		return nil, fmt.Errorf("jwk: RSA key of %d bits: want %d or more", bits, minRSABits)
	}
	priv, err := rsa.GenerateKey(rand.Reader, bits)
	if err != nil {
		return nil, fmt.Errorf("jwk: generate RS256 key: %w", err)
	}
	k := &Key{jwk: jose.JSONWebKey{Key: priv, Algorithm: RS256, Use: "sig"}}
	if err := k.setThumbprintID(); err != nil {
		return nil, err
	}
	return k, nil
}

// ParseKey reads one JWK. Without an "alg" member the algorithm follows
// from the key (Ed25519 → EdDSA, P-256 → ES256, RSA → RS256); without a
// "kid" the key id is the RFC 7638 thumbprint.
func ParseKey(data []byte) (*Key, error) {
	var jwk jose.JSONWebKey
	if err := jwk.UnmarshalJSON(data); err != nil {
		// go-jose's messages name the problem, never the key's values.
		return nil, fmt.Errorf("jwk: parse JWK: %w", err)
	}
	return newKey(jwk)
}

func newKey(jwk jose.JSONWebKey) (*Key, error) {
	alg, err := keyAlgorithm(jwk.Key)
	if err != nil {
		return nil, err
	}
	if jwk.Algorithm != "" && jwk.Algorithm != alg {
		return nil, fmt.Errorf("jwk: key %q: alg %q does not fit a %s key", jwk.KeyID, jwk.Algorithm, alg)
	}
	if jwk.Use != "" && jwk.Use != "sig" {
		return nil, fmt.Errorf("jwk: key %q: use %q, want sig", jwk.KeyID, jwk.Use)
	}
	jwk.Algorithm = alg
	k := &Key{jwk: jwk}
	if jwk.KeyID == "" {
		if err := k.setThumbprintID(); err != nil {
			return nil, err
		}
	}
	return k, nil
}

// keyAlgorithm is the one algorithm a key serves.
func keyAlgorithm(key any) (string, error) {
	switch key := key.(type) {
	case ed25519.PublicKey, ed25519.PrivateKey:
		return EdDSA, nil
	case *ecdsa.PublicKey:
		if key.Curve != elliptic.P256() {
			return "", fmt.Errorf("jwk: EC key on %s: want P-256", key.Curve.Params().Name)
		}
		return ES256, nil
	case *ecdsa.PrivateKey:
		return keyAlgorithm(&key.PublicKey)
	case *rsa.PublicKey:
		if key.N.BitLen() < minRSABits {
			return "", fmt.Errorf("jwk: RSA key of %d bits: want %d or more", key.N.BitLen(), minRSABits)
		}
		return RS256, nil
	case *rsa.PrivateKey:
		return keyAlgorithm(&key.PublicKey)
	}
	return "", fmt.Errorf("jwk: unsupported key type %T", key)
}

func (k *Key) setThumbprintID() error {
	tp, err := k.jwk.Thumbprint(crypto.SHA256)
	if err != nil {
		return fmt.Errorf("jwk: key thumbprint: %w", err)
	}
	k.jwk.KeyID = base64.RawURLEncoding.EncodeToString(tp)
	return nil
}

// KeyID is the key's "kid".
func (k *Key) KeyID() string { return k.jwk.KeyID }

// Algorithm is the key's JWS algorithm: EdDSA, ES256 or RS256.
func (k *Key) Algorithm() string { return k.jwk.Algorithm }

// IsPrivate reports whether the key can sign.
func (k *Key) IsPrivate() bool { return !k.jwk.IsPublic() }

// WithKeyID returns a copy of the key with key id kid.
func (k *Key) WithKeyID(kid string) *Key {
	c := *k
	c.jwk.KeyID = kid
	return &c
}

// Signer returns the private key as a crypto.Signer
// (ed25519.PrivateKey, *ecdsa.PrivateKey or *rsa.PrivateKey), to sign
// with; nil for a public key. It is the key's material: never print it.
func (k *Key) Signer() crypto.Signer {
	if !k.IsPrivate() {
		return nil
	}
	s, _ := k.jwk.Key.(crypto.Signer)
	return s
}

// PublicKey returns the key's public half as a crypto key:
// ed25519.PublicKey, *ecdsa.PublicKey or *rsa.PublicKey.
func (k *Key) PublicKey() crypto.PublicKey { return k.Public().jwk.Key }

// Public returns the public half of the key (the key itself if public).
func (k *Key) Public() *Key {
	if !k.IsPrivate() {
		return k
	}
	return &Key{jwk: k.jwk.Public()}
}

// MarshalJSON writes the public JWK, also for a private key.
func (k *Key) MarshalJSON() ([]byte, error) {
	return k.Public().jwk.MarshalJSON()
}

// PrivateJWK returns the private JWK, for storing the key (keep the file
// private). It fails for a public key.
func (k *Key) PrivateJWK() ([]byte, error) {
	if !k.IsPrivate() {
		return nil, errors.New("jwk: not a private key")
	}
	return k.jwk.MarshalJSON()
}

// String describes the key without its material.
func (k Key) String() string {
	kind := "public"
	if k.IsPrivate() {
		kind = "private"
	}
	return fmt.Sprintf("jwk.Key{kid=%q alg=%s %s}", k.jwk.KeyID, k.jwk.Algorithm, kind)
}

// Format prints String for every verb, so %v, %+v and %#v cannot reveal
// the key.
func (k Key) Format(f fmt.State, _ rune) { io.WriteString(f, k.String()) }

// KeySet is a set of public keys to verify signatures with (a JWKS).
type KeySet struct {
	keys []*Key
}

// NewKeySet returns a set of the public halves of keys.
func NewKeySet(keys ...*Key) *KeySet {
	s := &KeySet{keys: make([]*Key, 0, len(keys))}
	for _, k := range keys {
		s.keys = append(s.keys, k.Public())
	}
	return s
}

// ParseKeySet reads a JWK Set ({"keys": [...]}) or a single JWK. Keys of
// types or algorithms this package does not support are skipped, as RFC
// 7517 §5 asks; private members are dropped.
func ParseKeySet(data []byte) (*KeySet, error) {
	var doc struct {
		Keys *[]json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("jwk: parse JWKS: %w", err)
	}
	if doc.Keys == nil {
		k, err := ParseKey(data)
		if err != nil {
			return nil, fmt.Errorf("jwk: parse JWKS: no \"keys\" member and not a JWK: %w", err)
		}
		return NewKeySet(k), nil
	}
	s := &KeySet{}
	for _, raw := range *doc.Keys {
		k, err := ParseKey(raw)
		if err != nil {
			continue
		}
		s.keys = append(s.keys, k.Public())
	}
	return s, nil
}

// Keys returns the set's keys, public halves only.
func (s *KeySet) Keys() []*Key {
	if s == nil {
		return nil
	}
	return slices.Clone(s.keys)
}

// Len is the number of keys in the set.
func (s *KeySet) Len() int {
	if s == nil {
		return 0
	}
	return len(s.keys)
}

// MarshalJSON writes the set as a JWKS of public keys.
func (s *KeySet) MarshalJSON() ([]byte, error) {
	var keys []*Key
	if s != nil {
		keys = s.keys
	}
	if keys == nil {
		keys = []*Key{}
	}
	return json.Marshal(struct {
		Keys []*Key `json:"keys"`
	}{keys})
}

// Lookup returns the keys with id kid that serve alg; known reports
// whether any key has id kid, whatever its algorithm.
func (s *KeySet) Lookup(kid, alg string) (keys []*Key, known bool) {
	if s == nil {
		return nil, false
	}
	for _, k := range s.keys {
		if k.jwk.KeyID != kid {
			continue
		}
		known = true
		if k.jwk.Algorithm == alg {
			keys = append(keys, k)
		}
	}
	return keys, known
}

// FetchOptions bound FetchKeySet; nil means the defaults.
type FetchOptions struct {
	// Client makes the request; nil means a client with Timeout.
	Client *http.Client
	// Timeout bounds the whole fetch (default 10s).
	Timeout time.Duration
	// MaxBytes is the largest JWKS accepted (default 256 KiB).
	MaxBytes int64
}

// FetchKeySet GETs a JWKS from url, a location the caller trusts (its own
// configuration — never a URL taken from the card being verified).
func FetchKeySet(ctx context.Context, url string, opts *FetchOptions) (*KeySet, error) {
	var o FetchOptions
	if opts != nil {
		o = *opts
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = 256 << 10
	}
	client := o.Client
	if client == nil {
		client = &http.Client{Timeout: o.Timeout}
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("jwk: fetch JWKS: %w", err)
	}
	req.Header.Set("Accept", "application/jwk-set+json, application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("jwk: fetch JWKS: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("jwk: fetch JWKS %s: status %s", req.URL.Redacted(), resp.Status)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, o.MaxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("jwk: fetch JWKS %s: %w", req.URL.Redacted(), err)
	}
	if int64(len(data)) > o.MaxBytes {
		return nil, fmt.Errorf("jwk: fetch JWKS %s: larger than %d bytes", req.URL.Redacted(), o.MaxBytes)
	}
	return ParseKeySet(data)
}
