package agenthost

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"novaos.dev/novaos/internal/keyfile"

	"novaos.dev/novaos/netguard"
)

// PushKeyFile is the default name of the push-credential key inside the
// data directory.
const PushKeyFile = "push.key"

// Push-config secrets (the webhook's Authentication.Credentials and the
// client's Token) are sealed before they reach the store: AES-256-GCM with
// a random nonce, the additional data binding the sealed value to its
// tenant, task, config id, URL and field, so a value copied to another
// row, or a row whose URL is rewritten, does not open. A sealed value is
//
//	novaos-sealed:v1:<kid>:<base64url(nonce || ciphertext)>
//
// where kid is the first 8 bytes of SHA-256 of the key, in hex, so a
// replica with another key says so instead of failing obscurely.
const sealedPrefix = "novaos-sealed:v1:"

// errPushKey is wrapped by every failure to seal or open a push secret.
var errPushKey = errors.New("agenthost: push credentials")

// pushSealer seals and opens push-config secrets with the key in path,
// loaded on first use and created (owner-only) the first time a secret
// is sealed, so a server that never stores one never writes a key.
type pushSealer struct {
	path     string
	log      *slog.Logger
	shared   bool // the database is shared by replicas (PostgreSQL)
	mu       sync.Mutex
	aead     cipher.AEAD
	kid      string
	warnOnce sync.Once
}

// newPushSealer returns a sealer for the key in path, loading it now if it
// exists so a broken key file stops the server at start.
func newPushSealer(path string, shared bool, log *slog.Logger) (*pushSealer, error) {
	s := &pushSealer{path: path, shared: shared, log: log}
	if _, err := s.key(false); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return s, nil
}

// key returns the AEAD, reading the key file, or creating it when create
// is set and it does not exist.
func (s *pushSealer) key(create bool) (cipher.AEAD, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.aead != nil {
		return s.aead, nil
	}
	raw, err := s.read()
	if errors.Is(err, fs.ErrNotExist) && create {
		raw, err = s.create()
	}
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: key file %s: %w", errPushKey, s.path, err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errPushKey, err)
	}
	sum := sha256.Sum256(raw)
	s.aead, s.kid = aead, hex.EncodeToString(sum[:8])
	return aead, nil
}

// read loads the key: 32 bytes, base64 (standard or URL alphabet), on one
// line. A file open to group or others is made owner-only, or a warning
// says it could not be.
func (s *pushSealer) read() ([]byte, error) {
	b, err := keyfile.Read(s.path)
	if modeErr, ok := errors.AsType[*keyfile.ModeError](err); ok {
		if cerr := os.Chmod(s.path, 0o600); cerr != nil {
			s.log.Warn("agenthost: the push key file is readable by other users and its mode could not be tightened",
				"file", s.path, "mode", modeErr.Mode.Perm().String(), "err", cerr)
		} else {
			s.log.Info("agenthost: tightened the push key file's mode to 0600", "file", s.path, "was", modeErr.Mode.Perm().String())
		}
		b, err = keyfile.Read(s.path)
		if _, still := errors.AsType[*keyfile.ModeError](err); still {
			b, err = readLoose(s.path)
		}
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, err
	case errors.Is(err, keyfile.ErrEmpty):
		// Keys are linked into place whole, so an empty file holds no
		// key and nothing was sealed with it. Not replaced here: the
		// operator may have meant to put a key there.
		return nil, fmt.Errorf("%w: key file %s is empty; remove it to have a new key created, or write the key into it", errPushKey, s.path)
	case err != nil:
		return nil, fmt.Errorf("%w: read key file: %w", errPushKey, err)
	}
	text := strings.TrimSpace(string(b))
	var raw []byte
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if raw, err = enc.DecodeString(text); err == nil {
			break
		}
	}
	if err != nil || len(raw) != 32 {
		// Neither the bytes nor their length: the file is a secret.
		return nil, fmt.Errorf("%w: key file %s: want 32 bytes in base64 on one line (openssl rand -base64 32)", errPushKey, s.path)
	}
	return raw, nil
}

// readLoose reads a key file whose mode could not be tightened (the
// warning above says so): the key is still the key.
func readLoose(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err == nil && strings.TrimSpace(string(b)) == "" {
		return nil, keyfile.ErrEmpty
	}
	return b, err
}

// create writes a new random key, owner-only, in an owner-only directory,
// linked into place whole (keyfile.Create): a reader never sees a partial
// file, and of two processes racing to create it both end up with the one
// linked first.
func (s *pushSealer) create() ([]byte, error) {
	raw := make([]byte, 32)
	rand.Read(raw)
	if err := keyfile.Create(s.path, []byte(base64.StdEncoding.EncodeToString(raw)+"\n")); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return s.read()
		}
		return nil, fmt.Errorf("%w: create key file: %w", errPushKey, err)
	}
	if s.shared {
		s.log.Warn("agenthost: created a new push credential key; every replica on this database must use this same key file (--push-key-file), or it cannot deliver the others' webhooks", "file", s.path)
	} else {
		s.log.Info("agenthost: created the push credential key", "file", s.path)
	}
	return raw, nil
}

// pushAAD is the additional data a secret is sealed under: every field
// length-prefixed, so no two bindings share an encoding.
func pushAAD(tenant, taskID, id, url, field string) []byte {
	b := []byte("novaos push-config v1")
	for _, f := range []string{tenant, taskID, id, url, field} {
		b = binary.AppendUvarint(b, uint64(len(f)))
		b = append(b, f...)
	}
	return b
}

// seal returns plain sealed under aad; "" stays "".
func (s *pushSealer) seal(plain string, aad []byte) (string, error) {
	if plain == "" {
		return "", nil
	}
	aead, err := s.key(true)
	if err != nil {
		return "", err
	}
	nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(plain)+aead.Overhead())
	rand.Read(nonce)
	out := aead.Seal(nonce, nonce, []byte(plain), aad)
	return sealedPrefix + s.kid + ":" + base64.RawURLEncoding.EncodeToString(out), nil
}

// open returns the secret stored as v. A value without the sealed prefix
// was written before push secrets were sealed and is returned as it is
// (it is sealed on its next write); a sealed value that does not open
// under this key and aad is an error: it fails closed.
func (s *pushSealer) open(v string, aad []byte) (string, error) {
	rest, ok := strings.CutPrefix(v, sealedPrefix)
	if !ok {
		if v != "" {
			s.warnOnce.Do(func() {
				s.log.Warn("agenthost: a push config stored before push secrets were sealed is read as plaintext; it is sealed when it is next written")
			})
		}
		return v, nil
	}
	kid, body, ok := strings.Cut(rest, ":")
	if !ok {
		return "", fmt.Errorf("%w: a sealed value is malformed", errPushKey)
	}
	aead, err := s.key(false)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("%w: a value sealed with key %s, and there is no key file %s", errPushKey, kid, s.path)
	}
	if err != nil {
		return "", err
	}
	if kid != s.kid {
		return "", fmt.Errorf("%w: a value sealed with key %s, and this server's key is %s (replicas must share --push-key-file)", errPushKey, kid, s.kid)
	}
	raw, err := base64.RawURLEncoding.DecodeString(body)
	if err != nil || len(raw) < aead.NonceSize() {
		return "", fmt.Errorf("%w: a sealed value is malformed", errPushKey)
	}
	plain, err := aead.Open(nil, raw[:aead.NonceSize()], raw[aead.NonceSize():], aad)
	if err != nil {
		return "", fmt.Errorf("%w: a sealed value does not open for this config (moved, altered, or another key)", errPushKey)
	}
	return string(plain), nil
}

// pushSealer is the sealer for the hosted agents' push configs, or nil
// when secrets are left to the push-config store: stores given without a
// data directory, and no PushKeyFile.
func (h *Host) pushSealer() (*pushSealer, error) {
	if h.stores.PushConfigs == nil {
		return nil, nil
	}
	path := h.opts.PushKeyFile
	if path == "" {
		if h.deps.DataDir == "" {
			return nil, nil
		}
		path = filepath.Join(h.deps.DataDir, PushKeyFile)
	}
	return newPushSealer(path, h.stores.Shared, h.log)
}

// pushURLPolicy is Options.PushURLPolicy, or by default public hosts; both
// also allow loopback when the server itself is on loopback, the default
// unless a PushURLPolicy is given without PushLoopbackIfLocal.
func (h *Host) pushURLPolicy() *netguard.Policy {
	p := &netguard.Policy{}
	if h.opts.PushURLPolicy != nil {
		*p = *h.opts.PushURLPolicy
		if !h.opts.PushLoopbackIfLocal {
			return p
		}
	}
	p.AllowLoopback = p.AllowLoopback || OnLoopback(h.deps.BaseURL)
	return p
}

// OnLoopback reports whether a server whose base URL is baseURL is reached
// on loopback: a developer's machine, where local webhook receivers and
// agents are the norm.
func OnLoopback(baseURL string) bool {
	u, err := url.Parse(baseURL)
	if err != nil {
		return false
	}
	c, err := netguard.ClassifyHost(u.Hostname())
	return err == nil && c == netguard.Loopback
}
