package sealkey

import (
	"os"
	"path/filepath"
	"testing"
)

func benchSealer(b *testing.B) *Sealer {
	path := filepath.Join(b.TempDir(), "seal.key")
	if err := os.WriteFile(path, []byte(testKey), 0o600); err != nil {
		b.Fatal(err)
	}
	s, err := Open(path, nil)
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// A run's custom headers and an instance's secrets are sealed and opened
// once per run: this is on the path of every dispatch.
func BenchmarkSeal(b *testing.B) {
	s := benchSealer(b)
	plain := []byte("Bearer eyJhbGciOiJSUzI1NiIsImtpZCI6IjEifQ.payload.signature")
	b.ReportAllocs()
	b.SetBytes(int64(len(plain)))
	for b.Loop() {
		if _, err := s.Seal(plain, "novaos bench v1", "acme", "instance-1", "Authorization"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkUnseal(b *testing.B) {
	s := benchSealer(b)
	plain := []byte("Bearer eyJhbGciOiJSUzI1NiIsImtpZCI6IjEifQ.payload.signature")
	v, err := s.Seal(plain, "novaos bench v1", "acme", "instance-1", "Authorization")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(plain)))
	for b.Loop() {
		if _, err := s.Unseal(v, "novaos bench v1", "acme", "instance-1", "Authorization"); err != nil {
			b.Fatal(err)
		}
	}
}
