package dpop

import (
	"crypto/ecdsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

const (
	testURL   = "https://Platform.Example.com:443/api/v1/delivery/runs/r1/start?x=1#f"
	testToken = "agent-token-value"
)

var now = time.Unix(1_800_000_000, 0)

func mustKey(t testing.TB) *Key {
	t.Helper()
	k, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// forge signs header and claims with k as they are, for proofs Proof
// would never make.
func forge(t *testing.T, k *Key, header, claims map[string]any) string {
	t.Helper()
	hb, _ := json.Marshal(header)
	cb, _ := json.Marshal(claims)
	signing := b64(hb) + "." + b64(cb)
	sum := sha256.Sum256([]byte(signing))
	r, s, err := ecdsa.Sign(nil, k.priv, sum[:])
	if err != nil {
		t.Fatal(err)
	}
	sig := make([]byte, 64)
	r.FillBytes(sig[:32])
	s.FillBytes(sig[32:])
	return signing + "." + b64(sig)
}

func TestVerify(t *testing.T) {
	k, other := mustKey(t), mustKey(t)
	nonces := NewNonces([]byte("k"), time.Minute)
	good := Claims{Method: "POST", URL: testURL, AccessToken: testToken, Nonce: nonces.Issue(now), IssuedAt: now}
	base := Expect{Method: "POST", URL: "https://platform.example.com/api/v1/delivery/runs/r1/start", AccessToken: testToken,
		JKT: k.Thumbprint(), Nonce: nonces.Valid, Now: now}
	header := map[string]any{"typ": ProofType, "alg": Algorithm, "jwk": k.jwk}
	claims := func(over map[string]any) map[string]any {
		c := map[string]any{"jti": "j1", "htm": "POST", "htu": "https://platform.example.com/api/v1/delivery/runs/r1/start",
			"iat": now.Unix(), "ath": tokenHash(testToken), "nonce": nonces.Issue(now)}
		for k, v := range over {
			if v == nil {
				delete(c, k)
			} else {
				c[k] = v
			}
		}
		return c
	}
	with := func(over map[string]any) map[string]any {
		h := map[string]any{}
		for k, v := range header {
			h[k] = v
		}
		for k, v := range over {
			h[k] = v
		}
		return h
	}
	sign := func(c Claims, key *Key) string {
		p, err := key.Proof(c)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name  string
		proof string
		exp   func(*Expect)
		want  error
	}{
		{"valid", sign(good, k), nil, nil},
		{"other key", sign(good, other), nil, ErrInvalidProof},
		{"any key when unbound", sign(good, other), func(e *Expect) { e.JKT = "" }, nil},
		{"other method", sign(good, k), func(e *Expect) { e.Method = "GET" }, ErrInvalidProof},
		{"other path", sign(good, k), func(e *Expect) { e.URL = "https://platform.example.com/api/v1/delivery/runs/r2/start" }, ErrInvalidProof},
		{"other host", sign(good, k), func(e *Expect) { e.URL = "https://evil.example.com/api/v1/delivery/runs/r1/start" }, ErrInvalidProof},
		{"other token", sign(good, k), func(e *Expect) { e.AccessToken = "another" }, ErrInvalidProof},
		{"too old", sign(good, k), func(e *Expect) { e.Now = now.Add(61 * time.Second); e.Nonce = nil }, ErrInvalidProof},
		{"from the future", sign(good, k), func(e *Expect) { e.Now = now.Add(-61 * time.Second); e.Nonce = nil }, ErrInvalidProof},
		{"as old as the window", sign(good, k), func(e *Expect) { e.Now = now.Add(60 * time.Second); e.Nonce = nil }, nil},
		{"as early as the window", sign(good, k), func(e *Expect) { e.Now = now.Add(-60 * time.Second); e.Nonce = nil }, nil},
		{"jti of 256 bytes", forge(t, k, header, claims(map[string]any{"jti": strings.Repeat("j", 256)})), nil, nil},
		{"jti of 257 bytes", forge(t, k, header, claims(map[string]any{"jti": strings.Repeat("j", 257)})), nil, ErrInvalidProof},
		{"no nonce", sign(Claims{Method: "POST", URL: testURL, AccessToken: testToken, IssuedAt: now}, k), nil, ErrUseNonce},
		{"stale nonce", sign(Claims{Method: "POST", URL: testURL, AccessToken: testToken, IssuedAt: now,
			Nonce: nonces.Issue(now.Add(-3 * time.Minute))}, k), nil, ErrUseNonce},
		{"nonce not asked", sign(Claims{Method: "POST", URL: testURL, AccessToken: testToken, IssuedAt: now}, k), func(e *Expect) { e.Nonce = nil }, nil},
		{"ath without token", sign(good, k), func(e *Expect) { e.AccessToken = "" }, ErrInvalidProof},
		{"empty", "", nil, ErrInvalidProof},
		{"two parts", "a.b", nil, ErrInvalidProof},
		{"too long", strings.Repeat("a", MaxProofBytes+1), nil, ErrInvalidProof},
		{"typ jwt", forge(t, k, with(map[string]any{"typ": "JWT"}), claims(nil)), nil, ErrInvalidProof},
		{"alg HS256", forge(t, k, with(map[string]any{"alg": "HS256"}), claims(nil)), nil, ErrInvalidProof},
		{"alg none", forge(t, k, with(map[string]any{"alg": "none"}), claims(nil)), nil, ErrInvalidProof},
		{"crit", forge(t, k, with(map[string]any{"crit": []string{"x"}}), claims(nil)), nil, ErrInvalidProof},
		{"private jwk", forge(t, k, with(map[string]any{"jwk": map[string]any{"kty": "EC", "crv": "P-256",
			"x": k.jwk.X, "y": k.jwk.Y, "d": "AAAA"}}), claims(nil)), nil, ErrInvalidProof},
		{"other curve", forge(t, k, with(map[string]any{"jwk": map[string]any{"kty": "EC", "crv": "P-384", "x": k.jwk.X, "y": k.jwk.Y}}), claims(nil)), nil, ErrInvalidProof},
		{"no jti", forge(t, k, header, claims(map[string]any{"jti": nil})), nil, ErrInvalidProof},
		{"forged claims", forge(t, k, header, claims(nil)), nil, nil},
		{"wrong htm", forge(t, k, header, claims(map[string]any{"htm": "post"})), nil, ErrInvalidProof},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := base
			if tt.exp != nil {
				tt.exp(&e)
			}
			got, err := Verify(tt.proof, e)
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Fatalf("Verify: %v, want %v", err, tt.want)
			}
			if err == nil && (got.JTI == "" || got.JKT == "") {
				t.Fatalf("accepted proof without jti or jkt: %+v", got)
			}
		})
	}
}

func TestTamperedSignature(t *testing.T) {
	k := mustKey(t)
	p, _ := k.Proof(Claims{Method: "GET", URL: testURL, IssuedAt: now})
	parts := strings.Split(p, ".")
	sig, _ := base64.RawURLEncoding.DecodeString(parts[2])
	for i := range sig {
		bad := append([]byte(nil), sig...)
		bad[i] ^= 1
		if _, err := Verify(parts[0]+"."+parts[1]+"."+b64(bad), Expect{Method: "GET", URL: testURL, Now: now}); !errors.Is(err, ErrInvalidProof) {
			t.Fatalf("byte %d flipped: %v", i, err)
		}
	}
}

func TestHTU(t *testing.T) {
	tests := []struct{ in, want string }{
		{"https://A.Example.COM:443/x?q=1#f", "https://a.example.com/x"},
		{"http://127.0.0.1:80/", "http://127.0.0.1/"},
		{"http://127.0.0.1:8080", "http://127.0.0.1:8080/"},
		{"ws://localhost:9/api/v1/delivery/gateway", "http://localhost:9/api/v1/delivery/gateway"},
		{"wss://a.example.com:443/g", "https://a.example.com/g"},
		{"https://[::1]:8443/p%20q", "https://[::1]:8443/p%20q"},
	}
	for _, tt := range tests {
		if got, err := HTU(tt.in); err != nil || got != tt.want {
			t.Errorf("HTU(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "/relative", "ftp://a/b", "mailto:x@y", "https://user@a.example.com/"} {
		if _, err := HTU(bad); err == nil {
			t.Errorf("HTU(%q) accepted", bad)
		}
	}
}

func TestKeyRoundTripAndPrinting(t *testing.T) {
	k := mustKey(t)
	pemBytes, err := k.MarshalPEM()
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseKey(pemBytes)
	if err != nil || back.Thumbprint() != k.Thumbprint() {
		t.Fatalf("ParseKey: %v", err)
	}
	tp, _ := Thumbprint(&k.priv.PublicKey)
	if tp != k.Thumbprint() {
		t.Fatal("Thumbprint differs from Key.Thumbprint")
	}
	d := b64(k.priv.D.Bytes())
	for _, s := range []string{fmt.Sprint(k), fmt.Sprintf("%v %+v %#v %s", k, k, k, k), string(k.PublicJWK())} {
		if strings.Contains(s, d) || strings.Contains(s, "PRIVATE") {
			t.Fatal("a key printed its private half")
		}
	}
	if _, err := ParseKey([]byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n")); err == nil {
		t.Fatal("ParseKey accepted garbage")
	}
}

// The RFC 7638 example thumbprint, for an EC key: computed by hand from
// the members in order, no whitespace.
func TestThumbprintIsRFC7638(t *testing.T) {
	k := mustKey(t)
	canon := `{"crv":"P-256","kty":"EC","x":"` + k.jwk.X + `","y":"` + k.jwk.Y + `"}`
	sum := sha256.Sum256([]byte(canon))
	if k.Thumbprint() != b64(sum[:]) {
		t.Fatal("thumbprint is not over the canonical members")
	}
}

func TestNonces(t *testing.T) {
	n := NewNonces([]byte("key"), time.Minute)
	v := n.Issue(now)
	if !n.Valid(v, now) || !n.Valid(v, now.Add(time.Minute)) {
		t.Fatal("a nonce is not valid in its window and the next")
	}
	if n.Valid(v, now.Add(2*time.Minute+time.Second)) {
		t.Fatal("a nonce is valid two windows on")
	}
	if NewNonces([]byte("other"), time.Minute).Valid(v, now) || n.Valid("", now) || n.Valid(v+"x", now) {
		t.Fatal("a foreign or altered nonce is valid")
	}
	a, b := NewNonces(nil, time.Minute), NewNonces(nil, time.Minute)
	if na := a.Issue(now); !a.Valid(na, now) || b.Valid(na, now) {
		t.Fatal("sources without a key share one: their nonces must hold only where they were issued")
	}
}

func FuzzVerify(f *testing.F) {
	k, _ := GenerateKey()
	p, _ := k.Proof(Claims{Method: "GET", URL: testURL, IssuedAt: now})
	f.Add(p)
	f.Add("e30.e30.")
	f.Fuzz(func(t *testing.T, proof string) {
		got, err := Verify(proof, Expect{Method: "GET", URL: testURL, JKT: k.Thumbprint(), Now: now})
		if err == nil && proof != p && got.JKT != k.Thumbprint() {
			t.Fatal("accepted a proof of another key")
		}
		if err != nil && !errors.Is(err, ErrInvalidProof) && !errors.Is(err, ErrUseNonce) {
			t.Fatalf("unexpected error kind: %v", err)
		}
	})
}
