package knowledge

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"novaos.dev/novaos/memory"
)

// The entity graph. No model is involved: entities are the capitalised
// names of the text, relationships their co-occurrence, communities the
// groups label propagation finds. See the package doc.

// Bounds of the graph's extraction.
const (
	maxRunWords      = 6  // a longer run of capitalised words is a heading, not a name
	maxChunkMentions = 64 // mentions kept per chunk
	maxPairEntities  = 24 // entities of a chunk paired into relationships
	maxEntityChunks  = 32 // chunks an entity remembers
	maxEdgeChunks    = 5  // chunks a relationship remembers as evidence
	maxLowerWords    = 1 << 18
	propagationRuns  = 20
)

// connectors may join the capitalised words of one name ("Bank of
// England", "Leonardo da Vinci").
var connectors = map[string]bool{"of": true, "de": true, "del": true, "da": true, "di": true,
	"van": true, "von": true, "der": true, "du": true, "la": true, "le": true, "for": true}

// word is a word of a text as the extractor reads it.
type word struct {
	text    string // as written, without a possessive 's
	lower   string
	cap     bool // starts with a capital
	acronym bool // two or more letters, all capitals
	// initial is set on the first word of a sentence; joined when only
	// spaces or tabs separate it from the word before, so that a name
	// may continue.
	initial, joined bool
	start, end      int // bytes in the text
}

// words reads the words of text: runs of letters and digits with
// apostrophes and hyphens inside them.
func words(text string) []word {
	var out []word
	initial, joined := true, false
	i := 0
	for i < len(text) {
		r, n := utf8.DecodeRuneInString(text[i:])
		if !isWordRune(r) {
			switch {
			case r == '.' || r == '!' || r == '?' || r == '\n':
				initial, joined = true, false
			case r == ' ' || r == '\t':
			default:
				joined = false
			}
			i += n
			continue
		}
		start := i
		for i < len(text) {
			r, n := utf8.DecodeRuneInString(text[i:])
			if isWordRune(r) {
				i += n
				continue
			}
			// An apostrophe or hyphen stays inside a word.
			if r == '\'' || r == '’' || r == '-' {
				if r2, _ := utf8.DecodeRuneInString(text[i+n:]); i+n < len(text) && isWordRune(r2) {
					i += n
					continue
				}
			}
			break
		}
		w := text[start:i]
		possessive := false
		for _, s := range []string{"'s", "’s", "'S", "’S"} {
			if t, ok := strings.CutSuffix(w, s); ok && t != "" {
				w, possessive = t, true
				break
			}
		}
		first, _ := utf8.DecodeRuneInString(w)
		out = append(out, word{text: w, lower: strings.ToLower(w), cap: unicode.IsUpper(first) || unicode.IsTitle(first),
			acronym: isAcronym(w), initial: initial, joined: joined && len(out) > 0, start: start, end: start + len(w)})
		initial, joined = false, !possessive
	}
	return out
}

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

func isAcronym(w string) bool {
	letters := 0
	for _, r := range w {
		switch {
		case unicode.IsLetter(r) && !unicode.IsUpper(r):
			return false
		case unicode.IsLetter(r):
			letters++
		}
	}
	return letters >= 2
}

// isStop reports whether w is one of memory.Terms' stop words.
func isStop(lower string) bool { return len(memory.Terms(lower)) == 0 }

// run is a candidate name: consecutive capitalised words (and connectors
// between them) with nothing but spaces in between.
type run struct {
	words   []word
	initial bool // its first word starts a sentence
}

// runs finds the candidate names of ws.
func runs(ws []word) []run {
	var out []run
	var cur []word
	flush := func() {
		// Connectors at the end belong to no name.
		for len(cur) > 0 && !cur[len(cur)-1].cap {
			cur = cur[:len(cur)-1]
		}
		if len(cur) > 0 && len(cur) <= maxRunWords {
			out = append(out, run{words: cur, initial: cur[0].initial})
		}
		cur = nil
	}
	for _, w := range ws {
		switch {
		case w.cap && len(cur) > 0 && w.joined:
			cur = append(cur, w)
		case w.cap:
			flush()
			cur = []word{w}
		case connectors[w.lower] && len(cur) > 0 && w.joined:
			cur = append(cur, w)
		default:
			flush()
		}
	}
	flush()
	return out
}

// nameOf resolves a run into a name, given the words the corpus writes in
// lower case: leading stop words go ("The Eiffel Tower" is "Eiffel
// Tower"), and so does a sentence's first word that is a common word
// ("Yesterday Alice" is "Alice" when "yesterday" is written elsewhere).
// confirm is set on a lone capitalised word at a sentence's start, which
// is a name only if it is capitalised elsewhere too.
func nameOf(r run, lower map[string]bool) (key, surface string, confirm bool) {
	ws := r.words
	initial := r.initial
	for len(ws) > 0 && (isStop(ws[0].lower) || initial && len(ws) > 1 && lower[ws[0].lower] && !ws[0].acronym) {
		ws, initial = ws[1:], false
	}
	for len(ws) > 0 && !ws[0].cap {
		ws = ws[1:]
	}
	if len(ws) == 0 {
		return "", "", false
	}
	if len(ws) == 1 {
		w := ws[0]
		if utf8.RuneCountInString(w.text) < 2 || isStop(w.lower) {
			return "", "", false
		}
		confirm = initial && !w.acronym
	}
	keys := make([]string, len(ws))
	surfaces := make([]string, len(ws))
	for i, w := range ws {
		keys[i], surfaces[i] = w.lower, w.text
	}
	return strings.Join(keys, " "), strings.Join(surfaces, " "), confirm
}

// chunkRef names a chunk of a graph: its document's index in the graph's
// Docs and its index in the document.
type chunkRef [2]int

// graphData is the stored graph (JSON, its own version field first).
type graphData struct {
	Version       int            `json:"v"`
	Docs          []string       `json:"docs"`
	Entities      []entityData   `json:"entities"`
	Relationships []relationData `json:"relationships"`
	// Communities hold entity indexes, the largest community first.
	Communities [][]int `json:"communities"`
}

type entityData struct {
	Name      string     `json:"name"`
	Key       string     `json:"key"`
	Mentions  int        `json:"mentions"`
	Chunks    []chunkRef `json:"chunks"`
	Community int        `json:"community"` // -1: in none
}

type relationData struct {
	A      int        `json:"a"`
	B      int        `json:"b"`
	Weight int        `json:"w"`
	Chunks []chunkRef `json:"chunks"`
}

const graphVersion = 1

// graphChunk is a chunk the builder reads.
type graphChunk struct {
	ref  chunkRef
	text string
}

// graphLimits bound what a build keeps.
type graphLimits struct{ entities, relationships int }

// buildGraph builds the graph of a collection's chunks (docs are their
// documents' ids, in the order their refs index).
func buildGraph(docs []string, chunks []graphChunk, lim graphLimits) *graphData {
	// Pass one: the words the corpus writes in lower case, and each
	// chunk's candidate names.
	lower := map[string]bool{}
	chunkRuns := make([][]run, len(chunks))
	for i, c := range chunks {
		ws := words(c.text)
		for _, w := range ws {
			if !w.cap && len(lower) < maxLowerWords {
				lower[w.lower] = true
			}
		}
		chunkRuns[i] = runs(ws)
	}
	// Pass two: names, confirmed ones only.
	type found struct {
		key, surface string
		confirm      bool
	}
	chunkNames := make([][]found, len(chunks))
	confirmed := map[string]bool{}
	for i, rs := range chunkRuns {
		for _, r := range rs {
			k, s, conf := nameOf(r, lower)
			if k == "" {
				continue
			}
			if !conf {
				confirmed[k] = true
			}
			if len(chunkNames[i]) < maxChunkMentions {
				chunkNames[i] = append(chunkNames[i], found{k, s, conf})
			}
		}
	}
	type acc struct {
		mentions int
		surfaces map[string]int
		first    string
		chunks   []chunkRef
	}
	byKey := map[string]*acc{}
	chunkKeys := make([][]string, len(chunks))
	for i, fs := range chunkNames {
		seen := map[string]bool{}
		for _, f := range fs {
			if f.confirm && !confirmed[f.key] {
				continue
			}
			a := byKey[f.key]
			if a == nil {
				a = &acc{surfaces: map[string]int{}, first: f.surface}
				byKey[f.key] = a
			}
			a.mentions++
			a.surfaces[f.surface]++
			if !seen[f.key] {
				seen[f.key] = true
				chunkKeys[i] = append(chunkKeys[i], f.key)
				if len(a.chunks) < maxEntityChunks {
					a.chunks = append(a.chunks, chunks[i].ref)
				}
			}
		}
	}
	// Keep the most mentioned entities.
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		return cmp.Or(cmp.Compare(byKey[b].mentions, byKey[a].mentions), cmp.Compare(a, b))
	})
	keys = keys[:min(len(keys), lim.entities)]
	g := &graphData{Version: graphVersion, Docs: docs}
	index := make(map[string]int, len(keys))
	for i, k := range keys {
		a := byKey[k]
		name, best := a.first, a.surfaces[a.first]
		for s, n := range a.surfaces {
			if n > best || n == best && s < name {
				name, best = s, n
			}
		}
		index[k] = i
		g.Entities = append(g.Entities, entityData{Name: name, Key: k, Mentions: a.mentions, Chunks: a.chunks, Community: -1})
	}
	// Relationships: entities named in one chunk, weighed by the chunks
	// they share.
	type pair [2]int
	edges := map[pair]*relationData{}
	for i, ks := range chunkKeys {
		var ids []int
		for _, k := range ks {
			if x, ok := index[k]; ok {
				ids = append(ids, x)
			}
		}
		// The collection's most mentioned entities of the chunk only:
		// pairs grow with the square of their number.
		slices.Sort(ids)
		ids = ids[:min(len(ids), maxPairEntities)]
		for a := 0; a < len(ids); a++ {
			for b := a + 1; b < len(ids); b++ {
				p := pair{ids[a], ids[b]}
				e := edges[p]
				if e == nil {
					e = &relationData{A: p[0], B: p[1]}
					edges[p] = e
				}
				e.Weight++
				if len(e.Chunks) < maxEdgeChunks {
					e.Chunks = append(e.Chunks, chunks[i].ref)
				}
			}
		}
	}
	for _, e := range edges {
		g.Relationships = append(g.Relationships, *e)
	}
	slices.SortFunc(g.Relationships, func(x, y relationData) int {
		return cmp.Or(cmp.Compare(y.Weight, x.Weight), cmp.Compare(x.A, y.A), cmp.Compare(x.B, y.B))
	})
	g.Relationships = g.Relationships[:min(len(g.Relationships), lim.relationships)]
	g.Communities = communities(len(g.Entities), g.Relationships)
	for ci, members := range g.Communities {
		for _, m := range members {
			g.Entities[m].Community = ci
		}
	}
	return g
}

// communities groups n entities by label propagation over the weighted
// relationships: each entity, in index order (most mentioned first),
// takes the label its neighbours carry with the most weight, ties going
// to its own label and then to the smallest; at most propagationRuns
// passes, fewer when a pass changes nothing. Unlike connected components
// it splits groups joined by a stray co-occurrence. Groups of one are no
// community. The result is deterministic: the largest community first.
func communities(n int, rels []relationData) [][]int {
	type edge struct{ to, w int }
	adj := make([][]edge, n)
	for _, r := range rels {
		adj[r.A] = append(adj[r.A], edge{r.B, r.Weight})
		adj[r.B] = append(adj[r.B], edge{r.A, r.Weight})
	}
	label := make([]int, n)
	for i := range label {
		label[i] = i
	}
	weight := map[int]int{}
	for range propagationRuns {
		changed := false
		for i := range n {
			if len(adj[i]) == 0 {
				continue
			}
			clear(weight)
			for _, e := range adj[i] {
				weight[label[e.to]] += e.w
			}
			top := 0
			for _, w := range weight {
				top = max(top, w)
			}
			best := label[i]
			if weight[best] < top {
				best = n
				for l, w := range weight {
					if w == top && l < best {
						best = l
					}
				}
			}
			if best != label[i] {
				label[i], changed = best, true
			}
		}
		if !changed {
			break
		}
	}
	groups := map[int][]int{}
	for i, l := range label {
		groups[l] = append(groups[l], i)
	}
	var out [][]int
	for _, g := range groups {
		if len(g) > 1 {
			out = append(out, g)
		}
	}
	slices.SortFunc(out, func(a, b []int) int { return cmp.Or(cmp.Compare(len(b), len(a)), cmp.Compare(a[0], b[0])) })
	return out
}

func encodeGraph(g *graphData) ([]byte, error) {
	b, err := json.Marshal(g)
	if err != nil {
		return nil, fmt.Errorf("knowledge: encode graph: %w", err)
	}
	return b, nil
}

// graphIndex is a decoded graph ready for queries.
type graphIndex struct {
	*graphData
	byKey map[string]int
	// adj lists each entity's relationships, heaviest first.
	adj [][]int // relationship indexes
}

func decodeGraph(b []byte) (*graphIndex, error) {
	g := new(graphData)
	if err := json.Unmarshal(b, g); err != nil {
		return nil, fmt.Errorf("knowledge: stored graph: %w", err)
	}
	if g.Version != graphVersion {
		return nil, fmt.Errorf("knowledge: stored graph has version %d, want %d", g.Version, graphVersion)
	}
	ix := &graphIndex{graphData: g, byKey: make(map[string]int, len(g.Entities)), adj: make([][]int, len(g.Entities))}
	valid := func(r chunkRef) bool { return r[0] >= 0 && r[0] < len(g.Docs) && r[1] >= 0 }
	for i := range g.Entities {
		e := &g.Entities[i]
		ix.byKey[e.Key] = i
		e.Chunks = slices.DeleteFunc(e.Chunks, func(r chunkRef) bool { return !valid(r) })
	}
	for i, r := range g.Relationships {
		if r.A < 0 || r.A >= len(g.Entities) || r.B < 0 || r.B >= len(g.Entities) {
			return nil, fmt.Errorf("knowledge: stored graph: relationship %d names no entity", i)
		}
		g.Relationships[i].Chunks = slices.DeleteFunc(r.Chunks, func(c chunkRef) bool { return !valid(c) })
		ix.adj[r.A] = append(ix.adj[r.A], i)
		ix.adj[r.B] = append(ix.adj[r.B], i)
	}
	for ci, members := range g.Communities {
		g.Communities[ci] = slices.DeleteFunc(members, func(m int) bool { return m < 0 || m >= len(g.Entities) })
	}
	return ix, nil
}

// other is the entity at the other end of relationship r from e.
func (ix *graphIndex) other(r, e int) int {
	if rel := ix.Relationships[r]; rel.A == e {
		return rel.B
	} else {
		return rel.A
	}
}

// mentionsIn returns the entities of ix whose names text mentions, in the
// order of their first mention, each once: the longest name wins where
// names overlap ("Bank of England" over "England").
func (ix *graphIndex) mentionsIn(text string) []int {
	ws := words(text)
	var out []int
	seen := map[int]bool{}
	for i := 0; i < len(ws); {
		matched := 0
		for n := min(maxRunWords, len(ws)-i); n >= 1; n-- {
			parts := make([]string, n)
			for k := range n {
				parts[k] = ws[i+k].lower
			}
			if e, ok := ix.byKey[strings.Join(parts, " ")]; ok {
				if !seen[e] {
					seen[e] = true
					out = append(out, e)
				}
				matched = n
				break
			}
		}
		i += max(matched, 1)
	}
	return out
}
