package usercontext

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

const (
	keyFileExt     = ".jwk"
	maxKeyFileSize = 16 << 10
)

// KeyRing holds the recipient keys an agent process opens envelopes with.
// A directory key ring reads dir/{kid}.jwk files (private X25519 JWKs, see
// ParsePrivateJWK) and follows the directory while the process runs:
//
//   - a kid it has not loaded is looked up on disk, so a key added at run
//     time (a rotation) is found on its first use;
//   - a kid it has loaded is checked on every use with one stat of its
//     file: a removed file (end of an overlap window, a revocation) stops
//     the key at once, and a file whose identity, size or modification time
//     changed is parsed again. An unchanged file is not re-read.
//
// A miss costs one stat as well, never a directory read, so a stream of
// envelopes with forged kids causes no more file-system work than one
// stat each; that is why there is no reload throttle. A kid that could not
// be a file name ([A-Za-z0-9._-], 1 to 128 characters, no leading dot) is
// refused without touching the file system.
//
// Nothing is read before the first envelope needs a key, except through
// Reload. A KeyRing is safe for concurrent use. The zero value holds no
// keys.
type KeyRing struct {
	dir    string
	static bool

	mu   sync.RWMutex
	keys map[string]*ringKey
}

type ringKey struct {
	key  *PrivateKey
	file fs.FileInfo // nil for a static key
}

// NewKeyRing returns a key ring over the key files in dir.
func NewKeyRing(dir string) *KeyRing {
	return &KeyRing{dir: dir, keys: map[string]*ringKey{}}
}

// StaticKeyRing returns a key ring over keys held in memory, for tests and
// for hosts that manage key material themselves. It has no directory: a
// miss is final and Reload does nothing.
func StaticKeyRing(keys ...*PrivateKey) *KeyRing {
	r := &KeyRing{static: true, keys: map[string]*ringKey{}}
	for _, k := range keys {
		if k != nil {
			r.keys[k.kid] = &ringKey{key: k}
		}
	}
	return r
}

// Dir returns the key directory, "" for a static key ring.
func (r *KeyRing) Dir() string { return r.dir }

// KIDs returns the ids of the keys loaded so far, sorted. Safe to log: a
// kid is a public identifier. Call Reload first for the directory's
// current view.
func (r *KeyRing) KIDs() []string {
	if r == nil {
		return nil
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return slices.Sorted(maps.Keys(r.keys))
}

// Open opens env with the key its kid names, checking it was sealed for d.
// It fails with ErrKeyUnavailable when the ring holds no such key, and
// otherwise as Open does.
func (r *KeyRing) Open(env any, d Delivery) (Secret, error) {
	e, err := parseEnvelope(env)
	if err != nil {
		return Secret{}, err
	}
	if err := d.check(); err != nil {
		return Secret{}, err
	}
	k, err := r.Key(e.kid)
	if err != nil {
		return Secret{}, err
	}
	return e.open(k, d)
}

// Key returns the key filed under kid, checking its file first (see
// KeyRing). The error matches ErrKeyUnavailable when there is none; it
// names a key file that exists but does not parse, never its content.
func (r *KeyRing) Key(kid string) (*PrivateKey, error) {
	if r == nil {
		return nil, fmt.Errorf("%w: no key ring", keyUnavailable(kid))
	}
	if r.static || r.dir == "" {
		r.mu.RLock()
		c := r.keys[kid]
		r.mu.RUnlock()
		if c == nil {
			return nil, keyUnavailable(kid)
		}
		return c.key, nil
	}
	if !validKID(kid) {
		return nil, keyUnavailable(kid)
	}
	path := filepath.Join(r.dir, kid+keyFileExt)
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() {
		r.forget(kid)
		return nil, keyUnavailable(kid)
	}
	r.mu.RLock()
	c := r.keys[kid]
	r.mu.RUnlock()
	if c != nil && sameFile(c.file, fi) {
		return c.key, nil
	}
	k, fi, err := readKeyFile(path, kid)
	if err != nil {
		r.forget(kid)
		return nil, fmt.Errorf("%w: %w", keyUnavailable(kid), err)
	}
	r.mu.Lock()
	r.keys[kid] = &ringKey{key: k, file: fi}
	r.mu.Unlock()
	return k, nil
}

func (r *KeyRing) forget(kid string) {
	r.mu.RLock()
	_, ok := r.keys[kid]
	r.mu.RUnlock()
	if ok {
		r.mu.Lock()
		delete(r.keys, kid)
		r.mu.Unlock()
	}
}

// Reload reads the whole key directory now and replaces the loaded keys
// with what it finds: every {kid}.jwk file whose name is a valid kid
// (files starting with a dot, such as Kubernetes' ..data, are skipped).
// Files that do not parse are left out and reported, by name, in the
// error; the others are loaded regardless. Worth calling at start-up or
// from a readiness check. It does nothing on a static key ring.
func (r *KeyRing) Reload() error {
	if r == nil || r.static || r.dir == "" {
		return nil
	}
	entries, err := os.ReadDir(r.dir)
	if err != nil {
		return fmt.Errorf("usercontext: read key directory: %w", err)
	}
	keys := map[string]*ringKey{}
	var errs []error
	for _, ent := range entries {
		kid, ok := strings.CutSuffix(ent.Name(), keyFileExt)
		if !ok || !validKID(kid) {
			continue
		}
		k, fi, err := readKeyFile(filepath.Join(r.dir, ent.Name()), kid)
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed meanwhile, or a dangling symlink: not a key
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		keys[kid] = &ringKey{key: k, file: fi}
	}
	r.mu.Lock()
	r.keys = keys
	r.mu.Unlock()
	return errors.Join(errs...)
}

// readKeyFile parses one key file and returns it with the file's identity
// as it was read.
func readKeyFile(path, kid string) (*PrivateKey, fs.FileInfo, error) {
	name := filepath.Base(path)
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: key file %s: %w", ErrKey, name, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("%w: key file %s is not a regular file", ErrKey, name)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxKeyFileSize+1))
	defer clear(b)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: key file %s: %w", ErrKey, name, err)
	}
	if len(b) > maxKeyFileSize {
		return nil, nil, fmt.Errorf("%w: key file %s is larger than %d bytes", ErrKey, name, maxKeyFileSize)
	}
	k, err := parsePrivateJWK(b, kid)
	if err != nil {
		return nil, nil, fmt.Errorf("key file %s: %w", name, err)
	}
	if k.kid != kid {
		// A kid member that disagrees with the file name: the file name
		// is what envelopes are routed by, so the member must not differ.
		return nil, nil, fmt.Errorf("%w: key file %s has a different kid member", ErrKey, name)
	}
	return k, fi, nil
}

// sameFile reports whether two stats describe the same, unchanged file.
func sameFile(a, b fs.FileInfo) bool {
	return a != nil && os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}
