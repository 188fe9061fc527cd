package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"novaos.dev/novaos/memory"
)

// LoCoMo retrieval quality: the turns of each conversation of the LoCoMo
// benchmark (snap-research/locomo) are stored as memories of one tenant,
// one partition per conversation, and each question of categories 1 to 4
// is run as a query in its conversation. A question scores a hit at k when
// one of its evidence turns is among the first k results (turn level, not
// session level), and 1/rank of its first evidence turn for MRR. No model
// is involved: this measures retrieval, not answers.

// LoCoMoConversation is one conversation of the benchmark file.
type LoCoMoConversation struct {
	SampleID string
	Turns    []LoCoMoTurn
	QA       []LoCoMoQuestion
}

// LoCoMoTurn is one turn; DiaID is its evidence id ("D3:7").
type LoCoMoTurn struct {
	DiaID   string
	Speaker string
	Text    string
	Caption string // the blip caption of a shared image, if any
	Session int
	Date    string // the session's date as written in the file
}

// LoCoMoQuestion is one question and the turns that answer it.
type LoCoMoQuestion struct {
	Question string
	Category int
	Evidence []string
}

// maxLoCoMoBytes bounds the file ParseLoCoMo reads (the real one is 2.8 MB).
const maxLoCoMoBytes = 64 << 20

var sessionKey = regexp.MustCompile(`^session_([0-9]{1,4})$`)

// ParseLoCoMo reads a LoCoMo JSON file (locomo10.json's shape: an array of
// samples with sample_id, conversation {speaker_a, speaker_b,
// session_N_date_time, session_N: [turns]} and qa [{question, category,
// evidence}]). Unknown keys are ignored; a turn without dia_id or text is
// skipped; a question's category may be absent (0).
func ParseLoCoMo(r io.Reader) ([]LoCoMoConversation, error) {
	type rawTurn struct {
		Speaker     string `json:"speaker"`
		DiaID       string `json:"dia_id"`
		Text        string `json:"text"`
		BlipCaption string `json:"blip_caption"`
	}
	type rawQA struct {
		Question string          `json:"question"`
		Category json.RawMessage `json:"category"`
		Evidence []string        `json:"evidence"`
	}
	var raw []struct {
		SampleID     string                     `json:"sample_id"`
		Conversation map[string]json.RawMessage `json:"conversation"`
		QA           []rawQA                    `json:"qa"`
	}
	b, err := io.ReadAll(io.LimitReader(r, maxLoCoMoBytes+1))
	if err != nil {
		return nil, fmt.Errorf("bench: locomo: %w", err)
	}
	if len(b) > maxLoCoMoBytes {
		return nil, fmt.Errorf("bench: locomo: file larger than %d bytes", maxLoCoMoBytes)
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("bench: locomo: %w", err)
	}
	out := make([]LoCoMoConversation, 0, len(raw))
	for i, s := range raw {
		c := LoCoMoConversation{SampleID: s.SampleID}
		if c.SampleID == "" {
			c.SampleID = "sample-" + strconv.Itoa(i)
		}
		var sessions []int
		for k := range s.Conversation {
			if m := sessionKey.FindStringSubmatch(k); m != nil {
				n, _ := strconv.Atoi(m[1])
				sessions = append(sessions, n)
			}
		}
		sort.Ints(sessions)
		for _, n := range sessions {
			var turns []rawTurn
			if err := json.Unmarshal(s.Conversation["session_"+strconv.Itoa(n)], &turns); err != nil {
				return nil, fmt.Errorf("bench: locomo: %s session %d: %w", c.SampleID, n, err)
			}
			var date string
			if d, ok := s.Conversation["session_"+strconv.Itoa(n)+"_date_time"]; ok {
				_ = json.Unmarshal(d, &date) // a date that is no string is left out
			}
			for _, t := range turns {
				if t.DiaID == "" || strings.TrimSpace(t.Text) == "" && t.BlipCaption == "" {
					continue
				}
				c.Turns = append(c.Turns, LoCoMoTurn{DiaID: t.DiaID, Speaker: t.Speaker, Text: t.Text,
					Caption: t.BlipCaption, Session: n, Date: date})
			}
		}
		for _, q := range s.QA {
			var cat int
			if len(q.Category) > 0 {
				_ = json.Unmarshal(q.Category, &cat) // a category that is no number counts as none
			}
			c.QA = append(c.QA, LoCoMoQuestion{Question: q.Question, Category: cat, Evidence: q.Evidence})
		}
		out = append(out, c)
	}
	return out, nil
}

// TurnContent is how the harness stores a turn: the speaker's name and
// their words, and what a shared photo shows. A memory written by an agent
// platform carries who said it the same way.
func TurnContent(t LoCoMoTurn) string {
	s := t.Speaker + ": " + t.Text
	if t.Caption != "" {
		s += " [shares " + t.Caption + "]"
	}
	return s
}

// LoCoMoOptions tunes LoCoMo. Nil means the defaults.
type LoCoMoOptions struct {
	Tenant     string          // default "locomo"
	Embedder   memory.Embedder // default memory.NewHashEmbedder(0)
	Candidates int             // per search list (default 100)
	Retrieve   *memory.RetrieveOptions
	// Concurrency of ingestion (default 16), so the store commits in
	// groups as it would under many writers.
	Concurrency int
	// Categories scored (default 1, 2, 3, 4: category 5 is adversarial,
	// with no evidence to find).
	Categories []int
}

// Scores are retrieval metrics over a set of questions.
type Scores struct {
	N                   int
	Hit1, Hit5, Hit10   float64
	MRR                 float64
	hits1, hits5, hit10 int
	rr                  float64
}

func (s *Scores) add(rank int) {
	s.N++
	if rank > 0 {
		s.rr += 1 / float64(rank)
		if rank <= 1 {
			s.hits1++
		}
		if rank <= 5 {
			s.hits5++
		}
		if rank <= 10 {
			s.hit10++
		}
	}
}

func (s *Scores) done() {
	if s.N == 0 {
		return
	}
	n := float64(s.N)
	s.Hit1, s.Hit5, s.Hit10, s.MRR = float64(s.hits1)/n, float64(s.hits5)/n, float64(s.hit10)/n, s.rr/n
}

func (s Scores) String() string {
	return fmt.Sprintf("n=%d hit@1 %.3f hit@5 %.3f hit@10 %.3f MRR %.3f", s.N, s.Hit1, s.Hit5, s.Hit10, s.MRR)
}

// LoCoMoReport is the result of one LoCoMo run: the default stack
// (memory.Retrieve: keyword + embedder, fused, conversation neighbours),
// and each of its two lists alone (Keyword is the BM25 baseline), overall
// and per category.
type LoCoMoReport struct {
	Memories, Questions int
	Ingest              time.Duration
	Hybrid, Keyword     Scores
	Vector              Scores
	ByCategory          map[int]*[3]Scores // hybrid, keyword, vector
	// Calibration is the mean Score of the first fused result when it is
	// an evidence turn and when it is not.
	ScoreRelevant, ScoreOther float64
}

// LoCoMo ingests convs into s and scores their questions.
func LoCoMo(ctx context.Context, s memory.Store, convs []LoCoMoConversation, opts *LoCoMoOptions) (*LoCoMoReport, error) {
	var o LoCoMoOptions
	if opts != nil {
		o = *opts
	}
	if o.Tenant == "" {
		o.Tenant = "locomo"
	}
	if o.Embedder == nil {
		o.Embedder = memory.NewHashEmbedder(0)
	}
	if o.Candidates <= 0 {
		o.Candidates = 100
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 16
	}
	if len(o.Categories) == 0 {
		o.Categories = []int{1, 2, 3, 4}
	}
	rep := &LoCoMoReport{ByCategory: map[int]*[3]Scores{}}
	start := time.Now()
	if err := ingestLoCoMo(ctx, s, convs, &o, rep); err != nil {
		return nil, err
	}
	rep.Ingest = time.Since(start)

	var relSum, otherSum float64
	var relN, otherN int
	for _, c := range convs {
		known := map[string]string{} // dia id -> memory id
		for _, t := range c.Turns {
			known[t.DiaID] = memoryID(c.SampleID, t.DiaID)
		}
		f := memory.Filter{Partition: locomoPartition(c.SampleID), Now: time.Now()}
		for _, q := range c.QA {
			if !containsInt(o.Categories, q.Category) {
				continue
			}
			want := map[string]bool{}
			for _, e := range splitEvidence(q.Evidence) {
				if id, ok := known[e]; ok {
					want[id] = true
				}
			}
			if len(want) == 0 {
				continue // evidence names no turn of the file
			}
			fused, err := memory.Retrieve(ctx, s, o.Embedder, o.Tenant, f, q.Question, o.Candidates, o.Retrieve)
			if err != nil {
				return nil, err
			}
			// The baselines: each of the stack's two lists alone, the
			// vector one queried as the stack queries it.
			terms := memory.Terms(q.Question)
			kw, err := s.SearchKeyword(ctx, o.Tenant, f, terms, o.Candidates)
			if err != nil {
				return nil, err
			}
			docs, df, err := s.TermStats(ctx, o.Tenant, f.Partition, terms)
			if err != nil {
				return nil, err
			}
			var qv []float32
			if qe, ok := o.Embedder.(memory.QueryEmbedder); ok {
				qv = qe.QueryVector(q.Question, func(t string) float64 { return memory.QueryIDF(docs, df[t]) })
			} else {
				vs, err := o.Embedder.Embed(ctx, []string{q.Question})
				if err != nil {
					return nil, err
				}
				qv = vs[0]
			}
			vec, err := s.SearchVector(ctx, o.Tenant, f, memory.Embedding{Model: o.Embedder.ModelID(), Vector: qv}, o.Candidates)
			if err != nil {
				return nil, err
			}
			ranks := [3]int{firstRank(len(fused), func(i int) string { return fused[i].Memory.ID }, want),
				firstRank(len(kw), func(i int) string { return kw[i].Memory.ID }, want),
				firstRank(len(vec), func(i int) string { return vec[i].Memory.ID }, want)}
			rep.Questions++
			rep.Hybrid.add(ranks[0])
			rep.Keyword.add(ranks[1])
			rep.Vector.add(ranks[2])
			cat := rep.ByCategory[q.Category]
			if cat == nil {
				cat = new([3]Scores)
				rep.ByCategory[q.Category] = cat
			}
			for i := range cat {
				cat[i].add(ranks[i])
			}
			if len(fused) > 0 {
				if want[fused[0].Memory.ID] {
					relSum += fused[0].Score
					relN++
				} else {
					otherSum += fused[0].Score
					otherN++
				}
			}
		}
	}
	rep.Hybrid.done()
	rep.Keyword.done()
	rep.Vector.done()
	for _, c := range rep.ByCategory {
		for i := range c {
			c[i].done()
		}
	}
	if relN > 0 {
		rep.ScoreRelevant = relSum / float64(relN)
	}
	if otherN > 0 {
		rep.ScoreOther = otherSum / float64(otherN)
	}
	return rep, nil
}

func ingestLoCoMo(ctx context.Context, s memory.Store, convs []LoCoMoConversation, o *LoCoMoOptions, rep *LoCoMoReport) error {
	type job struct {
		conv string
		turn LoCoMoTurn
		seq  int
	}
	jobs := make(chan job)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	base := time.Date(2023, 1, 1, 0, 0, 0, 0, time.UTC)
	for range o.Concurrency {
		wg.Go(func() {
			for j := range jobs {
				content := TurnContent(j.turn)
				vs, err := o.Embedder.Embed(ctx, []string{content})
				if err == nil {
					at := base.Add(time.Duration(j.seq) * time.Second)
					m := &memory.Memory{ID: memoryID(j.conv, j.turn.DiaID), Partition: locomoPartition(j.conv), Content: content,
						Type: memory.TypeEpisodic, ConversationID: j.conv, Version: 1, CreatedAt: at, UpdatedAt: at,
						Embedding: &memory.Embedding{Model: o.Embedder.ModelID(), Vector: vs[0]}}
					_, _, err = s.Put(ctx, o.Tenant, m, memory.Key{})
				}
				if err != nil && !errors.Is(err, memory.ErrExists) { // a repeated dia id keeps its first turn
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
				}
			}
		})
	}
	n := 0
	for _, c := range convs {
		for _, t := range c.Turns {
			select {
			case jobs <- job{c.SampleID, t, n}:
			case <-ctx.Done():
			}
			n++
		}
	}
	close(jobs)
	wg.Wait()
	rep.Memories = n
	if firstErr != nil {
		return fmt.Errorf("bench: locomo ingest: %w", firstErr)
	}
	return ctx.Err()
}

func locomoPartition(sample string) memory.Partition {
	return memory.Partition{Scope: memory.ScopeUser, Owner: sample}
}

func memoryID(sample, dia string) string { return sample + "/" + dia }

// splitEvidence reads evidence ids, some of which the file writes several
// to one string ("D8:6; D9:17") or with stray spaces.
func splitEvidence(ev []string) []string {
	var out []string
	for _, e := range ev {
		for _, f := range strings.FieldsFunc(e, func(r rune) bool { return r == ';' || r == ',' || r == ' ' }) {
			out = append(out, f)
		}
	}
	return out
}

func firstRank(n int, id func(int) string, want map[string]bool) int {
	for i := range n {
		if want[id(i)] {
			return i + 1
		}
	}
	return 0
}

func containsInt(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}
