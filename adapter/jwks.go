package adapter

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/propagation"

	"novaos.dev/novaos/strictjson"
)

// Defaults of JWKSOptions.
const (
	DefaultJWKSMaxBytes = 256 << 10
	DefaultJWKSMaxAge   = 24 * time.Hour
)

// JWKSOptions configure a JWKSCache; nil means the defaults.
type JWKSOptions struct {
	// Client makes the requests (default: a client whose timeout is
	// Settings.HTTPTimeout).
	Client *http.Client
	// Clock tells the time for max-age and the reload throttle (default
	// SystemClock).
	Clock Clock
	// Settings supplies JWKSRefreshMinInterval and HTTPTimeout (default
	// DefaultSettings).
	Settings *Settings
	// MaxBytes is the largest key set read (default DefaultJWKSMaxBytes).
	MaxBytes int64
	// MaxAge caps the max-age a response may ask to be kept for (default
	// DefaultJWKSMaxAge), so that a key the platform withdraws is dropped
	// within it whatever the header said.
	MaxAge time.Duration
}

// JWKSCache holds the platform's invocation-token keys, fetched from its
// JWKS URL and kept as long as the response's Cache-Control max-age
// says; without one (or with no-store or no-cache) the next use fetches
// again. A key id it does not know causes one forced reload, and forced
// reloads happen at most once per Settings.JWKSRefreshMinInterval, so
// that tokens naming made-up key ids cannot make the adapter hammer the
// platform. Only Ed25519 signing keys are kept: kty OKP, crv Ed25519, a
// 32-byte x, and alg and use, when present, EdDSA and sig; a key id that
// two such keys share is dropped. It is safe for concurrent use.
type JWKSCache struct {
	url         string
	client      *http.Client
	clock       Clock
	minInterval time.Duration
	maxBytes    int64
	maxAge      time.Duration

	// lock is held across a fetch; a channel so that a waiter can give up
	// when its context ends.
	lock       chan struct{}
	keys       map[string]ed25519.PublicKey
	fetched    bool
	expires    time.Time
	lastForced time.Time
}

var _ KeySource = (*JWKSCache)(nil)

// NewJWKSCache returns a cache of the key set at jwksURL, an absolute
// https URL (http only to 127.0.0.1, ::1 or localhost, so that keys
// never travel in clear text off the machine). Nothing is fetched before the first Key.
func NewJWKSCache(jwksURL string, opts *JWKSOptions) (*JWKSCache, error) {
	u, err := url.Parse(jwksURL)
	if err != nil {
		return nil, fmt.Errorf("adapter: JWKS URL: %w", err)
	}
	if u.Host == "" || (u.Scheme != "https" && !(u.Scheme == "http" && IsLoopbackHost(u.Hostname()))) {
		return nil, fmt.Errorf("adapter: JWKS URL %s: need an absolute https URL, or http to a loopback host", u.Redacted())
	}
	var o JWKSOptions
	if opts != nil {
		o = *opts
	}
	s := DefaultSettings()
	if o.Settings != nil {
		s = *o.Settings
	}
	c := &JWKSCache{
		url:         u.String(),
		client:      o.Client,
		clock:       o.Clock,
		minInterval: s.JWKSRefreshMinInterval,
		maxBytes:    o.MaxBytes,
		maxAge:      o.MaxAge,
		lock:        make(chan struct{}, 1),
	}
	if c.client == nil {
		c.client = &http.Client{Timeout: s.HTTPTimeout}
	}
	if c.clock == nil {
		c.clock = SystemClock{}
	}
	if c.maxBytes <= 0 {
		c.maxBytes = DefaultJWKSMaxBytes
	}
	if c.maxAge <= 0 {
		c.maxAge = DefaultJWKSMaxAge
	}
	return c, nil
}

// Key returns the key with key id kid, fetching the set when it has none
// fresh, and reloading it once when kid is unknown and the last forced
// reload is at least Settings.JWKSRefreshMinInterval ago. An unknown kid
// gives an error wrapping ErrUnknownKey; a failed fetch another error.
func (c *JWKSCache) Key(ctx context.Context, kid string) (ed25519.PublicKey, error) {
	select {
	case c.lock <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-c.lock }()

	now := c.clock.Now()
	fetchedNow := false
	if !c.fetched || !now.Before(c.expires) {
		if err := c.fetch(ctx); err != nil {
			return nil, err
		}
		fetchedNow = true
	}
	if k, ok := c.keys[kid]; ok {
		return k, nil
	}
	// A set fetched for this very call is as fresh as a reload would be.
	if fetchedNow || (!c.lastForced.IsZero() && now.Sub(c.lastForced) < c.minInterval) {
		return nil, fmt.Errorf("%w (%q)", ErrUnknownKey, jwksBound(kid))
	}
	c.lastForced = now
	if err := c.fetch(ctx); err != nil {
		return nil, err
	}
	if k, ok := c.keys[kid]; ok {
		return k, nil
	}
	return nil, fmt.Errorf("%w (%q)", ErrUnknownKey, jwksBound(kid))
}

// jwksBound keeps what an error repeats of a token's key id short.
func jwksBound(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// fetch GETs the key set and replaces the held one; on failure the held
// one stays as it was.
func (c *JWKSCache) fetch(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url, nil)
	if err != nil {
		return fmt.Errorf("adapter: fetch JWKS: %w", err)
	}
	req.Header.Set("Accept", "application/jwk-set+json, application/json")
	propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(req.Header))
	resp, err := c.client.Do(req)
	if err != nil {
		return fmt.Errorf("adapter: fetch JWKS: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("adapter: fetch JWKS %s: status %s", req.URL.Redacted(), resp.Status)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, c.maxBytes+1))
	if err != nil {
		return fmt.Errorf("adapter: fetch JWKS %s: %w", req.URL.Redacted(), err)
	}
	if int64(len(data)) > c.maxBytes {
		return fmt.Errorf("adapter: fetch JWKS %s: larger than %d bytes", req.URL.Redacted(), c.maxBytes)
	}
	keys, err := jwksParse(data)
	if err != nil {
		return fmt.Errorf("adapter: fetch JWKS %s: %w", req.URL.Redacted(), err)
	}
	c.keys, c.fetched = keys, true
	c.expires = c.clock.Now().Add(jwksMaxAge(resp.Header.Values("Cache-Control"), c.maxAge))
	return nil
}

// jwksMaxAge reads how long a response may be kept: its max-age, capped
// at limit; zero (fetch again on the next use) without one, or with
// no-store or no-cache.
func jwksMaxAge(headers []string, limit time.Duration) time.Duration {
	age := time.Duration(0)
	found := false
	for _, h := range headers {
		for d := range strings.SplitSeq(h, ",") {
			name, value, _ := strings.Cut(strings.TrimSpace(d), "=")
			switch strings.ToLower(strings.TrimSpace(name)) {
			case "no-store", "no-cache":
				return 0
			case "max-age":
				n, err := strconv.ParseInt(strings.Trim(strings.TrimSpace(value), `"`), 10, 64)
				if err != nil || n < 0 || found {
					// Malformed or repeated: not to be relied on.
					return 0
				}
				found = true
				if n > int64(limit/time.Second) {
					age = limit
				} else {
					age = time.Duration(n) * time.Second
				}
			}
		}
	}
	return age
}

// jwksParse reads a JSON Web Key Set and returns its usable invocation
// token keys by key id: kty OKP, crv Ed25519, a 32-byte base64url x, a
// key id, and alg and use, when present, EdDSA and sig. Other keys are
// left out; a key id that two usable keys share is left out too. The set
// itself must be an object with a "keys" array and no member named twice.
func jwksParse(data []byte) (map[string]ed25519.PublicKey, error) {
	if err := strictjson.Check(data, &strictjson.Options{Object: true, FoldCase: true, MaxDepth: 32}); err != nil {
		return nil, fmt.Errorf("key set: %w", err)
	}
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(data, &set); err != nil {
		return nil, fmt.Errorf("key set: %w", err)
	}
	if set.Keys == nil {
		return nil, fmt.Errorf("key set: no keys member")
	}
	keys := map[string]ed25519.PublicKey{}
	shared := map[string]bool{}
	for _, raw := range set.Keys {
		kid, key, ok := jwksUsable(raw)
		if !ok || shared[kid] {
			continue
		}
		if _, dup := keys[kid]; dup {
			delete(keys, kid)
			shared[kid] = true
			continue
		}
		keys[kid] = key
	}
	return keys, nil
}

// jwksUsable decodes one key and reports whether it is a usable one.
// Member names are matched exactly: a key read by a case-insensitive
// decoder could otherwise differ from the one the platform meant.
func jwksUsable(raw json.RawMessage) (string, ed25519.PublicKey, bool) {
	var members map[string]json.RawMessage
	if json.Unmarshal(raw, &members) != nil {
		return "", nil, false
	}
	str := func(name string) (string, bool, bool) { // value, present, a string
		m, ok := members[name]
		if !ok {
			return "", false, true
		}
		var s string
		return s, true, len(m) > 0 && m[0] == '"' && json.Unmarshal(m, &s) == nil
	}
	kty, _, ok1 := str("kty")
	crv, _, ok2 := str("crv")
	x, _, ok3 := str("x")
	kid, _, ok4 := str("kid")
	alg, hasAlg, ok5 := str("alg")
	use, hasUse, ok6 := str("use")
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) ||
		kty != "OKP" || crv != "Ed25519" || kid == "" ||
		(hasAlg && alg != "EdDSA") || (hasUse && use != "sig") {
		return "", nil, false
	}
	pub, err := base64.RawURLEncoding.Strict().DecodeString(x)
	if err != nil || len(pub) != ed25519.PublicKeySize {
		return "", nil, false
	}
	return kid, ed25519.PublicKey(pub), true
}
