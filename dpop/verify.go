package dpop

import (
	"crypto/ecdsa"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"math/big"
	"strings"
	"time"

	"novaos.dev/novaos/strictjson"
)

// Errors of Verify. A server answers ErrUseNonce with 401
// use_dpop_nonce and a fresh nonce in NonceHeader, and ErrInvalidProof
// with 401.
var (
	ErrInvalidProof = errors.New("dpop: invalid proof")
	ErrUseNonce     = errors.New("dpop: use the server's nonce")
)

// MaxProofBytes bounds a proof Verify reads.
const MaxProofBytes = 4096

// Expect is the request a proof must name.
type Expect struct {
	Method string
	// URL is the request's URL as the client addressed it (the server's
	// public URL and the path); HTU normalises it.
	URL string
	// AccessToken is the token the request carries: the proof's ath must
	// be its hash. Empty: the proof may not carry one.
	AccessToken string
	// JKT is the thumbprint the token is bound to; the proof's key must
	// have it. Empty: any key.
	JKT string
	// Nonce, when set, says whether a nonce is current; a proof without
	// one, or with one it refuses, is ErrUseNonce.
	Nonce func(nonce string, now time.Time) bool
	Now   time.Time
	// Window is how far iat may be from Now either way (default 60s).
	Window time.Duration
}

// Checked is a proof Verify accepted. A server refuses a second proof
// with the same JTI within Window (its own replay memory).
type Checked struct {
	JTI      string
	JKT      string
	IssuedAt time.Time
}

// Verify checks a proof against the request it came with.
func Verify(proof string, want Expect) (Checked, error) {
	if proof == "" || len(proof) > MaxProofBytes {
		return Checked{}, invalid("missing or too long")
	}
	parts := strings.Split(proof, ".")
	if len(parts) != 3 {
		return Checked{}, invalid("not a compact JWS")
	}
	var h struct {
		Typ string `json:"typ"`
		Alg string `json:"alg"`
		JWK struct {
			publicJWK
			D string `json:"d"`
		} `json:"jwk"`
		Crit []string `json:"crit"`
	}
	if err := decodePart(parts[0], &h); err != nil {
		return Checked{}, invalid("header: " + err.Error())
	}
	if h.Typ != ProofType || h.Alg != Algorithm || h.Crit != nil {
		return Checked{}, invalid("typ must be dpop+jwt, alg ES256, and no crit")
	}
	if h.JWK.D != "" {
		return Checked{}, invalid("the jwk holds a private key")
	}
	pub, err := h.JWK.publicKey()
	if err != nil {
		return Checked{}, invalid(err.Error())
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || len(sig) != 64 {
		return Checked{}, invalid("bad signature encoding")
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	r, s := new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])
	if !ecdsa.Verify(pub, sum[:], r, s) {
		return Checked{}, invalid("signature does not verify")
	}
	var c proofClaims
	if err := decodePart(parts[1], &c); err != nil {
		return Checked{}, invalid("claims: " + err.Error())
	}
	jkt := h.JWK.thumbprint()
	if want.JKT != "" && subtle.ConstantTimeCompare([]byte(jkt), []byte(want.JKT)) != 1 {
		return Checked{}, invalid("the proof's key is not the one the token is bound to")
	}
	if c.JTI == "" || len(c.JTI) > 256 {
		return Checked{}, invalid("jti missing or too long")
	}
	if c.HTM != want.Method {
		return Checked{}, invalid("htm is not the request's method")
	}
	htu, err := HTU(want.URL)
	if err != nil {
		return Checked{}, err
	}
	if got, err := HTU(c.HTU); err != nil || got != htu {
		return Checked{}, invalid("htu is not the request's URL")
	}
	window := want.Window
	if window <= 0 {
		window = 60 * time.Second
	}
	iat := time.Unix(c.IAT, 0)
	if d := want.Now.Sub(iat); d > window || d < -window {
		return Checked{}, invalid("iat is not recent")
	}
	if want.AccessToken == "" {
		if c.ATH != "" {
			return Checked{}, invalid("ath without a token")
		}
	} else if subtle.ConstantTimeCompare([]byte(c.ATH), []byte(tokenHash(want.AccessToken))) != 1 {
		return Checked{}, invalid("ath is not the token's hash")
	}
	if want.Nonce != nil && (c.Nonce == "" || !want.Nonce(c.Nonce, want.Now)) {
		return Checked{}, ErrUseNonce
	}
	return Checked{JTI: c.JTI, JKT: jkt, IssuedAt: iat}, nil
}

func invalid(why string) error { return &proofError{why} }

type proofError struct{ why string }

func (e *proofError) Error() string { return "dpop: invalid proof: " + e.why }
func (e *proofError) Unwrap() error { return ErrInvalidProof }

// decodePart reads one base64url JSON part, refusing duplicate members.
func decodePart(part string, v any) error {
	b, err := base64.RawURLEncoding.DecodeString(part)
	if err != nil {
		return errors.New("not base64url")
	}
	if err := strictjson.Decode(b, v, &strictjson.Options{Object: true}, true); err != nil {
		return errors.New("not one JSON object without repeated members")
	}
	return nil
}
