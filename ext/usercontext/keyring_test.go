package usercontext

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func writeKey(t testing.TB, dir string, k *PrivateKey) string {
	t.Helper()
	if err := WriteKeyFile(dir, k); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, k.KID()+keyFileExt)
}

func mustOpen(t testing.TB, r *KeyRing, env Envelope, d Delivery) {
	t.Helper()
	s, err := r.Open(env, d)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	if s.Reveal() != testValue {
		t.Fatal("opened value differs")
	}
}

func mustFail(t testing.TB, r *KeyRing, env Envelope, d Delivery, class string) {
	t.Helper()
	_, err := r.Open(env, d)
	if got := errorClass(err); got != class {
		t.Fatalf("error class = %q (%v), want %q", got, err, class)
	}
}

func TestKeyRingFromDirectory(t *testing.T) {
	dir := t.TempDir()
	k := fixedKey(t, "recipient")
	path := writeKey(t, dir, k)
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode = %v, %v; want 0600", fi.Mode(), err)
	}
	if err := WriteKeyFile(dir, k); err == nil {
		t.Error("WriteKeyFile overwrote an existing key file")
	}
	r := NewKeyRing(dir)
	if len(r.KIDs()) != 0 {
		t.Error("a new key ring read keys before it needed one")
	}
	env := sealTest(t, k, testDelivery, testValue)
	mustOpen(t, r, env, testDelivery)
	if diff := cmp.Diff([]string{k.KID()}, r.KIDs()); diff != "" {
		t.Errorf("KIDs (-want +got):\n%s", diff)
	}
}

func TestKeyRingKeyAddedAtRunTime(t *testing.T) {
	dir := t.TempDir()
	old := fixedKey(t, "old")
	writeKey(t, dir, old)
	r := NewKeyRing(dir)
	mustOpen(t, r, sealTest(t, old, testDelivery, testValue), testDelivery)

	rotated := fixedKey(t, "rotated")
	env := sealTest(t, rotated, testDelivery, testValue)
	mustFail(t, r, env, testDelivery, "key_unavailable")
	writeKey(t, dir, rotated) // the rotation lands while the process runs
	mustOpen(t, r, env, testDelivery)
	mustOpen(t, r, sealTest(t, old, testDelivery, testValue), testDelivery) // overlap window
}

func TestKeyRingKeyRevokedAtRunTime(t *testing.T) {
	dir := t.TempDir()
	k := fixedKey(t, "recipient")
	path := writeKey(t, dir, k)
	r := NewKeyRing(dir)
	env := sealTest(t, k, testDelivery, testValue)
	mustOpen(t, r, env, testDelivery)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	mustFail(t, r, env, testDelivery, "key_unavailable")
	if len(r.KIDs()) != 0 {
		t.Errorf("revoked key still listed: %v", r.KIDs())
	}
	// Restoring the file restores the key.
	writeKey(t, dir, k)
	mustOpen(t, r, env, testDelivery)
}

func TestKeyRingReplacedFileIsParsedAgain(t *testing.T) {
	dir := t.TempDir()
	k := fixedKey(t, "recipient")
	path := writeKey(t, dir, k)
	r := NewKeyRing(dir)
	env := sealTest(t, k, testDelivery, testValue)
	mustOpen(t, r, env, testDelivery)

	// Another key written under the same kid: envelopes sealed to the old
	// key stop opening, ones sealed to the new key open.
	other := fixedKey(t, "replacement")
	other.kid = k.kid
	b, _ := other.PrivateJWK()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	mustFail(t, r, env, testDelivery, "open")
	mustOpen(t, r, sealTest(t, other, testDelivery, testValue), testDelivery)
}

// A hit on an unchanged file (same identity, size and modification time)
// is served from the cache: overwriting the bytes in place and restoring
// the time leaves the parsed key in use.
func TestKeyRingHitDoesNotReparse(t *testing.T) {
	dir := t.TempDir()
	k := fixedKey(t, "recipient")
	path := writeKey(t, dir, k)
	r := NewKeyRing(dir)
	env := sealTest(t, k, testDelivery, testValue)
	mustOpen(t, r, env, testDelivery)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte(strings.Repeat(" ", int(fi.Size())))); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := os.Chtimes(path, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	mustOpen(t, r, env, testDelivery)
	// A changed modification time makes it re-read the (now broken) file.
	if err := os.Chtimes(path, time.Now(), fi.ModTime().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	_, err = r.Open(env, testDelivery)
	if !errors.Is(err, ErrKeyUnavailable) || !errors.Is(err, ErrKey) {
		t.Fatalf("err = %v, want ErrKeyUnavailable from an unparsable key file", err)
	}
}

// Kubernetes updates a mounted Secret by swapping the ..data symlink to a
// new timestamped directory; {kid}.jwk are symlinks through ..data.
func TestKeyRingKubernetesSecretMount(t *testing.T) {
	dir := t.TempDir()
	k1, k2 := fixedKey(t, "k8s 1"), fixedKey(t, "k8s 2")
	gen := func(name string, keys ...*PrivateKey) {
		sub := filepath.Join(dir, name)
		if err := os.Mkdir(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			writeKey(t, sub, k)
		}
		tmp := filepath.Join(dir, "..data_tmp")
		if err := os.Symlink(name, tmp); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, "..data")); err != nil {
			t.Fatal(err)
		}
	}
	link := func(k *PrivateKey) {
		if err := os.Symlink(filepath.Join("..data", k.KID()+keyFileExt), filepath.Join(dir, k.KID()+keyFileExt)); err != nil {
			t.Fatal(err)
		}
	}
	gen("..2026_01", k1)
	link(k1)
	link(k2) // dangling until the rotation
	r := NewKeyRing(dir)
	env1, env2 := sealTest(t, k1, testDelivery, testValue), sealTest(t, k2, testDelivery, testValue)
	mustOpen(t, r, env1, testDelivery)
	mustFail(t, r, env2, testDelivery, "key_unavailable")

	gen("..2026_02", k1, k2) // rotation: both keys during the overlap
	mustOpen(t, r, env2, testDelivery)
	mustOpen(t, r, env1, testDelivery)

	gen("..2026_03", k2) // k1 revoked
	mustFail(t, r, env1, testDelivery, "key_unavailable")
	mustOpen(t, r, env2, testDelivery)

	if err := r.Reload(); err != nil {
		t.Fatalf("reload: %v", err)
	}
	if diff := cmp.Diff([]string{k2.KID()}, r.KIDs()); diff != "" {
		t.Errorf("KIDs after reload (-want +got):\n%s", diff)
	}
}

func TestKeyRingReload(t *testing.T) {
	dir := t.TempDir()
	k1, k2 := fixedKey(t, "one"), fixedKey(t, "two")
	writeKey(t, dir, k1)
	writeKey(t, dir, k2)
	secretD := b64.EncodeToString(fixedBytes("broken d", 32))
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("broken.jwk", `{"kty":"OKP","crv":"X25519","d":"`+secretD+`","x":"AAAA"}`)
	write(".hidden.jwk", "not read")
	write("README", "not a key")
	write("mismatch.jwk", mustString(k1.PrivateJWK())) // kid member says k1
	r := NewKeyRing(dir)
	err := r.Reload()
	if err == nil || !errors.Is(err, ErrKey) {
		t.Fatalf("reload err = %v, want the broken files reported", err)
	}
	for _, name := range []string{"broken.jwk", "mismatch.jwk"} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("reload error does not name %s: %v", name, err)
		}
	}
	if strings.Contains(err.Error(), secretD) {
		t.Error("reload error contains key material")
	}
	if diff := cmp.Diff(sortedStrings([]string{k1.KID(), k2.KID()}), r.KIDs()); diff != "" {
		t.Errorf("KIDs (-want +got):\n%s", diff)
	}
	// A key file without a kid member takes its kid from the file name.
	k3 := fixedKey(t, "three")
	b, _ := k3.PrivateJWK()
	noKID := strings.Replace(string(b), `"kid":"`+k3.KID()+`",`, "", 1)
	write("named-by-file.jwk", noKID)
	mustOpen(t, r, sealTest(t, &PrivateKey{kid: "named-by-file", priv: k3.priv, pub: k3.pub}, testDelivery, testValue), testDelivery)
}

func mustString(b []byte, err error) string {
	if err != nil {
		panic(err)
	}
	return string(b)
}

func TestKeyRingRefusesUnsafeKIDs(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	k := fixedKey(t, "recipient")
	writeKey(t, outside, k)
	r := NewKeyRing(dir)
	rel, _ := filepath.Rel(dir, filepath.Join(outside, k.KID()))
	for _, kid := range []string{rel, "../" + k.KID(), "a/b", ".hidden", "", strings.Repeat("a", 129), "x\x00y"} {
		if _, err := r.Key(kid); !errors.Is(err, ErrKeyUnavailable) {
			t.Errorf("Key(%q) = %v, want ErrKeyUnavailable", kid, err)
		}
	}
	if _, err := r.Key(strings.Repeat("k", 10000)); len(err.Error()) > 200 {
		t.Errorf("a forged kid makes a %d-byte error", len(err.Error()))
	}
	if _, err := NewKeyRing(filepath.Join(dir, "missing")).Key(k.KID()); !errors.Is(err, ErrKeyUnavailable) {
		t.Errorf("missing directory: %v", err)
	}
	var nilRing *KeyRing
	if _, err := nilRing.Open(sealTest(t, k, testDelivery, testValue), testDelivery); !errors.Is(err, ErrKeyUnavailable) {
		t.Errorf("nil ring: %v", err)
	}
}

func TestStaticKeyRing(t *testing.T) {
	k, other := fixedKey(t, "recipient"), fixedKey(t, "other")
	r := StaticKeyRing(k, nil)
	mustOpen(t, r, sealTest(t, k, testDelivery, testValue), testDelivery)
	mustFail(t, r, sealTest(t, other, testDelivery, testValue), testDelivery, "key_unavailable")
	if err := r.Reload(); err != nil || len(r.KIDs()) != 1 {
		t.Errorf("Reload on a static ring: %v, %v", err, r.KIDs())
	}
}

// Many goroutines open while keys are added, revoked and the directory is
// reloaded; run with -race.
func TestKeyRingConcurrentOpens(t *testing.T) {
	dir := t.TempDir()
	stable := fixedKey(t, "stable")
	writeKey(t, dir, stable)
	r := NewKeyRing(dir)
	env := sealTest(t, stable, testDelivery, testValue)
	churn := make([]*PrivateKey, 20)
	churnEnv := make([]Envelope, len(churn))
	for i := range churn {
		churn[i] = fixedKey(t, "churn "+string(rune('a'+i)))
		churnEnv[i] = sealTest(t, churn[i], testDelivery, testValue)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errs := make(chan error, 64)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := r.Open(env, testDelivery); err != nil {
					errs <- err
					return
				}
				// Churn keys may or may not be there; either outcome is
				// fine, but only those two.
				if _, err := r.Open(churnEnv[(g+i)%len(churn)], testDelivery); err != nil && !errors.Is(err, ErrKeyUnavailable) {
					errs <- err
					return
				}
			}
		}(g)
	}
	for i, k := range churn {
		path := writeKey(t, dir, k)
		if i%3 == 0 {
			_ = r.Reload()
		}
		if i%2 == 0 {
			_ = os.Remove(path)
		}
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
