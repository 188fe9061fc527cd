package usercontext

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"unicode/utf8"

	"novaos.dev/novaos/secret"
)

// Wire constants of sealed envelope v1.
const (
	// Version is the envelope's "v" member.
	Version = 1
	// Suite names the cipher suite: X25519 key agreement with an ephemeral
	// sender key, HKDF-SHA256 to a 256-bit key, AES-256-GCM.
	Suite = "X25519-HKDF-SHA256-A256GCM"
	// Label is the domain-separation prefix of the HKDF info and of the
	// additional authenticated data.
	Label = "novaos-sealed-envelope-v1"
	// MaxSecretSize is the largest value, in bytes, that Seal accepts and
	// an envelope may carry.
	MaxSecretSize = 64 << 10

	keySize   = 32 // X25519 public and private keys, the AES-256 key
	nonceSize = 12 // AES-GCM nonce
	tagSize   = 16 // AES-GCM tag
)

// Envelope is one sealed secret as it travels: every binary member is
// unpadded base64url. It carries nothing about the delivery it is bound
// to; the opener supplies that.
type Envelope struct {
	V     int    `json:"v"`
	Suite string `json:"suite"`
	KID   string `json:"kid"`
	EPK   string `json:"epk"` // ephemeral X25519 public key, 32 bytes
	IV    string `json:"iv"`  // AES-GCM nonce, 12 bytes
	CT    string `json:"ct"`  // AES-GCM ciphertext followed by the 16-byte tag
}

// Delivery is the one delivery an envelope is valid for. Both sides build
// it from identifiers they hold independently; it is never transmitted.
// Every field must be non-empty UTF-8.
type Delivery struct {
	TenantID   string
	InstanceID string
	RunID      string
	// SecretName is the name the value is filed under, so an envelope
	// cannot be moved from one secret to another within a run.
	SecretName string
}

func (d Delivery) check() error {
	for _, f := range [...]struct{ name, v string }{
		{"tenant id", d.TenantID}, {"instance id", d.InstanceID},
		{"run id", d.RunID}, {"secret name", d.SecretName},
	} {
		if f.v == "" {
			return fmt.Errorf("%w: empty %s", ErrDelivery, f.name)
		}
		if !utf8.ValidString(f.v) {
			return fmt.Errorf("%w: %s is not UTF-8", ErrDelivery, f.name)
		}
	}
	return nil
}

// AAD returns the additional authenticated data binding an envelope to d:
// Label, then tenant id, instance id, run id and secret name, each as a
// 4-byte big-endian length followed by its UTF-8 bytes.
func (d Delivery) AAD() []byte {
	n := len(Label) + 16 + len(d.TenantID) + len(d.InstanceID) + len(d.RunID) + len(d.SecretName)
	b := make([]byte, 0, n)
	b = append(b, Label...)
	for _, f := range [...]string{d.TenantID, d.InstanceID, d.RunID, d.SecretName} {
		b = binary.BigEndian.AppendUint32(b, uint32(len(f)))
		b = append(b, f...)
	}
	return b
}

// Seal encrypts value for the recipient, bound to d, with a fresh
// ephemeral key and nonce. It is the platform's half: the recipient's
// public key comes from the control plane's key store.
func Seal(to Recipient, d Delivery, value string) (Envelope, error) {
	eph, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		return Envelope{}, fmt.Errorf("usercontext: seal: %w", err)
	}
	iv := make([]byte, nonceSize)
	if _, err := rand.Read(iv); err != nil {
		return Envelope{}, fmt.Errorf("usercontext: seal: %w", err)
	}
	return seal(to, d, value, eph, iv)
}

// seal is Seal with the ephemeral key and nonce supplied: the test-vector
// hook. Never reuse either outside tests.
func seal(to Recipient, d Delivery, value string, eph *ecdh.PrivateKey, iv []byte) (Envelope, error) {
	if to.KID == "" || to.Public == nil || to.Public.Curve() != ecdh.X25519() {
		return Envelope{}, fmt.Errorf("%w: recipient needs a kid and an X25519 public key", ErrKey)
	}
	if err := d.check(); err != nil {
		return Envelope{}, err
	}
	if len(value) > MaxSecretSize {
		return Envelope{}, fmt.Errorf("%w: larger than %d bytes", ErrPlaintext, MaxSecretSize)
	}
	if !utf8.ValidString(value) {
		return Envelope{}, fmt.Errorf("%w: not UTF-8", ErrPlaintext)
	}
	shared, err := eph.ECDH(to.Public)
	if err != nil {
		return Envelope{}, fmt.Errorf("%w: recipient public key unusable", ErrKey)
	}
	epk := eph.PublicKey().Bytes()
	aead, err := contentCipher(shared, epk, to.Public.Bytes())
	if err != nil {
		return Envelope{}, err
	}
	ct := aead.Seal(nil, iv, []byte(value), d.AAD())
	return Envelope{
		V: Version, Suite: Suite, KID: to.KID,
		EPK: b64.EncodeToString(epk), IV: b64.EncodeToString(iv), CT: b64.EncodeToString(ct),
	}, nil
}

// deriveKey is the key schedule: HKDF-SHA256 with IKM the X25519 shared
// secret, an empty salt and info Label || epk || recipient public key.
func deriveKey(shared, epk, recipient []byte) ([]byte, error) {
	info := make([]byte, 0, len(Label)+2*keySize)
	info = append(append(append(info, Label...), epk...), recipient...)
	key, err := hkdf.Key(sha256.New, shared, nil, string(info), keySize)
	if err != nil {
		return nil, fmt.Errorf("usercontext: derive key: %w", err)
	}
	return key, nil
}

// contentCipher returns the AES-256-GCM instance of one envelope.
func contentCipher(shared, epk, recipient []byte) (cipher.AEAD, error) {
	key, err := deriveKey(shared, epk, recipient)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(key)
	clear(key)
	if err != nil {
		return nil, fmt.Errorf("usercontext: derive key: %w", err)
	}
	return cipher.NewGCM(block)
}

// Open opens one envelope with key, checking it was sealed for d. env is
// an Envelope, *Envelope, a JSON object decoded into map[string]any, or
// its JSON text (json.RawMessage, []byte, string). See the package doc for
// the errors.
func Open(env any, key *PrivateKey, d Delivery) (Secret, error) {
	e, err := parseEnvelope(env)
	if err != nil {
		return Secret{}, err
	}
	return e.open(key, d)
}

// decoded is a syntactically valid envelope.
type decoded struct {
	kid         string
	epk, iv, ct []byte
}

func (e *decoded) open(key *PrivateKey, d Delivery) (Secret, error) {
	if err := d.check(); err != nil {
		return Secret{}, err
	}
	if key == nil || key.kid != e.kid {
		return Secret{}, keyUnavailable(e.kid)
	}
	pub, err := ecdh.X25519().NewPublicKey(e.epk)
	if err != nil {
		return Secret{}, ErrOpen
	}
	shared, err := key.priv.ECDH(pub)
	if err != nil { // a low-order point gives the all-zero secret
		return Secret{}, ErrOpen
	}
	aead, err := contentCipher(shared, e.epk, key.pub)
	clear(shared)
	if err != nil {
		return Secret{}, err
	}
	pt, err := aead.Open(nil, e.iv, e.ct, d.AAD())
	if err != nil {
		return Secret{}, ErrOpen
	}
	defer clear(pt)
	if !utf8.Valid(pt) {
		return Secret{}, formatErr("value is not UTF-8")
	}
	return secret.New(string(pt)), nil
}

var b64 = base64.RawURLEncoding.Strict()

// decodeB64 decodes unpadded base64url strictly: no padding, no other
// alphabet, no line breaks, no non-zero trailing bits.
func decodeB64(s, field string, minLen, maxLen int) ([]byte, error) {
	if len(s) > base64.RawURLEncoding.EncodedLen(maxLen) {
		return nil, formatErr(field + " too long")
	}
	b, ok := b64Decode(s)
	if !ok || len(b) < minLen || len(b) > maxLen {
		return nil, formatErr(field + " is not base64url of the right length")
	}
	return b, nil
}

// b64Decode decodes unpadded base64url strictly. The decoder skips CR
// and LF; comparing lengths catches them.
func b64Decode(s string) ([]byte, bool) {
	b, err := b64.DecodeString(s)
	if err != nil || b64.EncodedLen(len(b)) != len(s) {
		return nil, false
	}
	return b, true
}

// parseEnvelope validates the shape of an envelope without opening it.
func parseEnvelope(v any) (*decoded, error) {
	var e Envelope
	switch x := v.(type) {
	case Envelope:
		e = x
	case *Envelope:
		if x == nil {
			return nil, formatErr("envelope is null")
		}
		e = *x
	case map[string]any:
		var err error
		if e, err = envelopeFromMap(x); err != nil {
			return nil, err
		}
	case json.RawMessage:
		return parseEnvelopeJSON(x)
	case []byte:
		return parseEnvelopeJSON(x)
	case string:
		return parseEnvelopeJSON([]byte(x))
	default:
		return nil, formatErr("envelope is not an object")
	}
	if e.V != Version {
		return nil, formatErr("unsupported version")
	}
	if e.Suite != Suite {
		return nil, formatErr("unsupported suite")
	}
	if e.KID == "" {
		return nil, formatErr("kid is empty")
	}
	epk, err := decodeB64(e.EPK, "epk", keySize, keySize)
	if err != nil {
		return nil, err
	}
	iv, err := decodeB64(e.IV, "iv", nonceSize, nonceSize)
	if err != nil {
		return nil, err
	}
	ct, err := decodeB64(e.CT, "ct", tagSize, MaxSecretSize+tagSize)
	if err != nil {
		return nil, err
	}
	return &decoded{kid: e.KID, epk: epk, iv: iv, ct: ct}, nil
}

func parseEnvelopeJSON(b []byte) (*decoded, error) {
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil || m == nil {
		return nil, formatErr("envelope is not a JSON object")
	}
	return parseEnvelope(m)
}

// envelopeFromMap reads the members of a decoded JSON object, checking
// their types; unknown members are ignored.
func envelopeFromMap(m map[string]any) (Envelope, error) {
	var e Envelope
	v, ok := intValue(m["v"])
	if !ok {
		return e, formatErr("v is not an integer")
	}
	e.V = v
	for _, f := range [...]struct {
		name string
		dst  *string
	}{{"suite", &e.Suite}, {"kid", &e.KID}, {"epk", &e.EPK}, {"iv", &e.IV}, {"ct", &e.CT}} {
		s, ok := m[f.name].(string)
		if !ok {
			return e, formatErr(f.name + " is not a string")
		}
		*f.dst = s
	}
	return e, nil
}

// intValue accepts the integer forms a JSON number takes after decoding.
func intValue(v any) (int, bool) {
	switch x := v.(type) {
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<31 {
			return int(x), true
		}
	case json.Number:
		if i, err := x.Int64(); err == nil && i >= math.MinInt32 && i <= math.MaxInt32 {
			return int(i), true
		}
	case int:
		return x, true
	case int64:
		if x >= math.MinInt32 && x <= math.MaxInt32 {
			return int(x), true
		}
	}
	return 0, false
}
