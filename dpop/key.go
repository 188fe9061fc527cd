package dpop

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"time"
)

// Header is the request header a proof travels in; NonceHeader is the
// response header a server's nonce comes in.
const (
	Header      = "DPoP"
	NonceHeader = "DPoP-Nonce"
	// ProofType is the proof's JOSE "typ".
	ProofType = "dpop+jwt"
	// Algorithm is the one signature algorithm of a Key.
	Algorithm = "ES256"
)

// Key is a proof key: ECDSA on P-256.
type Key struct {
	priv *ecdsa.PrivateKey
	jwk  publicJWK
	jkt  string
}

// publicJWK is an EC public key as a JWK, members in RFC 7638 order.
type publicJWK struct {
	Crv string `json:"crv"`
	Kty string `json:"kty"`
	X   string `json:"x"`
	Y   string `json:"y"`
}

// GenerateKey makes a new key.
func GenerateKey() (*Key, error) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("dpop: generate key: %w", err)
	}
	return newKey(priv)
}

func newKey(priv *ecdsa.PrivateKey) (*Key, error) {
	if priv.Curve != elliptic.P256() {
		return nil, errors.New("dpop: the key is not on P-256")
	}
	j, err := jwkOf(&priv.PublicKey)
	if err != nil {
		return nil, err
	}
	return &Key{priv: priv, jwk: j, jkt: j.thumbprint()}, nil
}

// ParseKey reads a key from a PKCS#8 PEM block ("PRIVATE KEY").
func ParseKey(data []byte) (*Key, error) {
	b, _ := pem.Decode(data)
	if b == nil || b.Type != "PRIVATE KEY" {
		return nil, errors.New("dpop: not a PKCS#8 PEM private key")
	}
	k, err := x509.ParsePKCS8PrivateKey(b.Bytes)
	if err != nil {
		return nil, errors.New("dpop: not a PKCS#8 private key")
	}
	priv, ok := k.(*ecdsa.PrivateKey)
	if !ok {
		return nil, errors.New("dpop: the key is not an ECDSA key")
	}
	return newKey(priv)
}

// MarshalPEM writes the private key as a PKCS#8 PEM block, for a file
// only its owner may read.
func (k *Key) MarshalPEM() ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(k.priv)
	if err != nil {
		return nil, fmt.Errorf("dpop: marshal key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// Thumbprint is the key's RFC 7638 thumbprint: the jkt a token is bound to.
func (k *Key) Thumbprint() string { return k.jkt }

// PublicJWK is the public half as a JWK.
func (k *Key) PublicJWK() json.RawMessage {
	b, _ := json.Marshal(k.jwk) // four strings: cannot fail
	return b
}

// String names the key by its thumbprint only.
func (k *Key) String() string { return "dpop.Key{jkt=" + k.jkt + "}" }

// GoString is String.
func (k *Key) GoString() string { return k.String() }

// Format prints String whatever the verb.
func (k *Key) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(k.String())) }

// Claims is what a proof says: the request and, when known, the newest
// nonce. A zero IssuedAt is now; an empty ID is random.
type Claims struct {
	Method      string
	URL         string
	AccessToken string
	Nonce       string
	IssuedAt    time.Time
	ID          string
}

// Proof signs a proof for one request. URL is normalised as HTU says.
func (k *Key) Proof(c Claims) (string, error) {
	htu, err := HTU(c.URL)
	if err != nil {
		return "", err
	}
	iat := c.IssuedAt
	if iat.IsZero() {
		iat = time.Now()
	}
	jti := c.ID
	if jti == "" {
		var b [16]byte
		_, _ = rand.Read(b[:])
		jti = b64(b[:])
	}
	header, _ := json.Marshal(struct {
		Typ string    `json:"typ"`
		Alg string    `json:"alg"`
		JWK publicJWK `json:"jwk"`
	}{ProofType, Algorithm, k.jwk})
	claims, _ := json.Marshal(proofClaims{JTI: jti, HTM: c.Method, HTU: htu, IAT: iat.Unix(),
		ATH: tokenHash(c.AccessToken), Nonce: c.Nonce})
	signing := b64(header) + "." + b64(claims)
	sum := sha256.Sum256([]byte(signing))
	r, s, err := ecdsa.Sign(rand.Reader, k.priv, sum[:])
	if err != nil {
		return "", fmt.Errorf("dpop: sign: %w", err)
	}
	sig := make([]byte, 64)
	r.FillBytes(sig[:32])
	s.FillBytes(sig[32:])
	return signing + "." + b64(sig), nil
}

type proofClaims struct {
	JTI   string `json:"jti"`
	HTM   string `json:"htm"`
	HTU   string `json:"htu"`
	IAT   int64  `json:"iat"`
	ATH   string `json:"ath,omitempty"`
	Nonce string `json:"nonce,omitempty"`
}

// tokenHash is the "ath" of a token: base64url SHA-256; empty for none.
func tokenHash(token string) string {
	if token == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(token))
	return b64(sum[:])
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func jwkOf(pub *ecdsa.PublicKey) (publicJWK, error) {
	if pub.Curve != elliptic.P256() {
		return publicJWK{}, errors.New("dpop: the key is not on P-256")
	}
	b, err := pub.Bytes() // uncompressed point: 0x04 || X || Y
	if err != nil || len(b) != 65 {
		return publicJWK{}, errors.New("dpop: invalid public key")
	}
	return publicJWK{Crv: "P-256", Kty: "EC", X: b64(b[1:33]), Y: b64(b[33:])}, nil
}

// thumbprint is RFC 7638: SHA-256 of the required members in
// lexicographic order, no whitespace (publicJWK's field order).
func (j publicJWK) thumbprint() string {
	b, _ := json.Marshal(j)
	sum := sha256.Sum256(b)
	return b64(sum[:])
}

// Thumbprint is the RFC 7638 thumbprint of a P-256 public key.
func Thumbprint(pub *ecdsa.PublicKey) (string, error) {
	j, err := jwkOf(pub)
	if err != nil {
		return "", err
	}
	return j.thumbprint(), nil
}

// publicKey turns a proof's JWK back into a key, refusing anything but a
// public P-256 key on the curve.
func (j publicJWK) publicKey() (*ecdsa.PublicKey, error) {
	if j.Kty != "EC" || j.Crv != "P-256" {
		return nil, errors.New("the jwk is not an EC P-256 key")
	}
	x, err1 := base64.RawURLEncoding.DecodeString(j.X)
	y, err2 := base64.RawURLEncoding.DecodeString(j.Y)
	if err1 != nil || err2 != nil || len(x) != 32 || len(y) != 32 {
		return nil, errors.New("the jwk's coordinates are not 32 bytes of base64url")
	}
	point := append([]byte{4}, append(x, y...)...)
	pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), point)
	if err != nil {
		return nil, errors.New("the jwk's point is not on P-256")
	}
	return pub, nil
}
