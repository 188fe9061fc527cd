package jwk

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// keys holds one generated key per algorithm, shared by the tests (RSA
// generation is slow).
var keys = func() map[string]*Key {
	m := map[string]*Key{}
	for _, alg := range Algorithms {
		k, err := GenerateKey(alg)
		if err != nil {
			panic(err)
		}
		m[alg] = k
	}
	return m
}()

func TestFetchKeySet(t *testing.T) {
	key := keys[ES256]
	jwks, _ := json.Marshal(NewKeySet(key))
	mux := http.NewServeMux()
	mux.HandleFunc("/jwks.json", func(w http.ResponseWriter, r *http.Request) { w.Write(jwks) })
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(strings.Repeat(" ", 1<<20) + "{}")) })
	mux.HandleFunc("/missing", http.NotFound)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	set, err := FetchKeySet(t.Context(), srv.URL+"/jwks.json", nil)
	if err != nil || set.Len() != 1 {
		t.Fatalf("FetchKeySet = %v keys, %v", set, err)
	}
	got, _ := json.Marshal(set.Keys()[0])
	want, _ := json.Marshal(key)
	if string(got) != string(want) {
		t.Errorf("fetched key %s, want %s", got, want)
	}
	for _, path := range []string{"/big", "/missing"} {
		if _, err := FetchKeySet(t.Context(), srv.URL+path, &FetchOptions{MaxBytes: 64 << 10}); err == nil {
			t.Errorf("FetchKeySet(%s) succeeded", path)
		}
	}
}

func TestParseKeySetSkipsUnsupported(t *testing.T) {
	pub, _ := json.Marshal(keys[EdDSA])
	doc := `{"keys":[{"kty":"oct","k":"c2VjcmV0"},{"kty":"EC","crv":"P-384","x":"AA","y":"AA"},` + string(pub) + `]}`
	set, err := ParseKeySet([]byte(doc))
	if err != nil || set.Len() != 1 {
		t.Fatalf("ParseKeySet = %d keys, %v; want 1", set.Len(), err)
	}
	if _, err := ParseKeySet([]byte(`[`)); err == nil {
		t.Error("ParseKeySet accepted malformed JSON")
	}
}

func TestParseKeyRules(t *testing.T) {
	small, _ := json.Marshal(map[string]string{"kty": "RSA", "n": base64.RawURLEncoding.EncodeToString(make([]byte, 128)), "e": "AQAB"})
	pub, _ := json.Marshal(keys[EdDSA])
	var m map[string]any
	json.Unmarshal(pub, &m)
	m["alg"] = "ES256"
	wrongAlg, _ := json.Marshal(m)
	m["alg"], m["use"] = "EdDSA", "enc"
	wrongUse, _ := json.Marshal(m)
	for name, data := range map[string][]byte{"small RSA": small, "alg mismatch": wrongAlg, "use enc": wrongUse, "not JSON": []byte("x")} {
		if _, err := ParseKey(data); err == nil {
			t.Errorf("%s: ParseKey succeeded", name)
		}
	}
	if _, err := GenerateKey("HS256"); err == nil {
		t.Error("GenerateKey(HS256) succeeded")
	}
}

// TestKeysNeverPrinted: formatting or marshalling a private key shows no
// private material; PrivateJWK is the only export.
func TestKeysNeverPrinted(t *testing.T) {
	for _, alg := range Algorithms {
		key := keys[alg]
		priv, err := key.PrivateJWK()
		if err != nil {
			t.Fatal(err)
		}
		var members map[string]string
		json.Unmarshal(priv, &members)
		secret := members["d"]
		if secret == "" {
			t.Fatalf("%s: private JWK has no d", alg)
		}
		pub, _ := json.Marshal(key)
		outputs := []string{
			fmt.Sprint(key), fmt.Sprintf("%v %+v %#v %s", key, key, *key, key), string(pub),
		}
		_, err = key.Public().PrivateJWK()
		outputs = append(outputs, fmt.Sprint(err))
		for i, out := range outputs {
			if strings.Contains(out, secret) {
				t.Errorf("%s: private material in output %d", alg, i) // not printed
			}
		}
		back, err := ParseKey(priv)
		if err != nil || !back.IsPrivate() || back.KeyID() != key.KeyID() {
			t.Errorf("%s: ParseKey(PrivateJWK) = %v, %v", alg, back, err)
		}
		if key.Public().IsPrivate() {
			t.Errorf("%s: Public() is private", alg)
		}
	}
}

// Signer gives a private key's signer, whose signatures the public half
// verifies; a public key has none.
func TestSigner(t *testing.T) {
	for _, alg := range Algorithms {
		t.Run(alg, func(t *testing.T) {
			key := keys[alg]
			if s := key.Public().Signer(); s != nil {
				t.Fatalf("the public key has a signer %T", s)
			}
			s := key.Signer()
			if s == nil {
				t.Fatal("the private key has no signer")
			}
			msg := []byte("payload")
			digest := sha256.Sum256(msg)
			var opts crypto.SignerOpts = crypto.SHA256
			signed := digest[:]
			if alg == EdDSA {
				opts, signed = crypto.Hash(0), msg
			}
			sig, err := s.Sign(rand.Reader, signed, opts)
			if err != nil {
				t.Fatal(err)
			}
			var ok bool
			switch pub := key.PublicKey().(type) {
			case ed25519.PublicKey:
				ok = ed25519.Verify(pub, msg, sig)
			case *ecdsa.PublicKey:
				ok = ecdsa.VerifyASN1(pub, digest[:], sig)
			case *rsa.PublicKey:
				ok = rsa.VerifyPKCS1v15(pub, crypto.SHA256, digest[:], sig) == nil
			}
			if !ok {
				t.Errorf("%s signature does not verify with the public key %T", alg, key.PublicKey())
			}
		})
	}
}

// rfc7638Key is the RSA key of RFC 7638 §3.1, whose thumbprint the RFC
// gives.
const (
	rfc7638Key        = `{"kty":"RSA","n":"0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw","e":"AQAB","alg":"RS256"}`
	rfc7638Thumbprint = "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs"
)

// A key without a kid takes its RFC 7638 thumbprint; one with a kid keeps
// it.
func TestKeyIDs(t *testing.T) {
	k, err := ParseKey([]byte(rfc7638Key))
	if err != nil {
		t.Fatal(err)
	}
	named, err := ParseKey([]byte(strings.Replace(rfc7638Key, `"kty"`, `"kid":"mine","kty"`, 1)))
	if err != nil {
		t.Fatal(err)
	}
	got := []string{k.KeyID(), named.KeyID(), k.Algorithm()}
	want := []string{rfc7638Thumbprint, "mine", RS256}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("key ids and algorithm %v, want %v", got, want)
	}
	// A JWKS that is a single JWK is a set of that key.
	set, err := ParseKeySet([]byte(rfc7638Key))
	if err != nil || set.Len() != 1 || set.Keys()[0].KeyID() != rfc7638Thumbprint {
		t.Errorf("ParseKeySet(one JWK) = %v, %v", set.Keys(), err)
	}
	if _, err := ParseKeySet([]byte(`{"kty":"oct","k":"c2VjcmV0"}`)); err == nil {
		t.Error("ParseKeySet accepted a document that is neither a JWKS nor a supported JWK")
	}
}

// RSA keys start at 2048 bits.
func TestRSASize(t *testing.T) {
	for _, tc := range []struct {
		bits int
		ok   bool
	}{{2047, false}, {2048, true}} {
		priv, err := rsa.GenerateKey(rand.Reader, tc.bits)
		if err != nil {
			t.Fatal(err)
		}
		n := base64.RawURLEncoding.EncodeToString(priv.N.Bytes())
		_, err = ParseKey([]byte(`{"kty":"RSA","n":"` + n + `","e":"AQAB"}`))
		if (err == nil) != tc.ok {
			t.Errorf("%d bits: ParseKey error %v, want ok=%v", tc.bits, err, tc.ok)
		}
	}
}

// FetchKeySet takes a JWKS of exactly MaxBytes and refuses one byte more.
func TestFetchKeySetLimit(t *testing.T) {
	jwks, _ := json.Marshal(NewKeySet(keys[EdDSA]))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(jwks) }))
	defer srv.Close()
	if _, err := FetchKeySet(t.Context(), srv.URL, &FetchOptions{MaxBytes: int64(len(jwks))}); err != nil {
		t.Errorf("a JWKS of MaxBytes: %v", err)
	}
	if _, err := FetchKeySet(t.Context(), srv.URL, &FetchOptions{MaxBytes: int64(len(jwks)) - 1}); err == nil {
		t.Error("a JWKS one byte over MaxBytes was accepted")
	}
}

// GenerateRSAKey makes a private RS256 key of the size asked, named by its
// thumbprint, and refuses one under 2048 bits.
func TestGenerateRSAKey(t *testing.T) {
	if _, err := GenerateRSAKey(1024); err == nil {
		t.Error("GenerateRSAKey(1024) made a key")
	}
	k, err := GenerateRSAKey(2048)
	if err != nil {
		t.Fatal(err)
	}
	priv, ok := k.Signer().(*rsa.PrivateKey)
	if !ok || priv.N.BitLen() != 2048 || !k.IsPrivate() || k.Algorithm() != RS256 {
		t.Fatalf("key %v: %T, private %v", k, k.Signer(), k.IsPrivate())
	}
	tp, err := k.jwk.Thumbprint(crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	if want := base64.RawURLEncoding.EncodeToString(tp); k.KeyID() != want {
		t.Errorf("kid %q, want the thumbprint %q", k.KeyID(), want)
	}
	pub, _ := json.Marshal(k)
	var m map[string]any
	json.Unmarshal(pub, &m)
	if m["kty"] != "RSA" || m["alg"] != RS256 || m["use"] != "sig" || m["kid"] != k.KeyID() || m["e"] != "AQAB" || m["n"] == nil || m["d"] != nil {
		t.Errorf("public JWK %s", pub)
	}
}
