package registry_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/ext/usercontext"
	"novaos.dev/novaos/registry"
)

// newKey returns a fresh recipient key and its public JWK.
func newKey(t *testing.T) (*usercontext.PrivateKey, json.RawMessage) {
	t.Helper()
	k, err := usercontext.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	pub, err := k.PublicJWK()
	if err != nil {
		t.Fatal(err)
	}
	return k, pub
}

// withMembers returns the JWK with members set (a nil value deletes one).
func withMembers(t *testing.T, jwk json.RawMessage, members map[string]any) json.RawMessage {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(jwk, &m); err != nil {
		t.Fatal(err)
	}
	for k, v := range members {
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestValidateRecipientKeys(t *testing.T) {
	k1, pub1 := newKey(t)
	_, pub2 := newKey(t)
	private, err := k1.PrivateJWK()
	if err != nil {
		t.Fatal(err)
	}
	var privMembers map[string]string
	if err := json.Unmarshal(private, &privMembers); err != nil {
		t.Fatal(err)
	}
	d := privMembers["d"]
	thumb := k1.KID()
	many := make([]json.RawMessage, registry.MaxRecipientKeys+1)
	for i := range many {
		_, many[i] = newKey(t)
	}
	tests := []struct {
		name string
		keys []json.RawMessage
		want []registry.FieldError // nil: valid
	}{
		{"none", nil, nil},
		{"one", []json.RawMessage{pub1}, nil},
		{"two, with other members", []json.RawMessage{pub1, withMembers(t, pub2, map[string]any{"use": "enc"})}, nil},
		{"the most", many[:registry.MaxRecipientKeys], nil},
		{"private key", []json.RawMessage{private}, []registry.FieldError{{Field: "recipientKeys[0]",
			Message: `holds a private key (member "d"): register the public JWK only (novaos keys public prints it)`}}},
		{"private member in upper case", []json.RawMessage{withMembers(t, pub1, map[string]any{"D": d})}, []registry.FieldError{{Field: "recipientKeys[0]",
			Message: `holds a private key (member "d"): register the public JWK only (novaos keys public prints it)`}}},
		{"no kid", []json.RawMessage{withMembers(t, pub1, map[string]any{"kid": nil})}, []registry.FieldError{{Field: "recipientKeys[0]",
			Message: "has no kid: it must be the key's RFC 7638 thumbprint, " + thumb}}},
		{"kid not the thumbprint", []json.RawMessage{withMembers(t, pub1, map[string]any{"kid": "mailer-2026"})}, []registry.FieldError{{Field: "recipientKeys[0]",
			Message: "kid must be the key's RFC 7638 thumbprint, " + thumb}}},
		{"another key's kid", []json.RawMessage{withMembers(t, pub2, map[string]any{"kid": thumb})}, []registry.FieldError{{Field: "recipientKeys[0]",
			Message: "kid must be the key's RFC 7638 thumbprint, " + recipientKID(t, pub2)}}},
		{"duplicate kid", []json.RawMessage{pub1, pub2, pub1}, []registry.FieldError{{Field: "recipientKeys[2]",
			Message: "has the kid of recipientKeys[0]"}}},
		{"too many", many, []registry.FieldError{{Field: "recipientKeys", Message: fmt.Sprintf("has more than %d keys", registry.MaxRecipientKeys)}}},
		{"wrong curve", []json.RawMessage{withMembers(t, pub1, map[string]any{"crv": "Ed25519"})}, []registry.FieldError{{Field: "recipientKeys[0]",
			Message: "invalid key: kty must be OKP and crv X25519"}}},
		{"EC key", []json.RawMessage{json.RawMessage(`{"kty":"EC","crv":"P-256","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}`)},
			[]registry.FieldError{{Field: "recipientKeys[0]", Message: "invalid key: kty must be OKP and crv X25519"}}},
		{"short x", []json.RawMessage{withMembers(t, pub1, map[string]any{"x": "AAAA"})}, []registry.FieldError{{Field: "recipientKeys[0]",
			Message: "invalid key: x must be 32 bytes of unpadded base64url"}}},
		{"not an object", []json.RawMessage{json.RawMessage(`"OKP"`)}, []registry.FieldError{{Field: "recipientKeys[0]", Message: "is not a JSON object"}}},
		{"null", []json.RawMessage{json.RawMessage(`null`)}, []registry.FieldError{{Field: "recipientKeys[0]", Message: "is not a JSON object"}}},
		{"too large", []json.RawMessage{withMembers(t, pub1, map[string]any{"note": strings.Repeat("n", registry.MaxRecipientKeyLen)})},
			[]registry.FieldError{{Field: "recipientKeys[0]", Message: fmt.Sprintf("is larger than %d bytes", registry.MaxRecipientKeyLen)}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := &registry.Agent{Name: "mailer", URL: "https://mailer.example.com/a2a", RecipientKeys: tc.keys}
			err := registry.Validate(a, nil)
			var ve *registry.ValidationError
			if tc.want == nil {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if !errors.As(err, &ve) || !errors.Is(err, registry.ErrInvalid) {
				t.Fatalf("Validate: %v, want a *ValidationError", err)
			}
			if diff := cmp.Diff(tc.want, ve.Fields); diff != "" {
				t.Errorf("fields (-want +got):\n%s", diff)
			}
			if strings.Contains(err.Error(), d) || strings.Contains(fmt.Sprintf("%v %+v", err, ve.Fields), d) {
				t.Error("the error repeats the private key")
			}
		})
	}
}

func recipientKID(t *testing.T, jwk json.RawMessage) string {
	t.Helper()
	to, err := usercontext.ParsePublicJWK(jwk)
	if err != nil {
		t.Fatal(err)
	}
	return to.KID
}

func TestAgentRecipient(t *testing.T) {
	k1, pub1 := newKey(t)
	k2, pub2 := newKey(t)
	a := &registry.Agent{Name: "mailer", RecipientKeys: []json.RawMessage{pub1, pub2}}
	if diff := cmp.Diff([]string{k1.KID(), k2.KID()}, a.RecipientKIDs()); diff != "" {
		t.Errorf("RecipientKIDs (-want +got):\n%s", diff)
	}
	for _, tc := range []struct {
		kid  string
		want *usercontext.PrivateKey
	}{{"", k1}, {k1.KID(), k1}, {k2.KID(), k2}} {
		to, err := a.Recipient(tc.kid)
		if err != nil {
			t.Fatalf("Recipient(%q): %v", tc.kid, err)
		}
		if to.KID != tc.want.KID() || !to.Public.Equal(tc.want.Recipient().Public) {
			t.Errorf("Recipient(%q) = %s, want %s", tc.kid, to.KID, tc.want.KID())
		}
	}
	if _, err := a.Recipient("nope"); !errors.Is(err, registry.ErrNoRecipientKey) || !strings.Contains(err.Error(), k2.KID()) {
		t.Errorf("Recipient(nope): %v, want ErrNoRecipientKey listing the kids", err)
	}
	none := &registry.Agent{Name: "echo"}
	if _, err := none.Recipient(""); !errors.Is(err, registry.ErrNoRecipientKey) {
		t.Errorf("Recipient of an agent without keys: %v", err)
	}
	// Clone copies the keys, not the slices.
	c := a.Clone()
	c.RecipientKeys[0][2] = 'X'
	if string(a.RecipientKeys[0]) != string(pub1) {
		t.Error("Clone shares the key bytes")
	}
}
