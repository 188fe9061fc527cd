package usercontext

import (
	"encoding/json"
	"testing"
)

const benchValue = "sk-proj-0123456789abcdef0123456789abcdef0123456789abcdef"

func BenchmarkSeal(b *testing.B) {
	k := fixedKey(b, "bench")
	to := k.Recipient()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Seal(to, testDelivery, benchValue); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOpen opens a decoded JSON envelope, as it arrives in request
// metadata, with an in-memory key.
func BenchmarkOpen(b *testing.B) {
	k := fixedKey(b, "bench")
	ring := StaticKeyRing(k)
	env := decodedEnvelope(b, k)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ring.Open(env, testDelivery); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOpenKeyDir is BenchmarkOpen with a directory key ring: each
// open also stats the key file.
func BenchmarkOpenKeyDir(b *testing.B) {
	k := fixedKey(b, "bench")
	dir := b.TempDir()
	writeKey(b, dir, k)
	ring := NewKeyRing(dir)
	env := decodedEnvelope(b, k)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ring.Open(env, testDelivery); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkOpenKeyDirParallel(b *testing.B) {
	k := fixedKey(b, "bench")
	dir := b.TempDir()
	writeKey(b, dir, k)
	ring := NewKeyRing(dir)
	env := decodedEnvelope(b, k)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := ring.Open(env, testDelivery); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func decodedEnvelope(b *testing.B, k *PrivateKey) map[string]any {
	raw, _ := json.Marshal(sealTest(b, k, testDelivery, benchValue))
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		b.Fatal(err)
	}
	return m
}

// BenchmarkBaselineECDH is the floor under Open: one X25519 agreement,
// the operation no implementation of the suite can skip.
func BenchmarkBaselineECDH(b *testing.B) {
	k := fixedKey(b, "bench")
	peer := fixedKey(b, "peer").Recipient().Public
	b.ReportAllocs()
	for b.Loop() {
		if _, err := k.priv.ECDH(peer); err != nil {
			b.Fatal(err)
		}
	}
}
