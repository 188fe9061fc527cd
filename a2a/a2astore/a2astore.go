package a2astore

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"strings"
	"time"
	"unicode/utf8"
)

// ErrBadToken reports a page token this package did not issue. Stores wrap
// it together with their own sentinel (a2asrv.ErrBadPageToken).
var ErrBadToken = errors.New("a2astore: malformed page token")

// Page sizes: A2A lets callers ask for 1..100 and defaults to 50.
const (
	DefaultPageSize = 50
	MaxPageSize     = 100
)

// Limit clamps a requested page size into 1..MaxPageSize, treating zero or
// a negative size as DefaultPageSize.
func Limit(n int) int {
	switch {
	case n <= 0:
		return DefaultPageSize
	case n > MaxPageSize:
		return MaxPageSize
	}
	return n
}

// CeilMillis returns the smallest whole millisecond at or after t. Stored
// timestamps have millisecond precision, so "timestamp >= t" and
// "timestamp_ms >= CeilMillis(t)" select the same rows.
func CeilMillis(t time.Time) int64 {
	ms := t.UnixMilli() // floors, also before 1970
	if t.After(time.UnixMilli(ms)) {
		ms++
	}
	return ms
}

// Token kinds. A token carries its kind so that a push-config token handed to
// a task listing (or the reverse) is rejected rather than misread.
const (
	kindTask = 't'
	kindID   = 'i'
)

// MaxIDLen bounds the ids a store accepts and so what a token may carry; ids
// are far shorter in practice, and the bound keeps a hostile token from
// costing more than a short string.
const MaxIDLen = 1024

var enc = base64.RawURLEncoding

// Task is a position in a task listing ordered by status time descending,
// then id descending.
type Task struct {
	TimeMs int64
	ID     string
}

// Token encodes the cursor as an opaque, URL-safe string.
func (c Task) Token() string {
	b := make([]byte, 0, 1+binary.MaxVarintLen64+len(c.ID))
	b = append(b, kindTask)
	b = binary.AppendVarint(b, c.TimeMs)
	b = append(b, c.ID...)
	return enc.EncodeToString(b)
}

// ParseTask decodes a token made by [Task.Token].
func ParseTask(tok string) (Task, error) {
	b, err := decode(tok, kindTask)
	if err != nil {
		return Task{}, err
	}
	ts, n := binary.Varint(b)
	if n <= 0 {
		return Task{}, ErrBadToken
	}
	c := Task{TimeMs: ts, ID: string(b[n:])}
	if !ValidID(c.ID) || c.Token() != tok {
		// Only the canonical spelling of a cursor is accepted, so each
		// position has exactly one token.
		return Task{}, ErrBadToken
	}
	return c, nil
}

// IDToken encodes a position in a listing ordered by id ascending.
func IDToken(id string) string {
	b := make([]byte, 0, 1+len(id))
	b = append(b, kindID)
	b = append(b, id...)
	return enc.EncodeToString(b)
}

// ParseID decodes a token made by [IDToken].
func ParseID(tok string) (string, error) {
	b, err := decode(tok, kindID)
	if err != nil {
		return "", err
	}
	id := string(b)
	if !ValidID(id) || IDToken(id) != tok {
		return "", ErrBadToken
	}
	return id, nil
}

func decode(tok string, kind byte) ([]byte, error) {
	if tok == "" || len(tok) > enc.EncodedLen(2+binary.MaxVarintLen64+MaxIDLen) {
		return nil, ErrBadToken
	}
	b, err := enc.DecodeString(tok)
	if err != nil || len(b) == 0 || b[0] != kind {
		return nil, ErrBadToken
	}
	return b[1:], nil
}

// ValidID reports whether a store accepts id as a task or config id: not
// empty, at most MaxIDLen bytes, and [ValidText].
func ValidID(id string) bool {
	return id != "" && len(id) <= MaxIDLen && ValidText(id)
}

// ValidText reports whether every s can be stored in a key column by every
// store: valid UTF-8 without NUL bytes, which PostgreSQL text refuses. A
// lookup by a string that is not valid text can match nothing.
func ValidText(s ...string) bool {
	for _, v := range s {
		if !utf8.ValidString(v) || strings.IndexByte(v, 0) >= 0 {
			return false
		}
	}
	return true
}
