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
	"novaos.dev/novaos/jwk"
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
var keys = func() map[string]*jwk.Key {
	m := map[string]*jwk.Key{}
	for _, alg := range jwk.Algorithms {
		k, err := jwk.GenerateKey(alg)
		if err != nil {
			panic(err)
		}
		m[alg] = k
	}
	return m
}()

func TestSignVerifyRoundTrip(t *testing.T) {
	for _, alg := range jwk.Algorithms {
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
			v, err := Verify(&got, jwk.NewKeySet(key), nil)
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if v.KeyID != key.KeyID() || v.Algorithm != alg || v.Index != 0 {
				t.Errorf("Verified %+v", v)
			}
			// The JWKS round trip keeps the key usable.
			jwks, err := json.Marshal(jwk.NewKeySet(key))
			if err != nil {
				t.Fatal(err)
			}
			set, err := jwk.ParseKeySet(jwks)
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
	key := keys[jwk.EdDSA]
	signed, err := Sign(testCard(), key, nil)
	if err != nil {
		t.Fatal(err)
	}
	other, err := jwk.GenerateKey(jwk.EdDSA)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name        string
		card        func() *a2a.AgentCard
		keys        *jwk.KeySet
		opts        *VerifyOptions
		wantUnknown bool
	}{
		{"tampered description", func() *a2a.AgentCard {
			c := *signed
			c.Description += "!"
			return &c
		}, jwk.NewKeySet(key), nil, false},
		{"tampered interface URL", func() *a2a.AgentCard {
			c := *signed
			c.SupportedInterfaces = []a2a.AgentInterface{{URL: "https://evil.example.com", ProtocolBinding: a2a.BindingJSONRPC, ProtocolVersion: "1.0"}}
			return &c
		}, jwk.NewKeySet(key), nil, false},
		{"explicit false turned unset", func() *a2a.AgentCard {
			c := *signed
			c.Capabilities.PushNotifications = nil
			return &c
		}, jwk.NewKeySet(key), nil, false},
		{"key outside the set", func() *a2a.AgentCard { return signed }, jwk.NewKeySet(other), nil, true},
		{"empty key set", func() *a2a.AgentCard { return signed }, jwk.NewKeySet(), nil, true},
		{"nil key set", func() *a2a.AgentCard { return signed }, nil, nil, true},
		{"other key under the same kid", func() *a2a.AgentCard { return signed }, jwk.NewKeySet(other.WithKeyID(key.KeyID())), nil, false},
		{"algorithm not allowed", func() *a2a.AgentCard { return signed }, jwk.NewKeySet(key), &VerifyOptions{Algorithms: []string{jwk.ES256}}, false},
		{"garbage signature", func() *a2a.AgentCard {
			c := *signed
			c.Signatures = []a2a.AgentCardSignature{{Protected: "!!", Signature: "??"}}
			return &c
		}, jwk.NewKeySet(key), nil, false},
		{"alg none", func() *a2a.AgentCard {
			c := *signed
			h := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","kid":"` + key.KeyID() + `"}`))
			c.Signatures = []a2a.AgentCardSignature{{Protected: h, Signature: "AA"}}
			return &c
		}, jwk.NewKeySet(key), nil, false},
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
	_, err := Verify(testCard(), jwk.NewKeySet(keys[jwk.EdDSA]), nil)
	if !errors.Is(err, ErrUnsigned) || errors.Is(err, ErrInvalidSignature) {
		t.Fatalf("err = %v, want ErrUnsigned only", err)
	}
}

func TestOneValidSignatureSuffices(t *testing.T) {
	stale, err := jwk.GenerateKey(jwk.ES256)
	if err != nil {
		t.Fatal(err)
	}
	card, err := Sign(testCard(), stale, nil) // a rotated-out key
	if err != nil {
		t.Fatal(err)
	}
	card, err = Sign(card, keys[jwk.RS256], nil)
	if err != nil {
		t.Fatal(err)
	}
	v, err := Verify(card, jwk.NewKeySet(keys[jwk.RS256]), nil)
	if err != nil || v.Index != 1 || v.Algorithm != jwk.RS256 {
		t.Fatalf("Verify = %+v, %v; want the second signature", v, err)
	}
}

// TestJKUIgnored signs with an attacker key whose JWKS a jku in the card
// points to; verification must use the caller's set only and never fetch
// the jku.
func TestJKUIgnored(t *testing.T) {
	attacker, err := jwk.GenerateKey(jwk.EdDSA)
	if err != nil {
		t.Fatal(err)
	}
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		json.NewEncoder(w).Encode(jwk.NewKeySet(attacker))
	}))
	defer srv.Close()
	trusted := keys[jwk.EdDSA]
	// The attacker reuses the trusted kid and names their own JWKS.
	card, err := Sign(testCard(), attacker.WithKeyID(trusted.KeyID()), &SignOptions{JKU: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	if h := protectedHeader(t, card.Signatures[0]); h["jku"] != srv.URL {
		t.Fatalf("protected header %v has no jku", h)
	}
	if _, err := Verify(card, jwk.NewKeySet(trusted), nil); !errors.Is(err, ErrInvalidSignature) {
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
	if _, err := Verify(good, jwk.NewKeySet(trusted), nil); err != nil {
		t.Errorf("Verify: %v", err)
	}
}

// A key set fetched from a JWKS URL verifies the cards its keys signed.
func TestVerifyWithFetchedKeySet(t *testing.T) {
	key := keys[jwk.ES256]
	jwks, _ := json.Marshal(jwk.NewKeySet(key))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(jwks) }))
	defer srv.Close()
	set, err := jwk.FetchKeySet(t.Context(), srv.URL, nil)
	if err != nil || set.Len() != 1 {
		t.Fatalf("FetchKeySet = %v keys, %v", set, err)
	}
	signed, _ := Sign(testCard(), key, nil)
	if _, err := Verify(signed, set, nil); err != nil {
		t.Errorf("Verify: %v", err)
	}
}

// Sign refuses a public key without showing the private one.
func TestSignRefusesPublicKeys(t *testing.T) {
	for _, alg := range jwk.Algorithms {
		key := keys[alg]
		priv, err := key.PrivateJWK()
		if err != nil {
			t.Fatal(err)
		}
		var members map[string]string
		json.Unmarshal(priv, &members)
		_, err = Sign(testCard(), key.Public(), nil)
		if err == nil || strings.Contains(err.Error(), members["d"]) {
			t.Errorf("%s: Sign with the public key: %v", alg, err)
		}
	}
}

// TestSignatureCompatible checks a signature is a plain flattened JWS any
// JOSE library verifies over the canonical payload.
func TestSignatureCompatible(t *testing.T) {
	key := keys[jwk.ES256]
	signed, _ := Sign(testCard(), key, nil)
	payload, _ := Canonicalize(signed)
	s := signed.Signatures[0]
	flat := fmt.Sprintf(`{"protected":%q,"payload":%q,"signature":%q}`, s.Protected, base64.RawURLEncoding.EncodeToString(payload), s.Signature)
	jws, err := jose.ParseSigned(flat, []jose.SignatureAlgorithm{jose.ES256})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := jws.Verify(key.PublicKey()); err != nil {
		t.Errorf("flattened JWS does not verify: %v", err)
	}
}
