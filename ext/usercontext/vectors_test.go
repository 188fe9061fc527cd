package usercontext

import (
	"bytes"
	"crypto/ecdh"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite testdata/vectors.json")

const vectorsPath = "testdata/vectors.json"

type vectorFile struct {
	Comment string          `json:"comment"`
	Suite   string          `json:"suite"`
	Label   string          `json:"label"`
	Vectors []vector        `json:"vectors"`
	Invalid []invalidVector `json:"invalid"`
}

type vectorDelivery struct {
	TenantID   string `json:"tenant_id"`
	InstanceID string `json:"instance_id"`
	RunID      string `json:"run_id"`
	SecretName string `json:"secret_name"`
}

func (d vectorDelivery) delivery() Delivery {
	return Delivery{TenantID: d.TenantID, InstanceID: d.InstanceID, RunID: d.RunID, SecretName: d.SecretName}
}

type vector struct {
	Name             string          `json:"name"`
	RecipientJWK     json.RawMessage `json:"recipient_jwk"`
	EphemeralPrivate string          `json:"ephemeral_private"`
	IV               string          `json:"iv"`
	Delivery         vectorDelivery  `json:"delivery"`
	Plaintext        string          `json:"plaintext"`
	AAD              string          `json:"aad"`
	SharedSecret     string          `json:"shared_secret"`
	ContentKey       string          `json:"content_key"`
	Envelope         Envelope        `json:"envelope"`
}

type invalidVector struct {
	Name         string          `json:"name"`
	RecipientJWK json.RawMessage `json:"recipient_jwk"`
	Delivery     vectorDelivery  `json:"delivery"`
	Envelope     map[string]any  `json:"envelope"`
	Error        string          `json:"error"`
}

// fixedBytes derives deterministic test inputs from a label, so that
// -update rewrites the same file.
func fixedBytes(label string, n int) []byte {
	sum := sha256.Sum256([]byte("novaos usercontext test vector: " + label))
	return sum[:n]
}

func fixedKey(t testing.TB, label string) *PrivateKey {
	t.Helper()
	priv, err := ecdh.X25519().NewPrivateKey(fixedBytes(label, 32))
	if err != nil {
		t.Fatal(err)
	}
	k, err := NewPrivateKey("", priv)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func mustJWK(t testing.TB, k *PrivateKey) json.RawMessage {
	t.Helper()
	b, err := k.PrivateJWK()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// generateVectors builds the vector file from fixed inputs.
func generateVectors(t *testing.T) vectorFile {
	t.Helper()
	r1 := fixedKey(t, "recipient 1")
	r2 := fixedKey(t, "recipient 2")
	base := vectorDelivery{
		TenantID:   "0b7c5a1e-7f0e-4c35-9c1d-2f7a9d7e4b10",
		InstanceID: "inst-4f2d9a",
		RunID:      "run-01JD3Q7Y8ZP4K2M6N9R1T5V7X0",
		SecretName: "SMTP_PASSWORD",
	}
	unicode := vectorDelivery{TenantID: "mandant-ü", InstanceID: "instanz-ß", RunID: "lauf-✓", SecretName: "KEY_ÄÖÜ"}
	specs := []struct {
		name      string
		key       *PrivateKey
		d         vectorDelivery
		plaintext string
	}{
		{"ascii value", r1, base, "correct horse battery staple"},
		{"unicode value and identifiers", r1, unicode, "pässwörd ✓ 🔑"},
		{"empty value", r2, base, ""},
		{"long value", r2, vectorDelivery{TenantID: "t", InstanceID: "i", RunID: "r", SecretName: "OPENAI_API_KEY"},
			"sk-" + hex.EncodeToString(fixedBytes("long value", 32)) + hex.EncodeToString(fixedBytes("long value 2", 32))},
	}
	f := vectorFile{
		Comment: "Sealed envelope v1 test vectors (novaos.dev/novaos/ext/usercontext). Binary values in " +
			"envelopes, ephemeral_private and iv are unpadded base64url; aad, shared_secret and content_key are hex.",
		Suite: Suite, Label: Label,
	}
	for i, s := range specs {
		eph, err := ecdh.X25519().NewPrivateKey(fixedBytes("ephemeral "+s.name, 32))
		if err != nil {
			t.Fatal(err)
		}
		iv := fixedBytes("iv "+s.name, nonceSize)
		env, err := seal(s.key.Recipient(), s.d.delivery(), s.plaintext, eph, iv)
		if err != nil {
			t.Fatalf("vector %d: %v", i, err)
		}
		shared, key := intermediates(t, eph, s.key)
		f.Vectors = append(f.Vectors, vector{
			Name: s.name, RecipientJWK: mustJWK(t, s.key),
			EphemeralPrivate: b64.EncodeToString(eph.Bytes()), IV: b64.EncodeToString(iv),
			Delivery: s.d, Plaintext: s.plaintext,
			AAD: hex.EncodeToString(s.d.delivery().AAD()), SharedSecret: hex.EncodeToString(shared),
			ContentKey: hex.EncodeToString(key), Envelope: env,
		})
	}

	good := f.Vectors[0]
	envMap := func(mut func(m map[string]any)) map[string]any {
		m := map[string]any{"v": float64(good.Envelope.V), "suite": good.Envelope.Suite, "kid": good.Envelope.KID,
			"epk": good.Envelope.EPK, "iv": good.Envelope.IV, "ct": good.Envelope.CT}
		if mut != nil {
			mut(m)
		}
		return m
	}
	flip := func(field string, i int) func(m map[string]any) {
		return func(m map[string]any) {
			b, _ := b64Decode(m[field].(string))
			if i < 0 {
				i += len(b)
			}
			b[i] ^= 0x01
			m[field] = b64.EncodeToString(b)
		}
	}
	other := func(mut func(d *vectorDelivery)) vectorDelivery { d := good.Delivery; mut(&d); return d }
	wrongKey := fixedKey(t, "recipient 3")
	wrongKey.kid = r1.kid // same kid, different key: a replaced key file
	inv := []struct {
		name string
		key  *PrivateKey
		d    vectorDelivery
		mut  func(m map[string]any)
		err  string
	}{
		{"tag bit flipped", r1, good.Delivery, flip("ct", -1), "open"},
		{"ciphertext bit flipped", r1, good.Delivery, flip("ct", 0), "open"},
		{"iv bit flipped", r1, good.Delivery, flip("iv", 0), "open"},
		{"epk bit flipped", r1, good.Delivery, flip("epk", 5), "open"},
		{"epk is a low-order point", r1, good.Delivery, func(m map[string]any) { m["epk"] = b64.EncodeToString(make([]byte, 32)) }, "open"},
		{"other tenant", r1, other(func(d *vectorDelivery) { d.TenantID += "x" }), nil, "open"},
		{"other instance", r1, other(func(d *vectorDelivery) { d.InstanceID += "x" }), nil, "open"},
		{"other run", r1, other(func(d *vectorDelivery) { d.RunID += "x" }), nil, "open"},
		{"other secret name", r1, other(func(d *vectorDelivery) { d.SecretName = "SMTP_USER" }), nil, "open"},
		{"identifiers shifted between fields", r1, other(func(d *vectorDelivery) {
			d.TenantID, d.InstanceID = d.TenantID+d.InstanceID[:1], d.InstanceID[1:]
		}), nil, "open"},
		{"different key under the same kid", wrongKey, good.Delivery, nil, "open"},
		{"unknown kid", r1, good.Delivery, func(m map[string]any) { m["kid"] = r2.kid }, "key_unavailable"},
		{"version 2", r1, good.Delivery, func(m map[string]any) { m["v"] = float64(2) }, "format"},
		{"version as string", r1, good.Delivery, func(m map[string]any) { m["v"] = "1" }, "format"},
		{"unknown suite", r1, good.Delivery, func(m map[string]any) { m["suite"] = "ECDH-ES+A256GCM" }, "format"},
		{"padded base64", r1, good.Delivery, func(m map[string]any) { m["iv"] = m["iv"].(string) + "=" }, "format"},
		{"standard base64 alphabet", r1, good.Delivery, func(m map[string]any) {
			m["epk"] = b64.EncodeToString(bytes.Repeat([]byte{0xfb}, 32))
			m["epk"] = strings.ReplaceAll(m["epk"].(string), "-", "+")
		}, "format"},
		{"short iv", r1, good.Delivery, func(m map[string]any) { m["iv"] = b64.EncodeToString(make([]byte, 8)) }, "format"},
		{"ciphertext shorter than a tag", r1, good.Delivery, func(m map[string]any) { m["ct"] = b64.EncodeToString(make([]byte, 15)) }, "format"},
		{"missing kid", r1, good.Delivery, func(m map[string]any) { delete(m, "kid") }, "format"},
	}
	for _, c := range inv {
		f.Invalid = append(f.Invalid, invalidVector{
			Name: c.name, RecipientJWK: mustJWK(t, c.key), Delivery: c.d, Envelope: envMap(c.mut), Error: c.err,
		})
	}
	return f
}

func intermediates(t *testing.T, eph *ecdh.PrivateKey, k *PrivateKey) (shared, key []byte) {
	t.Helper()
	shared, err := eph.ECDH(k.priv.PublicKey())
	if err != nil {
		t.Fatal(err)
	}
	key, err = deriveKey(shared, eph.PublicKey().Bytes(), k.pub)
	if err != nil {
		t.Fatal(err)
	}
	return shared, key
}

func encodeVectors(t *testing.T, f vectorFile) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(f); err != nil {
		t.Fatal(err)
	}
	// Indent the embedded JWKs too.
	var out bytes.Buffer
	if err := json.Indent(&out, buf.Bytes(), "", "  "); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// TestVectors checks this implementation against the fixed vector file,
// and that the file is what the generator writes (-update rewrites it).
func TestVectors(t *testing.T) {
	gen := encodeVectors(t, generateVectors(t))
	if *update {
		if err := os.MkdirAll(filepath.Dir(vectorsPath), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(vectorsPath, gen, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := os.ReadFile(vectorsPath)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	var f vectorFile
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	if f.Suite != Suite || f.Label != Label {
		t.Fatalf("file is for suite %q label %q", f.Suite, f.Label)
	}
	if len(f.Vectors) == 0 || len(f.Invalid) == 0 {
		t.Fatal("vector file has no vectors")
	}
	for _, v := range f.Vectors {
		t.Run(v.Name, func(t *testing.T) {
			k, err := ParsePrivateJWK(v.RecipientJWK)
			if err != nil {
				t.Fatal(err)
			}
			ephBytes, ok := b64Decode(v.EphemeralPrivate)
			if !ok {
				t.Fatal("ephemeral_private is not base64url")
			}
			eph, err := ecdh.X25519().NewPrivateKey(ephBytes)
			if err != nil {
				t.Fatal(err)
			}
			iv, _ := b64Decode(v.IV)
			d := v.Delivery.delivery()
			if got := hex.EncodeToString(d.AAD()); got != v.AAD {
				t.Errorf("aad = %s, want %s", got, v.AAD)
			}
			shared, key := intermediates(t, eph, k)
			if got := hex.EncodeToString(shared); got != v.SharedSecret {
				t.Errorf("shared secret = %s, want %s", got, v.SharedSecret)
			}
			if got := hex.EncodeToString(key); got != v.ContentKey {
				t.Errorf("content key = %s, want %s", got, v.ContentKey)
			}
			env, err := seal(k.Recipient(), d, v.Plaintext, eph, iv)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(v.Envelope, env); diff != "" {
				t.Errorf("sealed envelope (-want +got):\n%s", diff)
			}
			sec, err := Open(v.Envelope, k, d)
			if err != nil {
				t.Fatal(err)
			}
			if sec.Reveal() != v.Plaintext {
				t.Error("opened value differs from the vector's plaintext")
			}
		})
	}
	for _, v := range f.Invalid {
		t.Run("invalid/"+v.Name, func(t *testing.T) {
			k, err := ParsePrivateJWK(v.RecipientJWK)
			if err != nil {
				t.Fatal(err)
			}
			_, err = StaticKeyRing(k).Open(v.Envelope, v.Delivery.delivery())
			if got := errorClass(err); got != v.Error {
				t.Errorf("error class = %q (%v), want %q", got, err, v.Error)
			}
		})
	}
	if !bytes.Equal(raw, gen) {
		t.Errorf("%s differs from what the generator writes; run go test -run TestVectors -update after a deliberate change", vectorsPath)
	}
}

// errorClass names the class of an open error as the vector file does.
func errorClass(err error) string {
	switch {
	case err == nil:
		return "none"
	case errors.Is(err, ErrFormat):
		return "format"
	case errors.Is(err, ErrKeyUnavailable):
		return "key_unavailable"
	case errors.Is(err, ErrOpen):
		return "open"
	}
	return "other"
}

// TestVectorsNode checks the vector file with Node's built-in crypto, an
// independent implementation in the runtime of a TypeScript sealing side.
func TestVectorsNode(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node not found (%v): this cross-implementation check needs Node.js 20+; install it (your distribution's nodejs where it is 20 or newer, else NodeSource's), or run ./scripts/test, which installs Debian's nodejs when run as root and says what is missing otherwise", err)
	}
	out, err := exec.Command(node, "testdata/crosscheck.mjs").CombinedOutput()
	if err != nil {
		t.Fatalf("node crosscheck: %v\n%s", err, out)
	}
	if n := bytes.Count(out, []byte("ok   ")); n < 20 {
		t.Fatalf("node crosscheck ran %d checks:\n%s", n, out)
	}
}
