package sealkey

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
)

// Prefix begins every sealed value, and nothing else a store holds: a
// value without it was never sealed.
const Prefix = "novaos-sealed:v1:"

const (
	keySize   = 32 // AES-256
	kidLen    = 16 // hex of the first 8 bytes of SHA-256 of the key
	nonceSize = 12 // GCM's standard nonce
	tagSize   = 16 // GCM's tag
)

var (
	// ErrFormat is matched by Unseal's error for a value that is not
	// sealed, or not in a format this package reads (a truncated or
	// hand-edited value, or a later version's). It is a wiring or
	// version problem, not a key problem.
	ErrFormat = errors.New("sealkey: not a sealed value")

	// ErrNotOpened is matched by Unseal's error for a well-formed value,
	// sealed with this key, that does not open: it was altered, or it was
	// sealed for another purpose or binding (copied from another row).
	// The two are not told apart; AES-GCM cannot, and saying which part
	// failed would help whoever altered it.
	ErrNotOpened = errors.New("sealkey: the sealed value does not open here")

	// ErrWrongKey is matched by a *KeyError.
	ErrWrongKey = errors.New("sealkey: the value was sealed with another key")

	// ErrKeyFile is matched by every error about the key file itself:
	// unreadable, empty, or not a key. Such an error names the file and
	// never repeats its content.
	ErrKeyFile = errors.New("sealkey: key file")
)

// KeyError is Unseal's error for a value sealed with a key other than
// this Sealer's: another replica's key, a key that was replaced, or no
// key file at all (Have is then ""). It matches ErrWrongKey, and also
// fs.ErrNotExist when there is no key file.
type KeyError struct {
	Path   string // this Sealer's key file
	Sealed string // id of the key the value was sealed with
	Have   string // id of this Sealer's key; "" when the key file does not exist
	Flag   string // Options.Flag, named in the message
}

func (e *KeyError) Error() string {
	var b strings.Builder
	if e.Have == "" {
		fmt.Fprintf(&b, "sealkey: a value sealed with key %s, and there is no key file %s", e.Sealed, e.Path)
	} else {
		fmt.Fprintf(&b, "sealkey: a value sealed with key %s, and key file %s holds key %s", e.Sealed, e.Path, e.Have)
	}
	b.WriteString("; every process that shares these values must use the same key file")
	if e.Flag != "" {
		b.WriteString(" (" + e.Flag + ")")
	}
	return b.String()
}

func (e *KeyError) Unwrap() []error {
	if e.Have == "" {
		return []error{ErrWrongKey, fs.ErrNotExist}
	}
	return []error{ErrWrongKey}
}

// Options configures a Sealer. The zero value (or nil) is usable.
type Options struct {
	// Logger receives the key file's events: a key created, a key file's
	// mode tightened or not. Nil discards them.
	Logger *slog.Logger

	// Shared says that the sealed values live where other processes read
	// them too (replicas on one PostgreSQL database): creating a key is
	// then a warning that every one of them needs this same key file.
	Shared bool

	// Name names the key in log messages; default "sealing key".
	Name string

	// Flag is the command-line flag that chooses the key file, named in
	// the messages that ask an operator to give every replica the same
	// file, such as "--push-key-file". Empty names none.
	Flag string

	// Adopt is an earlier key file of the same key, under another name:
	// when the key file does not exist and this one does, Open copies it
	// into place (owner-only, whole), so a key renamed keeps its id and
	// every value sealed with it still opens. The earlier file is left
	// for processes that still name it.
	Adopt string
}

// Sealer seals values at rest under the key in one key file. It is safe
// for concurrent use, by any number of Sealers in any number of processes
// on the same file: the key is created once, whole.
type Sealer struct {
	path   string
	log    *slog.Logger
	name   string
	flag   string
	shared bool

	mu  sync.Mutex // held while the key file is read or created
	key atomic.Pointer[key]
}

// key is a loaded key: the AEAD and the id sealed values carry.
type key struct {
	aead   cipher.AEAD
	id     string
	derive []byte // the root of DeriveKey's keys, never the sealing key itself
}

// Open returns a Sealer for the key file at path. An existing file is
// read now, so a broken key stops a server as it starts rather than at
// its first secret; a missing one is not an error, and nothing is
// created until the first Seal, so a server that seals nothing never
// writes a key.
func Open(path string, opts *Options) (*Sealer, error) {
	if path == "" {
		return nil, fmt.Errorf("%w: no path given", ErrKeyFile)
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Name == "" {
		o.Name = "sealing key"
	}
	s := &Sealer{path: path, log: o.Logger, name: o.Name, flag: o.Flag, shared: o.Shared}
	if o.Adopt != "" && o.Adopt != path {
		if err := s.adopt(o.Adopt); err != nil {
			return nil, err
		}
	}
	if _, err := s.load(false); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return s, nil
}

// Path returns the key file's path.
func (s *Sealer) Path() string { return s.path }

// KeyID returns the id of the key (the first 8 bytes of its SHA-256, in
// hex, as sealed values carry it), or "" while there is no key file.
func (s *Sealer) KeyID() string {
	if k := s.key.Load(); k != nil {
		return k.id
	}
	return ""
}

// IsSealed reports whether v has the form of a sealed value. A store that
// held plaintext before it sealed can tell the two apart with it.
func IsSealed(v string) bool { return strings.HasPrefix(v, Prefix) }

// Seal returns plain sealed under the key, creating the key file (owner
// only) if there is none, as
//
//	novaos-sealed:v1:<kid>:<base64url(nonce || AES-256-GCM ciphertext)>
//
// The additional data is purpose followed by each of binding,
// length-prefixed: the value opens only for the same purpose and binding,
// so purpose names what is sealed and its version ("novaos push-config
// v1"), and binding is where it is stored (tenant, row id, field), so
// that a value copied to another row does not open there. No purpose may
// be another purpose followed by more bytes.
func (s *Sealer) Seal(plain []byte, purpose string, binding ...string) (string, error) {
	if purpose == "" {
		return "", errors.New("sealkey: seal: a purpose is required")
	}
	k, err := s.load(true)
	if err != nil {
		return "", err
	}
	out := make([]byte, nonceSize, nonceSize+len(plain)+tagSize)
	rand.Read(out) // never fails (crypto/rand)
	out = k.aead.Seal(out, out[:nonceSize], plain, aad(purpose, binding))
	n := len(Prefix) + kidLen + 1 + base64.RawURLEncoding.EncodedLen(len(out))
	b := make([]byte, 0, n)
	b = append(b, Prefix...)
	b = append(b, k.id...)
	b = append(b, ':')
	b = base64.RawURLEncoding.AppendEncode(b, out)
	return string(b), nil
}

// Unseal returns the plaintext of sealed, which must have been sealed
// with this key for the same purpose and binding. Its error matches
// ErrFormat (not a sealed value), a *KeyError (sealed with another key,
// or there is no key file), ErrKeyFile (the key file is unusable) or
// ErrNotOpened (altered, or sealed for another purpose or binding). No
// error repeats the value or the plaintext.
func (s *Sealer) Unseal(sealed string, purpose string, binding ...string) ([]byte, error) {
	kid, raw, err := parse(sealed)
	if err != nil {
		return nil, err
	}
	k, err := s.load(false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, &KeyError{Path: s.path, Sealed: kid, Flag: s.flag}
	}
	if err != nil {
		return nil, err
	}
	if kid != k.id {
		return nil, &KeyError{Path: s.path, Sealed: kid, Have: k.id, Flag: s.flag}
	}
	plain, err := k.aead.Open(nil, raw[:nonceSize], raw[nonceSize:], aad(purpose, binding))
	if err != nil {
		return nil, ErrNotOpened
	}
	return plain, nil
}

// parse splits a sealed value into its key id and nonce || ciphertext,
// checking the form only.
func parse(v string) (kid string, raw []byte, err error) {
	rest, ok := strings.CutPrefix(v, Prefix)
	if !ok {
		return "", nil, ErrFormat
	}
	kid, body, ok := strings.Cut(rest, ":")
	if !ok || !isKeyID(kid) {
		return "", nil, fmt.Errorf("%w: malformed key id", ErrFormat)
	}
	raw, err = base64.RawURLEncoding.DecodeString(body)
	if err != nil || len(raw) < nonceSize+tagSize {
		return "", nil, fmt.Errorf("%w: malformed ciphertext", ErrFormat)
	}
	return kid, raw, nil
}

// isKeyID reports whether id is a key id as Seal writes it: it is
// repeated in errors and logs, so nothing else may pass for one.
func isKeyID(id string) bool {
	if len(id) != kidLen {
		return false
	}
	for i := range len(id) {
		if c := id[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// aad is the additional data for purpose and binding: the purpose as it
// is, then every field length-prefixed, so no two bindings share an
// encoding. (The purpose is not prefixed: values sealed before this
// package existed were sealed so.)
func aad(purpose string, binding []string) []byte {
	n := len(purpose)
	for _, f := range binding {
		n += binary.MaxVarintLen64 + len(f)
	}
	b := make([]byte, 0, n)
	b = append(b, purpose...)
	for _, f := range binding {
		b = binary.AppendUvarint(b, uint64(len(f)))
		b = append(b, f...)
	}
	return b
}

// newKey makes the AEAD for raw, a 32-byte key.
func newKey(raw []byte) (*key, error) {
	block, err := aes.NewCipher(raw)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(raw)
	m := hmac.New(sha256.New, raw)
	m.Write([]byte("novaos sealkey derive v1"))
	return &key{aead: aead, id: hex.EncodeToString(sum[:kidLen/2]), derive: m.Sum(nil)}, nil
}

// DeriveKey returns a 32-byte key for purpose, derived from the sealing
// key (creating the key file, owner only, if there is none): every
// process with the same key file derives the same key, and no purpose's
// key tells anything of another's or of the sealing key. Replicas use it
// for what they must agree on without sealing, such as the key their
// DPoP nonces are signed with.
func (s *Sealer) DeriveKey(purpose string) ([]byte, error) {
	if purpose == "" {
		return nil, errors.New("sealkey: derive: a purpose is required")
	}
	k, err := s.load(true)
	if err != nil {
		return nil, err
	}
	m := hmac.New(sha256.New, k.derive)
	m.Write([]byte(purpose))
	return m.Sum(nil), nil
}
