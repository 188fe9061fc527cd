package auth_test

import (
	"context"
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/auth"
	"novaos.dev/novaos/internal/httpapi"
	"novaos.dev/novaos/jwk"
	"novaos.dev/novaos/netguard"
	"novaos.dev/novaos/problem"
)

// jwksServer serves iss's key set where a seed agent looks for it: the
// JWKS path under the gateway's URL.
func jwksServer(t *testing.T, iss *auth.Issuer) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("GET "+auth.JWKSPath, iss.JWKSHandler())
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// A token minted with the default algorithm verifies, as an agent in Go
// verifies it, with identity's JWKS verifier against the issuer's JWKS
// handler over HTTP.
func TestRS256VerifiesWithJWKSVerifier(t *testing.T) {
	iss, err := auth.Open("", auth.Options{Issuer: issuer})
	if err != nil {
		t.Fatal(err)
	}
	srv := jwksServer(t, iss)
	v, err := identity.NewJWKSVerifier(srv.URL, issuer, &identity.JWKSOptions{Policy: &netguard.Policy{AllowLoopback: true}},
		&identity.Options{Algorithms: []string{identity.RS256}})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := iss.Mint(context.Background(), claims, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	c, err := v.Verify(context.Background(), tok)
	if err != nil {
		t.Fatal(err)
	}
	want := claims
	want.Issuer, want.Subject, want.Audience = issuer, claims.AgentID, []string{identity.DefaultAudience}
	want.ID, want.IssuedAt, want.NotBefore, want.Expiry = c.ID, c.IssuedAt, c.NotBefore, c.Expiry
	if diff := cmp.Diff(want, *c); diff != "" || c.Expiry.Sub(c.IssuedAt) != time.Minute {
		t.Fatalf("claims (-want +got):\n%s", diff)
	}
}

// What PyJWT does with the JWKS, done by hand with crypto/rsa: nothing of
// the platform's verifier or of go-jose is assumed. The key is found by
// the header's kid among keys of kty RSA, rebuilt from n and e, and the
// RS256 signature checked over the signing input.
func TestRS256VerifiesFromRawJWKS(t *testing.T) {
	iss, err := auth.Open("", auth.Options{Issuer: issuer})
	if err != nil {
		t.Fatal(err)
	}
	srv := jwksServer(t, iss)
	tok, err := iss.Mint(context.Background(), claims, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(srv.URL + "/.well-known/jwks.json")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var set struct {
		Keys []map[string]string `json:"keys"`
	}
	if err := json.Unmarshal(body, &set); err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("%d parts", len(parts))
	}
	var hdr map[string]string
	decodeSegment(t, parts[0], &hdr)
	if hdr["alg"] != "RS256" || hdr["typ"] != "JWT" || hdr["kid"] == "" {
		t.Fatalf("header %v", hdr)
	}
	var jwkRSA map[string]string
	for _, k := range set.Keys {
		if k["kid"] == hdr["kid"] {
			jwkRSA = k
		}
	}
	if jwkRSA == nil {
		t.Fatalf("no key with kid %s in %s", hdr["kid"], body)
	}
	if jwkRSA["kty"] != "RSA" || jwkRSA["alg"] != "RS256" || jwkRSA["use"] != "sig" || jwkRSA["d"] != "" || jwkRSA["p"] != "" {
		t.Fatalf("JWK %v: want kty RSA, alg RS256, use sig, public members only", jwkRSA)
	}
	// The kid is the RFC 7638 thumbprint: SHA-256 of the required
	// members in lexical order, no spaces.
	tp := sha256.Sum256([]byte(`{"e":"` + jwkRSA["e"] + `","kty":"RSA","n":"` + jwkRSA["n"] + `"}`))
	if kid := base64.RawURLEncoding.EncodeToString(tp[:]); kid != hdr["kid"] {
		t.Fatalf("kid %s, thumbprint %s", hdr["kid"], kid)
	}
	n, e := decodeBig(t, jwkRSA["n"]), decodeBig(t, jwkRSA["e"])
	pub := &rsa.PublicKey{N: n, E: int(e.Int64())}
	if pub.N.BitLen() != auth.RSABits || pub.E != 65537 {
		t.Fatalf("modulus of %d bits, exponent %d", pub.N.BitLen(), pub.E)
	}
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		t.Fatal(err)
	}
	if err := rsa.VerifyPKCS1v15(pub, crypto.SHA256, digest[:], sig); err != nil {
		t.Fatalf("RS256 signature: %v", err)
	}
	// PyJWT's claim checks: aud, iss, exp.
	var c map[string]any
	decodeSegment(t, parts[1], &c)
	if c["aud"] != identity.DefaultAudience || c["iss"] != issuer || c["tenant_id"] != "acme" || c["run_id"] != "run-42" || c["call_id"] != "call-5" {
		t.Fatalf("claims %v", c)
	}
	if exp, ok := c["exp"].(float64); !ok || time.Unix(int64(exp), 0).Before(time.Now()) {
		t.Fatalf("exp %v", c["exp"])
	}
	// A changed payload does not verify under the same signature.
	forged := sha256.Sum256([]byte(parts[0] + "." + base64.RawURLEncoding.EncodeToString([]byte(`{"tenant_id":"globex"}`))))
	if rsa.VerifyPKCS1v15(pub, crypto.SHA256, forged[:], sig) == nil {
		t.Fatal("the signature verifies another payload")
	}
}

func decodeSegment(t *testing.T, seg string, v any) {
	t.Helper()
	raw, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatal(err)
	}
}

func decodeBig(t *testing.T, s string) *big.Int {
	t.Helper()
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(raw) == 0 {
		t.Fatalf("not base64url: %v", err)
	}
	return new(big.Int).SetBytes(raw)
}

// A ring made when the platform signed EdDSA keeps working after the
// default became RS256: its tokens verify, its key is published until the
// last of them can have expired, and the first signature rotates to an
// RSA key. A process told to sign EdDSA rotates back the same way.
func TestEd25519RingUpgrades(t *testing.T) {
	clk := &clock{t: time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)}
	path := filepath.Join(t.TempDir(), auth.KeyFile)
	ctx := context.Background()
	maxTTL := func(o *auth.Options) { o.MaxTTL = time.Hour }
	old := open(t, path, clk, maxTTL, func(o *auth.Options) { o.Algorithm = auth.EdDSA })
	edKid := old.KeyID()
	edTok, err := old.Mint(ctx, claims, time.Hour)
	if err != nil {
		t.Fatal(err)
	}

	clk.Add(time.Minute)
	iss := open(t, path, clk, maxTTL) // the new default
	if iss.KeyID() != edKid {
		t.Fatal("opening the ring rotated it: only a signature may")
	}
	if _, err := iss.Verify(ctx, edTok); err != nil {
		t.Fatalf("EdDSA token after the upgrade: %v", err)
	}
	rsTok, err := iss.Mint(ctx, claims, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	rsKid := kidOf(rsTok)
	if rsKid == edKid || iss.KeyID() != rsKid || algOf(rsTok) != "RS256" {
		t.Fatalf("after the first mint: kid %s (EdDSA key %s), alg %s", rsKid, edKid, algOf(rsTok))
	}
	for _, tok := range []string{edTok, rsTok} {
		if _, err := iss.Verify(ctx, tok); err != nil {
			t.Fatalf("after the rotation: %v", err)
		}
	}
	// The JWKS publishes the RSA key first, then the OKP one.
	w := httptest.NewRecorder()
	iss.JWKSHandler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, auth.JWKSPath, nil))
	var set struct{ Keys []map[string]any }
	if err := json.Unmarshal(w.Body.Bytes(), &set); err != nil {
		t.Fatal(err)
	}
	var got [][2]any
	for _, k := range set.Keys {
		got = append(got, [2]any{k["kid"], fmt.Sprint(k["kty"], " ", k["alg"], " ", k["use"], " ", k["n"] != nil, " ", k["e"], " ", k["crv"])})
	}
	want := [][2]any{{rsKid, "RSA RS256 sig true AQAB <nil>"}, {edKid, "OKP EdDSA sig false <nil> Ed25519"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("JWKS (-want +got):\n%s", diff)
	}
	// The retired Ed25519 key is published for MaxTTL plus the leeway
	// after it stopped signing, like any other.
	if diff := cmp.Diff(map[string]time.Time{edKid: clk.Now().UTC().Add(time.Hour + identity.DefaultLeeway)}, ringRetired(t, path)); diff != "" {
		t.Fatalf("retired (-want +got):\n%s", diff)
	}
	// The old process, still told EdDSA, rotates to a new Ed25519 key at
	// its next signature, and both RSA and Ed25519 tokens keep verifying.
	clk.Add(2 * time.Second)
	back, err := old.Mint(ctx, claims, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if algOf(back) != "EdDSA" || kidOf(back) == edKid {
		t.Fatalf("EdDSA process after the RS256 one: alg %s, kid %s", algOf(back), kidOf(back))
	}
	clk.Add(2 * time.Second)
	for _, tok := range []string{edTok, rsTok, back} {
		if _, err := iss.Verify(ctx, tok); err != nil {
			t.Fatalf("every key signed within MaxTTL stays valid: %v", err)
		}
	}
}

// Processes sharing a ring notice a key of the wrong algorithm together;
// it is rotated once, not once per process.
func TestAlgorithmRotationOnce(t *testing.T) {
	clk := &clock{t: time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)}
	path := filepath.Join(t.TempDir(), auth.KeyFile)
	open(t, path, clk, func(o *auth.Options) { o.Algorithm = auth.EdDSA })
	replicas := []*auth.Issuer{open(t, path, clk), open(t, path, clk), open(t, path, clk)}
	kids := make([]string, len(replicas))
	var wg sync.WaitGroup
	for n, r := range replicas {
		wg.Go(func() {
			tok, err := r.Mint(context.Background(), claims, time.Minute)
			if err != nil {
				t.Error(err)
				return
			}
			kids[n] = kidOf(tok)
		})
	}
	wg.Wait()
	if len(slices.Compact(slices.Clone(kids))) != 1 || kids[0] == "" {
		t.Fatalf("replicas sign with %v: want one new key", kids)
	}
	if retired := ringRetired(t, path); len(retired) != 1 {
		t.Fatalf("retired %v: want the Ed25519 key alone", retired)
	}
}

// The Revoked hook is asked after the signature and claims passed, by
// every way the platform verifies, and an error from it refuses the token
// as revoked without telling the client the hook's reason.
func TestRevokedHook(t *testing.T) {
	clk := &clock{t: time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)}
	var mu sync.Mutex
	ended := map[string]bool{}
	var asked []string
	errEnded := errors.New("run ended at 10:00 (store row 9)")
	iss := open(t, "", clk, func(o *auth.Options) {
		o.Revoked = func(_ context.Context, c *identity.Claims) error {
			mu.Lock()
			defer mu.Unlock()
			asked = append(asked, c.RunID)
			if ended[c.RunID] {
				return errEnded
			}
			return nil
		}
	})
	ctx := context.Background()
	live, _ := iss.Mint(ctx, claims, time.Minute)
	other := claims
	other.RunID = "run-43"
	done, _ := iss.Mint(ctx, other, time.Minute)
	mu.Lock()
	ended["run-43"] = true
	mu.Unlock()

	var reached []string
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _ := auth.ClaimsFrom(r.Context())
		reached = append(reached, c.RunID)
	})
	mw := iss.Middleware(next)
	api := (&httpapi.API{Name: "memory", Auth: iss.Authenticator()}).Handler(next)
	request := func(tok string) *http.Request {
		r := httptest.NewRequest(http.MethodPost, "/api/v1/mcp", nil)
		r.Header.Set("Authorization", "Bearer "+tok)
		return r
	}
	ways := []struct {
		name   string
		verify func(tok string) error
	}{
		{"Verify", func(tok string) error { _, err := iss.Verify(ctx, tok); return err }},
		{"VerifyRequest", func(tok string) error { _, err := iss.VerifyRequest(request(tok)); return err }},
		{"Middleware", func(tok string) error { return answer(mw, request(tok)) }},
		{"Authenticator", func(tok string) error { return answer(api, request(tok)) }},
	}
	for _, way := range ways {
		t.Run(way.name, func(t *testing.T) {
			mu.Lock()
			asked = nil
			mu.Unlock()
			reached = nil
			if err := way.verify(live); err != nil {
				t.Fatalf("live run: %v", err)
			}
			err := way.verify(done)
			if err == nil || !errors.Is(err, identity.ErrRevoked) && !strings.Contains(err.Error(), "identity: token revoked") {
				t.Fatalf("ended run: %v, want revoked", err)
			}
			if strings.Contains(err.Error(), "store row") || strings.Contains(err.Error(), done[:20]) {
				t.Fatalf("the refusal tells %q", err)
			}
			mu.Lock()
			defer mu.Unlock()
			if diff := cmp.Diff([]string{"run-42", "run-43"}, asked); diff != "" {
				t.Errorf("hook asked (-want +got):\n%s", diff)
			}
			if strings.HasPrefix(way.name, "M") || strings.HasPrefix(way.name, "A") {
				if diff := cmp.Diff([]string{"run-42"}, reached); diff != "" {
					t.Errorf("handler reached for (-want +got):\n%s", diff)
				}
			}
		})
	}
	// Through Verify the hook's error is there for the server's log.
	if _, err := iss.Verify(ctx, done); !errors.Is(err, errEnded) || !errors.Is(err, identity.ErrInvalid) {
		t.Fatalf("Verify: %v, want ErrInvalid wrapping the hook's error", err)
	}
}

// answer serves r with h and turns a refusal into an error: the status,
// challenge and problem detail, checked to be a 401 invalid_token.
func answer(h http.Handler, r *http.Request) error {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code < 300 {
		return nil
	}
	var p problem.Problem
	json.Unmarshal(w.Body.Bytes(), &p)
	if w.Code != http.StatusUnauthorized || p.Type != identity.ProblemInvalidToken ||
		!strings.Contains(w.Header().Get("WWW-Authenticate"), `error="invalid_token"`) {
		return fmt.Errorf("status %d, challenge %q, problem %+v: want 401 invalid_token", w.Code, w.Header().Get("WWW-Authenticate"), p)
	}
	return fmt.Errorf("%d: %s: %s", w.Code, p.Type, p.Detail)
}

func algOf(tok string) string {
	h, _ := base64.RawURLEncoding.DecodeString(strings.Split(tok, ".")[0])
	var hdr struct{ Alg string }
	json.Unmarshal(h, &hdr)
	return hdr.Alg
}

// A ring whose active key is neither Ed25519 nor RSA is refused, not
// replaced.
func TestOpenRefusesES256Ring(t *testing.T) {
	k, _ := jwk.GenerateKey(jwk.ES256)
	priv, _ := k.PrivateJWK()
	path := filepath.Join(t.TempDir(), auth.KeyFile)
	if err := os.WriteFile(path, []byte(`{"active":{"key":`+string(priv)+`,"created":"2026-12-02T10:00:00Z"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := auth.Open(path, auth.Options{Issuer: issuer})
	if err == nil || !strings.Contains(err.Error(), "not a private Ed25519 or RSA JWK") {
		t.Fatalf("Open: %v", err)
	}
}

// BenchmarkMint is the cost of a token per algorithm: RS256 is the
// default, so each run's token costs an RSA signature.
func BenchmarkMint(b *testing.B) {
	for _, alg := range []string{auth.RS256, auth.EdDSA} {
		b.Run(alg, func(b *testing.B) {
			iss, err := auth.Open("", auth.Options{Issuer: issuer, Algorithm: alg})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			for b.Loop() {
				if _, err := iss.Mint(ctx, claims, time.Hour); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkVerifyFirstSight is what an agent pays for a token it has not
// seen (no cache): the signature check per algorithm.
func BenchmarkVerifyFirstSight(b *testing.B) {
	for _, alg := range []string{auth.RS256, auth.EdDSA} {
		b.Run(alg, func(b *testing.B) {
			iss, err := auth.Open("", auth.Options{Issuer: issuer, Algorithm: alg})
			if err != nil {
				b.Fatal(err)
			}
			keys, _ := identity.NewStaticKeys(iss.PublicKeys()...)
			v, err := identity.New(keys, identity.Options{Issuer: issuer, CacheSize: -1})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			tok, _ := iss.Mint(ctx, claims, time.Hour)
			for b.Loop() {
				if _, err := v.Verify(ctx, tok); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
