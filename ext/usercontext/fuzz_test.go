package usercontext

import (
	"crypto/ecdh"
	"encoding/json"
	"testing"
)

// FuzzOpen feeds arbitrary bytes to the opener as an envelope and as a
// payload. It must never panic, and must never open anything but the one
// genuine envelope (which the seeds contain, possibly re-spelled).
func FuzzOpen(f *testing.F) {
	k := fixedKey(f, "fuzz recipient")
	ring := StaticKeyRing(k)
	// Fixed, not random: the fuzzing workers must see the same envelope.
	eph, err := ecdh.X25519().NewPrivateKey(fixedBytes("fuzz ephemeral", 32))
	if err != nil {
		f.Fatal(err)
	}
	env, err := seal(k.Recipient(), testDelivery, testValue, eph, fixedBytes("fuzz iv", nonceSize))
	if err != nil {
		f.Fatal(err)
	}
	good, _ := json.Marshal(env)
	f.Add(good)
	f.Add([]byte(`{"v":1,"suite":"` + Suite + `","kid":"` + env.KID + `","epk":"` + env.EPK + `","iv":"` + env.IV + `","ct":"AAAAAAAAAAAAAAAAAAAAAA"}`))
	f.Add([]byte(`{"v":1.0,"suite":"` + Suite + `","kid":"` + env.KID + `","epk":"` + env.EPK + `","iv":"` + env.IV + `","ct":"` + env.CT + `","extra":[1,{}]}`))
	f.Add([]byte(`{"secrets":{"API_KEY":` + string(good) + `}}`))
	f.Add([]byte(`{"v":2}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{"v":1,"suite":"","kid":"../../etc/passwd","epk":"","iv":"","ct":""}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ring.Open(json.RawMessage(data), testDelivery)
		if err == nil {
			// Only the genuine ciphertext can open, under any spelling.
			var got map[string]any
			if json.Unmarshal(data, &got) != nil || got["epk"] != env.EPK || got["iv"] != env.IV || got["ct"] != env.CT {
				t.Fatalf("opened a forged envelope: %q", data)
			}
			if s.Reveal() != testValue {
				t.Fatal("opened to another value")
			}
		}
		sealed, err := ParsePayload(json.RawMessage(data))
		if err != nil {
			return
		}
		for _, name := range sealed.Names() {
			if _, err := sealed.Open(ring, testRun, name); err == nil && name != testDelivery.SecretName {
				t.Fatalf("opened %q under a name it was not sealed for", name)
			}
		}
	})
}
