package identity

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"novaos.dev/novaos/jwk"
	"novaos.dev/novaos/netguard"
)

// KeySource finds the public key a token's kid names.
type KeySource interface {
	// Key returns the public key with id kid, an error matching
	// ErrUnknownKey when there is none, or one matching
	// ErrKeysUnavailable when the keys could not be loaded.
	Key(ctx context.Context, kid string) (*jwk.Key, error)
}

// StaticKeys is a KeySource over keys given in-process: the platform's own
// verifier, or an agent given its issuer's keys in its configuration.
type StaticKeys struct {
	byID map[string]*jwk.Key
}

var _ KeySource = (*StaticKeys)(nil)

// NewStaticKeys returns a source of the public halves of keys. Two keys
// with one kid are an error: which one a token meant would be a guess.
func NewStaticKeys(keys ...*jwk.Key) (*StaticKeys, error) {
	s := &StaticKeys{byID: make(map[string]*jwk.Key, len(keys))}
	for _, k := range keys {
		if k.KeyID() == "" {
			return nil, errors.New("identity: a key without a kid")
		}
		if _, dup := s.byID[k.KeyID()]; dup {
			return nil, fmt.Errorf("identity: two keys with kid %q", k.KeyID())
		}
		s.byID[k.KeyID()] = k.Public()
	}
	return s, nil
}

// Key implements KeySource.
func (s *StaticKeys) Key(_ context.Context, kid string) (*jwk.Key, error) {
	if k, ok := s.byID[kid]; ok {
		return k, nil
	}
	return nil, invalid(ErrUnknownKey, "no key with kid %s", quote(kid))
}

// JWKSPath is where an issuer publishes its keys under its base URL, and
// where JWKSURL looks for them: the Python SDK's verifier derives
// <gateway>/.well-known/jwks.json from the gateway URL.
const JWKSPath = "/.well-known/jwks.json"

// JWKSURL is the key-set URL of the gateway at base.
func JWKSURL(base string) string { return strings.TrimRight(base, "/") + JWKSPath }

// Defaults of JWKSOptions.
const (
	DefaultCacheTTL        = 5 * time.Minute
	DefaultRefreshInterval = 30 * time.Second
	DefaultJWKSMaxBytes    = 256 << 10
	DefaultFetchTimeout    = 10 * time.Second
)

// JWKSOptions tune a JWKS; nil or zero fields mean the defaults.
type JWKSOptions struct {
	// Policy says which destinations the URL (checked when the JWKS is
	// made) and every connection (checked when dialled) may reach. Nil
	// means the zero netguard.Policy: public addresses only. A gateway on
	// the same host or network opts in with AllowLoopback/AllowPrivate.
	Policy *netguard.Policy
	// Client makes the requests; nil means a client whose transport dials
	// through Policy. A caller's client is used as it is: its transport
	// is its own business, and the URL is still checked.
	Client *http.Client
	// CacheTTL is how long a fetched key set is used before it is fetched
	// again (DefaultCacheTTL, the Python SDK's cache_ttl_seconds=300).
	CacheTTL time.Duration
	// RefreshInterval is the least time between two fetches, so tokens
	// naming unknown kids, however many, cause at most one fetch per
	// interval (DefaultRefreshInterval).
	RefreshInterval time.Duration
	// MaxBytes bounds the key-set document (DefaultJWKSMaxBytes).
	MaxBytes int64
	// Timeout bounds one fetch (DefaultFetchTimeout).
	Timeout time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// JWKS is a KeySource that fetches a JWK Set from a URL the caller trusts
// (its own configuration, never a URL from a token) and caches it. A
// token naming a kid the cached set lacks makes it fetch again, at most
// once per RefreshInterval: a key the issuer has just rotated in is found
// at once, and a flood of made-up kids costs one request per interval.
// Concurrent lookups share one fetch. When a fetch fails the keys already
// fetched stay in use.
type JWKS struct {
	url  string
	opts JWKSOptions

	mu        sync.Mutex
	keys      map[string]*jwk.Key
	fetchedAt time.Time // last successful fetch
	triedAt   time.Time // last fetch attempt, successful or not
	lastErr   error
	inflight  chan struct{} // closed when the running fetch ends
}

var _ KeySource = (*JWKS)(nil)

// NewJWKS returns a JWKS for url, refused unless it is an http or https
// URL its Policy allows. Nothing is fetched until the first lookup.
func NewJWKS(url string, opts *JWKSOptions) (*JWKS, error) {
	var o JWKSOptions
	if opts != nil {
		o = *opts
	}
	if o.Policy == nil {
		o.Policy = &netguard.Policy{}
	}
	if err := o.Policy.CheckURL(url); err != nil {
		return nil, fmt.Errorf("identity: JWKS URL: %w", err)
	}
	if o.CacheTTL <= 0 {
		o.CacheTTL = DefaultCacheTTL
	}
	if o.RefreshInterval <= 0 {
		o.RefreshInterval = DefaultRefreshInterval
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultJWKSMaxBytes
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultFetchTimeout
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Client == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.DialContext = o.Policy.Dialer(nil).DialContext
		tr.Proxy = nil // a proxy would dial for us, past the guard
		o.Client = &http.Client{
			Transport: tr,
			// A redirect is a URL the caller did not configure.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	}
	return &JWKS{url: url, opts: o}, nil
}

// URL is the key set's URL.
func (j *JWKS) URL() string { return j.url }

// Key implements KeySource.
func (j *JWKS) Key(ctx context.Context, kid string) (*jwk.Key, error) {
	for {
		j.mu.Lock()
		now := j.opts.Now()
		k, have := j.keys[kid]
		fresh := j.keys != nil && now.Sub(j.fetchedAt) < j.opts.CacheTTL
		if have && fresh {
			j.mu.Unlock()
			return k, nil
		}
		if wait := j.inflight; wait != nil {
			j.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return nil, fmt.Errorf("%w: %w", ErrKeysUnavailable, context.Cause(ctx))
			}
		}
		if !j.triedAt.IsZero() && now.Sub(j.triedAt) < j.opts.RefreshInterval {
			// Throttled: answer from what there is.
			err := j.lastErr
			j.mu.Unlock()
			if have {
				return k, nil
			}
			return nil, j.missing(kid, err)
		}
		done := make(chan struct{})
		j.inflight, j.triedAt = done, now
		j.mu.Unlock()

		// The fetch serves every waiter, so one caller giving up must not
		// fail it for the rest (and throttle them for an interval): it
		// runs to its own timeout.
		keys, err := j.fetch(context.WithoutCancel(ctx))

		j.mu.Lock()
		j.inflight = nil
		j.lastErr = err
		if err == nil {
			j.keys, j.fetchedAt = keys, j.opts.Now()
		}
		k, have = j.keys[kid]
		j.mu.Unlock()
		close(done)
		if have {
			return k, nil
		}
		return nil, j.missing(kid, err)
	}
}

func (j *JWKS) missing(kid string, fetchErr error) error {
	if fetchErr != nil {
		return fmt.Errorf("%w: no cached key with kid %s, and %w", ErrKeysUnavailable, quote(kid), fetchErr)
	}
	return invalid(ErrUnknownKey, "no key with kid %s at %s", quote(kid), j.url)
}

// fetch GETs and parses the key set.
func (j *JWKS) fetch(ctx context.Context) (map[string]*jwk.Key, error) {
	ctx, cancel := context.WithTimeout(ctx, j.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, j.url, nil)
	if err != nil {
		return nil, fmt.Errorf("fetch JWKS: %w", err)
	}
	req.Header.Set("Accept", "application/jwk-set+json, application/json")
	resp, err := j.opts.Client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetch JWKS: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetch JWKS %s: status %s", req.URL.Redacted(), resp.Status)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, j.opts.MaxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("fetch JWKS %s: %w", req.URL.Redacted(), err)
	}
	if int64(len(data)) > j.opts.MaxBytes {
		return nil, fmt.Errorf("fetch JWKS %s: larger than %d bytes", req.URL.Redacted(), j.opts.MaxBytes)
	}
	set, err := jwk.ParseKeySet(data)
	if err != nil {
		return nil, fmt.Errorf("fetch JWKS %s: %w", req.URL.Redacted(), err)
	}
	keys := make(map[string]*jwk.Key, set.Len())
	for _, k := range set.Keys() {
		if k.KeyID() == "" {
			continue // a token must name its key; this one cannot be named
		}
		if _, dup := keys[k.KeyID()]; dup {
			// Two keys under one kid: neither can be told apart, so
			// neither is trusted.
			keys[k.KeyID()] = nil
			continue
		}
		keys[k.KeyID()] = k
	}
	for kid, k := range keys {
		if k == nil {
			delete(keys, kid)
		}
	}
	return keys, nil
}
