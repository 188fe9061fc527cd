package identity

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	"novaos.dev/novaos/jwk"
)

// Signature algorithms a Verifier may accept. Nothing else ever is:
// not "none", not HS256 (whose "key" would be whatever bytes the verifier
// holds, such as a public key), not RS384 or PS256.
const (
	EdDSA = jwk.EdDSA // Ed25519, what the platform signs with when told to
	ES256 = jwk.ES256
	RS256 = jwk.RS256 // what the platform, like the Python SDK's gateway, signs with by default
)

// Defaults of Options.
const (
	// DefaultAudience is the Python SDK verifier's default aud.
	DefaultAudience = "acp-agent"
	// DefaultLeeway is the clock skew allowed on exp, nbf and iat.
	DefaultLeeway = 30 * time.Second
	// DefaultMaxTokenBytes bounds a token before any of it is decoded.
	DefaultMaxTokenBytes = 8 << 10
	// DefaultCacheSize is how many verified tokens a Verifier remembers.
	DefaultCacheSize = 4096
)

// Options configure a Verifier. Issuer is required; zero fields mean the
// defaults.
type Options struct {
	// Issuer is the iss every token must carry. There is deliberately no
	// default: without it a token from another issuer sharing the key
	// set would pass.
	Issuer string
	// Audience must be among the token's aud (DefaultAudience).
	Audience string
	// Algorithms is the allow-list, a subset of EdDSA, ES256 and RS256
	// (default: all three).
	Algorithms []string
	// Leeway is the clock skew tolerated on exp, nbf and iat
	// (DefaultLeeway); negative means none.
	Leeway time.Duration
	// MaxTokenBytes is the largest token read (DefaultMaxTokenBytes).
	MaxTokenBytes int
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// CacheSize bounds the tokens whose verified signature is remembered
	// (DefaultCacheSize); negative disables the cache. See Verifier.
	CacheSize int
	// Revoked, when set, is asked about every token whose signature and
	// claims passed, a remembered one included, on every Verify: an
	// error refuses the token with ErrRevoked (the error is kept as the
	// rejection's Cause, never shown). Nil: no token is ever revoked. It
	// runs on every request a token authenticates, so it must be cheap.
	Revoked func(ctx context.Context, c *Claims) error
}

// Verifier checks execution tokens: a compact JWS whose header names an
// allowed alg and a kid its KeySource knows, whose signature verifies,
// and whose claims carry the expected issuer and audience, an expiry not
// past and a tenant. It is safe for concurrent use.
//
// A client sends the same token with every call, and checking its
// signature is most of a small request's CPU, so the Verifier remembers
// the claims of tokens whose signature verified, by the token's SHA-256
// (the token itself is not kept). A remembered token is accepted only
// while its key source still returns the very key that verified it, and
// its claims are checked again (expiry included) on every call.
type Verifier struct {
	keys   KeySource
	opts   Options
	joseAl map[string][]jose.SignatureAlgorithm

	mu       sync.Mutex
	verified map[[sha256.Size]byte]verifiedToken
}

// verifiedToken is a token whose signature verified under key.
type verifiedToken struct {
	kid    string
	key    *jwk.Key
	claims Claims
}

// New returns a Verifier taking keys from keys.
func New(keys KeySource, opts Options) (*Verifier, error) {
	if keys == nil {
		return nil, errors.New("identity: no key source")
	}
	if opts.Issuer == "" {
		return nil, errors.New("identity: Options.Issuer is required: pass the issuer your tokens come from")
	}
	if opts.Audience == "" {
		opts.Audience = DefaultAudience
	}
	if len(opts.Algorithms) == 0 {
		opts.Algorithms = []string{EdDSA, ES256, RS256}
	}
	v := &Verifier{keys: keys, joseAl: map[string][]jose.SignatureAlgorithm{}}
	for _, a := range opts.Algorithms {
		switch a {
		case EdDSA, ES256, RS256:
			v.joseAl[a] = []jose.SignatureAlgorithm{jose.SignatureAlgorithm(a)}
		default:
			return nil, fmt.Errorf("identity: algorithm %q cannot be allowed: want EdDSA, ES256 or RS256", a)
		}
	}
	opts.Algorithms = slices.Clone(opts.Algorithms)
	if opts.Leeway == 0 {
		opts.Leeway = DefaultLeeway
	} else if opts.Leeway < 0 {
		opts.Leeway = 0
	}
	if opts.MaxTokenBytes <= 0 {
		opts.MaxTokenBytes = DefaultMaxTokenBytes
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.CacheSize == 0 {
		opts.CacheSize = DefaultCacheSize
	}
	if opts.CacheSize > 0 {
		v.verified = make(map[[sha256.Size]byte]verifiedToken)
	}
	v.opts = opts
	return v, nil
}

// NewJWKSVerifier is the Python SDK's JWKSTokenVerifier: tokens of issuer,
// verified with the keys the gateway at gatewayURL publishes at
// JWKSURL(gatewayURL). opts may be nil; its Issuer is set to issuer.
func NewJWKSVerifier(gatewayURL, issuer string, jwks *JWKSOptions, opts *Options) (*Verifier, error) {
	keys, err := NewJWKS(JWKSURL(gatewayURL), jwks)
	if err != nil {
		return nil, err
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	o.Issuer = issuer
	return New(keys, o)
}

// Issuer is the issuer the verifier expects.
func (v *Verifier) Issuer() string { return v.opts.Issuer }

// Audience is the audience the verifier expects.
func (v *Verifier) Audience() string { return v.opts.Audience }

// header is the protected header, read before the signature is checked
// only to pick the key and algorithm.
type header struct {
	alg, kid, typ string
}

// Verify checks token (without a "Bearer " prefix) and returns its
// claims. A rejection matches ErrInvalid and one kind (ErrExpired,
// ErrBadSignature, …); ErrKeysUnavailable means the keys could not be
// fetched. No error includes the token.
func (v *Verifier) Verify(ctx context.Context, token string) (*Claims, error) {
	if len(token) > v.opts.MaxTokenBytes {
		return nil, invalid(ErrMalformed, "larger than %d bytes", v.opts.MaxTokenBytes)
	}
	var sum [sha256.Size]byte
	if v.verified != nil {
		sum = sha256.Sum256([]byte(token))
		v.mu.Lock()
		t, ok := v.verified[sum]
		v.mu.Unlock()
		if ok {
			if key, err := v.keys.Key(ctx, t.kid); err == nil && key == t.key {
				return v.checked(ctx, t.claims)
			}
		}
	}
	h, err := parseHeader(token)
	if err != nil {
		return nil, err
	}
	algs, ok := v.joseAl[h.alg]
	if !ok {
		return nil, invalid(ErrAlgorithm, "alg %s is not one of %s", quote(h.alg), strings.Join(v.opts.Algorithms, ", "))
	}
	if h.kid == "" {
		return nil, invalid(ErrMalformed, "no kid")
	}
	key, err := v.keys.Key(ctx, h.kid)
	if err != nil {
		return nil, err
	}
	if key.Algorithm() != h.alg {
		return nil, invalid(ErrAlgorithm, "alg %s does not fit key %s, a %s key", quote(h.alg), quote(h.kid), key.Algorithm())
	}
	jws, err := jose.ParseSignedCompact(token, algs)
	if err != nil {
		// parseHeader accepted what go-jose refused: say so without its
		// message, which may quote the input.
		return nil, invalid(ErrMalformed, "not a compact JWS")
	}
	payload, err := jws.Verify(key.PublicKey())
	if err != nil {
		return nil, invalid(ErrBadSignature, "signature does not verify under key %s", quote(h.kid))
	}
	c, err := parseClaims(payload)
	if err != nil {
		return nil, err
	}
	if err := v.check(c); err != nil {
		return nil, err
	}
	if v.verified != nil {
		v.remember(sum, verifiedToken{kid: h.kid, key: key, claims: *c})
	}
	if err := v.revoked(ctx, c); err != nil {
		return nil, err
	}
	return c, nil
}

// Vouch remembers token as verified without checking its signature: for
// an issuer that has just signed token itself, so that the first Verify
// of it in this process (an agent hosted here, called with it) costs no
// signature check. Everything else is checked as for a remembered token,
// on every Verify: the key must still be the one its kid names, the
// claims must pass, and the revocation hook is asked. Only code that
// made token may vouch for it. It does nothing when the cache is off.
func (v *Verifier) Vouch(ctx context.Context, token string) error {
	if v.verified == nil {
		return nil
	}
	if len(token) > v.opts.MaxTokenBytes {
		return invalid(ErrMalformed, "larger than %d bytes", v.opts.MaxTokenBytes)
	}
	h, err := parseHeader(token)
	if err != nil {
		return err
	}
	key, err := v.keys.Key(ctx, h.kid)
	if err != nil {
		return err
	}
	if key.Algorithm() != h.alg {
		return invalid(ErrAlgorithm, "alg %s does not fit key %s, a %s key", quote(h.alg), quote(h.kid), key.Algorithm())
	}
	_, rest, _ := strings.Cut(token, ".")
	enc, _, _ := strings.Cut(rest, ".")
	payload, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil {
		return invalid(ErrMalformed, "payload is not base64url")
	}
	c, err := parseClaims(payload)
	if err != nil {
		return err
	}
	v.remember(sha256.Sum256([]byte(token)), verifiedToken{kid: h.kid, key: key, claims: *c})
	return nil
}

// revoked asks Options.Revoked about verified claims. A revoked token is
// still remembered: its signature did verify, and asking again is the
// hook's business.
func (v *Verifier) revoked(ctx context.Context, c *Claims) error {
	if v.opts.Revoked == nil {
		return nil
	}
	if err := v.opts.Revoked(ctx, c); err != nil {
		return &Error{Kind: ErrRevoked, Cause: err}
	}
	return nil
}

// remember adds a verified token, first dropping an arbitrary one when
// the cache is full (map iteration order is random).
func (v *Verifier) remember(sum [sha256.Size]byte, t verifiedToken) {
	t.claims.Audience, t.claims.Scopes = slices.Clone(t.claims.Audience), slices.Clone(t.claims.Scopes)
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.verified) >= v.opts.CacheSize {
		for k := range v.verified {
			delete(v.verified, k)
			break
		}
	}
	v.verified[sum] = t
}

// checked applies the claim rules and the revocation hook to remembered
// claims and returns a copy the caller may change.
func (v *Verifier) checked(ctx context.Context, c Claims) (*Claims, error) {
	c.Audience, c.Scopes = slices.Clone(c.Audience), slices.Clone(c.Scopes)
	if err := v.check(&c); err != nil {
		return nil, err
	}
	if err := v.revoked(ctx, &c); err != nil {
		return nil, err
	}
	return &c, nil
}

// check applies the claim rules to a verified claims set.
func (v *Verifier) check(c *Claims) error {
	if c.Issuer != v.opts.Issuer {
		return invalid(ErrIssuer, "iss %s, want %s", quote(c.Issuer), quote(v.opts.Issuer))
	}
	if !slices.Contains(c.Audience, v.opts.Audience) {
		return invalid(ErrAudience, "aud does not include %s", quote(v.opts.Audience))
	}
	now := v.opts.Now()
	lw := v.opts.Leeway
	if c.Expiry.IsZero() {
		return invalid(ErrMissingClaim, "no exp")
	}
	if now.After(c.Expiry.Add(lw)) {
		return invalid(ErrExpired, "expired at %s", c.Expiry.UTC().Format(time.RFC3339))
	}
	if !c.NotBefore.IsZero() && now.Add(lw).Before(c.NotBefore) {
		return invalid(ErrNotYetValid, "not valid before %s", c.NotBefore.UTC().Format(time.RFC3339))
	}
	if !c.IssuedAt.IsZero() && now.Add(lw).Before(c.IssuedAt) {
		return invalid(ErrNotYetValid, "issued in the future, at %s", c.IssuedAt.UTC().Format(time.RFC3339))
	}
	if c.TenantID == "" {
		return invalid(ErrMissingClaim, "no %s", ClaimTenantID)
	}
	return nil
}

// forbiddenHeaders are header members a platform token never carries and
// that would change how it is read: extensions it must understand (crit,
// b64) and keys or key locations it names itself (jwk, jku, x5u, x5c),
// which a verifier that trusts only its own key source must not be shown.
var forbiddenHeaders = map[string]bool{"crit": true, "b64": true, "jwk": true, "jku": true, "x5u": true, "x5c": true}

// canonical reports whether s is unpadded base64url whose last character
// carries no bits beyond the encoded bytes (RFC 4648 §3.5).
func canonical(s string) bool {
	if len(s)%4 == 1 {
		return false
	}
	if s == "" || len(s)%4 == 0 {
		return true
	}
	i := strings.IndexByte(b64alphabet, s[len(s)-1])
	if i < 0 {
		return false
	}
	if len(s)%4 == 2 {
		return i&0x0f == 0
	}
	return i&0x03 == 0
}

const b64alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

// parseHeader reads the protected header of a compact JWS strictly.
func parseHeader(token string) (header, error) {
	var h header
	enc, rest, ok := strings.Cut(token, ".")
	if !ok || strings.Count(rest, ".") != 1 || enc == "" {
		return h, invalid(ErrMalformed, "not three dot-separated parts")
	}
	payload, sig, _ := strings.Cut(rest, ".")
	if !canonical(enc) || !canonical(payload) || !canonical(sig) {
		// Decoders ignore the spare bits of a last character, so one
		// token could otherwise be spelled several ways, and a cache or
		// replay check keyed by the string would see different tokens.
		return h, invalid(ErrMalformed, "not canonical base64url")
	}
	raw, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil {
		return h, invalid(ErrMalformed, "header is not base64url")
	}
	err = eachMember(raw, func(name string, raw json.RawMessage) error {
		if forbiddenHeaders[name] {
			return fmt.Errorf("header %q is not accepted", name)
		}
		var dst *string
		switch name {
		case "alg":
			dst = &h.alg
		case "kid":
			dst = &h.kid
		case "typ":
			dst = &h.typ
		default:
			return nil
		}
		if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, dst) != nil {
			return fmt.Errorf("header %q is not a string", name)
		}
		return nil
	})
	if err != nil {
		return h, invalid(ErrMalformed, "header: %s", err)
	}
	if h.alg == "" {
		return h, invalid(ErrAlgorithm, "no alg")
	}
	if h.typ != "" && !strings.EqualFold(h.typ, "JWT") && !strings.EqualFold(h.typ, "application/jwt") {
		// A card signature (JOSE) or a pull-delivery invocation token
		// (agent-invocation+jwt) is not an execution token.
		return h, invalid(ErrMalformed, "typ %s is not JWT", quote(h.typ))
	}
	return h, nil
}
