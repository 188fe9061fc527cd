package memorysvc

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"novaos.dev/novaos/memory"
)

// Store names in stores_queried and source names in assemble's
// sources_consulted / sources_skipped.
const (
	StoreKeyword = "keyword"
	StoreVector  = "vector"
	StoreScratch = "scratch"

	SourceUser  = "durable_memories"
	SourceAgent = "agent_memories"
	SourceLive  = "live_messages"
	SourceRun   = "run_data"
)

// Query searches one scope. Durable scopes (agent, user, tenant) are
// ranked by hybrid retrieval with a 0..1 score; run and task are read
// newest first with a null score. Partial is true only when a store
// failed or missed the latency budget.
func (s *Service) Query(ctx context.Context, c *Caller, r *memory.QueryRequest) (memory.QueryResult, error) {
	if err := r.Validate(); err != nil {
		return memory.QueryResult{}, memory.ErrorFor(err)
	}
	p, err := c.readable(r.Scope)
	if err != nil {
		return memory.QueryResult{}, err
	}
	f := memory.Filter{Partition: p, Now: s.now(), Type: r.MemoryType}
	if fl := r.Filters; fl != nil {
		f.Tags, f.Classification = fl.Tags, fl.Classification
		if fl.After != nil {
			f.After = *fl.After
		}
		if fl.Before != nil {
			f.Before = *fl.Before
		}
		if f.Type == "" {
			f.Type = fl.MemoryType
		}
		if r.ConversationID == "" {
			r.ConversationID = fl.ConversationID
		}
	}
	if r.Scope.Durable() {
		f.ConversationID = r.ConversationID // recall applies to durable scopes only
	}
	ctx, cancel := context.WithTimeout(ctx, latencyBudget(r.LatencyBudgetMS, r.Budget))
	defer cancel()
	res := memory.QueryResult{RetrievalID: newID(), Items: []memory.Item{}}
	if r.Scope.Durable() {
		res.Items, res.StoresQueried, res.Partial = s.retrieve(ctx, c.Tenant, f, r.Query, r.Limit())
	} else {
		res.StoresQueried = []string{StoreScratch}
		list, err := s.store.List(ctx, c.Tenant, f, r.Limit())
		if err != nil {
			s.log.Warn("memory: scratch read failed", "err", err)
			res.Partial = true
		}
		for i := range list {
			res.Items = append(res.Items, list[i].Item(nil))
		}
	}
	res.Items = packItems(res.Items, tokenBudget(r.TokenBudget, r.Budget))
	return res, nil
}

func latencyBudget(ms *int, b *memory.Budget) time.Duration {
	if ms == nil && b != nil {
		ms = b.LatencyBudgetMS
	}
	if ms == nil {
		return DefaultLatencyBudget
	}
	return time.Duration(*ms) * time.Millisecond
}

func tokenBudget(n *int, b *memory.Budget) int {
	if n == nil && b != nil {
		n = b.TokenBudget
	}
	if n == nil {
		return 0
	}
	return *n
}

// retrieve ranks f's memories for query with the default retrieval stack
// (memory.Retrieve: keyword and vector search fused, conversation
// neighbours), the one the benchmarks measure. A store failure or a missed
// deadline leaves the result empty and partial.
func (s *Service) retrieve(ctx context.Context, tenant string, f memory.Filter, query string, topK int) (items []memory.Item, queried []string, partial bool) {
	queried = []string{StoreKeyword, StoreVector}
	fused, err := memory.Retrieve(ctx, s.store, s.embedder, tenant, f, query, topK, nil)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("memory: search failed", "err", err)
		}
		return []memory.Item{}, queried, true
	}
	items = make([]memory.Item, len(fused))
	for i := range fused {
		score := fused[i].Score
		items[i] = fused[i].Memory.Item(&score)
	}
	return items, queried, false
}

// estimateTokens is the rough size of text in model tokens: about four
// bytes a token for English, the usual rule when no tokenizer is at hand.
func estimateTokens(text string) int { return (len(text) + 3) / 4 }

// packItems keeps items, best first, while their contents fit budget
// tokens (0: no budget).
func packItems(items []memory.Item, budget int) []memory.Item {
	if budget <= 0 {
		return items
	}
	kept := items[:0]
	for _, it := range items {
		if t := estimateTokens(it.Content); t <= budget {
			budget -= t
			kept = append(kept, it)
		}
	}
	return kept
}

// Assemble gathers the context for one turn from every source the token
// can read (the user's and the agent's memories ranked against query, the
// live conversation, the run's scratch data) under one deadline. A source
// the token cannot read or names no id for is skipped; one that fails or
// misses the deadline is dropped and makes the result partial. The bundle
// is packed to token_budget: durable memories by score, then the newest
// live messages, then run data.
func (s *Service) Assemble(ctx context.Context, c *Caller, r *memory.AssembleRequest) (memory.AssembleResult, error) {
	if err := r.Validate(); err != nil {
		return memory.AssembleResult{}, memory.ErrorFor(err)
	}
	topK := memory.DefaultTopK
	if r.TopK != nil {
		topK = *r.TopK
	}
	live := memory.DefaultLiveLimit
	if r.LiveMessageLimit != nil {
		live = *r.LiveMessageLimit
	}
	ctx, cancel := context.WithTimeout(ctx, latencyBudget(r.LatencyBudgetMS, nil))
	defer cancel()
	now := s.now()
	res := memory.AssembleResult{DurableMemories: []memory.Item{}, LiveMessages: []memory.LiveMessage{}, AgentMemories: []memory.Item{},
		SourcesConsulted: []string{}, SourcesSkipped: []string{}}

	type answer struct {
		source string
		items  []memory.Item
		live   []memory.LiveMessage
		failed bool
	}
	out := make(chan answer, 4)
	started := 0
	start := func(source string, fn func() answer) {
		res.SourcesConsulted = append(res.SourcesConsulted, source)
		started++
		go func() { out <- fn() }()
	}
	durable := func(source string, scope memory.Scope) {
		p, err := c.readable(scope)
		if err != nil {
			res.SourcesSkipped = append(res.SourcesSkipped, source)
			return
		}
		f := memory.Filter{Partition: p, Now: now, Type: r.MemoryType, ConversationID: r.ConversationID}
		start(source, func() answer {
			items, _, partial := s.retrieve(ctx, c.Tenant, f, r.Query, topK)
			return answer{source: source, items: items, failed: partial}
		})
	}
	durable(SourceUser, memory.ScopeUser)
	durable(SourceAgent, memory.ScopeAgent)
	if c.Conversation == "" {
		res.SourcesSkipped = append(res.SourcesSkipped, SourceLive)
	} else {
		start(SourceLive, func() answer {
			msgs, err := s.store.RecentMessages(ctx, c.Tenant, c.Conversation, live)
			if err != nil {
				s.log.Warn("memory: live messages failed", "err", err)
			}
			return answer{source: SourceLive, live: msgs, failed: err != nil}
		})
	}
	if p, err := c.readable(memory.ScopeRun); err != nil {
		res.SourcesSkipped = append(res.SourcesSkipped, SourceRun)
	} else {
		start(SourceRun, func() answer {
			list, err := s.store.List(ctx, c.Tenant, memory.Filter{Partition: p, Now: now}, memory.MaxTopK)
			if err != nil {
				s.log.Warn("memory: run data failed", "err", err)
			}
			items := make([]memory.Item, len(list))
			for i := range list {
				items[i] = list[i].Item(nil)
			}
			return answer{source: SourceRun, items: items, failed: err != nil}
		})
	}

	var runItems []memory.Item
	answered := map[string]bool{}
collect:
	for range started {
		select {
		case a := <-out:
			answered[a.source] = true
			res.Partial = res.Partial || a.failed
			switch a.source {
			case SourceUser:
				res.DurableMemories = a.items
			case SourceAgent:
				res.AgentMemories = a.items
			case SourceLive:
				res.LiveMessages = a.live
			case SourceRun:
				runItems = a.items
			}
		case <-ctx.Done():
			break collect
		}
	}
	if len(answered) < started {
		res.Partial = true
	}
	s.pack(&res, runItems, r.TokenBudget)
	id := newID()
	res.RetrievalID = &id
	return res, nil
}

// pack trims res to budget tokens (nil: no budget) and renders run data.
func (s *Service) pack(res *memory.AssembleResult, runItems []memory.Item, budget *int) {
	left := -1
	if budget != nil {
		left = *budget
	}
	fits := func(text string) bool {
		if left < 0 {
			return true
		}
		if t := estimateTokens(text); t <= left {
			left -= t
			return true
		}
		return false
	}
	// Durable memories of both kinds compete on score, best first.
	type ranked struct {
		agent bool
		item  memory.Item
	}
	var all []ranked
	for _, it := range res.DurableMemories {
		all = append(all, ranked{false, it})
	}
	for _, it := range res.AgentMemories {
		all = append(all, ranked{true, it})
	}
	slices.SortStableFunc(all, func(a, b ranked) int { return -cmpScore(a.item.Score, b.item.Score) })
	res.DurableMemories, res.AgentMemories = []memory.Item{}, []memory.Item{}
	for _, r := range all {
		if !fits(r.item.Content) {
			continue
		}
		if r.agent {
			res.AgentMemories = append(res.AgentMemories, r.item)
		} else {
			res.DurableMemories = append(res.DurableMemories, r.item)
		}
	}
	// The newest live messages matter most; they stay in conversation
	// order.
	msgs := res.LiveMessages
	keep := make([]bool, len(msgs))
	for i := len(msgs) - 1; i >= 0; i-- {
		keep[i] = fits(msgs[i].Content)
	}
	res.LiveMessages = []memory.LiveMessage{}
	for i, m := range msgs {
		if keep[i] {
			res.LiveMessages = append(res.LiveMessages, m)
		}
	}
	if runItems != nil {
		kept := []memory.Item{}
		for _, it := range runItems {
			if fits(it.Content) {
				kept = append(kept, it)
			}
		}
		b, err := json.Marshal(map[string]any{"memories": kept})
		if err == nil {
			res.RunData = b
		}
	}
}

func cmpScore(a, b *float64) int {
	x, y := -1.0, -1.0
	if a != nil {
		x = *a
	}
	if b != nil {
		y = *b
	}
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}
