package identity_test

import (
	"context"
	"strings"
	"testing"

	"novaos.dev/novaos/identity"
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
