package sealkey

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"novaos.dev/novaos/internal/keyfile"
)

// load returns the key, reading the key file the first time, or creating
// it when create is set and it does not exist. A missing file without
// create is an error matching fs.ErrNotExist, tried again on the next
// call: the operator may put the key in place while the server runs.
func (s *Sealer) load(create bool) (*key, error) {
	if k := s.key.Load(); k != nil {
		return k, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if k := s.key.Load(); k != nil {
		return k, nil
	}
	raw, err := s.read()
	if errors.Is(err, fs.ErrNotExist) && create {
		raw, err = s.create()
	}
	if err != nil {
		return nil, err
	}
	k, err := newKey(raw)
	if err != nil {
		return nil, fmt.Errorf("%w %s: %w", ErrKeyFile, s.path, err)
	}
	s.key.Store(k)
	return k, nil
}

// read loads the key: 32 bytes, base64 (standard or URL alphabet, padded
// or not), on one line. A file open to group or others is made
// owner-only, or a warning says it could not be.
func (s *Sealer) read() ([]byte, error) {
	b, err := keyfile.Read(s.path)
	if modeErr, ok := errors.AsType[*keyfile.ModeError](err); ok {
		if cerr := os.Chmod(s.path, 0o600); cerr != nil {
			s.log.Warn("sealkey: the "+s.name+" file is readable by other users and its mode could not be tightened",
				"file", s.path, "mode", modeErr.Mode.Perm().String(), "err", cerr)
		} else {
			s.log.Info("sealkey: tightened the "+s.name+" file's mode to 0600", "file", s.path, "was", modeErr.Mode.Perm().String())
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
		return nil, fmt.Errorf("%w %s is empty; remove it to have a new key created, or write the key into it: %w", ErrKeyFile, s.path, keyfile.ErrEmpty)
	case err != nil:
		return nil, fmt.Errorf("%w: read: %w", ErrKeyFile, err)
	}
	raw, ok := decodeKey(b)
	if !ok {
		// Neither the bytes nor their length: the file is a secret.
		return nil, fmt.Errorf("%w %s: want %d bytes in base64 on one line (openssl rand -base64 32)", ErrKeyFile, s.path, keySize)
	}
	return raw, nil
}

// decodeKey decodes a key file's content.
func decodeKey(b []byte) ([]byte, bool) {
	text := strings.TrimSpace(string(b))
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if raw, err := enc.DecodeString(text); err == nil {
			return raw, len(raw) == keySize
		}
	}
	return nil, false
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
func (s *Sealer) create() ([]byte, error) {
	raw := make([]byte, keySize)
	rand.Read(raw) // never fails (crypto/rand)
	if err := keyfile.Create(s.path, []byte(base64.StdEncoding.EncodeToString(raw)+"\n")); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return s.read()
		}
		return nil, fmt.Errorf("%w: create: %w", ErrKeyFile, err)
	}
	if s.shared {
		msg := "sealkey: created a new " + s.name + "; every replica on this database must use this same key file"
		if s.flag != "" {
			msg += " (" + s.flag + ")"
		}
		s.log.Warn(msg+", or it cannot open what the others seal", "file", s.path)
	} else {
		s.log.Info("sealkey: created the "+s.name, "file", s.path)
	}
	return raw, nil
}

// adopt copies the key in the file at from to the Sealer's path when that
// does not exist: the same key under its new name.
func (s *Sealer) adopt(from string) error {
	if _, err := os.Lstat(s.path); !errors.Is(err, fs.ErrNotExist) {
		return nil // in place already (or unreadable: read says so)
	}
	b, err := os.ReadFile(from)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%w: adopt %s: %w", ErrKeyFile, from, err)
	}
	if _, ok := decodeKey(b); !ok {
		return fmt.Errorf("%w %s (to adopt as %s): want %d bytes in base64 on one line", ErrKeyFile, from, s.path, keySize)
	}
	switch err := keyfile.Create(s.path, b); {
	case errors.Is(err, fs.ErrExist): // another process adopted it first
	case err != nil:
		return fmt.Errorf("%w: adopt %s: %w", ErrKeyFile, from, err)
	default:
		s.log.Info("sealkey: the "+s.name+" now lives in a file of its own name; the earlier file is left in place", "file", s.path, "from", from)
	}
	return nil
}
