package registrysvc_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/ext/usercontext"
	"novaos.dev/novaos/registry"
)

// The registry keeps agents' public recipient keys: registered with the
// record, replaced by PUT, refused when private, never echoed.
func TestRecipientKeysOverHTTP(t *testing.T) {
	_, srv := newTestService(t)
	keys := make([]*usercontext.PrivateKey, 2)
	pubs := make([]json.RawMessage, 2)
	for i := range keys {
		k, err := usercontext.GenerateKey()
		if err != nil {
			t.Fatal(err)
		}
		keys[i] = k
		if pubs[i], err = k.PublicJWK(); err != nil {
			t.Fatal(err)
		}
	}
	body := func(keys ...json.RawMessage) string {
		b, err := json.Marshal(map[string]any{"name": "mailer", "url": "https://mailer.agents.example.com/a2a", "recipientKeys": keys})
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	got := decodeAgent(t, call(t, srv, "POST", "/api/v1/agents", jsonCT, body(pubs[0])), http.StatusCreated)
	if diff := cmp.Diff([]json.RawMessage{pubs[0]}, got.RecipientKeys); diff != "" {
		t.Errorf("POST: recipient keys (-want +got):\n%s", diff)
	}
	// A rotation: the new key next to the old one, then alone.
	for _, want := range [][]json.RawMessage{{pubs[0], pubs[1]}, {pubs[1]}} {
		got = decodeAgent(t, call(t, srv, "PUT", "/api/v1/agents/mailer", jsonCT, body(want...)), http.StatusOK)
		if diff := cmp.Diff(want, got.RecipientKeys); diff != "" {
			t.Errorf("PUT: recipient keys (-want +got):\n%s", diff)
		}
		got = decodeAgent(t, call(t, srv, "GET", "/api/v1/agents/mailer", "", ""), http.StatusOK)
		to, err := got.Recipient("")
		if err != nil || to.KID != recipientKIDOf(t, want[0]) {
			t.Errorf("GET: Recipient = %v, %v; want %s", to.KID, err, recipientKIDOf(t, want[0]))
		}
	}

	// A private key is refused, by field, and its d is not in the answer.
	private, err := keys[0].PrivateJWK()
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]string
	if err := json.Unmarshal(private, &m); err != nil {
		t.Fatal(err)
	}
	forged := json.RawMessage(fmt.Sprintf(`{"kty":"OKP","crv":"X25519","kid":"not-the-thumbprint","x":%q}`, m["x"]))
	for _, tc := range []struct {
		method, path string
		keys         []json.RawMessage
		field, msg   string
	}{
		{"POST", "/api/v1/agents", []json.RawMessage{private}, "recipientKeys[0]", `holds a private key (member "d")`},
		{"PUT", "/api/v1/agents/mailer", []json.RawMessage{pubs[1], private}, "recipientKeys[1]", `holds a private key (member "d")`},
		{"PUT", "/api/v1/agents/mailer", []json.RawMessage{forged}, "recipientKeys[0]", "kid must be the key's RFC 7638 thumbprint, " + keys[0].KID()},
		{"PUT", "/api/v1/agents/mailer", []json.RawMessage{pubs[1], pubs[1]}, "recipientKeys[1]", "has the kid of recipientKeys[0]"},
	} {
		b := body(tc.keys...)
		if tc.method == "POST" {
			b = strings.Replace(b, `"mailer"`, `"mailer-2"`, 1)
		}
		r := call(t, srv, tc.method, tc.path, jsonCT, b)
		p := problem(t, r, http.StatusUnprocessableEntity, registry.ProblemInvalidAgent)
		if len(p.Errors) != 1 || p.Errors[0].Field != tc.field || !strings.HasPrefix(p.Errors[0].Message, tc.msg) {
			t.Errorf("%s %s: errors %+v, want %s: %s", tc.method, tc.path, p.Errors, tc.field, tc.msg)
		}
		if strings.Contains(r.body, m["d"]) {
			t.Errorf("%s %s: the problem repeats the private key", tc.method, tc.path)
		}
	}
	// The refused writes changed nothing.
	got = decodeAgent(t, call(t, srv, "GET", "/api/v1/agents/mailer", "", ""), http.StatusOK)
	if diff := cmp.Diff([]json.RawMessage{pubs[1]}, got.RecipientKeys); diff != "" {
		t.Errorf("after refused writes (-want +got):\n%s", diff)
	}
	problem(t, call(t, srv, "GET", "/api/v1/agents/mailer-2", "", ""), http.StatusNotFound, registry.ProblemAgentNotFound)
}

func recipientKIDOf(t *testing.T, jwk json.RawMessage) string {
	t.Helper()
	to, err := usercontext.ParsePublicJWK(jwk)
	if err != nil {
		t.Fatal(err)
	}
	return to.KID
}
