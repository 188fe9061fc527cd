package sealkey

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fuzzSealer is a Sealer on the fixed test key.
func fuzzSealer(f *testing.F) *Sealer {
	path := filepath.Join(f.TempDir(), "seal.key")
	if err := os.WriteFile(path, []byte(testKey), 0o600); err != nil {
		f.Fatal(err)
	}
	s, err := Open(path, nil)
	if err != nil {
		f.Fatal(err)
	}
	return s
}

// Unseal reads what a database holds, which someone with the database
// may have written: any input is an error of one of the documented kinds
// (or, for the values the key really sealed, the plaintext), never a
// panic, and never an error that repeats the input's ciphertext.
func FuzzUnseal(f *testing.F) {
	s := fuzzSealer(f)
	good, err := s.Seal([]byte(secret), "novaos test v1", "acme")
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{
		good, good[:len(good)-4], "", "plain", Prefix, Prefix + testKID, Prefix + testKID + ":",
		Prefix + testKID + ":" + strings.Repeat("A", 38), Prefix + "zz:AAAA", Prefix + "0123456789abcdef:" + good[len(Prefix)+kidLen+1:],
		"novaos-sealed:v2:" + testKID + ":AAAA", Prefix + testKID + "::",
	} {
		f.Add(seed, "novaos test v1", "acme")
	}
	f.Fuzz(func(t *testing.T, v, purpose, field string) {
		plain, err := s.Unseal(v, purpose, field)
		if err == nil {
			if !bytes.Equal(plain, []byte(secret)) || purpose != "novaos test v1" || field != "acme" {
				t.Fatalf("Unseal(%q, %q, %q) opened to %q", v, purpose, field, plain)
			}
			return
		}
		if plain != nil {
			t.Fatalf("plaintext %q returned with error %v", plain, err)
		}
		_, isKey := errors.AsType[*KeyError](err)
		if !errors.Is(err, ErrFormat) && !errors.Is(err, ErrNotOpened) && !isKey {
			t.Fatalf("Unseal(%q): error of no documented kind: %v", v, err)
		}
		if body := v[min(len(v), len(Prefix)+kidLen+1):]; len(body) >= 8 && strings.Contains(err.Error(), body) {
			t.Fatalf("the error repeats the value: %v", err)
		}
	})
}

// Whatever is sealed opens to itself under the same purpose and binding,
// and not under a binding that differs in any field.
func FuzzSealRoundTrip(f *testing.F) {
	s := fuzzSealer(f)
	f.Add([]byte(secret), "novaos test v1", "acme", "row-1")
	f.Add([]byte{}, "p", "", "")
	f.Add([]byte{0, 0xff}, "novaos push-config v1", "a\x00b", strings.Repeat("x", 300))
	f.Fuzz(func(t *testing.T, plain []byte, purpose, a, b string) {
		if purpose == "" {
			return
		}
		v, err := s.Seal(plain, purpose, a, b)
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.Unseal(v, purpose, a, b)
		if err != nil || !bytes.Equal(got, plain) {
			t.Fatalf("round trip = %q, %v; want %q", got, err, plain)
		}
		if _, err := s.Unseal(v, purpose, a+"x", b); !errors.Is(err, ErrNotOpened) {
			t.Fatalf("opened under another binding: %v", err)
		}
		if _, err := s.Unseal(v, purpose, b, a); a != b && !errors.Is(err, ErrNotOpened) {
			t.Fatalf("opened with its binding's fields swapped: %v", err)
		}
	})
}
