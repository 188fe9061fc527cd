package gate

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"time"
)

// AuditGenesis is the PrevHash of the first audit entry.
const AuditGenesis = "0000000000000000000000000000000000000000000000000000000000000000"

// AuditTime is the precision audit times are kept and hashed at: both
// stores hold microseconds, so a store truncates At before hashing and
// a reader sees the same instant it hashed.
const AuditTime = time.Microsecond

// ChainHash is the hash an audit entry carries: SHA-256, in hex, over the
// previous entry's hash and every field of e except Hash. Each field is
// written with its length first, so no two different entries encode the
// same bytes. Body is hashed as the exact bytes stored, so stores must keep
// it verbatim (a JSON column that reformats would break the chain).
func ChainHash(prevHash string, e AuditEntry) string {
	h := sha256.New()
	field := func(b []byte) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	field([]byte(prevHash))
	var seq [8]byte
	binary.BigEndian.PutUint64(seq[:], uint64(e.Seq))
	field(seq[:])
	field([]byte(e.At.UTC().Truncate(AuditTime).Format(time.RFC3339Nano)))
	for _, s := range []string{e.Kind, e.TenantID, e.SessionID, e.ActionID, e.Actor} {
		field([]byte(s))
	}
	field(e.Body)
	return hex.EncodeToString(h.Sum(nil))
}

// ChainError says where an audit chain breaks.
type ChainError struct {
	Seq    int64 // the first entry that does not verify, or the missing one
	Detail string
}

func (e *ChainError) Error() string {
	return fmt.Sprintf("gate: audit chain broken at seq %d: %s", e.Seq, e.Detail)
}

// AuditVerifier checks an audit chain read in pages: feed it every entry
// in order from seq 1. It detects an altered entry (its hash no longer
// matches), a removed one (a gap in seq, or a prev_hash naming another
// entry) and a reordered one.
type AuditVerifier struct {
	next int64
	prev string
}

// NewAuditVerifier starts at the genesis of the chain.
func NewAuditVerifier() *AuditVerifier { return &AuditVerifier{next: 1, prev: AuditGenesis} }

// Add checks the next entry.
func (v *AuditVerifier) Add(e AuditEntry) error {
	switch {
	case e.Seq != v.next:
		return &ChainError{Seq: v.next, Detail: fmt.Sprintf("expected seq %d, found %d (an entry is missing)", v.next, e.Seq)}
	case e.PrevHash != v.prev:
		return &ChainError{Seq: e.Seq, Detail: "prev_hash does not name the previous entry"}
	case ChainHash(e.PrevHash, e) != e.Hash:
		return &ChainError{Seq: e.Seq, Detail: "the entry's content does not match its hash (altered)"}
	}
	v.next++
	v.prev = e.Hash
	return nil
}

// Verified is how many entries verified so far.
func (v *AuditVerifier) Verified() int64 { return v.next - 1 }

// Head is the hash of the last verified entry (AuditGenesis before any).
func (v *AuditVerifier) Head() string { return v.prev }
