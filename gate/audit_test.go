package gate

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"testing"
	"time"
)

// auditSample is a fully populated entry for the known-answer test.
var auditSample = AuditEntry{Seq: 7, At: time.Date(2026, 12, 2, 9, 30, 0, 123456789, time.FixedZone("CET", 3600)),
	Kind: "operator_approve", TenantID: "acme", SessionID: "s-1", ActionID: "refund-42", Actor: "ops@acme",
	Body: json.RawMessage(`{"note":"checked","from":"held"}`)}

// The chain's hash format is pinned: a change to it breaks every stored
// chain, so it must be deliberate. The expected value is computed here by
// the documented recipe (every field length-prefixed, the time in UTC at
// microseconds, RFC 3339) and also pinned as a literal.
func TestChainHashKnownAnswer(t *testing.T) {
	prev := "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
	h := sha256.New()
	field := func(b []byte) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	var seq [8]byte
	binary.BigEndian.PutUint64(seq[:], 7)
	for _, b := range [][]byte{[]byte(prev), seq[:], []byte("2026-12-02T08:30:00.123456Z"), []byte("operator_approve"),
		[]byte("acme"), []byte("s-1"), []byte("refund-42"), []byte("ops@acme"), []byte(`{"note":"checked","from":"held"}`)} {
		field(b)
	}
	recipe := hex.EncodeToString(h.Sum(nil))
	const pinned = "afa81b2e382e75c374b908f87ce766221855166ecb9165db266ab40e10eac6df"
	got := ChainHash(prev, auditSample)
	if got != recipe || got != pinned {
		t.Fatalf("ChainHash = %s, want %s (recipe) = %s (pinned)", got, recipe, pinned)
	}
	// The stored hash ignores what the entry already carries as hashes.
	e := auditSample
	e.PrevHash, e.Hash = "x", "y"
	if ChainHash(prev, e) != got {
		t.Fatal("ChainHash reads the entry's own hash fields")
	}
}

// Every field is in the hash, and length prefixes keep a boundary moved
// between two fields from hashing alike.
func TestChainHashCoversEveryField(t *testing.T) {
	const prev = AuditGenesis
	base := ChainHash(prev, auditSample)
	for name, mutate := range map[string]func(*AuditEntry){
		"seq":        func(e *AuditEntry) { e.Seq++ },
		"at":         func(e *AuditEntry) { e.At = e.At.Add(time.Microsecond) },
		"kind":       func(e *AuditEntry) { e.Kind = "operator_deny" },
		"tenant":     func(e *AuditEntry) { e.TenantID = "globex" },
		"session":    func(e *AuditEntry) { e.SessionID = "s-2" },
		"action":     func(e *AuditEntry) { e.ActionID = "refund-43" },
		"actor":      func(e *AuditEntry) { e.Actor = "mallory@acme" },
		"body":       func(e *AuditEntry) { e.Body = json.RawMessage(`{"note":"checked","from":"held" }`) },
		"boundary":   func(e *AuditEntry) { e.SessionID, e.ActionID = "s-1r", "efund-42" },
		"empty kind": func(e *AuditEntry) { e.Kind, e.TenantID = "", "operator_approveacme" },
	} {
		e := auditSample
		mutate(&e)
		if ChainHash(prev, e) == base {
			t.Errorf("changing the %s leaves the hash unchanged", name)
		}
	}
	if ChainHash("1"+prev[1:], auditSample) == base {
		t.Error("the previous hash is not in the hash")
	}
	// Below the kept precision, the instant is the same one.
	e, f := auditSample, auditSample
	e.At = e.At.Truncate(time.Microsecond)
	f.At = e.At.Add(999 * time.Nanosecond)
	if ChainHash(prev, e) != ChainHash(prev, f) || ChainHash(prev, e) != base {
		t.Error("nanoseconds below the audit precision change the hash")
	}
}

// sampleChain is n linked entries.
func sampleChain(n int) []AuditEntry {
	out := make([]AuditEntry, n)
	prev := AuditGenesis
	for i := range out {
		e := auditSample
		e.Seq, e.At, e.PrevHash = int64(i+1), auditSample.At.Add(time.Duration(i)*time.Second), prev
		e.Hash = ChainHash(prev, e)
		prev, out[i] = e.Hash, e
	}
	return out
}

// The verifier finds each kind of break at the entry where it is: an
// entry rewritten with a self-consistent hash over a forged prev_hash
// (only the prev_hash check sees it), an altered actor, a gap, a reorder.
func TestAuditVerifierBreaks(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func([]AuditEntry) []AuditEntry
		at     int64 // the ChainError's seq; 0: the chain verifies
	}{
		{"intact", func(es []AuditEntry) []AuditEntry { return es }, 0},
		{"rewritten with a forged prev_hash", func(es []AuditEntry) []AuditEntry {
			es[1].Body = json.RawMessage(`{"note":"rewritten"}`)
			es[1].PrevHash = es[0].Hash[:63] + "0"
			es[1].Hash = ChainHash(es[1].PrevHash, es[1])
			return es
		}, 2},
		{"actor altered", func(es []AuditEntry) []AuditEntry { es[2].Actor = "someone-else"; return es }, 3},
		{"hash altered", func(es []AuditEntry) []AuditEntry { es[3].Hash = es[2].Hash; return es }, 4},
		{"entry missing", func(es []AuditEntry) []AuditEntry { return append(es[:1:1], es[2:]...) }, 2},
		{"entries swapped", func(es []AuditEntry) []AuditEntry { es[1], es[2] = es[2], es[1]; return es }, 2},
		{"first entry not from genesis", func(es []AuditEntry) []AuditEntry {
			es[0].PrevHash = es[3].Hash
			es[0].Hash = ChainHash(es[0].PrevHash, es[0])
			return es
		}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := NewAuditVerifier()
			var err error
			for _, e := range tc.mutate(sampleChain(5)) {
				if err = v.Add(e); err != nil {
					break
				}
			}
			var ce *ChainError
			switch {
			case tc.at == 0 && (err != nil || v.Verified() != 5 || v.Head() != sampleChain(5)[4].Hash):
				t.Fatalf("intact chain: %v, verified %d", err, v.Verified())
			case tc.at != 0 && (!errors.As(err, &ce) || ce.Seq != tc.at || v.Verified() != tc.at-1):
				t.Fatalf("got %v after %d verified, want a break at seq %d", err, v.Verified(), tc.at)
			}
		})
	}
}
