package usercontext

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const testValue = "s3cr3t-v4lue-Xq9"

var testDelivery = Delivery{TenantID: "tenant-a", InstanceID: "inst-1", RunID: "run-1", SecretName: "API_KEY"}

func sealTest(t testing.TB, k *PrivateKey, d Delivery, value string) Envelope {
	t.Helper()
	env, err := Seal(k.Recipient(), d, value)
	if err != nil {
		t.Fatal(err)
	}
	return env
}

func TestRoundTrip(t *testing.T) {
	k, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	for _, value := range []string{"", "x", testValue, "ünïcødé ✓", strings.Repeat("v", MaxSecretSize)} {
		env := sealTest(t, k, testDelivery, value)
		// Every form an envelope arrives in opens the same way.
		asJSON, _ := json.Marshal(env)
		var asMap map[string]any
		if err := json.Unmarshal(asJSON, &asMap); err != nil {
			t.Fatal(err)
		}
		for _, form := range []any{env, &env, asMap, json.RawMessage(asJSON), asJSON, string(asJSON)} {
			got, err := Open(form, k, testDelivery)
			if err != nil {
				t.Fatalf("open %T: %v", form, err)
			}
			if got.Reveal() != value {
				t.Fatalf("open %T: value differs (len %d, want %d)", form, len(got.Reveal()), len(value))
			}
		}
	}
}

func TestSealIsFreshEveryTime(t *testing.T) {
	k := fixedKey(t, "fresh")
	a, b := sealTest(t, k, testDelivery, testValue), sealTest(t, k, testDelivery, testValue)
	if a.EPK == b.EPK || a.IV == b.IV || a.CT == b.CT {
		t.Error("two sealings of one value share an ephemeral key, nonce or ciphertext")
	}
	if a.V != Version || a.Suite != Suite || a.KID != k.KID() {
		t.Errorf("header = %d %q %q", a.V, a.Suite, a.KID)
	}
}

// mutate returns env with one base64url member changed by f.
func mutate(env Envelope, field string, f func([]byte) []byte) Envelope {
	ptr := map[string]*string{"epk": &env.EPK, "iv": &env.IV, "ct": &env.CT}[field]
	b, _ := b64Decode(*ptr)
	*ptr = b64.EncodeToString(f(b))
	return env
}

func flipAt(i int) func([]byte) []byte {
	return func(b []byte) []byte {
		if i < 0 {
			i += len(b)
		}
		b[i] ^= 0x80
		return b
	}
}

func TestOpenFails(t *testing.T) {
	k := fixedKey(t, "recipient")
	other := fixedKey(t, "other")
	impostor := fixedKey(t, "impostor")
	impostor.kid = k.kid // a different key filed under the right kid
	env := sealTest(t, k, testDelivery, testValue)
	with := func(f func(d *Delivery)) Delivery { d := testDelivery; f(&d); return d }

	tests := []struct {
		name  string
		env   Envelope
		key   *PrivateKey
		d     Delivery
		class string
	}{
		{"tag", mutate(env, "ct", flipAt(-1)), k, testDelivery, "open"},
		{"first ciphertext byte", mutate(env, "ct", flipAt(0)), k, testDelivery, "open"},
		{"truncated tag", mutate(env, "ct", func(b []byte) []byte { return b[:len(b)-1] }), k, testDelivery, "open"},
		{"iv", mutate(env, "iv", flipAt(3)), k, testDelivery, "open"},
		{"ephemeral key", mutate(env, "epk", flipAt(7)), k, testDelivery, "open"},
		{"kid", func() Envelope { e := env; e.KID = other.kid; return e }(), k, testDelivery, "key_unavailable"},
		{"other tenant", env, k, with(func(d *Delivery) { d.TenantID = "tenant-b" }), "open"},
		{"other instance", env, k, with(func(d *Delivery) { d.InstanceID = "inst-2" }), "open"},
		{"other run", env, k, with(func(d *Delivery) { d.RunID = "run-2" }), "open"},
		{"other name", env, k, with(func(d *Delivery) { d.SecretName = "OTHER_KEY" }), "open"},
		{"wrong key, same kid", env, impostor, testDelivery, "open"},
		{"key with another kid", env, other, testDelivery, "key_unavailable"},
		{"no key", env, nil, testDelivery, "key_unavailable"},
		{"version", func() Envelope { e := env; e.V = 2; return e }(), k, testDelivery, "format"},
		{"suite", func() Envelope { e := env; e.Suite = "X25519-HKDF-SHA512-A256GCM"; return e }(), k, testDelivery, "format"},
		{"empty kid", func() Envelope { e := env; e.KID = ""; return e }(), k, testDelivery, "format"},
		{"epk with a line break", func() Envelope { e := env; e.EPK = e.EPK[:10] + "\n" + e.EPK[10:]; return e }(), k, testDelivery, "format"},
	}
	var openErrs []string
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Open(tt.env, tt.key, tt.d)
			if got := errorClass(err); got != tt.class {
				t.Fatalf("error class = %q (%v), want %q", got, err, tt.class)
			}
			assertNoLeak(t, err.Error(), k, env)
			if tt.class == "open" {
				openErrs = append(openErrs, err.Error())
			}
		})
	}
	// No oracle: every authentication failure reads the same.
	for _, e := range openErrs {
		if e != ErrOpen.Error() {
			t.Errorf("authentication failure %q differs from %q", e, ErrOpen)
		}
	}
}

// assertNoLeak fails when s contains the test value, the private key or
// the ciphertext.
func assertNoLeak(t *testing.T, s string, k *PrivateKey, env Envelope) {
	t.Helper()
	d := b64.EncodeToString(k.priv.Bytes())
	for what, needle := range map[string]string{"secret value": testValue, "private key": d, "ciphertext": env.CT} {
		if needle != "" && strings.Contains(s, needle) {
			t.Errorf("output contains the %s", what)
		}
	}
}

func TestMalformedEnvelopes(t *testing.T) {
	k := fixedKey(t, "recipient")
	good := sealTest(t, k, testDelivery, testValue)
	m := func(mut func(m map[string]any)) map[string]any {
		x := map[string]any{"v": 1.0, "suite": good.Suite, "kid": good.KID, "epk": good.EPK, "iv": good.IV, "ct": good.CT}
		mut(x)
		return x
	}
	for name, env := range map[string]any{
		"nil":              nil,
		"nil pointer":      (*Envelope)(nil),
		"array":            []any{1, 2},
		"number":           42.0,
		"json array":       json.RawMessage(`[1]`),
		"json null":        json.RawMessage(`null`),
		"not json":         "{",
		"fractional v":     m(func(m map[string]any) { m["v"] = 1.5 }),
		"boolean v":        m(func(m map[string]any) { m["v"] = true }),
		"numeric kid":      m(func(m map[string]any) { m["kid"] = 7.0 }),
		"missing ct":       m(func(m map[string]any) { delete(m, "ct") }),
		"null iv":          m(func(m map[string]any) { m["iv"] = nil }),
		"ct too long":      m(func(m map[string]any) { m["ct"] = strings.Repeat("A", 2*MaxSecretSize) }),
		"trailing bits":    m(func(m map[string]any) { m["epk"] = good.EPK[:42] + "B" }),
		"epk of 31 bytes":  m(func(m map[string]any) { m["epk"] = b64.EncodeToString(make([]byte, 31)) }),
		"epk of 33 bytes":  m(func(m map[string]any) { m["epk"] = b64.EncodeToString(make([]byte, 33)) }),
		"padded ct":        m(func(m map[string]any) { m["ct"] = good.CT + "==" }),
		"standard base64":  m(func(m map[string]any) { m["iv"] = "+/+/+/+/+/+/+/+/" }),
		"empty epk string": m(func(m map[string]any) { m["epk"] = "" }),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Open(env, k, testDelivery)
			if !errors.Is(err, ErrFormat) || !errors.Is(err, ErrOpen) {
				t.Fatalf("err = %v, want ErrFormat (and ErrOpen)", err)
			}
		})
	}
	// Unknown members are ignored.
	if _, err := Open(m(func(m map[string]any) { m["x-extra"] = "ignored" }), k, testDelivery); err != nil {
		t.Errorf("envelope with an extra member: %v", err)
	}
	// An integer v of another Go type is accepted.
	if _, err := Open(m(func(m map[string]any) { m["v"] = json.Number("1") }), k, testDelivery); err != nil {
		t.Errorf("v as json.Number: %v", err)
	}
}

func TestDeliveryMustBeComplete(t *testing.T) {
	k := fixedKey(t, "recipient")
	env := sealTest(t, k, testDelivery, testValue)
	for _, d := range []Delivery{
		{InstanceID: "i", RunID: "r", SecretName: "n"},
		{TenantID: "t", RunID: "r", SecretName: "n"},
		{TenantID: "t", InstanceID: "i", SecretName: "n"},
		{TenantID: "t", InstanceID: "i", RunID: "r"},
		{TenantID: "t\xff", InstanceID: "i", RunID: "r", SecretName: "n"},
	} {
		if _, err := Seal(k.Recipient(), d, testValue); !errors.Is(err, ErrDelivery) {
			t.Errorf("seal %+v: err = %v, want ErrDelivery", d, err)
		}
		if _, err := Open(env, k, d); !errors.Is(err, ErrDelivery) {
			t.Errorf("open %+v: err = %v, want ErrDelivery", d, err)
		}
	}
}

func TestSealRefuses(t *testing.T) {
	k := fixedKey(t, "recipient")
	if _, err := Seal(k.Recipient(), testDelivery, "bad \xff utf-8"); !errors.Is(err, ErrPlaintext) {
		t.Errorf("non-UTF-8 value: %v", err)
	}
	if _, err := Seal(k.Recipient(), testDelivery, strings.Repeat("x", MaxSecretSize+1)); !errors.Is(err, ErrPlaintext) {
		t.Errorf("oversized value: %v", err)
	}
	if _, err := Seal(Recipient{KID: "k"}, testDelivery, "v"); !errors.Is(err, ErrKey) {
		t.Errorf("recipient without a key: %v", err)
	}
	if _, err := Seal(Recipient{Public: k.Recipient().Public}, testDelivery, "v"); !errors.Is(err, ErrKey) {
		t.Errorf("recipient without a kid: %v", err)
	}
}

func TestAADLayout(t *testing.T) {
	got := Delivery{TenantID: "t", InstanceID: "ii", RunID: "rrr", SecretName: "N"}.AAD()
	want := []byte(Label + "\x00\x00\x00\x01t\x00\x00\x00\x02ii\x00\x00\x00\x03rrr\x00\x00\x00\x01N")
	if !bytes.Equal(got, want) {
		t.Errorf("AAD = %q, want %q", got, want)
	}
	// Length prefixes keep shifted identifiers apart.
	a := Delivery{TenantID: "ab", InstanceID: "c", RunID: "r", SecretName: "n"}.AAD()
	b := Delivery{TenantID: "a", InstanceID: "bc", RunID: "r", SecretName: "n"}.AAD()
	if bytes.Equal(a, b) {
		t.Error("shifting a byte between fields gives the same AAD")
	}
}

func TestSecretNeverRendered(t *testing.T) {
	s := NewSecret(testValue)
	type holder struct {
		Public  Secret
		private Secret
	}
	h := holder{Public: s, private: s}
	var out []string
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%T %v"} {
		out = append(out, fmt.Sprintf(verb, s), fmt.Sprintf(verb, &s), fmt.Sprintf(verb, h), fmt.Sprintf(verb, &h),
			fmt.Sprintf(verb, []Secret{s}), fmt.Sprintf(verb, map[string]Secret{"k": s}))
	}
	out = append(out, s.String(), s.GoString(), fmt.Sprint(s), fmt.Errorf("wrapped: %v", s).Error())
	j, err := json.Marshal(map[string]any{"s": s, "h": h, "p": &s})
	if err != nil {
		t.Fatal(err)
	}
	out = append(out, string(j))
	txt, _ := s.MarshalText()
	out = append(out, string(txt))
	for _, newHandler := range []func(*bytes.Buffer) slog.Handler{
		func(b *bytes.Buffer) slog.Handler { return slog.NewJSONHandler(b, nil) },
		func(b *bytes.Buffer) slog.Handler { return slog.NewTextHandler(b, nil) },
	} {
		var buf bytes.Buffer
		log := slog.New(newHandler(&buf))
		log.Info("opened", "secret", s, "holder", h, "ptr", &s, slog.Any("any", s), slog.Group("g", "s", s))
		log.Info(fmt.Sprint(s))
		out = append(out, buf.String())
	}
	for _, o := range out {
		if strings.Contains(o, testValue) || strings.Contains(o, fmt.Sprintf("%x", testValue)) {
			t.Errorf("rendered the value: %s", o)
		}
	}
	if !strings.Contains(string(j), Redacted) {
		t.Errorf("JSON = %s, want %s", j, Redacted)
	}
	if s.Reveal() != testValue || s.IsZero() || !(Secret{}).IsZero() || (Secret{}).Reveal() != "" {
		t.Error("Reveal/IsZero")
	}
}

func TestEnvelopeJSONShape(t *testing.T) {
	k := fixedKey(t, "recipient")
	b, err := json.Marshal(sealTest(t, k, testDelivery, testValue))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for key := range m {
		keys = append(keys, key)
	}
	if diff := cmp.Diff([]string{"ct", "epk", "iv", "kid", "suite", "v"}, sortedStrings(keys)); diff != "" {
		t.Errorf("members (-want +got):\n%s", diff)
	}
	if m["v"] != 1.0 {
		t.Errorf("v = %v", m["v"])
	}
}

func sortedStrings(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}
