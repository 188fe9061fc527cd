package dpop

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"time"
)

// Nonces hands out server nonces that need no storage: a nonce names a
// time window and carries a MAC of it, and is current in its window and
// the next. Every replica sharing the key accepts every replica's nonces.
type Nonces struct {
	key    []byte
	window time.Duration
}

// NewNonces makes a nonce source. A nil key is random (nonces then hold
// only in this process); window defaults to 5 minutes.
func NewNonces(key []byte, window time.Duration) *Nonces {
	if key == nil {
		key = make([]byte, 32)
		_, _ = rand.Read(key)
	}
	if window <= 0 {
		window = 5 * time.Minute
	}
	return &Nonces{key: key, window: window}
}

// Issue returns the nonce of now's window.
func (n *Nonces) Issue(now time.Time) string { return n.make(n.slot(now)) }

// Valid reports whether nonce is of now's window or the one before.
func (n *Nonces) Valid(nonce string, now time.Time) bool {
	s := n.slot(now)
	return hmac.Equal([]byte(nonce), []byte(n.make(s))) || hmac.Equal([]byte(nonce), []byte(n.make(s-1)))
}

func (n *Nonces) slot(now time.Time) int64 { return now.UnixNano() / int64(n.window) }

func (n *Nonces) make(slot int64) string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(slot))
	m := hmac.New(sha256.New, n.key)
	m.Write(b[:])
	return base64.RawURLEncoding.EncodeToString(append(b[:], m.Sum(nil)[:16]...))
}
