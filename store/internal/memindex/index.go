package memindex

import (
	"cmp"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"novaos.dev/novaos/memory"
	"novaos.dev/novaos/store/internal/hnsw"
	"novaos.dev/novaos/vecdot"
)

// BM25 parameters: FTS5's, which the SQL search used before this index.
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// index is one partition's search structures. Memories are numbered by
// slot in load order; slots never move. A memory changed or deleted since
// it was loaded leaves a dead slot behind (its changed self is loaded
// again into a new one) until the partition is rebuilt.
type index struct {
	maxSeq int64
	seqs   []int64
	dead   []bool
	// ndead counts dead slots; live, the others.
	ndead, live int
	// slotOf is the live slot of each Seq.
	slotOf map[int64]uint32
	// mems are the memories without their embeddings, which live in
	// groups.
	mems    []memory.Memory
	created []int64 // mems' times in Unix ms, for the filters
	expires []int64
	// dl is a memory's length in terms plus one: FTS5 counted the
	// partition token of its other column too. liveLen sums it over the
	// live slots.
	dl       []uint32
	liveLen  int64
	postings map[string][]posting
	// deadDF counts the dead slots among a term's postings, so document
	// frequencies stay exact without rewriting the lists.
	deadDF map[string]int
	byID   map[string]uint32
	// convs lists each conversation's slots in the order before gives.
	convs  map[string][]uint32
	groups map[vecKey]*vecGroup
	bytes  int64
}

type posting struct{ slot, tf uint32 }

type vecKey struct {
	model string
	dims  int
}

// vecGroup holds the unit vectors of one model and width. Its graph,
// once built, holds every one of them under its position in vecs.
//
// An exact search first ranks the group by an int8 copy of each vector
// (codes, dims bytes each, in one array; vector i is about scales[i] times
// its codes): a scan of a large partition waits on memory, and the copy
// is a quarter of the bytes. The best few times the results asked for are
// then scored with the float32 vectors, so the ranking and the scores are
// the float32 ones unless the int8 error pushes a result out of that much
// larger set (BenchmarkVectorSearch measures how often).
type vecGroup struct {
	dims     int
	slots    []uint32
	vecs     [][]float32
	codes    []int8
	scales   []float32
	graph    *hnsw.Graph
	building atomic.Bool
}

// quantize returns v as int8 codes, v ≈ scale·codes.
func quantize(v []float32, codes []int8) ([]int8, float32) {
	var m float32
	for _, x := range v {
		m = max(m, x, -x)
	}
	if m == 0 {
		return append(codes, make([]int8, len(v))...), 0
	}
	for _, x := range v {
		codes = append(codes, int8(math.Round(float64(x/m*127))))
	}
	return codes, m / 127
}

func newIndex() *index {
	return &index{slotOf: map[int64]uint32{}, postings: map[string][]posting{}, deadDF: map[string]int{},
		byID: map[string]uint32{}, convs: map[string][]uint32{}, groups: map[vecKey]*vecGroup{}}
}

// df is how many live memories hold term t.
func (x *index) df(t string) int { return len(x.postings[t]) - x.deadDF[t] }

// Rough sizes for Options.MaxBytes: a memory's struct, slice headers and
// map entries; a posting; a term's map entry; a vector's headers.
const (
	docBytes     = 320
	postingBytes = 8
	termBytes    = 64
	vectorBytes  = 48
	graphBytes   = 140 // a node's links at hnsw's default M
)

// add appends d as the next slot (Source.Load's callback).
func (x *index) add(d *Doc) {
	slot := uint32(len(x.seqs))
	m := d.Memory
	emb := m.Embedding
	m.Embedding = nil
	x.maxSeq = max(x.maxSeq, d.Seq)
	x.seqs = append(x.seqs, d.Seq)
	x.dead = append(x.dead, false)
	x.live++
	x.slotOf[d.Seq] = slot
	x.mems = append(x.mems, m)
	x.byID[m.ID] = slot
	x.created = append(x.created, unixMS(m.CreatedAt))
	x.expires = append(x.expires, unixMS(m.ExpiresAt))
	x.bytes += docBytes + int64(len(m.ID)+len(m.Content)+len(m.Source)+len(m.ConversationID)+len(m.Custom)+len(m.WriteEventID))
	for _, t := range m.Tags {
		x.bytes += 16 + int64(len(t))
	}

	terms := memory.Terms(memory.EmbedText(m.Content, m.Tags))
	x.dl = append(x.dl, uint32(len(terms))+1)
	x.liveLen += int64(len(terms)) + 1
	slices.Sort(terms)
	for i := 0; i < len(terms); {
		j := i + 1
		for j < len(terms) && terms[j] == terms[i] {
			j++
		}
		ps, ok := x.postings[terms[i]]
		if !ok {
			x.bytes += int64(len(terms[i])) + termBytes
		}
		x.postings[terms[i]] = append(ps, posting{slot, uint32(j - i)})
		x.bytes += postingBytes
		i = j
	}

	if m.ConversationID != "" {
		list := x.convs[m.ConversationID]
		at := len(list) // loads come in Seq order, nearly always also creation order
		for at > 0 && x.before(slot, list[at-1]) {
			at--
		}
		x.convs[m.ConversationID] = slices.Insert(list, at, slot)
		x.bytes += 4
	}

	if emb != nil && emb.Model != "" && len(emb.Vector) > 0 {
		v := emb.Vector
		n := math.Sqrt(float64(memory.Dot(v, v)))
		if n > 0 && !math.IsInf(n, 0) && !math.IsNaN(n) {
			for i := range v {
				v[i] /= float32(n)
			}
			k := vecKey{emb.Model, len(v)}
			g := x.groups[k]
			if g == nil {
				g = &vecGroup{dims: len(v)}
				x.groups[k] = g
			}
			g.slots = append(g.slots, slot)
			g.vecs = append(g.vecs, v)
			var scale float32
			g.codes, scale = quantize(v, g.codes)
			g.scales = append(g.scales, scale)
			x.bytes += 5*int64(len(v)) + 4 + vectorBytes // the float32 vector and its int8 copy
			if g.graph != nil {
				g.graph.Add(uint32(len(g.vecs)-1), v)
				x.bytes += graphBytes
			}
		}
	}
}

// kill marks slot s dead: searches skip it and the statistics leave it
// out.
func (x *index) kill(s uint32) {
	if x.dead[s] {
		return
	}
	x.dead[s] = true
	x.ndead++
	x.live--
	x.liveLen -= int64(x.dl[s])
	m := &x.mems[s]
	terms := memory.Terms(memory.EmbedText(m.Content, m.Tags))
	slices.Sort(terms)
	for _, t := range slices.Compact(terms) {
		x.deadDF[t]++
	}
	if x.byID[m.ID] == s {
		delete(x.byID, m.ID)
	}
	if x.slotOf[x.seqs[s]] == s {
		delete(x.slotOf, x.seqs[s])
	}
}

// before orders slots in a conversation: by creation time, then Seq, then
// slot (a memory's dead and live slots share the first two).
func (x *index) before(a, b uint32) bool {
	if c := cmp.Compare(x.created[a], x.created[b]); c != 0 {
		return c < 0
	}
	if c := cmp.Compare(x.seqs[a], x.seqs[b]); c != 0 {
		return c < 0
	}
	return a < b
}

// matcher applies a memory.Filter to slots.
type matcher struct {
	x             *index
	f             *memory.Filter
	now           int64
	after, before int64
}

func (x *index) matcher(f *memory.Filter) matcher {
	return matcher{x: x, f: f, now: unixMS(f.Now), after: unixMS(f.After), before: unixMS(f.Before)}
}

func (m *matcher) match(s uint32) bool {
	x, f := m.x, m.f
	if x.dead[s] {
		return false
	}
	if e := x.expires[s]; e != 0 && e <= m.now {
		return false
	}
	if !f.After.IsZero() && x.created[s] <= m.after || !f.Before.IsZero() && x.created[s] >= m.before {
		return false
	}
	mem := &x.mems[s]
	if f.Type != "" && mem.Type != f.Type || f.ConversationID != "" && mem.ConversationID != f.ConversationID ||
		f.Classification != "" && mem.Classification != f.Classification {
		return false
	}
	for _, t := range f.Tags {
		if !slices.Contains(mem.Tags, t) {
			return false
		}
	}
	return true
}

// memory returns slot s's memory for a caller to keep: the slices it
// shares with the index are copied.
func (x *index) memory(s uint32) memory.Memory {
	m := x.mems[s]
	m.Tags, m.Custom = slices.Clone(m.Tags), slices.Clone(m.Custom)
	return m
}

// scoreBuf is keyword search's per-slot accumulator, reused between
// searches: allocating one per query would cost more than the ranking.
var scoreBuf = sync.Pool{New: func() any { return new([]float64) }}

func (x *index) keyword(f *memory.Filter, terms []string, limit int) []memory.Hit {
	m := x.matcher(f)
	n := x.live
	if n == 0 {
		return nil
	}
	bufp := scoreBuf.Get().(*[]float64)
	defer scoreBuf.Put(bufp)
	if cap(*bufp) < len(x.seqs) {
		*bufp = make([]float64, len(x.seqs))
	}
	scores := (*bufp)[:len(x.seqs)]
	var touched []uint32
	avgdl := float64(x.liveLen) / float64(n)
	seen := map[string]bool{}
	for _, t := range terms {
		if seen[t] || len(seen) == MaxQueryTerms {
			continue
		}
		seen[t] = true
		df := float64(x.df(t))
		if df == 0 {
			continue
		}
		idf := math.Log((float64(n) - df + 0.5) / (df + 0.5))
		if idf <= 0 {
			idf = 1e-6 // as FTS5: a term in most memories still counts a little
		}
		for _, p := range x.postings[t] {
			if x.dead[p.slot] {
				continue
			}
			tf := float64(p.tf)
			s := idf * tf * (bm25K1 + 1) / (tf + bm25K1*(1-bm25B+bm25B*float64(x.dl[p.slot])/avgdl))
			if scores[p.slot] == 0 {
				touched = append(touched, p.slot)
			}
			scores[p.slot] += s
		}
	}
	top := newTop(limit)
	for _, s := range touched {
		if m.match(s) {
			top.offer(s, x.seqs[s], scores[s])
		}
		scores[s] = 0
	}
	return x.hits(top)
}

func (x *index) vector(f *memory.Filter, g *vecGroup, q memory.Embedding, qn float32, limit, ef int) []memory.Hit {
	m := x.matcher(f)
	unit := make([]float32, len(q.Vector))
	for i, v := range q.Vector {
		unit[i] = v / qn
	}
	top := newTop(limit)
	if g.graph != nil && wholePartition(f) {
		found := g.graph.Search(unit, limit, max(ef, limit), func(id uint32) bool { return m.match(g.slots[id]) })
		for _, n := range found {
			s := g.slots[n.ID]
			top.offer(s, x.seqs[s], float64(n.Score))
		}
		return x.hits(top)
	}
	qc, qs := quantize(unit, nil)
	// ranked.slot holds the group position here.
	cands := newTop(rescored(limit))
	for i, s := range g.slots {
		if m.match(s) {
			d := g.dims
			cands.offer(uint32(i), x.seqs[s], float64(qs*g.scales[i]*float32(vecdot.DotInt8(qc, g.codes[i*d:i*d+d]))))
		}
	}
	for _, c := range cands.h {
		s := g.slots[c.slot]
		top.offer(s, x.seqs[s], float64(memory.Dot(unit, g.vecs[c.slot])))
	}
	return x.hits(top)
}

// rescored is how many int8-ranked candidates an exact vector search
// scores with the float32 vectors to return limit.
func rescored(limit int) int { return 4*limit + 32 }

// wholePartition reports whether f selects the whole partition but for
// expiry: the searches the graph serves. A narrower filter may accept so
// few nodes that a walk of the graph would miss them.
func wholePartition(f *memory.Filter) bool {
	return f.Type == "" && f.ConversationID == "" && len(f.Tags) == 0 && f.After.IsZero() && f.Before.IsZero() && f.Classification == ""
}

func (x *index) adjacent(f *memory.Filter, ids []string, out map[string][]memory.Memory) {
	m := x.matcher(f)
	for _, id := range ids {
		slot, ok := x.byID[id]
		if !ok || x.mems[slot].ConversationID == "" {
			continue
		}
		list := x.convs[x.mems[slot].ConversationID]
		at, _ := slices.BinarySearchFunc(list, slot, func(a, b uint32) int {
			if a == b {
				return 0
			}
			if x.before(a, b) {
				return -1
			}
			return 1
		})
		var near []memory.Memory
		for i := at - 1; i >= 0; i-- {
			if m.match(list[i]) {
				near = append(near, x.memory(list[i]))
				break
			}
		}
		for i := at + 1; i < len(list); i++ {
			if m.match(list[i]) {
				near = append(near, x.memory(list[i]))
				break
			}
		}
		if len(near) > 0 {
			out[id] = near
		}
	}
}

func (x *index) hits(top *topSlots) []memory.Hit {
	best := top.sorted()
	if len(best) == 0 {
		return nil
	}
	out := make([]memory.Hit, len(best))
	for i, r := range best {
		out[i] = memory.Hit{Memory: x.memory(r.slot), Score: r.score}
	}
	return out
}

// unixMS is t in Unix milliseconds, 0 for the zero time (as the stores
// keep times).
func unixMS(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}
