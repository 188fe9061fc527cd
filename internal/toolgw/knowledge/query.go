package knowledge

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"novaos.dev/novaos/memory"
	"novaos.dev/novaos/tools"
)

// Bounds of the answers to graph questions.
const (
	answerSentences  = 3 // sentences in a local answer
	globalThemes     = 3 // communities a global answer covers
	seedNeighbours   = 5 // relationships followed from each entity of the question
	answerChunks     = 8 // chunks a local answer reads
	themeChunks      = 6 // chunks read per community
	maxCandidates    = 200
	fallbackChunks   = 5 // chunks plain search gives a degraded answer or a question naming no entity
	themeEntityNames = 5
)

// citation says where a text comes from.
type citation struct {
	DocumentID string `json:"document_id"`
	Filename   string `json:"filename,omitempty"`
	SourceURL  string `json:"source_url,omitempty"`
	ChunkID    string `json:"chunk_id,omitempty"`
	ChunkIndex int    `json:"chunk_index"`
	// Start and End are the cited span of the document's normalised
	// text, in code points, End exclusive.
	Start int `json:"start"`
	End   int `json:"end"`
	// Text is the cited sentence (in an answer's citations).
	Text string `json:"text,omitempty"`
}

type searchResult struct {
	ChunkID      string   `json:"chunk_id"`
	DocumentID   string   `json:"document_id"`
	CollectionID string   `json:"collection_id"`
	Text         string   `json:"text"`
	Score        float64  `json:"score"`
	Citation     citation `json:"citation"`
}

// found is a chunk a search found, with its document.
type found struct {
	chunk memory.Memory
	meta  chunkMeta
	doc   tools.Document
	score float64
}

func (f *found) citation() citation {
	return citation{DocumentID: f.doc.ID, Filename: f.doc.Filename, SourceURL: f.doc.SourceURL, ChunkIndex: f.meta.ChunkIndex,
		Start: f.meta.Start, End: f.meta.End}
}

func (p *Provider) search(ctx context.Context, tenant string, args *arguments) (any, error) {
	var a struct {
		Query        string `json:"query"`
		CollectionID string `json:"collection_id"`
		TopK         *int   `json:"top_k"`
	}
	if err := args.decode(&a); err != nil {
		return nil, err
	}
	q, err := query("query", a.Query)
	if err != nil {
		return nil, err
	}
	k := DefaultTopK
	if a.TopK != nil {
		if k = *a.TopK; k < 1 || k > MaxTopK {
			return nil, invalid("top_k is %d; it must be 1 to %d", k, MaxTopK)
		}
	}
	var colls []tools.Collection
	if a.CollectionID != "" {
		if err := id("collection_id", a.CollectionID); err != nil {
			return nil, err
		}
		c, err := p.ks.Collection(ctx, tenant, a.CollectionID)
		if err != nil {
			return nil, storeErr(err, "no collection "+quote(a.CollectionID))
		}
		colls = []tools.Collection{c}
	} else if colls, err = p.ks.ListCollections(ctx, tenant, "", p.o.MaxCollections); err != nil {
		return nil, err
	}
	var all []found
	var from []string
	for _, c := range colls {
		fs, err := p.searchCollection(ctx, tenant, c.ID, q, k)
		if err != nil {
			return nil, err
		}
		all = append(all, fs...)
		for range fs {
			from = append(from, c.ID)
		}
	}
	order := make([]int, len(all))
	for i := range order {
		order[i] = i
	}
	if len(colls) > 1 {
		// Each collection's list is in fused-rank order; across
		// collections only the calibrated score compares.
		slices.SortStableFunc(order, func(x, y int) int { return cmp.Compare(all[y].score, all[x].score) })
	}
	out := struct {
		Results []searchResult `json:"results"`
	}{Results: []searchResult{}}
	for _, i := range order[:min(len(order), k)] {
		f := &all[i]
		out.Results = append(out.Results, searchResult{ChunkID: f.chunk.ID, DocumentID: f.doc.ID, CollectionID: from[i],
			Text: f.chunk.Content, Score: f.score, Citation: f.citation()})
	}
	return out, nil
}

// searchCollection ranks a collection's chunks for q with the memory
// service's retrieval (keyword and vector search fused; no conversation
// neighbours, which chunks have none) and keeps those of committed
// documents that score above 0, at most k.
func (p *Provider) searchCollection(ctx context.Context, tenant, collection, q string, k int) ([]found, error) {
	f := memory.Filter{Partition: partitionOf(collection), Now: p.o.Now()}
	// Chunks of documents not (yet) committed are passed over: ask for
	// some more.
	fused, err := memory.Retrieve(ctx, p.ms, p.o.Embedder, tenant, f, q, 2*k, &memory.RetrieveOptions{Neighbours: -1})
	if err != nil {
		return nil, err
	}
	var ms []memory.Memory
	var scores []float64
	for i := range fused {
		// A chunk sharing no word and no spelling with the query was
		// ranked only because the vector list is never empty.
		if fused[i].Score > 0 {
			ms, scores = append(ms, fused[i].Memory), append(scores, fused[i].Score)
		}
	}
	out, err := p.withDocuments(ctx, tenant, collection, ms, scores)
	if err != nil {
		return nil, err
	}
	return out[:min(len(out), k)], nil
}

// withDocuments pairs chunks with their committed documents, leaving out
// the chunks that have none; the order is kept.
func (p *Provider) withDocuments(ctx context.Context, tenant, collection string, ms []memory.Memory, scores []float64) ([]found, error) {
	var ids []string
	metas := make([]chunkMeta, len(ms))
	ok := make([]bool, len(ms))
	for i := range ms {
		if metas[i], ok[i] = metaOf(&ms[i]); ok[i] {
			ids = append(ids, metas[i].DocumentID)
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	docs, err := p.ks.Documents(ctx, tenant, collection, ids)
	if err != nil {
		return nil, err
	}
	byID := make(map[string]tools.Document, len(docs))
	for _, d := range docs {
		byID[d.ID] = d
	}
	var out []found
	for i := range ms {
		d, has := byID[metas[i].DocumentID]
		if !ok[i] || !has {
			continue
		}
		f := found{chunk: ms[i], meta: metas[i], doc: d}
		if scores != nil {
			f.score = scores[i]
		}
		out = append(out, f)
	}
	return out, nil
}

// answer is the result of a graph question.
type answer struct {
	Answer     string     `json:"answer"`
	Citations  []citation `json:"citations"`
	Confidence float64    `json:"confidence"`
	Degraded   bool       `json:"degraded"`
	Message    string     `json:"message,omitempty"`
	Metadata   answerMeta `json:"metadata"`
}

type answerMeta struct {
	SearchMode  string `json:"search_mode"`
	GraphStatus string `json:"graph_status"`
	// Entities are the graph's entities the answer started from.
	Entities []string `json:"entities,omitempty"`
	// Communities are the themes a global answer covers.
	Communities []theme `json:"communities,omitempty"`
}

type theme struct {
	Community int      `json:"community"`
	Entities  []string `json:"entities"`
	Size      int      `json:"size"`
}

func (p *Provider) queryGraph(ctx context.Context, tenant string, args *arguments, global bool) (any, error) {
	var a struct {
		Question     string `json:"question"`
		CollectionID string `json:"collection_id"`
	}
	if err := args.decode(&a); err != nil {
		return nil, err
	}
	q, err := query("question", a.Question)
	if err != nil {
		return nil, err
	}
	if err := id("collection_id", a.CollectionID); err != nil {
		return nil, err
	}
	c, err := p.ks.Collection(ctx, tenant, a.CollectionID)
	if err != nil {
		return nil, storeErr(err, "no collection "+quote(a.CollectionID))
	}
	out := &answer{Citations: []citation{}, Metadata: answerMeta{SearchMode: "graph_local", GraphStatus: string(graphStatus(&c))}}
	if global {
		out.Metadata.SearchMode = "graph_global"
	}
	if c.Graph.Status != tools.GraphCompleted {
		out.Degraded = true
		out.Message = fmt.Sprintf("the collection's graph is %s: call %s and wait until %s reports graph_status completed; "+
			"this answer comes from plain search", graphStatus(&c), ToolBuildGraph, ToolGraphStatus)
		return out, p.searchAnswer(ctx, tenant, c.ID, q, out)
	}
	ix, err := p.graphOf(ctx, &c)
	if err != nil {
		return nil, err
	}
	if global {
		return out, p.globalAnswer(ctx, tenant, c.ID, ix, q, out)
	}
	return out, p.localAnswer(ctx, tenant, c.ID, ix, q, out)
}

// graphOf returns the collection's decoded graph, from the cache when it
// holds this build.
func (p *Provider) graphOf(ctx context.Context, c *tools.Collection) (*graphIndex, error) {
	k := graphKey{c.Tenant, c.ID, c.Graph.BuiltAt}
	if g := p.graphs.get(k); g != nil {
		return g, nil
	}
	data, err := p.ks.GraphData(ctx, c.Tenant, c.ID)
	if err != nil {
		return nil, err
	}
	g, err := decodeGraph(data)
	if err != nil {
		return nil, err
	}
	p.graphs.put(k, g)
	return g, nil
}

// candidate is a sentence an answer may cite.
type candidate struct {
	s    sentence
	f    *found
	cite citation
	// entities the sentence names, of those the answer looks for.
	entities int
	sim      float64 // memory.Similarity to the question
	group    int     // the theme it belongs to (global answers)
}

// candidates cuts the chunks into sentences and scores each for the
// question: memory.Similarity of its terms and vector to the question's,
// and how many of want's entities it names (nil: none counted).
func (p *Provider) candidates(ctx context.Context, ix *graphIndex, fs []found, q string, want map[int]int) ([]candidate, error) {
	var out []candidate
	type place struct {
		doc   string
		start int
	}
	seen := map[place]bool{} // a sentence of two overlapping chunks counts once
	for i := range fs {
		f := &fs[i]
		for _, s := range sentences(f.chunk.Content) {
			start := f.meta.Start + utf8.RuneCountInString(f.chunk.Content[:s.start])
			key := place{f.doc.ID, start}
			if seen[key] || len(out) >= maxCandidates {
				continue
			}
			seen[key] = true
			c := candidate{s: s, f: f, group: -1}
			c.cite = f.citation()
			c.cite.ChunkID, c.cite.Text = f.chunk.ID, s.text
			c.cite.Start, c.cite.End = start, start+utf8.RuneCountInString(s.text)
			if ix != nil && want != nil {
				groups := map[int]int{}
				for _, e := range ix.mentionsIn(s.text) {
					if g, ok := want[e]; ok {
						c.entities++
						groups[g]++
					}
				}
				best := -1
				for g, n := range groups {
					if best < 0 || n > groups[best] || n == groups[best] && g < best {
						best = g
					}
				}
				c.group = best
			}
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	texts := make([]string, 0, len(out)+1)
	texts = append(texts, q)
	for _, c := range out {
		texts = append(texts, c.s.text)
	}
	vecs, err := p.o.Embedder.Embed(ctx, texts)
	if err != nil {
		return nil, fmt.Errorf("embed sentences: %w", err)
	}
	if len(vecs) != len(texts) {
		return nil, fmt.Errorf("the embedder returned %d vectors for %d texts", len(vecs), len(texts))
	}
	qt := memory.Terms(q)
	for i := range out {
		out[i].sim = memory.Similarity(qt, memory.Terms(out[i].s.text), memory.Cosine(vecs[0], vecs[i+1]))
	}
	return out, nil
}

// compose writes the chosen sentences into the answer, in order, with
// their citations; confidence is the mean similarity of the sentences to
// the question unless the caller sets it.
func compose(out *answer, chosen []candidate, sep string) {
	parts := make([]string, len(chosen))
	sum := 0.0
	for i, c := range chosen {
		parts[i] = c.s.text
		out.Citations = append(out.Citations, c.cite)
		sum += c.sim
	}
	out.Answer = strings.Join(parts, sep)
	if len(chosen) > 0 {
		out.Confidence = math.Round(sum/float64(len(chosen))*1e4) / 1e4
	}
}

// searchAnswer answers from plain search: of each of the best chunks,
// the sentence closest to the question among those sharing a word with it.
func (p *Provider) searchAnswer(ctx context.Context, tenant, collection, q string, out *answer) error {
	fs, err := p.searchCollection(ctx, tenant, collection, q, fallbackChunks)
	if err != nil {
		return err
	}
	cands, err := p.candidates(ctx, nil, fs, q, nil)
	if err != nil {
		return err
	}
	qt := memory.Terms(q)
	var chosen []candidate
	for i := range fs {
		var best *candidate
		for j := range cands {
			c := &cands[j]
			if c.f != &fs[i] || memory.Similarity(qt, memory.Terms(c.s.text), 0) == 0 {
				continue
			}
			if best == nil || c.sim > best.sim {
				best = c
			}
		}
		if best != nil {
			chosen = append(chosen, *best)
		}
		if len(chosen) == answerSentences {
			break
		}
	}
	compose(out, chosen, " ")
	return nil
}

// localAnswer answers from the entities the question names (or, naming
// none the graph knows, those of the chunks plain search finds for it)
// and their strongest relationships: the sentences of their chunks that
// name the most of them and come closest to the question.
func (p *Provider) localAnswer(ctx context.Context, tenant, collection string, ix *graphIndex, q string, out *answer) error {
	seeds := ix.mentionsIn(q)
	var searched []found
	if len(seeds) == 0 {
		var err error
		if searched, err = p.searchCollection(ctx, tenant, collection, q, fallbackChunks); err != nil {
			return err
		}
		count := map[int]int{}
		for _, f := range searched {
			for _, e := range ix.mentionsIn(f.chunk.Content) {
				count[e]++
			}
		}
		for e := range count {
			seeds = append(seeds, e)
		}
		slices.SortFunc(seeds, func(a, b int) int { return cmp.Or(cmp.Compare(count[b], count[a]), cmp.Compare(a, b)) })
		seeds = seeds[:min(len(seeds), 3)]
	}
	if len(seeds) == 0 {
		out.Message = "the graph knows no entity of the question or of the passages that match it"
		return nil
	}
	// Weigh chunks: an entity of the question's chunks count twice, the
	// evidence of its strongest relationships once.
	want := map[int]int{}
	weight := map[chunkRef]int{}
	var order []chunkRef
	add := func(r chunkRef, w int) {
		if _, ok := weight[r]; !ok {
			order = append(order, r)
		}
		weight[r] += w
	}
	for _, e := range seeds {
		want[e] = 0
		out.Metadata.Entities = append(out.Metadata.Entities, ix.Entities[e].Name)
		for _, r := range ix.Entities[e].Chunks {
			add(r, 2)
		}
	}
	for _, e := range seeds {
		for _, r := range ix.adj[e][:min(len(ix.adj[e]), seedNeighbours)] {
			if o := ix.other(r, e); !slices.Contains(seeds, o) {
				want[o] = 0
			}
			for _, ref := range ix.Relationships[r].Chunks {
				add(ref, 1)
			}
		}
	}
	slices.SortStableFunc(order, func(a, b chunkRef) int { return cmp.Compare(weight[b], weight[a]) })
	fs, err := p.readChunks(ctx, tenant, collection, ix, order[:min(len(order), answerChunks)])
	if err != nil {
		return err
	}
	fs = append(fs, searched...)
	cands, err := p.candidates(ctx, ix, fs, q, want)
	if err != nil {
		return err
	}
	seedSet := map[int]bool{}
	for _, e := range seeds {
		seedSet[e] = true
	}
	score := func(c *candidate) float64 {
		named := 0
		for _, e := range ix.mentionsIn(c.s.text) {
			if seedSet[e] {
				named++
			}
		}
		return float64(2*named+c.entities) + c.sim
	}
	scores := make([]float64, len(cands))
	for i := range cands {
		scores[i] = score(&cands[i])
	}
	idx := make([]int, len(cands))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(scores[b], scores[a]) })
	var chosen []candidate
	for _, i := range idx {
		if len(chosen) == answerSentences {
			break
		}
		if cands[i].entities == 0 && cands[i].sim == 0 {
			continue
		}
		chosen = append(chosen, cands[i])
	}
	compose(out, chosen, " ")
	return nil
}

// readChunks reads the chunks of a graph's refs with their documents,
// leaving out any no longer there.
func (p *Provider) readChunks(ctx context.Context, tenant, collection string, ix *graphIndex, refs []chunkRef) ([]found, error) {
	now := p.o.Now()
	var ms []memory.Memory
	for _, r := range refs {
		m, err := p.ms.Get(ctx, tenant, chunkID(ix.Docs[r[0]], r[1]), now)
		if errors.Is(err, memory.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if m.Partition != partitionOf(collection) {
			continue
		}
		ms = append(ms, *m)
	}
	return p.withDocuments(ctx, tenant, collection, ms, nil)
}

// globalAnswer answers from the graph's communities: those whose
// entities' names share the most words with the question, else the
// largest, one sentence each (the one naming the most of its entities,
// then closest to the question). Confidence is the share of the
// communities' mentions the chosen ones hold: how much of the collection
// the answer speaks for. A graph without communities answers from its
// most mentioned entities, each a theme of its own.
func (p *Provider) globalAnswer(ctx context.Context, tenant, collection string, ix *graphIndex, q string, out *answer) error {
	groups := ix.Communities
	if len(groups) == 0 {
		for e := range min(len(ix.Entities), globalThemes) {
			groups = append(groups, []int{e})
		}
	}
	if len(groups) == 0 {
		out.Message = "the graph holds no entities"
		return nil
	}
	qt := memory.Terms(q)
	type ranked struct {
		index    int
		rel      float64
		mentions int
	}
	rs := make([]ranked, len(groups))
	total := 0
	for i, g := range groups {
		var names []string
		m := 0
		for k, e := range g {
			m += ix.Entities[e].Mentions
			if k < 2*themeEntityNames {
				names = append(names, ix.Entities[e].Name)
			}
		}
		rs[i] = ranked{index: i, rel: memory.Similarity(qt, memory.Terms(strings.Join(names, " ")), 0), mentions: m}
		total += m
	}
	slices.SortStableFunc(rs, func(a, b ranked) int { return cmp.Or(cmp.Compare(b.rel, a.rel), cmp.Compare(b.mentions, a.mentions)) })
	rs = rs[:min(len(rs), globalThemes)]
	want := map[int]int{}
	var refs []chunkRef
	seenRef := map[chunkRef]bool{}
	covered := 0
	for _, r := range rs {
		g := groups[r.index]
		covered += r.mentions
		t := theme{Community: r.index, Size: len(g)}
		if len(ix.Communities) == 0 {
			t.Community = -1
		}
		n := 0
		for k, e := range g {
			want[e] = r.index
			if k < themeEntityNames {
				t.Entities = append(t.Entities, ix.Entities[e].Name)
			}
			for _, ref := range ix.Entities[e].Chunks {
				if n < themeChunks && !seenRef[ref] {
					seenRef[ref] = true
					refs = append(refs, ref)
					n++
				}
			}
		}
		out.Metadata.Communities = append(out.Metadata.Communities, t)
	}
	fs, err := p.readChunks(ctx, tenant, collection, ix, refs)
	if err != nil {
		return err
	}
	cands, err := p.candidates(ctx, ix, fs, q, want)
	if err != nil {
		return err
	}
	var chosen []candidate
	for _, r := range rs {
		var best *candidate
		for i := range cands {
			c := &cands[i]
			if c.group != r.index {
				continue
			}
			if best == nil || c.entities > best.entities || c.entities == best.entities && c.sim > best.sim {
				best = c
			}
		}
		if best != nil {
			chosen = append(chosen, *best)
		}
	}
	compose(out, chosen, "\n")
	if total > 0 && len(chosen) > 0 {
		out.Confidence = math.Round(float64(covered)/float64(total)*1e4) / 1e4
	}
	return nil
}
