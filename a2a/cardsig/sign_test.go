package cardsig

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/go-jose/go-jose/v4"

	"novaos.dev/novaos/a2a"
)

func testCard() *a2a.AgentCard {
	return &a2a.AgentCard{
		Name:        "echo",
		Description: "Echoes — für alle ☕",
		Version:     "1.0.0",
		SupportedInterfaces: []a2a.AgentInterface{{
			URL: "https://agents.example.com/agents/echo", ProtocolBinding: a2a.BindingJSONRPC, ProtocolVersion: a2a.ProtocolVersion,
		}},
		Capabilities:       a2a.AgentCapabilities{Streaming: a2a.Bool(true), PushNotifications: a2a.Bool(false)},
		DefaultInputModes:  []string{"text/plain"},
		DefaultOutputModes: []string{"text/plain"},
		Skills:             []a2a.AgentSkill{{ID: "echo", Name: "Echo", Description: "Echoes", Tags: []string{"echo"}}},
	}
}

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

func TestSignVerifyRoundTrip(t *testing.T) {
	for _, alg := range Algorithms {
		t.Run(alg, func(t *testing.T) {
			key := keys[alg]
			card := testCard()
			signed, err := Sign(card, key, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(card.Signatures) != 0 || len(signed.Signatures) != 1 {
				t.Fatalf("signatures: card %d, signed %d; want 0 and 1", len(card.Signatures), len(signed.Signatures))
			}
			hdr := protectedHeader(t, signed.Signatures[0])
			want := map[string]any{"alg": alg, "kid": key.KeyID(), "typ": "JOSE"}
			if fmt.Sprint(hdr) != fmt.Sprint(want) {
				t.Errorf("protected header %v, want %v", hdr, want)
			}
			// Through the wire: marshal, parse, verify.
			data, err := json.Marshal(signed)
			if err != nil {
				t.Fatal(err)
			}
			var got a2a.AgentCard
			if err := a2a.Unmarshal(data, &got); err != nil {
				t.Fatal(err)
			}
			v, err := Verify(&got, NewKeySet(key), nil)
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if v.KeyID != key.KeyID() || v.Algorithm != alg || v.Index != 0 {
				t.Errorf("Verified %+v", v)
			}
			// The JWKS round trip keeps the key usable.
			jwks, err := json.Marshal(NewKeySet(key))
			if err != nil {
				t.Fatal(err)
			}
			set, err := ParseKeySet(jwks)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Verify(&got, set, nil); err != nil {
				t.Errorf("Verify with parsed JWKS: %v", err)
			}
		})
	}
}

func protectedHeader(t *testing.T, s a2a.AgentCardSignature) map[string]any {
	t.Helper()
	raw, err := base64.RawURLEncoding.DecodeString(s.Protected)
	if err != nil {
		t.Fatal(err)
	}
	var h map[string]any
	if err := json.Unmarshal(raw, &h); err != nil {
		t.Fatal(err)
	}
	return h
}

func TestVerifyFailures(t *testing.T) {
	key := keys[EdDSA]
	signed, err := Sign(testCard(), key, nil)
	if err != nil {
		t.Fatal(err)
	}
	other, err := GenerateKey(EdDSA)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name        string
		card        func() *a2a.AgentCard
		keys        *KeySet
		opts        *VerifyOptions
		wantUnknown bool
	}{
		{"tampered description", func() *a2a.AgentCard {
			c := *signed
			c.Description += "!"
			return &c
		}, NewKeySet(key), nil, false},
		{"tampered interface URL", func() *a2a.AgentCard {
			c := *signed
			c.SupportedInterfaces = []a2a.AgentInterface{{URL: "https://evil.example.com", ProtocolBinding: a2a.BindingJSONRPC, ProtocolVersion: "1.0"}}
			return &c
		}, NewKeySet(key), nil, false},
		{"explicit false turned unset", func() *a2a.AgentCard {
			c := *signed
			c.Capabilities.PushNotifications = nil
			return &c
		}, NewKeySet(key), nil, false},
		{"key outside the set", func() *a2a.AgentCard { return signed }, NewKeySet(other), nil, true},
		{"empty key set", func() *a2a.AgentCard { return signed }, NewKeySet(), nil, true},
		{"nil key set", func() *a2a.AgentCard { return signed }, nil, nil, true},
		{"other key under the same kid", func() *a2a.AgentCard { return signed }, NewKeySet(other.WithKeyID(key.KeyID())), nil, false},
		{"algorithm not allowed", func() *a2a.AgentCard { return signed }, NewKeySet(key), &VerifyOptions{Algorithms: []string{ES256}}, false},
		{"garbage signature", func() *a2a.AgentCard {
			c := *signed
			c.Signatures = []a2a.AgentCardSignature{{Protected: "!!", Signature: "??"}}
			return &c
		}, NewKeySet(key), nil, false},
		{"alg none", func() *a2a.AgentCard {
			c := *signed
			h := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","kid":"` + key.KeyID() + `"}`))
			c.Signatures = []a2a.AgentCardSignature{{Protected: h, Signature: "AA"}}
			return &c
		}, NewKeySet(key), nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Verify(tc.card(), tc.keys, tc.opts)
			if !errors.Is(err, ErrInvalidSignature) {
				t.Fatalf("err = %v, want ErrInvalidSignature", err)
			}
			if errors.Is(err, ErrUnsigned) {
				t.Errorf("err %v also matches ErrUnsigned", err)
			}
			if got := errors.Is(err, ErrUnknownKey); got != tc.wantUnknown {
				t.Errorf("errors.Is(err, ErrUnknownKey) = %v, want %v (err %v)", got, tc.wantUnknown, err)
			}
		})
	}
}

func TestUnsignedIsDistinct(t *testing.T) {
	_, err := Verify(testCard(), NewKeySet(keys[EdDSA]), nil)
	if !errors.Is(err, ErrUnsigned) || errors.Is(err, ErrInvalidSignature) {
		t.Fatalf("err = %v, want ErrUnsigned only", err)
	}
}

func TestOneValidSignatureSuffices(t *testing.T) {
	stale, err := GenerateKey(ES256)
	if err != nil {
		t.Fatal(err)
	}
	card, err := Sign(testCard(), stale, nil) // a rotated-out key
	if err != nil {
		t.Fatal(err)
	}
	card, err = Sign(card, keys[RS256], nil)
	if err != nil {
		t.Fatal(err)
	}
	v, err := Verify(card, NewKeySet(keys[RS256]), nil)
	if err != nil || v.Index != 1 || v.Algorithm != RS256 {
		t.Fatalf("Verify = %+v, %v; want the second signature", v, err)
	}
}

// TestJKUIgnored signs with an attacker key whose JWKS a jku in the card
// points to; verification must use the caller's set only and never fetch
// the jku.
func TestJKUIgnored(t *testing.T) {
	attacker, err := GenerateKey(EdDSA)
	if err != nil {
		t.Fatal(err)
	}
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		json.NewEncoder(w).Encode(NewKeySet(attacker))
	}))
	defer srv.Close()
	trusted := keys[EdDSA]
	// The attacker reuses the trusted kid and names their own JWKS.
	card, err := Sign(testCard(), attacker.WithKeyID(trusted.KeyID()), &SignOptions{JKU: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	if h := protectedHeader(t, card.Signatures[0]); h["jku"] != srv.URL {
		t.Fatalf("protected header %v has no jku", h)
	}
	if _, err := Verify(card, NewKeySet(trusted), nil); !errors.Is(err, ErrInvalidSignature) {
		t.Fatalf("Verify = %v, want ErrInvalidSignature", err)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the jku was fetched %d times", n)
	}
	// A jku on a genuine signature does not stop it verifying.
	good, err := Sign(testCard(), trusted, &SignOptions{JKU: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Verify(good, NewKeySet(trusted), nil); err != nil {
		t.Errorf("Verify: %v", err)
	}
}

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
	signed, _ := Sign(testCard(), key, nil)
	if _, err := Verify(signed, set, nil); err != nil {
		t.Errorf("Verify: %v", err)
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
		_, err = Sign(testCard(), key.Public(), nil)
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

// TestSignatureCompatible checks a signature is a plain flattened JWS any
// JOSE library verifies over the canonical payload.
func TestSignatureCompatible(t *testing.T) {
	key := keys[ES256]
	signed, _ := Sign(testCard(), key, nil)
	payload, _ := Canonicalize(signed)
	s := signed.Signatures[0]
	flat := fmt.Sprintf(`{"protected":%q,"payload":%q,"signature":%q}`, s.Protected, base64.RawURLEncoding.EncodeToString(payload), s.Signature)
	jws, err := jose.ParseSigned(flat, []jose.SignatureAlgorithm{jose.ES256})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := jws.Verify(key.Public().jwk.Key); err != nil {
		t.Errorf("flattened JWS does not verify: %v", err)
	}
}
