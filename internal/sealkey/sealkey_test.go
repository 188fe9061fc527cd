package sealkey

import (
	"bytes"
	"encoding/base64"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/internal/keyfile"
)

// testKey is a fixed key, as `openssl rand -base64 32` writes one, and
// testKID its id.
const (
	testKey = "q83vEjRWeJCrze8SNFZ4kKvN7xI0VniQq83vEjRWeJA=\n"
	testKID = "359397539cc67687"
	secret  = "cred-9a8b7c6d5e4f"
)

// writeKey writes content to a new key file with mode and returns its path.
func writeKey(t *testing.T, content string, mode os.FileMode) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "seal.key")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
	return path
}

func mustOpen(t *testing.T, path string) *Sealer {
	t.Helper()
	s, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSealRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	path := filepath.Join(dir, "seal.key")
	s := mustOpen(t, path)
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Open created the key file: %v", err)
	}
	if s.KeyID() != "" {
		t.Errorf("KeyID before any key = %q", s.KeyID())
	}
	tests := []struct {
		name    string
		plain   []byte
		purpose string
		binding []string
	}{
		{"a secret", []byte(secret), "novaos test v1", []string{"acme", "row-1", "token"}},
		{"empty plaintext", []byte{}, "novaos test v1", []string{"acme"}},
		{"binary", []byte{0, 1, 2, 0xff, 0xfe, '\n'}, "novaos test v1", nil},
		{"large", bytes.Repeat([]byte("header value "), 10000), "novaos test v1", []string{""}},
		{"unicode binding", []byte("x"), "novaos test v1", []string{"ténant", "行", ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := s.Seal(tt.plain, tt.purpose, tt.binding...)
			if err != nil {
				t.Fatal(err)
			}
			if !IsSealed(v) || !strings.HasPrefix(v, Prefix+s.KeyID()+":") || len(s.KeyID()) != kidLen {
				t.Errorf("sealed value %.40q… does not begin %q<kid>:", v, Prefix)
			}
			if len(tt.plain) >= 4 && strings.Contains(v, string(tt.plain)) {
				t.Errorf("the sealed value contains the plaintext")
			}
			again, err := s.Seal(tt.plain, tt.purpose, tt.binding...)
			if err != nil || again == v {
				t.Errorf("sealing twice gave the same value (nonce reuse) or %v", err)
			}
			got, err := s.Unseal(v, tt.purpose, tt.binding...)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.plain, got, cmp.Comparer(bytes.Equal)); diff != "" {
				t.Errorf("Unseal (-want +got):\n%s", diff)
			}
			// A second Sealer on the file (a restart, a replica) opens it.
			if got, err := mustOpen(t, path).Unseal(v, tt.purpose, tt.binding...); err != nil || !bytes.Equal(got, tt.plain) {
				t.Errorf("Unseal by a second Sealer: %v", err)
			}
		})
	}
	if runtime.GOOS != "windows" {
		for p, want := range map[string]fs.FileMode{path: 0o600, dir: 0o700} {
			if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != want {
				t.Errorf("%s: %v, %v; want mode %v", p, fi, err, want)
			}
		}
	}
}

// Values sealed before this package existed (agenthost's push-config
// sealer, same key file format and wire format) still open.
func TestSealedByEarlierVersion(t *testing.T) {
	s := mustOpen(t, writeKey(t, testKey, 0o600))
	if s.KeyID() != testKID {
		t.Fatalf("KeyID = %q, want %q", s.KeyID(), testKID)
	}
	binding := []string{"acme", "task-1", "hook", "https://hooks.example.com/a2a"}
	tests := []struct{ sealed, field, want string }{
		{"novaos-sealed:v1:359397539cc67687:1zMKfw4EIWGgWGtzPqE4JRTu8zJyvGh2s08nDlmyu7NB79MlP97iJ6X3G5Hq", "credentials", "cred-9a8b7c6d5e4f"},
		{"novaos-sealed:v1:359397539cc67687:R0U8n-ZjzPUyNFW09xVHk0TaFpa4-ROnu6K8vSgFanQfW5spOYApbo-PnAg", "token", "tok-0f1e2d3c4b5a"},
	}
	for _, tt := range tests {
		got, err := s.Unseal(tt.sealed, "novaos push-config v1", append(binding, tt.field)...)
		if err != nil || string(got) != tt.want {
			t.Errorf("Unseal(%s) = %q, %v; want %q", tt.field, got, err, tt.want)
		}
	}
}

// A sealed value opens only under its key, purpose and binding, unaltered;
// anything else fails closed with an error that says which, and repeats
// neither the value nor the plaintext.
func TestUnsealFailsClosed(t *testing.T) {
	keyPath := writeKey(t, testKey, 0o600)
	s := mustOpen(t, keyPath)
	purpose, binding := "novaos test v1", []string{"acme", "row-1", "token"}
	v, err := s.Seal([]byte(secret), purpose, binding...)
	if err != nil {
		t.Fatal(err)
	}
	other := mustOpen(t, filepath.Join(t.TempDir(), "other.key"))
	if _, err := other.Seal([]byte("x"), purpose); err != nil {
		t.Fatal(err) // creates the other key
	}
	flip := func(i int) string { // flips a bit of the i-th byte of the ciphertext
		_, raw, err := parse(v)
		if err != nil {
			t.Fatal(err)
		}
		raw[i] ^= 0x10
		return v[:strings.LastIndexByte(v, ':')+1] + b64(raw)
	}
	tests := []struct {
		name    string
		sealer  *Sealer
		sealed  string
		purpose string
		binding []string
		want    error
	}{
		{"another key", other, v, purpose, binding, ErrWrongKey},
		{"no key file", mustOpen(t, filepath.Join(t.TempDir(), "missing.key")), v, purpose, binding, fs.ErrNotExist},
		{"another purpose", s, v, "novaos other v1", binding, ErrNotOpened},
		{"purpose extended", s, v, purpose + "x", binding, ErrNotOpened},
		{"another tenant", s, v, purpose, []string{"evil", "row-1", "token"}, ErrNotOpened},
		{"another field", s, v, purpose, []string{"acme", "row-1", "credentials"}, ErrNotOpened},
		{"fields split differently", s, v, purpose, []string{"acmer", "ow-1", "token"}, ErrNotOpened},
		{"a field more", s, v, purpose, append(binding, ""), ErrNotOpened},
		{"a field less", s, v, purpose, binding[:2], ErrNotOpened},
		{"nonce altered", s, flip(0), purpose, binding, ErrNotOpened},
		{"ciphertext altered", s, flip(nonceSize + 1), purpose, binding, ErrNotOpened},
		{"tag altered", s, flip(nonceSize + len(secret) + 3), purpose, binding, ErrNotOpened},
		{"key id altered", s, strings.Replace(v, testKID, "0123456789abcdef", 1), purpose, binding, ErrWrongKey},
		{"plaintext", s, secret, purpose, binding, ErrFormat},
		{"empty", s, "", purpose, binding, ErrFormat},
		{"prefix only", s, Prefix, purpose, binding, ErrFormat},
		{"no body", s, Prefix + testKID, purpose, binding, ErrFormat},
		{"key id not hex", s, strings.Replace(v, testKID, "359397539CC67687", 1), purpose, binding, ErrFormat},
		{"key id short", s, strings.Replace(v, testKID, "35939753", 1), purpose, binding, ErrFormat},
		{"body not base64url", s, v + "=", purpose, binding, ErrFormat},
		{"body too short", s, Prefix + testKID + ":" + b64(make([]byte, nonceSize+tagSize-1)), purpose, binding, ErrFormat},
		{"truncated", s, v[:len(v)-4], purpose, binding, ErrNotOpened},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.sealer.Unseal(tt.sealed, tt.purpose, tt.binding...)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Unseal = %q, %v; want %v", got, err, tt.want)
			}
			if got != nil {
				t.Errorf("Unseal returned %q with its error", got)
			}
			msg := err.Error()
			if strings.Contains(msg, secret) || (len(tt.sealed) > len(Prefix)+kidLen+1 && strings.Contains(msg, tt.sealed[len(Prefix)+kidLen+1:])) {
				t.Errorf("the error repeats the value or the plaintext: %s", msg)
			}
		})
	}
}

// A value sealed with another key names both keys, and the flag that
// chooses the key file.
func TestKeyError(t *testing.T) {
	a, err := Open(writeKey(t, testKey, 0o600), &Options{Flag: "--push-key-file"})
	if err != nil {
		t.Fatal(err)
	}
	b := mustOpen(t, filepath.Join(t.TempDir(), "b.key"))
	v, err := b.Seal([]byte(secret), "novaos test v1")
	if err != nil {
		t.Fatal(err)
	}
	_, err = a.Unseal(v, "novaos test v1")
	ke, ok := errors.AsType[*KeyError](err)
	if !ok {
		t.Fatalf("Unseal with another key: %v, want a *KeyError", err)
	}
	want := &KeyError{Path: a.Path(), Sealed: b.KeyID(), Have: testKID, Flag: "--push-key-file"}
	if diff := cmp.Diff(want, ke); diff != "" {
		t.Errorf("KeyError (-want +got):\n%s", diff)
	}
	for _, part := range []string{b.KeyID(), testKID, a.Path(), "--push-key-file"} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("%q does not name %q", err, part)
		}
	}
	if errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%v matches fs.ErrNotExist with a key file in place", err)
	}
}

func TestKeyFile(t *testing.T) {
	for _, bad := range []string{"not base64!", "c2hvcnQ=", strings.Repeat("A", 44) + "\nextra", strings.Repeat("QUFB", 20)} {
		_, err := Open(writeKey(t, bad, 0o600), nil)
		if !errors.Is(err, ErrKeyFile) {
			t.Errorf("key file %q: %v, want ErrKeyFile", bad, err)
		} else if strings.Contains(err.Error(), bad) {
			t.Errorf("the error repeats the key file's content: %v", err)
		}
	}
	if _, err := Open("", nil); !errors.Is(err, ErrKeyFile) {
		t.Errorf("Open(\"\") = %v, want ErrKeyFile", err)
	}
	// One key in every base64 spelling is the one key.
	for _, text := range []string{testKey, "q83vEjRWeJCrze8SNFZ4kKvN7xI0VniQq83vEjRWeJA", "q83vEjRWeJCrze8SNFZ4kKvN7xI0VniQq83vEjRWeJA=", "  q83vEjRWeJCrze8SNFZ4kKvN7xI0VniQq83vEjRWeJA=\r\n"} {
		if s, err := Open(writeKey(t, text, 0o600), nil); err != nil || s.KeyID() != testKID {
			t.Errorf("key file %q: %v, KeyID %q", text, err, s.KeyID())
		}
	}
	if _, err := Open(t.TempDir(), nil); !errors.Is(err, ErrKeyFile) {
		t.Errorf("a directory as the key file: %v, want ErrKeyFile", err)
	}
}

// A key file other users may read is made owner-only, and says so.
func TestKeyFileModeTightened(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no mode bits")
	}
	var logs syncBuffer
	path := writeKey(t, testKey, 0o644)
	s, err := Open(path, &Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil || s.KeyID() != testKID {
		t.Fatalf("Open = %v, KeyID %q", err, s.KeyID())
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode left at %v, want 0600", fi.Mode().Perm())
	}
	if out := logs.String(); !strings.Contains(out, "level=INFO") || !strings.Contains(out, "tightened the") || strings.Contains(out, "could not") || strings.Contains(out, strings.TrimSpace(testKey)) {
		t.Errorf("log: %s", logs.String())
	}
}

// An empty key file (an operator's touch, or a crash before keys were
// linked into place whole) is refused with an error naming it, and is not
// replaced: the operator may have meant to put a key there.
func TestKeyFileEmpty(t *testing.T) {
	path := writeKey(t, "\n", 0o600)
	_, err := Open(path, nil)
	if !errors.Is(err, ErrKeyFile) || !errors.Is(err, keyfile.ErrEmpty) || !strings.Contains(err.Error(), path) {
		t.Fatalf("Open with an empty key file: %v, want ErrKeyFile and keyfile.ErrEmpty naming %s", err, path)
	}
	s := &Sealer{path: path, log: slog.New(slog.DiscardHandler)}
	if _, err := s.Seal([]byte(secret), "novaos test v1"); !errors.Is(err, keyfile.ErrEmpty) {
		t.Fatalf("Seal with an empty key file: %v", err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "\n" {
		t.Errorf("the empty key file was replaced: %q, %v", b, err)
	}
}

// A Sealer opened before its key file exists picks the key up when it
// appears (another replica, or the operator, put it there).
func TestKeyAppearsLater(t *testing.T) {
	path := filepath.Join(t.TempDir(), "seal.key")
	late := mustOpen(t, path)
	first := mustOpen(t, path)
	v, err := first.Seal([]byte(secret), "novaos test v1")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := late.Unseal(v, "novaos test v1"); err != nil || string(got) != secret {
		t.Errorf("Unseal after the key appeared = %q, %v", got, err)
	}
	if late.KeyID() != first.KeyID() {
		t.Errorf("KeyID %q, want %q", late.KeyID(), first.KeyID())
	}

	// A broken key file that appears later is reported as such.
	broken := filepath.Join(t.TempDir(), "seal.key")
	s := mustOpen(t, broken)
	if err := os.WriteFile(broken, []byte("not a key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Unseal(v, "novaos test v1"); !errors.Is(err, ErrKeyFile) {
		t.Errorf("Unseal with a broken key file: %v, want ErrKeyFile", err)
	}
	if _, err := s.Seal([]byte(secret), "novaos test v1"); !errors.Is(err, ErrKeyFile) {
		t.Errorf("Seal with a broken key file: %v, want ErrKeyFile", err)
	}
}

// Sealers racing to create the key (replicas or restarts sharing a data
// directory, or one Sealer's concurrent callers) all end with the one key,
// and none reads a file still being written.
func TestConcurrentFirstUse(t *testing.T) {
	for round := range 20 {
		path := filepath.Join(t.TempDir(), "keys", "seal.key")
		shared := mustOpen(t, path)
		const racers = 8
		sealed := make([]string, 2*racers)
		sealers := make([]*Sealer, 2*racers)
		errs := make([]error, 2*racers)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range 2 * racers {
			wg.Go(func() {
				sealers[i] = shared
				if i%2 == 0 {
					sealers[i], errs[i] = Open(path, nil)
					if errs[i] != nil {
						return
					}
				}
				<-start
				sealed[i], errs[i] = sealers[i].Seal([]byte(secret), "novaos test v1")
			})
		}
		close(start)
		wg.Wait()
		for i := range sealed {
			if errs[i] != nil {
				t.Fatalf("round %d: sealer %d: %v", round, i, errs[i])
			}
			if sealers[i].KeyID() != sealers[0].KeyID() {
				t.Fatalf("round %d: sealer %d has key %s, sealer 0 %s", round, i, sealers[i].KeyID(), sealers[0].KeyID())
			}
			if got, err := shared.Unseal(sealed[i], "novaos test v1"); err != nil || string(got) != secret {
				t.Fatalf("round %d: value %d: %q, %v", round, i, got, err)
			}
		}
		entries, err := os.ReadDir(filepath.Dir(path))
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		if diff := cmp.Diff([]string{"seal.key"}, names); diff != "" {
			t.Fatalf("round %d: the key directory (-want +got):\n%s", round, diff)
		}
	}
}

// Creating a key logs it, as a warning naming the flag when replicas
// share the values; no log line carries the key.
func TestCreateLogs(t *testing.T) {
	tests := []struct {
		name  string
		opts  Options
		level string
		want  []string
	}{
		{"alone", Options{Name: "push credential key"}, "INFO", []string{"created the push credential key"}},
		{"shared", Options{Shared: true, Flag: "--push-key-file"}, "WARN", []string{"every replica", "--push-key-file", "sealing key"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs syncBuffer
			tt.opts.Logger = slog.New(slog.NewTextHandler(&logs, nil))
			path := filepath.Join(t.TempDir(), "seal.key")
			s, err := Open(path, &tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Seal([]byte(secret), "novaos test v1"); err != nil {
				t.Fatal(err)
			}
			key, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			out := logs.String()
			if strings.Count(out, "\n") != 1 || !strings.Contains(out, "level="+tt.level) || strings.Contains(out, strings.TrimSpace(string(key))) {
				t.Errorf("log:\n%s", out)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("log does not say %q:\n%s", w, out)
				}
			}
		})
	}
}

func TestSealNeedsPurpose(t *testing.T) {
	s := mustOpen(t, writeKey(t, testKey, 0o600))
	if v, err := s.Seal([]byte(secret), ""); err == nil {
		t.Errorf("Seal without a purpose = %q", v)
	}
}

// The additional data is the purpose, then each field length-prefixed:
// the encoding values sealed by the earlier push-config code used.
func TestAAD(t *testing.T) {
	got := aad("novaos push-config v1", []string{"acme", "", strings.Repeat("x", 200)})
	want := append([]byte("novaos push-config v1\x04acme\x00\xc8\x01"), strings.Repeat("x", 200)...)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("aad (-want +got):\n%s", diff)
	}
}

// b64 encodes as the body of a sealed value.
func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// syncBuffer is a bytes.Buffer a logger may write from any goroutine.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// A key file renamed is adopted under its new name: same key, same id, so
// what it sealed still opens; the earlier file stays.
func TestAdopt(t *testing.T) {
	golden := "novaos-sealed:v1:359397539cc67687:1zMKfw4EIWGgWGtzPqE4JRTu8zJyvGh2s08nDlmyu7NB79MlP97iJ6X3G5Hq"
	binding := []string{"acme", "task-1", "hook", "https://hooks.example.com/a2a", "credentials"}
	t.Run("adopted", func(t *testing.T) {
		old := writeKey(t, testKey, 0o600)
		path := filepath.Join(t.TempDir(), "data", "seal.key")
		s, err := Open(path, &Options{Adopt: old})
		if err != nil {
			t.Fatal(err)
		}
		if got, err := s.Unseal(golden, "novaos push-config v1", binding...); err != nil || string(got) != "cred-9a8b7c6d5e4f" {
			t.Errorf("Unseal of a value sealed under the earlier name: %q, %v", got, err)
		}
		if s.KeyID() != testKID {
			t.Errorf("KeyID %q, want %q", s.KeyID(), testKID)
		}
		for _, p := range []string{path, old} {
			if fi, err := os.Stat(p); err != nil || (runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600) {
				t.Errorf("%s: %v, %v", p, fi, err)
			}
		}
	})
	t.Run("new name exists already", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "seal.key")
		mine, err := mustOpen(t, path).Seal([]byte(secret), "novaos test v1")
		if err != nil {
			t.Fatal(err)
		}
		s, err := Open(path, &Options{Adopt: writeKey(t, testKey, 0o600)})
		if err != nil {
			t.Fatal(err)
		}
		if s.KeyID() == testKID {
			t.Error("the earlier file replaced the key in place")
		}
		if _, err := s.Unseal(mine, "novaos test v1"); err != nil {
			t.Error(err)
		}
	})
	t.Run("nothing to adopt", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "seal.key")
		if _, err := Open(path, &Options{Adopt: filepath.Join(t.TempDir(), "push.key")}); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Open made a key file: %v", err)
		}
	})
	t.Run("earlier file broken", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "seal.key")
		_, err := Open(path, &Options{Adopt: writeKey(t, "not a key", 0o600)})
		if !errors.Is(err, ErrKeyFile) || strings.Contains(err.Error(), "not a key") {
			t.Fatalf("Open = %v, want ErrKeyFile without the content", err)
		}
		if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("a broken key was adopted: %v", err)
		}
	})
}

func TestDeriveKey(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "seal.key")
	a := mustOpen(t, path)
	ka, err := a.DeriveKey("nonces v1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("deriving did not create the key file: %v", err)
	}
	kb, err := mustOpen(t, path).DeriveKey("nonces v1")
	if err != nil || !bytes.Equal(ka, kb) || len(ka) != 32 {
		t.Fatal("two sealers of one key file derive different keys")
	}
	if other, _ := a.DeriveKey("nonces v2"); bytes.Equal(other, ka) {
		t.Fatal("two purposes derive one key")
	}
	if kc, _ := mustOpen(t, filepath.Join(dir, "other.key")).DeriveKey("nonces v1"); bytes.Equal(kc, ka) {
		t.Fatal("two key files derive one key")
	}
	if _, err := a.DeriveKey(""); err == nil {
		t.Fatal("a key without a purpose")
	}
}
