package sqlite

import (
	"context"
	"database/sql"
	"math"
	"sync"

	"novaos.dev/novaos/memory"
)

// maxCachedFloats bounds the vector cache: 64M float32s, 256 MiB, about
// 250k memories of 256 dimensions. Past it the least recently searched
// partitions are dropped whole.
const maxCachedFloats = 64 << 20

// vectorCache keeps the vectors of recently searched partitions in
// memory, so a vector search scans floats instead of decoding every row
// of the partition from the file (65 ms for 10k memories, most of a
// query). A partition's entry is good while memory_partitions shows the
// counters it was loaded at: a newer appended count loads only the rows
// added since (their seq is above the entry's highest), a newer changed
// count loads the partition again. The counters are in the database, so
// writes by another process sharing the file are seen too.
type vectorCache struct {
	mu    sync.Mutex
	parts map[partKey]*cachedPartition
	size  int // floats held
	tick  uint64
}

type partKey struct{ tenant, scope, owner string }

type cachedPartition struct {
	mu                sync.Mutex // held while loading or scanning
	appended, changed int64
	maxSeq            int64
	loaded            bool
	models            map[string]*cachedVectors
	size              int
	used              uint64
}

type cachedVectors struct {
	seqs    []int64
	expires []int64 // ms, 0 never
	vecs    [][]float32
	norms   []float32
}

func (c *vectorCache) entry(k partKey) *cachedPartition {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.parts == nil {
		c.parts = map[partKey]*cachedPartition{}
	}
	p := c.parts[k]
	if p == nil {
		p = &cachedPartition{}
		c.parts[k] = p
	}
	c.tick++
	p.used = c.tick
	return p
}

// resize records a partition's new size and drops the least recently used
// other partitions while the cache is over its bound.
func (c *vectorCache) resize(k partKey, p *cachedPartition, size int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.size += size - p.size
	p.size = size
	for c.size > maxCachedFloats {
		var victim partKey
		var vp *cachedPartition
		for k2, p2 := range c.parts {
			if k2 != k && (vp == nil || p2.used < vp.used) {
				victim, vp = k2, p2
			}
		}
		if vp == nil {
			return
		}
		delete(c.parts, victim)
		c.size -= vp.size
	}
}

// search offers every live vector of q's model in f's partition to top.
func (c *vectorCache) search(ctx context.Context, db *DB, tenant string, f memory.Filter, q memory.Embedding, top *memory.TopK[int64]) error {
	k := partKey{tenant, string(f.Partition.Scope), f.Partition.Owner}
	var appended, changed int64
	err := db.r.QueryRowContext(ctx, `SELECT appended, changed FROM memory_partitions WHERE tenant = ? AND scope = ? AND owner = ?`,
		k.tenant, k.scope, k.owner).Scan(&appended, &changed)
	if err == sql.ErrNoRows {
		return nil // nothing was ever written there
	}
	if err != nil {
		return err
	}
	p := c.entry(k)
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.loaded || p.changed != changed {
		p.models, p.maxSeq, p.loaded = map[string]*cachedVectors{}, 0, false
		if err := p.load(ctx, db, k, 0); err != nil {
			return err
		}
	} else if p.appended != appended {
		if err := p.load(ctx, db, k, p.maxSeq); err != nil {
			return err
		}
	}
	// Rows loaded may be newer than the counters read before them; the
	// next search then loads past maxSeq, which holds no row twice.
	p.appended, p.changed, p.loaded = appended, changed, true
	size := 0
	for _, m := range p.models {
		for _, v := range m.vecs {
			size += len(v)
		}
	}
	c.resize(k, p, size)
	m := p.models[q.Model]
	if m == nil {
		return nil
	}
	now := ms(f.Now)
	qn := float32(math.Sqrt(float64(memory.Dot(q.Vector, q.Vector))))
	if qn == 0 {
		return nil
	}
	for i, v := range m.vecs {
		if e := m.expires[i]; e != 0 && e <= now || len(v) != len(q.Vector) || m.norms[i] == 0 {
			continue
		}
		top.Offer(m.seqs[i], float64(memory.Dot(q.Vector, v)/(qn*m.norms[i])))
	}
	return nil
}

func (p *cachedPartition) load(ctx context.Context, db *DB, k partKey, after int64) error {
	rows, err := db.r.QueryContext(ctx, `SELECT seq, expires_ms, model, vec FROM memories
		WHERE tenant = ? AND scope = ? AND owner = ? AND model <> '' AND seq > ? ORDER BY seq`, k.tenant, k.scope, k.owner, after)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var seq, exp int64
		var model string
		var b []byte
		if err := rows.Scan(&seq, &exp, &model, &b); err != nil {
			return err
		}
		p.maxSeq = max(p.maxSeq, seq)
		v, err := memory.DecodeVector(b)
		if err != nil {
			db.log.WarnContext(ctx, "sqlite: a memory's vector is damaged; it is left out of vector search", "seq", seq)
			continue
		}
		m := p.models[model]
		if m == nil {
			m = &cachedVectors{}
			p.models[model] = m
		}
		m.seqs, m.expires, m.vecs = append(m.seqs, seq), append(m.expires, exp), append(m.vecs, v)
		m.norms = append(m.norms, float32(math.Sqrt(float64(memory.Dot(v, v)))))
	}
	return rows.Err()
}
