package usercontext

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var testRun = Run{TenantID: "tenant-a", InstanceID: "inst-1", RunID: "run-1"}

func sealedPayload(t testing.TB, k *PrivateKey) *Payload {
	t.Helper()
	p, err := SealPayload(k.Recipient(), testRun, map[string]Secret{
		"API_KEY": NewSecret(testValue), "SMTP_PASSWORD": NewSecret(testValue + "-smtp"),
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPayloadRoundTrip(t *testing.T) {
	k := fixedKey(t, "recipient")
	ring := StaticKeyRing(k)
	p := sealedPayload(t, k)
	wire, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var decoded any
	if err := json.Unmarshal(wire, &decoded); err != nil {
		t.Fatal(err)
	}
	for _, form := range []any{p, *p, decoded, json.RawMessage(wire), wire} {
		s, err := ParsePayload(form)
		if err != nil {
			t.Fatalf("parse %T: %v", form, err)
		}
		if diff := cmp.Diff([]string{"API_KEY", "SMTP_PASSWORD"}, s.Names()); diff != "" {
			t.Errorf("names of %T (-want +got):\n%s", form, diff)
		}
		got, err := s.Open(ring, testRun, "SMTP_PASSWORD")
		if err != nil || got.Reveal() != testValue+"-smtp" {
			t.Fatalf("open %T: %v", form, err)
		}
		if str := fmt.Sprint(s); !strings.Contains(str, "API_KEY") || strings.Contains(str, p.Secrets["API_KEY"].CT) {
			t.Errorf("Sealed renders as %q", str)
		}
	}
}

func TestPayloadShapes(t *testing.T) {
	for name, v := range map[string]any{
		"nil (activated, nothing sent)": nil,
		"no secrets member":             map[string]any{"mcp_gateway_token": "future sibling"},
		"null secrets":                  map[string]any{"secrets": nil},
		"empty secrets":                 json.RawMessage(`{"secrets":{}}`),
		"json null":                     json.RawMessage(`null`),
		"nil *Payload":                  (*Payload)(nil),
	} {
		s, err := ParsePayload(v)
		if err != nil || len(s.Names()) != 0 {
			t.Errorf("%s: names %v, err %v; want none", name, s.Names(), err)
		}
		if _, err := s.Open(nil, testRun, "API_KEY"); !errors.Is(err, ErrNotDelivered) || errors.Is(err, ErrOpen) {
			t.Errorf("%s: open err = %v, want ErrNotDelivered only", name, err)
		}
	}
	for name, v := range map[string]any{
		"string":            "secrets",
		"array":             []any{},
		"secrets is array":  map[string]any{"secrets": []any{}},
		"secrets is string": map[string]any{"secrets": "x"},
		"json array":        json.RawMessage(`[]`),
		"not json":          []byte(`{`),
	} {
		if _, err := ParsePayload(v); !errors.Is(err, ErrFormat) {
			t.Errorf("%s: err = %v, want ErrFormat", name, err)
		}
	}
}

func TestPayloadBindings(t *testing.T) {
	k := fixedKey(t, "recipient")
	ring := StaticKeyRing(k)
	p := sealedPayload(t, k)
	// An envelope moved to another name does not open.
	moved := &Payload{Secrets: map[string]Envelope{"SMTP_PASSWORD": p.Secrets["API_KEY"]}}
	s, _ := ParsePayload(moved)
	if _, err := s.Open(ring, testRun, "SMTP_PASSWORD"); errorClass(err) != "open" {
		t.Errorf("moved envelope: %v", err)
	}
	// Replayed into another run, tenant or instance, nothing opens.
	s, _ = ParsePayload(p)
	for _, run := range []Run{
		{TenantID: "tenant-b", InstanceID: "inst-1", RunID: "run-1"},
		{TenantID: "tenant-a", InstanceID: "inst-2", RunID: "run-1"},
		{TenantID: "tenant-a", InstanceID: "inst-1", RunID: "run-2"},
	} {
		if _, err := s.Open(ring, run, "API_KEY"); errorClass(err) != "open" {
			t.Errorf("run %+v: %v", run, err)
		}
	}
	// One malformed envelope spoils only itself.
	var m map[string]any
	b, _ := json.Marshal(p)
	_ = json.Unmarshal(b, &m)
	m["secrets"].(map[string]any)["BROKEN"] = "not an envelope"
	s, err := ParsePayload(m)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Open(ring, testRun, "BROKEN"); !errors.Is(err, ErrFormat) {
		t.Errorf("broken envelope: %v", err)
	}
	if _, err := s.Open(ring, testRun, "API_KEY"); err != nil {
		t.Errorf("good envelope next to a broken one: %v", err)
	}
}

func TestNamesInMessagesAreBounded(t *testing.T) {
	secrets := map[string]any{}
	for i := range 500 {
		secrets[fmt.Sprintf("%04d_%s", i, strings.Repeat("N", 1000))] = map[string]any{}
	}
	s, err := ParsePayload(map[string]any{"secrets": secrets})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Open(nil, testRun, "MISSING")
	for _, out := range []string{s.String(), err.Error()} {
		if len(out) > 2000 {
			t.Errorf("%d-byte rendering of 500 long names", len(out))
		}
		if !strings.Contains(out, "480 more") {
			t.Errorf("rendering does not say how many names it left out: %.200s", out)
		}
	}
}

func TestDeclaration(t *testing.T) {
	d := Declaration(true)
	if d.URI != URI || !d.Required || d.Params["suite"] != Suite {
		t.Errorf("declaration = %+v", d)
	}
	if Declaration(false).Required {
		t.Error("Declaration(false) is required")
	}
}

func TestKeys(t *testing.T) {
	k, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	if k.KID() != Thumbprint(k.Recipient().Public) {
		t.Error("a generated key's kid is not its thumbprint")
	}
	priv, _ := k.PrivateJWK()
	d := b64.EncodeToString(k.priv.Bytes())
	for _, s := range []string{fmt.Sprint(k), fmt.Sprintf("%+v %#v %s %x", k, k, k, k), mustString(json.Marshal(k)),
		mustString(json.Marshal(map[string]any{"k": k}))} {
		if strings.Contains(s, d) {
			t.Errorf("key rendered with its private part: %s", s)
		}
		if !strings.Contains(s, k.KID()) {
			t.Errorf("key rendered without its kid: %s", s)
		}
	}
	back, err := ParsePrivateJWK(priv)
	if err != nil || back.KID() != k.KID() {
		t.Fatalf("private JWK round trip: %v", err)
	}
	pub, _ := k.PublicJWK()
	if strings.Contains(string(pub), `"d"`) {
		t.Errorf("public JWK has d: %s", pub)
	}
	rcpt, err := ParsePublicJWK(pub)
	if err != nil || rcpt.KID != k.KID() || !rcpt.Public.Equal(k.Recipient().Public) {
		t.Fatalf("public JWK round trip: %v", err)
	}
	env := sealTest(t, k, testDelivery, testValue)
	if s, err := Open(env, back, testDelivery); err != nil || s.Reveal() != testValue {
		t.Errorf("open with the parsed key: %v", err)
	}

	x := b64.EncodeToString(k.pub)
	for name, j := range map[string]string{
		"not json":        `{`,
		"RSA":             `{"kty":"RSA","crv":"X25519","d":"` + d + `"}`,
		"Ed25519":         `{"kty":"OKP","crv":"Ed25519","d":"` + d + `"}`,
		"upper-case keys": `{"KTY":"OKP","CRV":"X25519","D":"` + d + `"}`,
		"missing d":       `{"kty":"OKP","crv":"X25519","x":"` + x + `"}`,
		"short d":         `{"kty":"OKP","crv":"X25519","d":"` + d[:20] + `"}`,
		"padded d":        `{"kty":"OKP","crv":"X25519","d":"` + d + `="}`,
		"numeric d":       `{"kty":"OKP","crv":"X25519","d":5}`,
		"x of another":    `{"kty":"OKP","crv":"X25519","d":"` + d + `","x":"` + b64.EncodeToString(make([]byte, 32)) + `"}`,
	} {
		_, err := ParsePrivateJWK([]byte(j))
		if !errors.Is(err, ErrKey) {
			t.Errorf("%s: err = %v, want ErrKey", name, err)
			continue
		}
		if strings.Contains(err.Error(), d[:20]) {
			t.Errorf("%s: error contains key material: %v", name, err)
		}
	}
	if _, err := ParsePublicJWK([]byte(`{"kty":"OKP","crv":"X25519","x":"AAAA"}`)); !errors.Is(err, ErrKey) {
		t.Errorf("short x: %v", err)
	}
	if err := WriteKeyFile(t.TempDir(), &PrivateKey{kid: "../escape", priv: k.priv, pub: k.pub}); !errors.Is(err, ErrKey) {
		t.Errorf("WriteKeyFile with an unsafe kid: %v", err)
	}
}
