package delivery

import (
	"container/list"
	"context"
	"crypto/sha256"
	"sync"
	"time"

	"novaos.dev/novaos/dpop"
)

// firstUse refuses a DPoP proof accepted before: one this process
// remembers, or, when the store is shared (Deps.SharedStore), one any
// process sharing it recorded. The proof is kept until it is too old
// for any process to accept: Verify takes it while now is within
// ProofWindow of its iat (whole seconds, the bound included), so a
// second beyond that covers every clock, a replica's whose clock is
// ahead or behind this one's alike.
func (s *Service) firstUse(ctx context.Context, c dpop.Checked, now time.Time) error {
	id := proofID(c)
	until := c.IssuedAt.Add(s.o.ProofWindow + time.Second)
	// This process's memory first: a replay here costs no write.
	fresh := s.proofs.first(string(id), now, until)
	if fresh && s.deps.SharedStore {
		var err error
		if fresh, err = s.store.RecordProof(ctx, id, now, until); err != nil {
			return err
		}
	}
	if !fresh {
		return badProof("the DPoP proof was used before: make a new one for each request")
	}
	return nil
}

// proofID names a proof by its key and its jti, never by the proof: a
// jti is unique per key (RFC 9449 §11.1), and one key's jti cannot block
// another key's proof. A thumbprint has no ".", so the pair is
// unambiguous.
func proofID(c dpop.Checked) []byte {
	sum := sha256.Sum256([]byte(c.JKT + "." + c.JTI))
	return sum[:]
}

// pruneProofs drops the proof ids past their time from the shared store
// every ProofWindow, in bounded statements (pruneBatches), until ctx
// ends.
func (s *Service) pruneProofs(ctx context.Context) {
	t := time.NewTicker(s.o.ProofWindow)
	defer t.Stop()
	for {
		s.pruneBatches(ctx, "DPoP proof ids", s.store.PruneProofs)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// proofIDs remembers DPoP proof ids until they are too old to be
// accepted again, so that a proof is used once in this process; beyond
// max ids the oldest recorded are forgotten first.
type proofIDs struct {
	mu    sync.Mutex
	max   int
	byID  map[string]*list.Element
	order *list.List // of keptProof, oldest recorded first
}

type keptProof struct {
	id    string
	until time.Time
}

func newProofIDs(max int) *proofIDs {
	return &proofIDs{max: max, byID: map[string]*list.Element{}, order: list.New()}
}

// first records id, kept until until, and reports whether it was not
// kept already.
func (p *proofIDs) first(id string, now, until time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	// Ids are recorded in about the order of their times (their proofs'
	// iat): the ones past their time at the front go. One past its time
	// behind a later one is found by its lookup.
	for e := p.order.Front(); e != nil; e = p.order.Front() {
		pi := e.Value.(keptProof)
		if pi.until.After(now) && p.order.Len() < p.max {
			break
		}
		p.order.Remove(e)
		delete(p.byID, pi.id)
	}
	if e, ok := p.byID[id]; ok {
		if e.Value.(keptProof).until.After(now) {
			return false
		}
		p.order.Remove(e)
	}
	p.byID[id] = p.order.PushBack(keptProof{id: id, until: until})
	return true
}
