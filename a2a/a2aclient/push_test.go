package a2aclient_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2aclient"
	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/jwk"
)

// keySigner signs push JWTs with one key: what an agent server's key ring
// does (internal/auth.Issuer), in a few lines.
type keySigner struct{ key *jwk.Key }

func (s keySigner) SignJWT(_ context.Context, typ string, claims []byte) (string, error) {
	priv, err := s.key.PrivateJWK()
	if err != nil {
		return "", err
	}
	var jk jose.JSONWebKey
	if err := jk.UnmarshalJSON(priv); err != nil {
		return "", err
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.EdDSA, Key: jose.JSONWebKey{Key: jk.Key, KeyID: s.key.KeyID()}},
		(&jose.SignerOptions{}).WithType(jose.ContentType(typ)))
	if err != nil {
		return "", err
	}
	jws, err := signer.Sign(claims)
	if err != nil {
		return "", err
	}
	return jws.CompactSerialize()
}

const pushIssuer = "https://agent.example"

var pushBody = []byte(`{"statusUpdate":{"taskId":"t1","contextId":"c1","status":{"state":"TASK_STATE_COMPLETED"}}}`)

// pushFixture is a key, a verifier of it, and claims valid for pushBody.
type pushFixture struct {
	signer keySigner
	ks     *identity.StaticKeys
	v      *a2aclient.PushVerifier
	now    time.Time
}

func (f *pushFixture) keys(testing.TB) *identity.StaticKeys { return f.ks }

func newPushFixture(t testing.TB, o *a2aclient.PushVerifierOptions) *pushFixture {
	key, err := jwk.GenerateKey(jwk.EdDSA)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := identity.NewStaticKeys(key)
	if err != nil {
		t.Fatal(err)
	}
	f := &pushFixture{signer: keySigner{key}, ks: keys, now: time.Unix(1_800_000_000, 0)}
	var opts a2aclient.PushVerifierOptions
	if o != nil {
		opts = *o
	}
	opts.Now = func() time.Time { return f.now }
	if f.v, err = a2aclient.NewPushVerifier(pushIssuer, keys, &opts); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *pushFixture) claims(body []byte) a2a.PushClaims {
	sum := sha256.Sum256(body)
	return a2a.PushClaims{
		Issuer: pushIssuer, Audience: "https://hooks.example.com/a2a", IssuedAt: f.now.Unix(), Expiry: f.now.Unix() + 300,
		ID: "jti-1", TaskID: "t1", ConfigID: "h1", NotificationID: "7",
		BodySHA256: base64.RawURLEncoding.EncodeToString(sum[:]),
	}
}

func (f *pushFixture) token(t testing.TB, typ string, c any) string {
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := f.signer.SignJWT(context.Background(), typ, b)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func pushRequest(header, token string, body []byte) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/hook", bytes.NewReader(body))
	if header != "" {
		r.Header.Set(header, token)
	}
	return r
}

func TestPushVerifier(t *testing.T) {
	f := newPushFixture(t, &a2aclient.PushVerifierOptions{MaxBodyBytes: 1024})
	mod := func(fn func(c *a2a.PushClaims)) a2a.PushClaims {
		c := f.claims(pushBody)
		fn(&c)
		return c
	}
	for _, tc := range []struct {
		name    string
		header  string // where the token goes
		token   string
		body    []byte
		wantErr error
	}{
		{"valid", a2a.HeaderPushSignature, f.token(t, a2a.PushTokenType, f.claims(pushBody)), pushBody, nil},
		{"valid as a bearer token", "Authorization", "Bearer " + f.token(t, a2a.PushTokenType, mod(func(c *a2a.PushClaims) { c.ID = "jti-2" })), pushBody, nil},
		{"no token", "", "", pushBody, nil},
		{"another typ", a2a.HeaderPushSignature, f.token(t, "JWT", mod(func(c *a2a.PushClaims) { c.ID = "jti-3" })), pushBody, nil},
		{"not a JWS", a2a.HeaderPushSignature, "a.b.c", pushBody, nil},
		{"a token over the limit", a2a.HeaderPushSignature, strings.Repeat("a", 9000), pushBody, nil},
		{"issued in the future", a2a.HeaderPushSignature, f.token(t, a2a.PushTokenType, mod(func(c *a2a.PushClaims) { c.ID, c.IssuedAt, c.Expiry = "j4", c.IssuedAt+3600, c.Expiry+3600 })), pushBody, nil},
		{"expired", a2a.HeaderPushSignature, f.token(t, a2a.PushTokenType, mod(func(c *a2a.PushClaims) { c.ID, c.IssuedAt, c.Expiry = "j5", c.IssuedAt-3600, c.Expiry-3600 })), pushBody, nil},
		{"a lifetime too long", a2a.HeaderPushSignature, f.token(t, a2a.PushTokenType, mod(func(c *a2a.PushClaims) { c.ID, c.Expiry = "j6", c.Expiry+86400 })), pushBody, nil},
		{"no jti", a2a.HeaderPushSignature, f.token(t, a2a.PushTokenType, mod(func(c *a2a.PushClaims) { c.ID = "" })), pushBody, nil},
		{"another task", a2a.HeaderPushSignature, f.token(t, a2a.PushTokenType, mod(func(c *a2a.PushClaims) { c.ID, c.TaskID = "j7", "t2" })), pushBody, nil},
		{"another body", a2a.HeaderPushSignature, f.token(t, a2a.PushTokenType, mod(func(c *a2a.PushClaims) { c.ID = "j8" })), bytes.Replace(pushBody, []byte("COMPLETED"), []byte("FAILED"), 1), nil},
		{"a body that is not a StreamResponse", a2a.HeaderPushSignature, f.token(t, a2a.PushTokenType, func() a2a.PushClaims {
			c := f.claims([]byte(`[1]`))
			c.ID = "j9"
			return c
		}()), []byte(`[1]`), nil},
		{"a body over the limit", a2a.HeaderPushSignature, f.token(t, a2a.PushTokenType, mod(func(c *a2a.PushClaims) { c.ID = "j10" })), bytes.Repeat([]byte(" "), 2048), a2aclient.ErrResponseTooLarge},
		{"replayed", a2a.HeaderPushSignature, f.token(t, a2a.PushTokenType, f.claims(pushBody)), pushBody, a2aclient.ErrPushReplay},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, err := f.v.Verify(pushRequest(tc.header, tc.token, tc.body))
			valid := strings.HasPrefix(tc.name, "valid ") || tc.name == "valid"
			switch {
			case valid && err != nil:
				t.Fatalf("Verify: %v", err)
			case valid:
				if n.Event.StatusUpdate == nil || n.Claims.NotificationID != "7" || !bytes.Equal(n.Body, tc.body) {
					t.Errorf("notification: %+v", n)
				}
			case err == nil:
				t.Fatal("Verify accepted it")
			case !errors.Is(err, a2aclient.ErrPushRejected):
				t.Errorf("Verify: %v, want ErrPushRejected", err)
			case tc.wantErr != nil && !errors.Is(err, tc.wantErr):
				t.Errorf("Verify: %v, want %v", err, tc.wantErr)
			}
		})
	}
}

func TestPushVerifierReplayMemoryIsBounded(t *testing.T) {
	f := newPushFixture(t, &a2aclient.PushVerifierOptions{ReplayCache: 2})
	send := func(jti string) error {
		c := f.claims(pushBody)
		c.ID = jti
		_, err := f.v.Verify(pushRequest(a2a.HeaderPushSignature, f.token(t, a2a.PushTokenType, c), pushBody))
		return err
	}
	for _, jti := range []string{"a", "b"} {
		if err := send(jti); err != nil {
			t.Fatal(err)
		}
	}
	if err := send("c"); !errors.Is(err, a2aclient.ErrPushBusy) {
		t.Fatalf("with the memory full of live jtis: %v, want ErrPushBusy", err)
	}
	f.now = f.now.Add(time.Hour) // a and b have expired: room again
	c := f.claims(pushBody)
	c.ID = "c"
	if _, err := f.v.Verify(pushRequest(a2a.HeaderPushSignature, f.token(t, a2a.PushTokenType, c), pushBody)); err != nil {
		t.Fatalf("after expiry: %v", err)
	}
}

func TestPushHandler(t *testing.T) {
	f := newPushFixture(t, &a2aclient.PushVerifierOptions{MaxBodyBytes: 1024})
	fail := false
	h := a2aclient.PushHandler(f.v, func(ctx context.Context, n *a2aclient.PushNotification) error {
		if fail {
			return errors.New("busy")
		}
		return nil
	})
	tok := func(jti string) string {
		c := f.claims(pushBody)
		c.ID = jti
		return f.token(t, a2a.PushTokenType, c)
	}
	for _, tc := range []struct {
		name   string
		method string
		token  string
		body   []byte
		fail   bool
		want   int
	}{
		{"delivered", http.MethodPost, tok("1"), pushBody, false, http.StatusNoContent},
		{"replayed", http.MethodPost, tok("1"), pushBody, false, http.StatusUnauthorized},
		{"the callback fails", http.MethodPost, tok("2"), pushBody, true, http.StatusInternalServerError},
		{"too large", http.MethodPost, tok("3"), bytes.Repeat([]byte(" "), 2048), false, http.StatusRequestEntityTooLarge},
		{"GET", http.MethodGet, tok("4"), nil, false, http.StatusMethodNotAllowed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fail = tc.fail
			r := pushRequest(a2a.HeaderPushSignature, tc.token, tc.body)
			r.Method = tc.method
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tc.want {
				t.Errorf("status %d, want %d (%s)", w.Code, tc.want, w.Body)
			}
		})
	}
}

func FuzzPushVerify(f *testing.F) {
	fx := newPushFixture(f, nil)
	good := fx.token(f, a2a.PushTokenType, fx.claims(pushBody))
	f.Add(good, pushBody)
	f.Add(good, []byte(`{"task":{"id":"t1"}}`))
	f.Add("eyJhbGciOiJub25lIn0.e30.", pushBody)
	f.Add(strings.Replace(good, ".", "..", 1), pushBody)
	f.Fuzz(func(t *testing.T, token string, body []byte) {
		// A fresh verifier each time, so the seed verifies every time.
		v, err := a2aclient.NewPushVerifier(pushIssuer, fx.keys(t), &a2aclient.PushVerifierOptions{Now: func() time.Time { return fx.now }})
		if err != nil {
			t.Fatal(err)
		}
		n, err := v.Verify(pushRequest(a2a.HeaderPushSignature, token, body))
		if err != nil {
			if !errors.Is(err, a2aclient.ErrPushRejected) {
				t.Fatalf("a refusal that is not ErrPushRejected: %v", err)
			}
			if token != "" && len(token) > 8 && strings.Contains(err.Error(), token) {
				t.Fatal("the error repeats the token")
			}
			return
		}
		sum := sha256.Sum256(body)
		if n.Claims.BodySHA256 != base64.RawURLEncoding.EncodeToString(sum[:]) || n.Claims.TaskID == "" {
			t.Fatalf("verified a notification whose claims do not fit the body: %+v", n.Claims)
		}
	})
}
