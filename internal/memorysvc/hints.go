package memorysvc

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"novaos.dev/novaos/internal/modelapi"
	"novaos.dev/novaos/memory"
)

// A Fact is one memory an Extractor draws from a hint.
type Fact struct {
	Content string
	Type    memory.Type
	Tags    []string
}

// An Extractor turns a consolidation hint into user facts. It may find
// none (nothing worth remembering); an error means try again later.
type Extractor interface {
	Extract(ctx context.Context, h *memory.Hint) ([]Fact, error)
}

// Sentences is the default Extractor, which needs no model: each sentence
// of the hint with at least three words becomes a semantic fact, tagged
// with the hint's tags. It understands nothing: "User mentioned they are
// based in Lisbon." is stored as that sentence, and a hint that only
// chats is stored too. Configure a model extractor (the OpenAI-compatible
// one) to keep facts only.
type Sentences struct{}

// maxFacts bounds what one hint can add.
const maxFacts = 10

// Extract splits h's text into sentences.
func (Sentences) Extract(_ context.Context, h *memory.Hint) ([]Fact, error) {
	var facts []Fact
	for _, s := range splitSentences(h.Text) {
		if len(strings.Fields(s)) < 3 {
			continue
		}
		facts = append(facts, Fact{Content: s, Type: memory.TypeSemantic, Tags: h.Tags})
		if len(facts) == maxFacts {
			break
		}
	}
	return facts, nil
}

// splitSentences cuts text after '.', '!' or '?' followed by a space, and
// at line breaks. "e.g. this" is cut too; a fact that loses its start
// still reads well enough to be found.
func splitSentences(text string) []string {
	var out []string
	start := 0
	flush := func(end int) {
		if s := strings.TrimSpace(text[start:end]); s != "" {
			out = append(out, s)
		}
		start = end
	}
	for i, r := range text {
		switch {
		case r == '\n':
			flush(i)
		case (r == '.' || r == '!' || r == '?') && i+1 < len(text) && unicode.IsSpace(rune(text[i+1])):
			flush(i + 1)
		}
	}
	flush(len(text))
	return out
}

// Hint enqueues an observation for consolidation into the user's memory.
// "accepted" means durably enqueued, not that a fact will result.
func (s *Service) Hint(ctx context.Context, c *Caller, r *memory.HintRequest) (memory.HintResult, error) {
	if err := r.Validate(); err != nil {
		return memory.HintResult{}, memory.ErrorFor(err)
	}
	if !c.writesMemory() {
		return memory.HintResult{}, forbidden(hintScopes)
	}
	if c.User == "" {
		return memory.HintResult{}, policy("hint", "the token names no user whose memory the hint is for")
	}
	prio := r.Priority
	if prio == "" {
		prio = memory.PriorityNormal
	}
	h := &memory.Hint{ID: newID(), Agent: c.Agent, User: c.User, ConversationID: r.ConversationID, Text: r.Hint,
		Priority: prio, Tags: r.Tags, Context: r.Context, Status: memory.HintPending, SubmittedAt: s.now()}
	if err := s.store.EnqueueHint(ctx, c.Tenant, h); err != nil {
		return memory.HintResult{}, s.storeErr("hint", err)
	}
	return memory.HintResult{HintID: h.ID, Status: memory.HintAccepted, Message: "durably enqueued for consolidation"}, nil
}

// HintStatus reports a hint's outcome to the agent that submitted it.
func (s *Service) HintStatus(ctx context.Context, c *Caller, id string) (memory.HintStatus, error) {
	if id == "" || len(id) > memory.MaxIDBytes {
		return memory.HintStatus{}, refuse(http.StatusUnprocessableEntity, memory.CodeInvalid, "hint_id", "must be a hint id returned by hint")
	}
	if !c.writesMemory() {
		return memory.HintStatus{}, forbidden(hintScopes)
	}
	h, err := s.store.Hint(ctx, c.Tenant, id)
	if err != nil {
		return memory.HintStatus{}, s.storeErr("hint status", err)
	}
	if h.Agent != c.Agent {
		return memory.HintStatus{}, memory.ErrorFor(memory.ErrNotFound)
	}
	return h.StatusResult(), nil
}

// consolidate claims pending hints and turns each into user memories. A
// hint whose extraction fails is retried when its lease lapses, and
// dead-lettered after HintAttempts tries; the facts of one hint are
// written under keys derived from the hint, so a retry after a crash
// writes none of them twice.
func (s *Service) consolidate(ctx context.Context) {
	for ctx.Err() == nil {
		hints, err := s.store.ClaimHints(ctx, s.now(), 4*s.consEvery, 50)
		if err != nil {
			if ctx.Err() == nil {
				s.log.Warn("memory: claiming hints failed", "err", err)
			}
			return
		}
		for i := range hints {
			s.consolidateOne(ctx, &hints[i])
		}
		if len(hints) < 50 {
			return
		}
	}
}

func (s *Service) consolidateOne(ctx context.Context, h *memory.Hint) {
	facts, err := s.extractor.Extract(ctx, h)
	if err != nil {
		s.log.Warn("memory: extraction failed", "hint", h.ID, "attempt", h.Attempts, "err", err)
		if h.Attempts >= s.attempts {
			s.resolveHint(ctx, h, memory.HintDeadLettered)
		}
		return
	}
	for i, f := range facts {
		now := s.now()
		m := &memory.Memory{ID: newID(), Partition: memory.Partition{Scope: memory.ScopeUser, Owner: h.User},
			Content: f.Content, Type: f.Type, Tags: f.Tags, Source: "consolidation", ConversationID: h.ConversationID,
			Classification: memory.ClassInferred, Version: 1, CreatedAt: now, UpdatedAt: now, WriteEventID: newID()}
		if !storableFact(f.Content) || screenMemory(m) != nil {
			continue // a fact that may not be stored is dropped, not the hint
		}
		if err := s.embed(ctx, m); err != nil {
			return // the lease lapses and the hint is tried again
		}
		// The key names the hint's i-th fact whatever a retried
		// extraction words it as: a retry after a crash stores none twice.
		key := memory.Key{Name: "hint:" + h.ID + ":" + strconv.Itoa(i), Agent: h.Agent, Request: "consolidation"}
		if _, _, err := s.store.Put(ctx, h.Tenant, m, key); err != nil {
			if ctx.Err() == nil {
				s.log.Warn("memory: storing a consolidated fact failed", "hint", h.ID, "err", err)
			}
			return
		}
	}
	s.resolveHint(ctx, h, memory.HintConsolidated)
}

func (s *Service) resolveHint(ctx context.Context, h *memory.Hint, state memory.HintState) {
	if err := s.store.ResolveHint(ctx, h.Tenant, h.ID, state, s.now()); err != nil && ctx.Err() == nil {
		s.log.Warn("memory: resolving a hint failed", "hint", h.ID, "state", state, "err", err)
	}
}

// storableFact reports whether a fact has text and fits a memory.
func storableFact(s string) bool {
	return strings.TrimSpace(s) != "" && len(s) <= memory.MaxContentBytes
}

// ModelExtractor extracts facts with a language model behind an
// OpenAI-compatible chat completions endpoint.
type ModelExtractor struct{ Model *modelapi.Extractor }

// Extract asks the model for the facts of h (its text and context).
func (m ModelExtractor) Extract(ctx context.Context, h *memory.Hint) ([]Fact, error) {
	facts, err := m.Model.Extract(ctx, h.Text, h.Context)
	if err != nil {
		return nil, err
	}
	out := make([]Fact, len(facts))
	for i, f := range facts {
		out[i] = Fact{Content: f.Content, Type: memory.Type(f.Type), Tags: append(slices.Clone(h.Tags), f.Tags...)}
	}
	return out, nil
}
