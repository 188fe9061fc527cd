package registry

import (
	"cmp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// NormalizeCapability returns the form capability names are compared in
// (the reference SDK's normalize_capability_name): lower case; leading and
// trailing white space removed; every run of white space, '_' and '-'
// becomes one '-'; every other character that is not a letter or a digit
// is dropped. A separator at either end is dropped too, so "Web Scraping",
// "web_scraping", " Web-Scraping " and "web  scraping" all become
// "web-scraping".
func NormalizeCapability(name string) string {
	ascii := true
	for i := 0; i < len(name); i++ {
		if name[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return normalizeASCII(name)
	}
	return normalizeUnicode(name)
}

func normalizeUnicode(name string) string {
	var b strings.Builder
	b.Grow(len(name))
	sep := false
	for _, r := range strings.ToLower(strings.TrimSpace(name)) {
		switch {
		case r == '_' || r == '-' || unicode.IsSpace(r):
			sep = b.Len() > 0
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			if sep {
				b.WriteByte('-')
				sep = false
			}
			b.WriteRune(r)
		}
	}
	return b.String()
}

// normalizeASCII is NormalizeCapability for ASCII names, without an
// allocation when name is already normalized.
func normalizeASCII(name string) string {
	if isNormalized(name) {
		return name
	}
	b := make([]byte, 0, len(name))
	sep := false
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '_' || c == '-' || c == ' ' || c >= '\t' && c <= '\r':
			sep = len(b) > 0
			continue
		case c >= 'A' && c <= 'Z':
			c += 'a' - 'A'
		case c >= 'a' && c <= 'z' || c >= '0' && c <= '9':
		default:
			continue
		}
		if sep {
			b = append(b, '-')
			sep = false
		}
		b = append(b, c)
	}
	return string(b)
}

// isNormalized reports whether an ASCII name is its own normal form:
// lower-case letters and digits in words joined by single hyphens.
func isNormalized(name string) bool {
	if name == "" || name[0] == '-' || name[len(name)-1] == '-' {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z' || c >= '0' && c <= '9':
		case c == '-' && name[i-1] != '-':
		default:
			return false
		}
	}
	return true
}

// Similarity scores how alike two capability names are, from 0 to 1,
// after NormalizeCapability:
//
//   - equal names score 1;
//   - otherwise the Ratcliff/Obershelp ratio 2·M/T, where M counts the
//     characters of the longest common substring, found again recursively
//     left and right of it, and T is the total length of both names (what
//     Python's difflib.SequenceMatcher.ratio computes, without its junk
//     heuristics);
//   - when one name's words ('-'-separated) appear in a row in the other's
//     ("api" in "api-integration"), the score is at least 0.6, the figure
//     the reference SDK documents for that pair.
//
// An empty name scores 0 against anything.
func Similarity(a, b string) float64 {
	return similarity(NormalizeCapability(a), NormalizeCapability(b))
}

func similarity(a, b string) float64 {
	var sc scorer
	return sc.similarity(a, b)
}

// scorer computes similarities, reusing its buffers between calls. The
// zero value is ready to use; it is not safe for concurrent use.
type scorer struct {
	ra, rb    []rune
	prev, cur []int
}

// similarity is Similarity of two normalized names.
func (sc *scorer) similarity(a, b string) float64 {
	if a == "" || b == "" {
		return 0
	}
	if a == b {
		return 1
	}
	sc.ra = append(sc.ra[:0], []rune(a)...)
	sc.rb = append(sc.rb[:0], []rune(b)...)
	score := 2 * float64(sc.matching(sc.ra, sc.rb)) / float64(len(sc.ra)+len(sc.rb))
	if score < containmentMinScore && (containsWords(a, b) || containsWords(b, a)) {
		score = containmentMinScore
	}
	return score
}

// maxSimilarity bounds the similarity of names of la and lb characters:
// the ratio cannot exceed 2·min/(la+lb), and word containment adds at
// most the 0.6 floor.
func maxSimilarity(la, lb int) float64 {
	return max(2*float64(min(la, lb))/float64(la+lb), containmentMinScore)
}

// containsWords reports whether the words of small appear consecutively
// among the words of big.
func containsWords(big, small string) bool {
	if len(small) > len(big) {
		return false
	}
	i := strings.Index(big, small)
	for i >= 0 {
		end := i + len(small)
		if (i == 0 || big[i-1] == '-') && (end == len(big) || big[end] == '-') {
			return true
		}
		j := strings.Index(big[i+1:], small)
		if j < 0 {
			return false
		}
		i += 1 + j
	}
	return false
}

// matching counts the characters of a and b matched by Ratcliff/Obershelp.
func (sc *scorer) matching(a, b []rune) int {
	if len(a) == 0 || len(b) == 0 {
		return 0
	}
	i, j, n := sc.longestCommon(a, b)
	if n == 0 {
		return 0
	}
	return n + sc.matching(a[:i], b[:j]) + sc.matching(a[i+n:], b[j+n:])
}

// longestCommon finds the longest common substring of a and b: the one
// starting earliest in a, then earliest in b, like difflib.
func (sc *scorer) longestCommon(a, b []rune) (ai, bj, size int) {
	if cap(sc.prev) < len(b)+1 {
		sc.prev = make([]int, len(b)+1)
		sc.cur = make([]int, len(b)+1)
	}
	prev, cur := sc.prev[:len(b)+1], sc.cur[:len(b)+1]
	clear(prev)
	for i := range a {
		cur[0] = 0
		for j := range b {
			if a[i] == b[j] {
				cur[j+1] = prev[j] + 1
				if n := cur[j+1]; n > size {
					ai, bj, size = i-n+1, j-n+1, n
				}
			} else {
				cur[j+1] = 0
			}
		}
		prev, cur = cur, prev
	}
	return ai, bj, size
}

// MatchCapability finds the best match for required among available (the
// reference SDK's match_capabilities): the name with the highest
// Similarity, the first one on a tie, if that score is at least
// threshold. An exact match after normalization scores 1.
func MatchCapability(required string, available []string, threshold float64) (match string, score float64, ok bool) {
	r := NormalizeCapability(required)
	best := -1.0
	var sc scorer
	for _, c := range available {
		s := sc.similarity(r, NormalizeCapability(c))
		if s > best {
			match, best = c, s
			if s == 1 {
				break
			}
		}
	}
	if best < threshold || best <= 0 {
		return "", 0, false
	}
	return match, best, true
}

// MatchMode says whether an agent must offer all required capabilities or
// at least one.
type MatchMode string

const (
	MatchAny MatchMode = "any"
	MatchAll MatchMode = "all"
)

// MatchResult is one agent that satisfied a capability query.
type MatchResult struct {
	Agent *Agent `json:"agent"`
	// MatchedCapabilities are the required names the agent offers, in the
	// query's order; MissingCapabilities the rest.
	MatchedCapabilities []string `json:"matchedCapabilities"`
	MissingCapabilities []string `json:"missingCapabilities"`
	// Score is the mean over the required names of the best Similarity
	// each reached (0 for a missing one).
	Score float64 `json:"score"`
}

// Index answers capability queries over a fixed set of agents (the
// reference SDK's CapabilityIndex). It compares each distinct capability
// name once per query, however many agents share it. An Index is safe for
// concurrent use.
type Index struct {
	agents []*Agent
	keys   []string         // distinct capability keys
	klen   []int            // their lengths in characters
	byKey  map[string][]int // key -> agent positions
	norm   func(string) string
}

// NewIndex indexes agents' capabilities (AllCapabilities) by their
// normalized names.
func NewIndex(agents []*Agent) *Index { return newIndex(agents, NormalizeCapability) }

func newIndex(agents []*Agent, norm func(string) string) *Index {
	x := &Index{agents: agents, byKey: map[string][]int{}, norm: norm}
	for i, a := range agents {
		names := a.Capabilities
		if a.Metadata != nil {
			names = a.AllCapabilities()
		}
		for _, c := range names {
			k := norm(c)
			if k == "" {
				continue
			}
			pos := x.byKey[k]
			if len(pos) > 0 && pos[len(pos)-1] == i {
				continue
			}
			if len(pos) == 0 {
				x.keys = append(x.keys, k)
				x.klen = append(x.klen, utf8.RuneCountInString(k))
			}
			x.byKey[k] = append(pos, i)
		}
	}
	return x
}

// FindByCapability returns the agents offering capability: an equal
// normalized name, or with fuzzy a Similarity of at least
// DefaultThreshold. Agents keep their indexed order.
func (x *Index) FindByCapability(capability string, fuzzy bool) []*Agent {
	return x.FindByCapabilities([]string{capability}, true, fuzzy)
}

// FindByCapabilities returns the agents offering all of capabilities
// (requireAll) or at least one, in indexed order.
func (x *Index) FindByCapabilities(capabilities []string, requireAll, fuzzy bool) []*Agent {
	threshold := 1.0
	if fuzzy {
		threshold = DefaultThreshold
	}
	mode := MatchAny
	if requireAll {
		mode = MatchAll
	}
	res := x.match(capabilities, mode, threshold)
	slices.SortFunc(res, func(a, b indexed) int { return cmp.Compare(a.pos, b.pos) })
	out := make([]*Agent, len(res))
	for i, r := range res {
		out[i] = r.Agent
	}
	return out
}

// Match scores every agent against required and returns those that pass
// mode, best score first (ties in indexed order). A required name matches
// an agent capability whose Similarity reaches threshold; threshold 1
// means equal normalized names only. No required names match nothing.
func (x *Index) Match(required []string, mode MatchMode, threshold float64) []MatchResult {
	res := x.match(required, mode, threshold)
	slices.SortStableFunc(res, func(a, b indexed) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return cmp.Compare(a.pos, b.pos)
	})
	out := make([]MatchResult, len(res))
	for i, r := range res {
		out[i] = r.MatchResult
	}
	return out
}

type indexed struct {
	MatchResult
	pos int
}

func (x *Index) match(required []string, mode MatchMode, threshold float64) []indexed {
	if len(required) == 0 || len(x.agents) == 0 {
		return nil
	}
	// best[r][agent] is the best score of required name r for the agent.
	best := make([]map[int]float64, len(required))
	var sc scorer
	for ri, r := range required {
		nr := x.norm(r)
		m := map[int]float64{}
		best[ri] = m
		if nr == "" {
			continue
		}
		if threshold >= 1 {
			for _, p := range x.byKey[nr] {
				m[p] = 1
			}
			continue
		}
		lr := utf8.RuneCountInString(nr)
		for ki, k := range x.keys {
			if maxSimilarity(lr, x.klen[ki]) < threshold {
				continue // cannot reach it: skip the comparison
			}
			s := 1.0
			if k != nr {
				s = sc.similarity(nr, k)
			}
			if s < threshold || s <= 0 {
				continue
			}
			for _, p := range x.byKey[k] {
				if s > m[p] {
					m[p] = s
				}
			}
		}
	}
	candidates := map[int]bool{}
	for _, m := range best {
		for p := range m {
			candidates[p] = true
		}
	}
	var out []indexed
	for p := range candidates {
		r := indexed{pos: p, MatchResult: MatchResult{Agent: x.agents[p], MatchedCapabilities: []string{}, MissingCapabilities: []string{}}}
		var sum float64
		for ri, name := range required {
			if s, ok := best[ri][p]; ok {
				r.MatchedCapabilities = append(r.MatchedCapabilities, name)
				sum += s
			} else {
				r.MissingCapabilities = append(r.MissingCapabilities, name)
			}
		}
		if mode == MatchAll && len(r.MissingCapabilities) > 0 {
			continue
		}
		r.Score = sum / float64(len(required))
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b indexed) int { return cmp.Compare(a.pos, b.pos) })
	return out
}

// Matcher matches agents to required capabilities (the reference SDK's
// CapabilityMatcher).
type Matcher struct {
	// Threshold is the least Similarity that counts as a match (0 means
	// DefaultThreshold, 0.8).
	Threshold float64
	// RawNames compares names exactly as given instead of normalized
	// (the reference SDK's normalize_names=False).
	RawNames bool
}

// Match returns the agents that pass mode, best score first.
func (m Matcher) Match(agents []*Agent, required []string, mode MatchMode) []MatchResult {
	t := m.Threshold
	if t <= 0 {
		t = DefaultThreshold
	}
	norm := NormalizeCapability
	if m.RawNames {
		norm = func(s string) string { return s }
	}
	return newIndex(agents, norm).Match(required, mode, t)
}
