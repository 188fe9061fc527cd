package identity_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/jwk"
)

// FuzzVerify feeds arbitrary tokens to a verifier: it must never panic,
// never accept a token its key did not sign (the only signed seeds are
// the valid ones, and any change to one breaks its signature), and never
// put the token in an error.
func FuzzVerify(f *testing.F) {
	ed := newTestKey(f, identity.EdDSA)
	v := newVerifier(f, ed)
	hdr := mustJSON(f, header("EdDSA", ed.KeyID()))
	valid := sign(f, ed, "EdDSA", hdr, mustJSON(f, validClaims(now)))
	f.Add(valid)
	f.Add(b64([]byte(`{"alg":"none"}`)) + "." + b64(mustJSON(f, validClaims(now))) + ".")
	f.Add(hs256(mustJSON(f, header("HS256", ed.KeyID())), mustJSON(f, validClaims(now)), []byte("k")))
	f.Add(sign(f, ed, "EdDSA", hdr, []byte(`{"exp":1e400,"tenant_id":"a"}`)))
	f.Add(sign(f, ed, "EdDSA", hdr, []byte(`{"scopes":"a b c","aud":["acp-agent"],"tenant_id":"a"}`)))
	f.Add("a.b.c")
	f.Add("")
	f.Fuzz(func(t *testing.T, token string) {
		c, err := v.Verify(context.Background(), token)
		if err == nil {
			if token != valid {
				t.Fatalf("accepted a token the key did not sign as such: %q", token)
			}
			if c.TenantID == "" || c.Expiry.IsZero() {
				t.Fatalf("accepted claims %+v", c)
			}
			return
		}
		msg := err.Error()
		for _, part := range strings.Split(token, ".") {
			if len(part) >= 16 && strings.Contains(msg, part) {
				t.Fatalf("error %q holds part of the token", msg)
			}
		}
	})
}

// FuzzClaims decodes arbitrary claims sets: no panic, and what decodes
// encodes to a form that decodes to itself.
func FuzzClaims(f *testing.F) {
	f.Add(mustJSON(f, validClaims(now)))
	f.Add([]byte(`{"aud":"x","exp":1.5,"scopes":"a:* b"}`))
	f.Add([]byte(`{"a":{"b":[1,2,{"c":null}]},"tenant_id":"t"}`))
	f.Add([]byte(`{"exp":-1}`))
	f.Add([]byte(`{"tenant_id":"t","call_id":"call-5","run_id":"r"}`))
	f.Add([]byte(`{"tenant_id":"t","call_id":5}`))
	f.Add([]byte(`{"tenant_id":"t","run_id":"r","llm_max_tokens":900,"llm_max_cost_usd":1.5e-3}`))
	f.Add([]byte(`{"tenant_id":"t","llm_max_tokens":-0,"llm_max_cost_usd":-0}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var c identity.Claims
		if c.UnmarshalJSON(data) != nil {
			return
		}
		once, err := c.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		var back identity.Claims
		if err := back.UnmarshalJSON(once); err != nil {
			t.Fatalf("re-decoding %s: %v", once, err)
		}
		twice, _ := back.MarshalJSON()
		if string(once) != string(twice) {
			t.Fatalf("%s re-encodes as %s", once, twice)
		}
	})
}

// bodyTransport answers every request with one body, so a fuzz target can
// feed a JWKS fetch without a network.
type bodyTransport []byte

func (b bodyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusOK, Body: io.NopCloser(bytes.NewReader(b)), Header: http.Header{}, Request: r}, nil
}

// FuzzJWKS feeds arbitrary key-set documents to a JWKS: no panic, and a
// key it returns is the one asked for, public, of an allowed algorithm.
func FuzzJWKS(f *testing.F) {
	ed := newTestKey(f, identity.EdDSA)
	es := newTestKey(f, identity.ES256)
	set, _ := json.Marshal(jwk.NewKeySet(ed.Key, es.Key))
	f.Add(set, ed.KeyID())
	f.Add([]byte(`{"keys":[{"kty":"oct","k":"AAAA","kid":"h"},{"kty":"RSA","n":"AQAB","e":"AQAB","kid":"r"}]}`), "h")
	f.Add([]byte(`{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}`), "x")
	f.Add([]byte(`{"keys":null}`), "")
	f.Fuzz(func(t *testing.T, body []byte, kid string) {
		src, err := identity.NewJWKS("https://novaos.example.com/.well-known/jwks.json",
			&identity.JWKSOptions{Client: &http.Client{Transport: bodyTransport(body)}})
		if err != nil {
			t.Fatal(err)
		}
		k, err := src.Key(context.Background(), kid)
		if err != nil {
			return
		}
		if k.KeyID() != kid || k.IsPrivate() {
			t.Fatalf("asked for %q, got %v", kid, k)
		}
		switch k.Algorithm() {
		case identity.EdDSA, identity.ES256, identity.RS256:
		default:
			t.Fatalf("key of algorithm %q", k.Algorithm())
		}
	})
}
