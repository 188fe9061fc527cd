package memindex

import (
	"context"
	"log/slog"
	"math"
	"sync"
	"time"

	"novaos.dev/novaos/memory"
	"novaos.dev/novaos/store/internal/hnsw"
)

// DefaultMaxBytes bounds the cache when Options.MaxBytes is zero: about
// 130k memories with 256-wide vectors.
const DefaultMaxBytes = 256 << 20

// DefaultApproxAbove is Options.ApproxAbove's default: 64M numbers, about
// 262k vectors of 256 (the default embedder's) or 44k of 1536. Below it
// the exact scan, which reads a byte a number, takes a few milliseconds.
const DefaultApproxAbove = 64 << 20

// MaxQueryTerms bounds the distinct terms of one keyword search: a pasted
// document as a query would otherwise rank by thousands of terms.
const MaxQueryTerms = 64

// Key names a partition: the tenant and the partition inside it.
type Key struct{ Tenant, Scope, Owner string }

// KeyOf is the Key of partition p of tenant.
func KeyOf(tenant string, p memory.Partition) Key {
	return Key{tenant, string(p.Scope), p.Owner}
}

// Counters are a partition's write counters as the database holds them.
type Counters struct{ Appended, Changed int64 }

// Doc is one stored memory: its row number in the store, ascending in
// write order, and the memory with its embedding, if any.
type Doc struct {
	Seq    int64
	Memory memory.Memory
}

// Source reads partitions from a store's database.
type Source interface {
	// Counters returns the partition's counters; ok is false when nothing
	// was ever written to it.
	Counters(ctx context.Context, k Key) (c Counters, ok bool, err error)
	// Load calls add with every memory of the partition whose Seq is
	// above after, in Seq order. add keeps the Memory's slices and
	// embedding, which the Source must not reuse.
	Load(ctx context.Context, k Key, after int64, add func(*Doc)) error
	// LoadSeqs calls add, as Load does, with those of seqs that are still
	// memories of the partition.
	LoadSeqs(ctx context.Context, k Key, seqs []int64, add func(*Doc)) error
	// Versions calls fn with the Seq, id and version of every memory of
	// the partition, in any order. A changed counter makes the cache
	// compare them with what it holds and load only what differs.
	Versions(ctx context.Context, k Key, fn func(seq int64, id string, version int64)) error
}

// Options tune a Cache; the zero value means the defaults.
type Options struct {
	// MaxBytes bounds the memory the entries hold, estimated (default
	// DefaultMaxBytes).
	MaxBytes int64
	// Logger receives cache loads at debug level (default: discarded).
	Logger *slog.Logger
	// ApproxAbove is how many numbers (vectors times their width) of one
	// model a partition must hold before a vector search over the whole
	// partition walks an HNSW graph (store/internal/hnsw) instead of
	// scanning every vector (default DefaultApproxAbove; negative: never).
	// Approximate: its recall against the scan is measured by
	// BenchmarkVectorSearch, and it is poor on the default embedder's
	// lexical vectors (about 0.8 at 100k), good on a real model's. The
	// graph is built in the background, one partition at a time, while
	// the scan serves; a filtered search (type, tags, conversation, dates,
	// classification) always scans.
	ApproxAbove int
	// EfSearch is the HNSW search width (default hnsw.DefaultEfSearch; at
	// least the number of results asked for).
	EfSearch int
}

// Cache holds the entries of recently searched partitions. It is safe for
// concurrent use.
type Cache struct {
	src    Source
	max    int64
	log    *slog.Logger
	approx int
	ef     int
	builds chan struct{} // one graph build at a time
	mu     sync.Mutex
	m      map[Key]*entry
	size   int64
	tick   uint64
}

// New returns an empty cache reading partitions from src.
func New(src Source, opts *Options) *Cache {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	switch {
	case o.ApproxAbove == 0:
		o.ApproxAbove = DefaultApproxAbove
	case o.ApproxAbove < 0:
		o.ApproxAbove = math.MaxInt
	}
	if o.EfSearch <= 0 {
		o.EfSearch = hnsw.DefaultEfSearch
	}
	return &Cache{src: src, max: o.MaxBytes, log: o.Logger, approx: o.ApproxAbove, ef: o.EfSearch,
		builds: make(chan struct{}, 1), m: map[Key]*entry{}}
}

// entry is one partition's cache slot; idx is replaced whole on a rebuild
// and changed in place on an append or a change, all under mu's write
// lock.
type entry struct {
	mu     sync.RWMutex
	c      Counters
	idx    *index
	loaded bool
	size   int64 // as last accounted in Cache.size
	used   uint64
}

// Stats is what the cache holds.
type Stats struct {
	Partitions int   // partitions with an entry loaded
	Memories   int   // live memories in them
	Bytes      int64 // the entries' estimated size
}

// Stats reports what the cache holds now. It reads every loaded entry,
// so its cost is the number of partitions cached, not their memories.
func (c *Cache) Stats() Stats {
	c.mu.Lock()
	st := Stats{Bytes: c.size}
	entries := make([]*entry, 0, len(c.m))
	for _, e := range c.m {
		entries = append(entries, e)
	}
	c.mu.Unlock()
	// Entries are read apart from the cache's lock, which a load takes
	// while holding its entry's.
	for _, e := range entries {
		e.mu.RLock()
		if e.loaded && e.idx != nil {
			st.Partitions++
			st.Memories += e.idx.live
		}
		e.mu.RUnlock()
	}
	return st
}

func (c *Cache) entry(k Key) *entry {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.m[k]
	if e == nil {
		e = &entry{}
		c.m[k] = e
	}
	c.tick++
	e.used = c.tick
	return e
}

// account records e's new size and drops the least recently used other
// entries while the cache is over its bound.
func (c *Cache) account(k Key, e *entry, size int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m[k] != e { // dropped while loading: counts for nothing
		return
	}
	c.size += size - e.size
	e.size = size
	for c.size > c.max {
		var victim Key
		var ve *entry
		for k2, e2 := range c.m {
			if k2 != k && (ve == nil || e2.used < ve.used) {
				victim, ve = k2, e2
			}
		}
		if ve == nil {
			return // this one alone is over the bound: kept while searched
		}
		delete(c.m, victim)
		c.size -= ve.size
	}
}

// Size is the estimated bytes the cache holds.
func (c *Cache) Size() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.size
}

// view runs fn with k's index brought up to date, under the entry's read
// lock; idx is nil when nothing was ever written to the partition.
func (c *Cache) view(ctx context.Context, k Key, fn func(idx *index) error) error {
	cur, ok, err := c.src.Counters(ctx, k)
	if err != nil {
		return err
	}
	if !ok {
		return fn(nil)
	}
	e := c.entry(k)
	for {
		e.mu.RLock()
		if e.loaded && e.c == cur {
			defer e.mu.RUnlock()
			return fn(e.idx)
		}
		e.mu.RUnlock()
		// The load goes on when the search that started it gives up: a
		// large partition may take longer to load than one request may
		// wait, and a load cut off each time would never finish.
		done := make(chan error, 1)
		go func() {
			lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), maxLoad)
			defer cancel()
			done <- c.refresh(lctx, k, e, cur)
		}()
		select {
		case err := <-done:
			if err != nil {
				return err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// maxLoad bounds one load of a partition, which outlives the search that
// started it.
const maxLoad = 5 * time.Minute

// refresh brings e up to at least the counters cur.
func (c *Cache) refresh(ctx context.Context, k Key, e *entry, cur Counters) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.loaded && e.c == cur {
		return nil // another search did it
	}
	start := time.Now()
	// The entry is altered in place from here on: until the end, a
	// failure leaves it unloaded, and the next search rebuilds it.
	idx, how := e.idx, "append"
	loaded := e.loaded
	e.loaded = false
	switch {
	case !loaded || idx == nil:
		idx, how = newIndex(), "full"
	case e.c.Changed != cur.Changed:
		how = "changes"
		ok, err := c.applyChanges(ctx, k, idx)
		if err != nil {
			return err
		}
		if !ok {
			idx, how = newIndex(), "full"
		}
	}
	n := idx.live
	if err := c.src.Load(ctx, k, idx.maxSeq, idx.add); err != nil {
		return err
	}
	// Rows loaded may be newer than cur; the next refresh then loads
	// past maxSeq, which holds no row twice.
	e.idx, e.c, e.loaded = idx, cur, true
	c.log.DebugContext(ctx, "memindex: partition refreshed", "how", how, "added", idx.live-n, "memories", idx.live,
		"took", time.Since(start))
	c.account(k, e, idx.bytes)
	return nil
}

// applyChanges brings x up to the partition's memories up to its maxSeq:
// the deleted ones die, the changed ones die and are loaded again into new
// slots. It reports false, having changed nothing, when so much of x would
// be dead that a rebuild is cheaper to search.
func (c *Cache) applyChanges(ctx context.Context, k Key, x *index) (bool, error) {
	seen := make([]bool, len(x.seqs))
	var stale []int64
	err := c.src.Versions(ctx, k, func(seq int64, id string, version int64) {
		if seq > x.maxSeq {
			return // appended since: Load reads it
		}
		s, ok := x.slotOf[seq]
		if ok {
			seen[s] = true
		}
		// The id too: SQLite gives a new row the Seq of a deleted last one.
		if !ok || x.mems[s].ID != id || x.mems[s].Version != version {
			stale = append(stale, seq)
		}
	})
	if err != nil {
		return false, err
	}
	var gone []uint32
	for s, dead := range x.dead {
		if !dead && !seen[s] {
			gone = append(gone, uint32(s))
		}
	}
	if x.ndead+len(gone)+len(stale) > x.live/4+16 {
		return false, nil
	}
	for _, s := range gone {
		x.kill(s)
	}
	for _, seq := range stale {
		if s, ok := x.slotOf[seq]; ok {
			x.kill(s)
		}
	}
	if len(stale) > 0 {
		if err := c.src.LoadSeqs(ctx, k, stale, x.add); err != nil {
			return false, err
		}
	}
	// Load goes on from the highest live Seq: past a deleted last row,
	// SQLite may hand its Seq to the next one.
	x.maxSeq = 0
	for seq := range x.slotOf {
		x.maxSeq = max(x.maxSeq, seq)
	}
	return true, nil
}

// Keyword ranks f's memories of partition k that hold any of terms by
// BM25 and returns the best limit of them.
func (c *Cache) Keyword(ctx context.Context, k Key, f memory.Filter, terms []string, limit int) ([]memory.Hit, error) {
	if len(terms) == 0 || limit <= 0 {
		return nil, nil
	}
	var out []memory.Hit
	err := c.view(ctx, k, func(idx *index) error {
		if idx != nil {
			out = idx.keyword(&f, terms, limit)
		}
		return nil
	})
	return out, err
}

// Vector returns the limit memories of f in partition k whose vectors of
// q's model and width are closest to q by cosine similarity.
func (c *Cache) Vector(ctx context.Context, k Key, f memory.Filter, q memory.Embedding, limit int) ([]memory.Hit, error) {
	if limit <= 0 || len(q.Vector) == 0 {
		return nil, nil
	}
	qn := math.Sqrt(float64(memory.Dot(q.Vector, q.Vector)))
	if qn == 0 || math.IsNaN(qn) || math.IsInf(qn, 0) {
		return nil, nil
	}
	var out []memory.Hit
	err := c.view(ctx, k, func(idx *index) error {
		if idx == nil {
			return nil
		}
		g := idx.groups[vecKey{q.Model, len(q.Vector)}]
		if g == nil {
			return nil
		}
		if g.graph == nil && len(g.vecs) >= c.approx/g.dims && g.building.CompareAndSwap(false, true) {
			go c.build(k, idx, g, g.vecs[:len(g.vecs):len(g.vecs)])
		}
		out = idx.vector(&f, g, q, float32(qn), limit, c.ef)
		return nil
	})
	return out, err
}

// build makes an HNSW graph of the vectors vecs of group g of index x
// and, if the partition's entry still holds x, gives it to g with the
// vectors added since.
func (c *Cache) build(k Key, x *index, g *vecGroup, vecs [][]float32) {
	c.builds <- struct{}{}
	defer func() { <-c.builds }()
	start := time.Now()
	gr := hnsw.New(len(vecs[0]), &hnsw.Options{EfSearch: c.ef})
	for i, v := range vecs {
		gr.Add(uint32(i), v)
	}
	c.mu.Lock()
	e := c.m[k]
	c.mu.Unlock()
	if e == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.idx != x {
		return // rebuilt or dropped meanwhile: this graph is of old slots
	}
	for i := len(vecs); i < len(g.vecs); i++ {
		gr.Add(uint32(i), g.vecs[i])
	}
	g.graph = gr
	x.bytes += graphBytes * int64(len(g.vecs))
	c.log.Debug("memindex: vector graph built", "vectors", len(g.vecs), "took", time.Since(start))
	c.account(k, e, x.bytes)
}

// TermStats returns how many memories partition k holds (expired ones
// not yet swept included) and how many of them hold each of terms (the
// first MaxQueryTerms distinct ones).
func (c *Cache) TermStats(ctx context.Context, k Key, terms []string) (int, map[string]int, error) {
	docs, df := 0, map[string]int{}
	err := c.view(ctx, k, func(idx *index) error {
		for _, t := range terms {
			if _, done := df[t]; done || len(df) == MaxQueryTerms {
				continue
			}
			df[t] = 0
			if idx != nil {
				df[t] = idx.df(t)
			}
		}
		if idx != nil {
			docs = idx.live
		}
		return nil
	})
	return docs, df, err
}

// Adjacent returns, for each of ids that is a memory of partition k with
// a conversation id, the memories of f just before and just after it in
// its conversation (by creation time, then Seq). The map holds no entry
// for an id with neither.
func (c *Cache) Adjacent(ctx context.Context, k Key, f memory.Filter, ids []string) (map[string][]memory.Memory, error) {
	out := map[string][]memory.Memory{}
	if len(ids) == 0 {
		return out, nil
	}
	err := c.view(ctx, k, func(idx *index) error {
		if idx != nil {
			idx.adjacent(&f, ids, out)
		}
		return nil
	})
	return out, err
}

// Rows is what a Source reads rows with: *sql.Rows and pgx.Rows both are.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// ScanVersions calls fn with each (seq, id, version) row of rows, for a
// Source's Versions.
func ScanVersions(rows Rows, fn func(seq int64, id string, version int64)) error {
	for rows.Next() {
		var seq, version int64
		var id string
		if err := rows.Scan(&seq, &id, &version); err != nil {
			return err
		}
		fn(seq, id, version)
	}
	return rows.Err()
}

// Vector gives m the stored vector vec of model, for a Source's loads: a
// memory without a model has none, and a damaged one is left out of
// vector search with a warning (the memory is still found by keyword).
func Vector(ctx context.Context, log *slog.Logger, seq int64, m *memory.Memory, model string, vec []byte) {
	if model == "" || vec == nil {
		return
	}
	v, err := memory.DecodeVector(vec)
	if err != nil {
		log.WarnContext(ctx, "memindex: a memory's vector is damaged; it is left out of vector search", "seq", seq)
		return
	}
	m.Embedding = &memory.Embedding{Model: model, Vector: v}
}
