package a2aclient

import (
	"context"
	"crypto"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"

	"novaos.dev/novaos/a2a"
)

// Push-notification receiving: a webhook's check that a notification came
// from the agent server, unaltered and not replayed (the JWT described at
// a2a.PushClaims and package a2a/a2apush).

// Defaults of PushVerifierOptions.
const (
	DefaultPushMaxBodyBytes = 10 << 20
	DefaultPushLeeway       = 30 * time.Second
	DefaultPushMaxTokenTTL  = 10 * time.Minute
	DefaultPushReplayCache  = 100_000
	maxPushTokenBytes       = 8 << 10
)

// Push verification errors. Every refusal matches ErrPushRejected; a
// replay matches ErrPushReplay too, a body over the limit
// ErrResponseTooLarge. No error carries the token.
var (
	ErrPushRejected = errors.New("a2aclient: push notification rejected")
	ErrPushReplay   = errors.New("a2aclient: push notification replayed")
	// ErrPushBusy: the replay memory is full of notifications not yet
	// expired, so a new one cannot be told from a replay; it is refused,
	// and the sender tries it again later.
	ErrPushBusy = errors.New("a2aclient: push notification replay memory full")
)

func pushRejected(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrPushRejected, fmt.Sprintf(format, args...))
}

// PushVerifierOptions tune a PushVerifier; nil or zero fields mean the
// defaults.
type PushVerifierOptions struct {
	// Audience, when set, must be the JWT's aud: the webhook's URL exactly
	// as it was given to the agent. Set it when the receiver knows it.
	Audience string
	// MaxBodyBytes bounds the body read (DefaultPushMaxBodyBytes).
	MaxBodyBytes int64
	// Leeway is the clock skew allowed on iat and exp (DefaultPushLeeway).
	Leeway time.Duration
	// MaxTokenTTL refuses a JWT valid for longer (DefaultPushMaxTokenTTL):
	// it bounds how long a jti must be remembered.
	MaxTokenTTL time.Duration
	// ReplayCache bounds the jtis remembered until their JWT expires
	// (DefaultPushReplayCache).
	ReplayCache int
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// PushVerifier checks push notifications from one agent server: the JWT
// in A2A-Notification-Signature (or the Authorization bearer token) must be
// signed by a key the server publishes, name the server as issuer, be
// within its lifetime, carry the SHA-256 of the body read and the task id
// the body is about, and have a jti not seen before. It is safe for
// concurrent use.
//
// Delivery is at least once: a notification may come again, with a new
// jti, after an attempt whose answer was lost. PushNotification.Claims.
// NotificationID is the same for every attempt; a receiver that must not
// act twice keeps it.
type PushVerifier struct {
	issuer string
	key    func(ctx context.Context, kid string) (PushKey, error)
	opts   PushVerifierOptions

	mu   sync.Mutex
	seen map[string]int64 // jti → expiry (unix seconds)
}

// PushKey is a public key a notification's JWT is checked with;
// *jwk.Key is one.
type PushKey interface {
	PublicKey() crypto.PublicKey
	Algorithm() string
}

// PushKeys finds the key a JWT's kid names. An identity.KeySource
// (identity.JWKS, identity.StaticKeys) is one, with K *jwk.Key. (The
// client names no key type of its own, so that a program that only calls
// agents does not link a key-set fetcher.)
type PushKeys[K PushKey] interface {
	Key(ctx context.Context, kid string) (K, error)
}

// NewPushVerifier returns a verifier of the notifications issuer (the agent
// server's base URL, the JWT's iss) sends, with keys from keys: usually
// identity.NewJWKS(identity.JWKSURL(issuer), …), the server's
// /.well-known/jwks.json, fetched and cached. opts may be nil.
func NewPushVerifier[K PushKey](issuer string, keys PushKeys[K], opts *PushVerifierOptions) (*PushVerifier, error) {
	if issuer == "" {
		return nil, errors.New("a2aclient: push verifier: the issuer is required")
	}
	if keys == nil {
		return nil, errors.New("a2aclient: push verifier: no key source")
	}
	key := func(ctx context.Context, kid string) (PushKey, error) {
		k, err := keys.Key(ctx, kid)
		if err != nil {
			return nil, err
		}
		return k, nil
	}
	var o PushVerifierOptions
	if opts != nil {
		o = *opts
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultPushMaxBodyBytes
	}
	if o.Leeway <= 0 {
		o.Leeway = DefaultPushLeeway
	}
	if o.MaxTokenTTL <= 0 {
		o.MaxTokenTTL = DefaultPushMaxTokenTTL
	}
	if o.ReplayCache <= 0 {
		o.ReplayCache = DefaultPushReplayCache
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &PushVerifier{issuer: issuer, key: key, opts: o, seen: make(map[string]int64)}, nil
}

// PushNotification is a verified notification.
type PushNotification struct {
	Event  *a2a.StreamResponse
	Claims a2a.PushClaims
	Body   []byte // exactly as received
}

// pushAlgorithms are the signature algorithms accepted; the key's own must
// match the header's.
var pushAlgorithms = []jose.SignatureAlgorithm{jose.EdDSA, jose.ES256, jose.RS256}

// Verify reads r's body (up to MaxBodyBytes) and checks the notification.
func (v *PushVerifier) Verify(r *http.Request) (*PushNotification, error) {
	token := r.Header.Get(a2a.HeaderPushSignature)
	if token == "" {
		if scheme, t, ok := strings.Cut(r.Header.Get("Authorization"), " "); ok && strings.EqualFold(scheme, "Bearer") {
			token = strings.TrimSpace(t)
		}
	}
	if token == "" {
		return nil, pushRejected("no %s header or bearer token", a2a.HeaderPushSignature)
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, v.opts.MaxBodyBytes+1))
	if err != nil {
		return nil, fmt.Errorf("a2aclient: push notification: read body: %w", err)
	}
	if int64(len(body)) > v.opts.MaxBodyBytes {
		return nil, fmt.Errorf("%w: %w: body over %d bytes", ErrPushRejected, ErrResponseTooLarge, v.opts.MaxBodyBytes)
	}
	return v.verify(r.Context(), token, body)
}

func (v *PushVerifier) verify(ctx context.Context, token string, body []byte) (*PushNotification, error) {
	if len(token) > maxPushTokenBytes {
		return nil, pushRejected("token over %d bytes", maxPushTokenBytes)
	}
	jws, err := jose.ParseSignedCompact(token, pushAlgorithms)
	if err != nil || len(jws.Signatures) != 1 {
		return nil, pushRejected("the token is not a compact JWS of an accepted algorithm")
	}
	h := jws.Signatures[0].Protected
	if typ, _ := h.ExtraHeaders[jose.HeaderType].(string); typ != a2a.PushTokenType {
		return nil, pushRejected("the token's typ is not %s", a2a.PushTokenType)
	}
	if h.KeyID == "" {
		return nil, pushRejected("the token names no key")
	}
	key, err := v.key(ctx, h.KeyID)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPushRejected, err)
	}
	if key.Algorithm() != h.Algorithm {
		return nil, pushRejected("alg %.16q does not fit the key", h.Algorithm)
	}
	payload, err := jws.Verify(key.PublicKey())
	if err != nil {
		return nil, pushRejected("the signature does not verify")
	}
	var c a2a.PushClaims
	if err := json.Unmarshal(payload, &c); err != nil {
		return nil, pushRejected("the claims are not a JSON object of the push claims")
	}
	now := v.opts.Now()
	switch {
	case c.Issuer != v.issuer:
		return nil, pushRejected("issuer %.64q is not the agent's", c.Issuer)
	case v.opts.Audience != "" && c.Audience != v.opts.Audience:
		return nil, pushRejected("the token is for another webhook")
	case c.Expiry <= c.IssuedAt || time.Duration(c.Expiry-c.IssuedAt)*time.Second > v.opts.MaxTokenTTL:
		return nil, pushRejected("the token's lifetime is not within (0, %s]", v.opts.MaxTokenTTL)
	case now.Add(v.opts.Leeway).Unix() < c.IssuedAt:
		return nil, pushRejected("the token is issued in the future")
	case now.Add(-v.opts.Leeway).Unix() >= c.Expiry:
		return nil, pushRejected("the token has expired")
	case c.ID == "" || len(c.ID) > 128:
		return nil, pushRejected("the token has no usable jti")
	}
	sum := sha256.Sum256(body)
	want, err := base64.RawURLEncoding.DecodeString(c.BodySHA256)
	if err != nil || subtle.ConstantTimeCompare(want, sum[:]) != 1 {
		return nil, pushRejected("the body is not the one signed")
	}
	var ev a2a.StreamResponse
	if err := a2a.Unmarshal(body, &ev); err != nil {
		return nil, pushRejected("the body is not a StreamResponse")
	}
	if id := eventTaskID(&ev); id == "" || id != c.TaskID {
		return nil, pushRejected("the body is about another task than the token")
	}
	if err := v.remember(c.ID, c.Expiry+int64(v.opts.Leeway/time.Second), now.Unix()); err != nil {
		return nil, err
	}
	return &PushNotification{Event: &ev, Claims: c, Body: body}, nil
}

// eventTaskID is the task a notification is about.
func eventTaskID(ev *a2a.StreamResponse) string {
	switch {
	case ev.Task != nil:
		return ev.Task.ID
	case ev.StatusUpdate != nil:
		return ev.StatusUpdate.TaskID
	case ev.ArtifactUpdate != nil:
		return ev.ArtifactUpdate.TaskID
	case ev.Message != nil:
		return ev.Message.TaskID
	}
	return ""
}

// remember records jti until until, refusing one already there.
func (v *PushVerifier) remember(jti string, until, now int64) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if exp, ok := v.seen[jti]; ok && exp >= now {
		return fmt.Errorf("%w: %w", ErrPushRejected, ErrPushReplay)
	}
	if len(v.seen) >= v.opts.ReplayCache {
		for k, exp := range v.seen {
			if exp < now {
				delete(v.seen, k)
			}
		}
		if len(v.seen) >= v.opts.ReplayCache {
			// Forgetting an unexpired jti would let its replay in.
			return fmt.Errorf("%w: %w", ErrPushRejected, ErrPushBusy)
		}
	}
	v.seen[jti] = until
	return nil
}

// PushHandler is a webhook: it verifies each notification with v and hands
// it to fn. It answers 204 when fn returns nil, 500 when fn fails (so the
// sender tries again), 503 when the replay memory is full, 413 for a body
// over the limit and 401 for anything else v refuses.
func PushHandler(v *PushVerifier, fn func(ctx context.Context, n *PushNotification) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		n, err := v.Verify(r)
		switch {
		case errors.Is(err, ErrPushBusy):
			w.Header().Set("Retry-After", "30")
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		case errors.Is(err, ErrResponseTooLarge):
			http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
			return
		case err != nil:
			http.Error(w, strings.TrimPrefix(err.Error(), "a2aclient: "), http.StatusUnauthorized)
			return
		}
		if err := fn(r.Context(), n); err != nil {
			http.Error(w, "not processed", http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
}
