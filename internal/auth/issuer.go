package auth

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/httpapi"
	"novaos.dev/novaos/internal/keyfile"
	"novaos.dev/novaos/jwk"
)

// KeyFile is the key ring's name in the data directory.
const KeyFile = "token.key"

// Defaults of Options.
const (
	DefaultTTL    = 15 * time.Minute
	DefaultMaxTTL = 24 * time.Hour
	// DefaultJWKSMaxAge is the JWKS's Cache-Control max-age. A verifier
	// that meets a new kid before its cache expires fetches anyway (see
	// identity.JWKS), so this bounds only how long a dropped key lingers.
	DefaultJWKSMaxAge = 5 * time.Minute
	// reloadEvery bounds how often the ring file is checked for a change
	// made by another process.
	reloadEvery = time.Second
)

// Signing algorithms of Options.Algorithm.
const (
	// RS256 is the default: the Python SDK's agents and auth proxy verify
	// RS256 execution tokens and nothing else.
	RS256 = jwk.RS256
	// EdDSA (Ed25519) signs about 30 times faster and makes smaller
	// tokens, for a platform whose agents all verify EdDSA.
	EdDSA = jwk.EdDSA
)

// RSABits is the modulus of the RSA keys the issuer makes. 2048 bits is
// what JWT issuers commonly sign with and what the Python SDK's PyJWT
// verifies; a 3072-bit key costs three times as much per token signed
// (2.3 ms against 0.74 ms) and four times as much to make, for a key
// that rotates and signs tokens that live minutes.
const RSABits = 2048

// ErrClaims is matched by Mint's error for claims or a ttl it will not
// sign: no tenant, an invalid scope, a ttl beyond MaxTTL.
var ErrClaims = errors.New("auth: claims refused")

// Options configure an Issuer. Issuer is required.
type Options struct {
	// Issuer is the iss of every token, and what the platform's verifier
	// expects: the server's public base URL by convention.
	Issuer string
	// Audience is the aud of a token minted without one, and what the
	// platform's verifier expects (identity.DefaultAudience).
	Audience string
	// DefaultTTL is the lifetime of a token minted with ttl 0 (DefaultTTL).
	DefaultTTL time.Duration
	// MaxTTL is the longest lifetime Mint signs (DefaultMaxTTL); a
	// retired key stays published this long (plus Leeway) after it
	// stopped signing.
	MaxTTL time.Duration
	// Leeway is the clock skew the platform's verifier allows
	// (identity.DefaultLeeway).
	Leeway time.Duration
	// KeyLifetime, when positive, rotates the signing key at the first
	// Mint after it is this old. Zero: rotate only when Rotate is called.
	KeyLifetime time.Duration
	// JWKSMaxAge is the JWKS's Cache-Control max-age (DefaultJWKSMaxAge).
	JWKSMaxAge time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Logger receives key creation and rotation; nil discards.
	Logger *slog.Logger
	// KeyFile holds the key ring Mount opens; default DataDir/token.key
	// (Open takes the path itself).
	KeyFile string
	// Algorithm is what tokens are signed with: RS256 (the default, RSA
	// keys of RSABits) or EdDSA. A ring whose active key is of the other
	// algorithm (a ring made before the default changed) keeps verifying
	// and is rotated at the first signature: the old key stays published
	// until every token it signed has expired, like any rotated-out key.
	Algorithm string
	// Revoked, when set, is asked about every token the platform's
	// verifier accepts (Verify, VerifyRequest, Middleware, Authenticator),
	// after its signature and claims passed: an error refuses the token,
	// an error matching identity.ErrRevoked (401 invalid_token). The
	// execution gateway answers "the token's run has ended". Nil: no token
	// is revoked. It runs on every authenticated request: keep it cheap.
	Revoked func(ctx context.Context, c *identity.Claims) error
}

// ringFile is the key ring as stored.
type ringFile struct {
	Active storedKey `json:"active"`
	// Companion is a key of the algorithm Active is not, for MintAs: the
	// execution gateway signs the tokens of agents hosted in the
	// platform's process EdDSA, a thirtieth of an RSA signature's cost,
	// while agents reached by URL verify RS256 only. Made on first need,
	// so a ring never asked for the other algorithm has none; omitted when
	// absent, so a ring file of before it reads the same.
	Companion *storedKey   `json:"companion,omitempty"`
	Retired   []retiredKey `json:"retired,omitempty"`
}

// storedKey is a private key of the ring as stored.
type storedKey struct {
	Key     json.RawMessage `json:"key"` // private JWK
	Created time.Time       `json:"created"`
}

type retiredKey struct {
	Key     json.RawMessage `json:"key"` // public JWK
	Retired time.Time       `json:"retired"`
	Until   time.Time       `json:"until"` // published until then
}

// ring is a loaded key ring.
type ring struct {
	file   ringFile
	active *ringKey
	// companion is nil when the ring has none. One of the active key's
	// algorithm (Options.Algorithm changed under it, or a hand-made file)
	// never signs, as MintAs of that algorithm has the active key; it is
	// published until a rotation, or a companion of the other algorithm,
	// retires it like any key that stopped signing.
	companion *ringKey
	retired   []published
	stamp     fileStamp
}

// ringKey is one of the ring's private keys, the active key or the
// companion, with what signing and publishing it need made once at load.
type ringKey struct {
	key *jwk.Key // private
	// public is key's public half, made once: the verifier remembers a
	// verified token only while its key source returns the same key.
	public  *jwk.Key
	alg     jose.SignatureAlgorithm
	signer  jose.Signer // of typ JWT
	priv    any         // the crypto key, for SignJWT's signers of other types
	created time.Time
}

type published struct {
	key   *jwk.Key // public
	until time.Time
}

// fileStamp tells whether the file changed since it was read.
type fileStamp struct {
	size    int64
	modTime time.Time
	ino     any
}

// Issuer mints and verifies the platform's execution tokens. It is safe
// for concurrent use, and implements identity.KeySource over its own
// published keys.
type Issuer struct {
	path string
	opts Options
	base string // the server's base URL, when mounted
	ver  *identity.Verifier

	mu        sync.Mutex
	ring      *ring
	checkedAt time.Time
}

var _ identity.KeySource = (*Issuer)(nil)

// Open loads the key ring at path, creating it with a new key when it
// does not exist. A ring file that is empty, open to other users or not
// a ring is an error: it is never replaced behind the operator's back.
// An empty path keeps the ring in memory only (tests, and a server with
// no data directory): its tokens stop verifying when the process ends.
func Open(path string, opts Options) (*Issuer, error) {
	if opts.Issuer == "" {
		return nil, errors.New("auth: Options.Issuer is required")
	}
	if opts.Audience == "" {
		opts.Audience = identity.DefaultAudience
	}
	if opts.MaxTTL <= 0 {
		opts.MaxTTL = DefaultMaxTTL
	}
	if opts.DefaultTTL <= 0 {
		opts.DefaultTTL = min(DefaultTTL, opts.MaxTTL)
	}
	if opts.DefaultTTL > opts.MaxTTL {
		return nil, fmt.Errorf("auth: default token TTL %s is beyond the maximum %s", opts.DefaultTTL, opts.MaxTTL)
	}
	if opts.Leeway == 0 {
		opts.Leeway = identity.DefaultLeeway
	}
	if opts.JWKSMaxAge <= 0 {
		opts.JWKSMaxAge = DefaultJWKSMaxAge
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	switch opts.Algorithm {
	case "":
		opts.Algorithm = RS256
	case RS256, EdDSA:
	default:
		return nil, fmt.Errorf("auth: token algorithm %q: want RS256 or EdDSA", opts.Algorithm)
	}
	i := &Issuer{path: path, opts: opts}
	var r *ring
	var err error
	if path == "" {
		r, err = i.create()
	} else if r, err = i.load(); errors.Is(err, fs.ErrNotExist) {
		r, err = i.create()
	}
	if err != nil {
		return nil, err
	}
	i.ring, i.checkedAt = r, opts.Now()
	i.ver, err = identity.New(i, identity.Options{
		Issuer: opts.Issuer, Audience: opts.Audience, Leeway: opts.Leeway, Now: opts.Now, Revoked: opts.Revoked,
	})
	if err != nil {
		return nil, err
	}
	return i, nil
}

// newKey makes a signing key of alg.
func newKey(alg string) (*jwk.Key, error) {
	var key *jwk.Key
	var err error
	if alg == RS256 {
		key, err = jwk.GenerateRSAKey(RSABits)
	} else {
		key, err = jwk.GenerateKey(alg)
	}
	if err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	return key, nil
}

// create makes the ring file with a new key; when another process made it
// first, its ring is loaded instead.
func (i *Issuer) create() (*ring, error) {
	key, err := newKey(i.opts.Algorithm)
	if err != nil {
		return nil, err
	}
	priv, _ := key.PrivateJWK()
	f := ringFile{Active: storedKey{Key: priv, Created: i.opts.Now().UTC()}}
	if i.path == "" {
		return i.parse(f, fileStamp{})
	}
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := keyfile.Create(i.path, data); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return i.load()
		}
		return nil, fmt.Errorf("auth: %w", err)
	}
	i.opts.Logger.Info("auth: created the token signing key", "file", i.path, "kid", key.KeyID())
	return i.load()
}

// load reads and parses the ring file.
func (i *Issuer) load() (*ring, error) {
	fi, err := os.Stat(i.path)
	if err != nil {
		return nil, err
	}
	data, err := keyfile.Read(i.path)
	if err != nil {
		return nil, fmt.Errorf("auth: token key ring: %w", err)
	}
	var f ringFile
	if err := json.Unmarshal(data, &f); err != nil {
		// Not the error's text: it could quote the key.
		return nil, fmt.Errorf("auth: token key ring %s is not a key ring (JSON with an active key)", i.path)
	}
	return i.parse(f, stampOf(fi))
}

// parse makes a ring of a ring file's content.
func (i *Issuer) parse(f ringFile, stamp fileStamp) (*ring, error) {
	active, err := i.parseKey("active", f.Active)
	if err != nil {
		return nil, err
	}
	r := &ring{file: f, active: active, stamp: stamp}
	if f.Companion != nil {
		if r.companion, err = i.parseKey("companion", *f.Companion); err != nil {
			return nil, err
		}
	}
	for _, rk := range f.Retired {
		k, err := jwk.ParseKey(rk.Key)
		if err != nil {
			return nil, fmt.Errorf("auth: token key ring %s: a retired key does not parse: %w", i.path, err)
		}
		r.retired = append(r.retired, published{key: k.Public(), until: rk.Until})
	}
	return r, nil
}

// parseKey makes a ringKey of the ring's private key named role. Its
// errors never carry the parser's: they could quote the key.
func (i *Issuer) parseKey(role string, sk storedKey) (*ringKey, error) {
	key, err := jwk.ParseKey(sk.Key)
	if err != nil || !key.IsPrivate() || (key.Algorithm() != EdDSA && key.Algorithm() != RS256) {
		return nil, fmt.Errorf("auth: token key ring %s: the %s key is not a private Ed25519 or RSA JWK", i.path, role)
	}
	var jk jose.JSONWebKey
	if err := jk.UnmarshalJSON(sk.Key); err != nil {
		return nil, fmt.Errorf("auth: token key ring %s: the %s key does not parse", i.path, role)
	}
	if k, ok := jk.Key.(*rsa.PrivateKey); ok {
		// Without it every signature repeats the key's checks and
		// precomputation, a tenth of its cost.
		k.Precompute()
	}
	alg := jose.SignatureAlgorithm(key.Algorithm())
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: jose.JSONWebKey{Key: jk.Key, KeyID: key.KeyID()}},
		(&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		return nil, fmt.Errorf("auth: token signer: %w", err)
	}
	return &ringKey{key: key, public: key.Public(), alg: alg, signer: signer, priv: jk.Key, created: sk.Created}, nil
}

func stampOf(fi fs.FileInfo) fileStamp {
	return fileStamp{size: fi.Size(), modTime: fi.ModTime(), ino: inode(fi)}
}

// current returns the ring, reloaded first when the file changed since it
// was read and it was last checked more than reloadEvery ago (or force).
func (i *Issuer) current(force bool) *ring {
	i.mu.Lock()
	defer i.mu.Unlock()
	now := i.opts.Now()
	if i.path == "" || (!force && now.Sub(i.checkedAt) < reloadEvery) {
		return i.ring
	}
	i.checkedAt = now
	fi, err := os.Stat(i.path)
	if err != nil || stampOf(fi) == i.ring.stamp {
		return i.ring
	}
	r, err := i.load()
	if err != nil {
		// Keep signing and verifying with what was loaded; a broken file
		// is the operator's to fix, and is said once per check.
		i.opts.Logger.Error("auth: the token key ring changed and cannot be read; keeping the keys loaded before", "file", i.path, "err", err)
		return i.ring
	}
	i.ring = r
	return r
}

// Mint signs a token of c valid for ttl (0: Options.DefaultTTL, at most
// Options.MaxTTL). The issuer sets iss, iat, nbf, exp and a random jti;
// aud defaults to Options.Audience and sub to the agent id. c must carry
// a tenant, and every scope must follow the scope grammar.
func (i *Issuer) Mint(ctx context.Context, c identity.Claims, ttl time.Duration) (string, error) {
	return i.mint(ctx, i.opts.Algorithm, c, ttl)
}

// MintAs is Mint signing with a key of alg, RS256 or EdDSA (another is an
// ErrClaims error). Of Options.Algorithm it is Mint. Of the other, it
// signs with the ring's companion key, made (and written to the ring
// file) at the first need and replaced once older than
// Options.KeyLifetime; the companion is published like the active key
// and retired with it at every rotation. It is for the execution gateway:
// the agents hosted in the platform's process, whose verifier takes
// either algorithm, get tokens of the cheaper EdDSA on an RS256 ring.
func (i *Issuer) MintAs(ctx context.Context, alg string, c identity.Claims, ttl time.Duration) (string, error) {
	if alg != RS256 && alg != EdDSA {
		return "", fmt.Errorf("%w: token algorithm %q: want RS256 or EdDSA", ErrClaims, alg)
	}
	return i.mint(ctx, alg, c, ttl)
}

// mint is Mint and MintAs: c checked and completed, signed with a key of
// alg.
func (i *Issuer) mint(ctx context.Context, alg string, c identity.Claims, ttl time.Duration) (string, error) {
	if ttl == 0 {
		ttl = i.opts.DefaultTTL
	}
	if ttl < 0 || ttl > i.opts.MaxTTL {
		return "", fmt.Errorf("%w: ttl %s is not within (0, %s]", ErrClaims, ttl, i.opts.MaxTTL)
	}
	if c.TenantID == "" {
		return "", fmt.Errorf("%w: no tenant", ErrClaims)
	}
	for _, s := range c.Scopes {
		if !identity.ValidScope(s) {
			return "", fmt.Errorf("%w: scope %q does not follow the scope grammar (segments of a-z, 0-9, -, _, . or *, joined by :)", ErrClaims, s)
		}
	}
	k, err := i.signingKey(ctx, alg)
	if err != nil {
		return "", err
	}
	now := i.opts.Now().Truncate(time.Second)
	c.Issuer = i.opts.Issuer
	if len(c.Audience) == 0 {
		c.Audience = []string{i.opts.Audience}
	}
	if c.Subject == "" {
		c.Subject = c.AgentID
	}
	c.IssuedAt, c.NotBefore, c.Expiry = now, now, now.Add(ttl)
	jti := make([]byte, 16)
	rand.Read(jti)
	c.ID = base64.RawURLEncoding.EncodeToString(jti)
	payload, err := c.MarshalJSON()
	if err != nil {
		return "", fmt.Errorf("auth: %w", err)
	}
	jws, err := k.signer.Sign(payload)
	if err != nil {
		return "", fmt.Errorf("auth: sign: %w", err)
	}
	tok, err := jws.CompactSerialize()
	if err != nil {
		return "", fmt.Errorf("auth: sign: %w", err)
	}
	// The token is often verified in this process soon after (by an
	// agent hosted here): the platform's verifier need not check the
	// signature it has just made. A failure only costs that check.
	_ = i.ver.Vouch(ctx, tok)
	return tok, nil
}

// signingKey returns the key to sign a token of alg with: the active key
// for Options.Algorithm, else the companion, made or replaced first when
// the ring has none fit to sign.
func (i *Issuer) signingKey(ctx context.Context, alg string) (*ringKey, error) {
	r, err := i.signing(ctx)
	if err != nil {
		return nil, err
	}
	// The active key also signs the other algorithm when another process
	// has just rotated the ring to it: a companion would duplicate it.
	if alg == i.opts.Algorithm || string(r.active.alg) == alg {
		return r.active, nil
	}
	if i.companionStale(r, alg) == "" {
		return r.companion, nil
	}
	return i.makeCompanion(ctx, alg)
}

// companionStale says why r's companion must not sign tokens of alg, or
// "" when it may.
func (i *Issuer) companionStale(r *ring, alg string) string {
	switch c := r.companion; {
	case c == nil:
		return "the ring has no companion key"
	case string(c.alg) != alg:
		return "the companion key is " + string(c.alg) + " and tokens are to be signed " + alg
	case i.opts.KeyLifetime > 0 && i.opts.Now().Sub(c.created) >= i.opts.KeyLifetime:
		return "the companion key is past its lifetime"
	}
	return ""
}

// makeCompanion gives the ring a companion key of alg, retiring the one
// it had, and returns it. Like rotate it starts from the file under the
// ring's lock, so of processes sharing the ring that need a companion at
// once only the first makes it and the others sign with it.
func (i *Issuer) makeCompanion(ctx context.Context, alg string) (*ringKey, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	r, unlock, err := i.lockAndLoad()
	if err != nil {
		return nil, err
	}
	defer unlock()
	why := i.companionStale(r, alg)
	switch {
	case string(r.active.alg) == alg:
		i.ring, i.checkedAt = r, i.opts.Now()
		return r.active, nil
	case why == "":
		i.ring, i.checkedAt = r, i.opts.Now()
		return r.companion, nil
	}
	now := i.opts.Now().UTC()
	key, err := newKey(alg)
	if err != nil {
		return nil, err
	}
	priv, _ := key.PrivateJWK()
	f := ringFile{Active: r.file.Active, Companion: &storedKey{Key: priv, Created: now}}
	logArgs := []any{"file", i.path, "kid", key.KeyID(), "alg", alg, "active_kid", r.active.key.KeyID()}
	var retiring []*ringKey
	if r.companion != nil {
		retiring = append(retiring, r.companion)
		logArgs = append(logArgs, "retired_kid", r.companion.key.KeyID(), "why", why)
	}
	f.Retired = i.retire(now, r.file.Retired, retiring...)
	nr, err := i.store(f)
	if err != nil {
		return nil, err
	}
	i.ring, i.checkedAt = nr, i.opts.Now()
	i.opts.Logger.Info("auth: created the token companion key", logArgs...)
	// Under the ring's lock the file read back is the one written; on a
	// platform without flock it can have been replaced in between.
	if nr.companion == nil || nr.companion.key.KeyID() != key.KeyID() {
		return nil, fmt.Errorf("auth: token key ring %s changed while its companion key was written", i.path)
	}
	return nr.companion, nil
}

// lockAndLoad takes the ring's lock and reads the file (the ring in
// memory when there is none): a change must start from what another
// process may have written. The caller holds i.mu and calls unlock.
func (i *Issuer) lockAndLoad() (r *ring, unlock func(), err error) {
	if i.path == "" {
		return i.ring, func() {}, nil
	}
	if unlock, err = lockRing(i.path); err != nil {
		return nil, nil, err
	}
	if r, err = i.load(); err != nil {
		unlock()
		return nil, nil, err
	}
	return r, unlock, nil
}

// retire returns the retired keys of a ring file that retires keys now:
// each published until the last token it can have signed has expired,
// then those of old still published; the others are dropped, so the file
// does not keep them forever.
func (i *Issuer) retire(now time.Time, old []retiredKey, keys ...*ringKey) []retiredKey {
	var out []retiredKey
	for _, k := range keys {
		pub, _ := json.Marshal(k.public)
		out = append(out, retiredKey{Key: pub, Retired: now, Until: now.Add(i.opts.MaxTTL + i.opts.Leeway)})
	}
	for _, rk := range old {
		if rk.Until.After(now) {
			out = append(out, rk)
		}
	}
	return out
}

// store writes f as the ring file (whole, in one rename) and returns it as
// read back; an in-memory ring is only parsed. The caller holds the
// ring's lock.
func (i *Issuer) store(f ringFile) (*ring, error) {
	if i.path == "" {
		return i.parse(f, fileStamp{})
	}
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := keyfile.Replace(i.path, data); err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	return i.load()
}

// signing returns the ring to sign with, rotated first when its key is
// older than Options.KeyLifetime or not of Options.Algorithm.
func (i *Issuer) signing(ctx context.Context) (*ring, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if r := i.current(false); i.stale(r) != "" {
		if _, err := i.rotate(ctx, true); err != nil {
			return nil, err
		}
	}
	return i.current(false), nil
}

// stale says why r's active key must not sign any more, or "".
func (i *Issuer) stale(r *ring) string {
	switch {
	case string(r.active.alg) != i.opts.Algorithm:
		return "the active key is " + string(r.active.alg) + " and tokens are to be signed " + i.opts.Algorithm
	case i.opts.KeyLifetime > 0 && i.opts.Now().Sub(r.active.created) >= i.opts.KeyLifetime:
		return "the active key is past its lifetime"
	}
	return ""
}

// IssuerURL is the iss of the tokens the issuer signs.
func (i *Issuer) IssuerURL() string { return i.opts.Issuer }

// SignJWT signs claims, a JSON object the caller made, with the active key:
// a compact JWS (of Algorithm) whose header carries typ and the key's kid,
// so a verifier of the published keys (JWKSHandler) checks it. It is for the
// platform's other tokens, such as push notifications' (typ
// a2a.PushTokenType), which a verifier of execution tokens refuses by
// their audience; Mint makes execution tokens.
func (i *Issuer) SignJWT(ctx context.Context, typ string, claims []byte) (string, error) {
	if typ == "" || typ == "JWT" {
		return "", fmt.Errorf("%w: SignJWT needs a typ of its own; Mint signs execution tokens", ErrClaims)
	}
	r, err := i.signing(ctx)
	if err != nil {
		return "", err
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: r.active.alg, Key: jose.JSONWebKey{Key: r.active.priv, KeyID: r.active.key.KeyID()}},
		(&jose.SignerOptions{}).WithType(jose.ContentType(typ)))
	if err != nil {
		return "", fmt.Errorf("auth: signer: %w", err)
	}
	jws, err := signer.Sign(claims)
	if err != nil {
		return "", fmt.Errorf("auth: sign: %w", err)
	}
	return jws.CompactSerialize()
}

// Rotate makes a new signing key of Options.Algorithm and retires the
// active one, which stays published until the last token it can have
// signed has expired. It returns the new key's kid.
func (i *Issuer) Rotate(ctx context.Context) (string, error) {
	return i.rotate(ctx, false)
}

// rotate is Rotate; onlyStale rotates only if the active key in the file
// is still stale, so that processes sharing a ring, which all notice a
// stale key at once, rotate it once.
func (i *Issuer) rotate(ctx context.Context, onlyStale bool) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	// Start from the file, not memory: another process may have rotated.
	r, unlock, err := i.lockAndLoad()
	if err != nil {
		return "", err
	}
	defer unlock()
	why := i.stale(r)
	if onlyStale && why == "" {
		i.ring, i.checkedAt = r, i.opts.Now()
		return r.active.key.KeyID(), nil
	}
	now := i.opts.Now().UTC()
	key, err := newKey(i.opts.Algorithm)
	if err != nil {
		return "", err
	}
	priv, _ := key.PrivateJWK()
	// The companion goes with the key it accompanied: the new ring gets
	// one when a token of the other algorithm is next asked for.
	f := ringFile{Active: storedKey{Key: priv, Created: now}}
	logArgs := []any{"file", i.path, "kid", key.KeyID(), "alg", key.Algorithm(), "retired_kid", r.active.key.KeyID()}
	retiring := []*ringKey{r.active}
	if r.companion != nil {
		retiring = append(retiring, r.companion)
		logArgs = append(logArgs, "retired_companion_kid", r.companion.key.KeyID())
	}
	f.Retired = i.retire(now, r.file.Retired, retiring...)
	nr, err := i.store(f)
	if err != nil {
		return "", err
	}
	i.ring, i.checkedAt = nr, i.opts.Now()
	if !onlyStale {
		why = "asked to"
	}
	i.opts.Logger.Info("auth: rotated the token signing key", append(logArgs, "why", why)...)
	return key.KeyID(), nil
}

// PublicKeys returns the keys a verifier of the platform's tokens needs:
// the active key's public half first, then the companion's when the ring
// has one, then every retired key still published.
func (i *Issuer) PublicKeys() []*jwk.Key {
	r := i.current(false)
	now := i.opts.Now()
	keys := []*jwk.Key{r.active.public}
	if r.companion != nil {
		keys = append(keys, r.companion.public)
	}
	for _, p := range r.retired {
		if p.until.After(now) {
			keys = append(keys, p.key)
		}
	}
	return keys
}

// KeyID is the active signing key's kid.
func (i *Issuer) KeyID() string { return i.current(false).active.key.KeyID() }

// Algorithm is Options.Algorithm: what the issuer signs with from its
// next signature on (the active key is rotated first if it is of another
// algorithm).
func (i *Issuer) Algorithm() string { return i.opts.Algorithm }

// Key implements identity.KeySource over PublicKeys. Like every use of
// the ring it looks at the file again when it was last checked more than
// a second ago, so a key another process rotated in is found.
func (i *Issuer) Key(_ context.Context, kid string) (*jwk.Key, error) {
	r := i.current(false)
	if r.active.key.KeyID() == kid {
		return r.active.public, nil
	}
	if r.companion != nil && r.companion.key.KeyID() == kid {
		return r.companion.public, nil
	}
	now := i.opts.Now()
	for _, p := range r.retired {
		if p.key.KeyID() == kid && p.until.After(now) {
			return p.key, nil
		}
	}
	return nil, &identity.Error{Kind: identity.ErrUnknownKey, Reason: "no published platform key with the token's kid"}
}

// Verifier is the platform's own verifier: tokens of this issuer and
// audience, signed by a key the ring publishes.
func (i *Issuer) Verifier() *identity.Verifier { return i.ver }

// Verify verifies a token with Verifier.
func (i *Issuer) Verify(ctx context.Context, token string) (*identity.Claims, error) {
	return i.ver.Verify(ctx, token)
}

// VerifyRequest verifies r's bearer token (identity.Verifier.VerifyRequest)
// for a handler that serves callers without one too.
func (i *Issuer) VerifyRequest(r *http.Request) (*identity.Claims, error) {
	c, _, err := i.ver.VerifyRequest(r)
	return c, err
}

// Middleware lets a request through to next only with a valid platform
// token, its claims in the request context (identity.FromContext) and
// its caller noted for the middleware above (httpapi.NoteCaller); see
// identity.Middleware for the answers otherwise (401 with
// WWW-Authenticate: Bearer error="invalid_token").
func (i *Issuer) Middleware(next http.Handler) http.Handler {
	return identity.Middleware(i.ver, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c, ok := identity.FromContext(r.Context()); ok {
			httpapi.NoteCaller(r.Context(), tokenCaller(c))
		}
		next.ServeHTTP(w, r)
	}))
}

// JWKSHandler serves the JWKS of PublicKeys, for /.well-known/jwks.json,
// with Cache-Control max-age Options.JWKSMaxAge. It holds the token keys
// only: a verifier of this set accepts whatever its keys sign, so a key
// with another job (the agent-card key) is published in a key set of its
// own (KeySetHandler), never here.
func (i *Issuer) JWKSHandler() http.Handler {
	return keySetHandler(i.PublicKeys, i.opts.JWKSMaxAge)
}

// KeySetHandler serves the JWKS of the public halves of keys (nil entries
// skipped) with Cache-Control max-age maxAge (DefaultJWKSMaxAge when not
// positive): a key set other than the token keys', such as the
// agent-card signing key's.
func KeySetHandler(maxAge time.Duration, keys ...*jwk.Key) http.Handler {
	var set []*jwk.Key
	for _, k := range keys {
		if k != nil {
			set = append(set, k)
		}
	}
	if maxAge <= 0 {
		maxAge = DefaultJWKSMaxAge
	}
	return keySetHandler(func() []*jwk.Key { return set }, maxAge)
}

func keySetHandler(keys func() []*jwk.Key, maxAge time.Duration) http.Handler {
	cacheControl := fmt.Sprintf("public, max-age=%d", int(maxAge/time.Second))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		body, err := json.Marshal(jwk.NewKeySet(keys()...))
		if err != nil {
			http.Error(w, "key set unavailable", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/jwk-set+json")
		w.Header().Set("Cache-Control", cacheControl)
		w.Write(body)
	})
}
