package memorysvc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"novaos.dev/novaos/memory"
	"novaos.dev/novaos/pii"
)

// Write stores a memory (run, task), proposes one to the write gate
// (agent: the answer is a prop_ id with durable false) or, for an
// administrator, stores a screened tenant memory. An idempotency key
// belongs to the caller's agent and run: the same request under a key it
// sent within 24 hours returns the first write's result and stores
// nothing, and another request under it is refused (409
// idempotency_key_reused).
func (s *Service) Write(ctx context.Context, c *Caller, r *memory.WriteRequest) (memory.WriteResult, error) {
	if err := r.Validate(); err != nil {
		return memory.WriteResult{}, memory.ErrorFor(err)
	}
	p, err := c.writable(r.Scope, opWrite)
	if err != nil {
		return memory.WriteResult{}, err
	}
	key, err := c.key(r.IdempotencyKey, writeDigest(r))
	if err != nil {
		return memory.WriteResult{}, err
	}
	ttl, err := s.ttl(r.Scope, r.TTLSeconds)
	if err != nil {
		return memory.WriteResult{}, err
	}
	now := s.now()
	m := &memory.Memory{
		ID: newID(), Partition: p, Content: r.Content, Type: r.Type(),
		ConversationID: r.ConversationID, Classification: r.Classification,
		Version: 1, CreatedAt: now, UpdatedAt: now, WriteEventID: newID(),
	}
	if ttl > 0 {
		m.ExpiresAt = now.Add(ttl)
	}
	if md := r.Metadata; md != nil {
		m.Tags = md.Tags
		if md.Source != nil {
			m.Source = *md.Source
		}
		m.Confidence = md.Confidence
		if m.Custom, err = marshalCustom(md.Custom); err != nil {
			return memory.WriteResult{}, err
		}
	}
	switch r.Scope {
	case memory.ScopeAgent:
		prop := &memory.Proposal{ID: memory.ProposalPrefix + newID(), Memory: *m, Status: memory.ProposalPending, CreatedAt: now}
		res, _, err := s.store.PutProposal(ctx, c.Tenant, prop, key)
		if err != nil {
			return memory.WriteResult{}, s.storeErr("propose", err)
		}
		s.kickGate()
		return res, nil
	case memory.ScopeTenant:
		if err := screenMemory(m); err != nil {
			return memory.WriteResult{}, err
		}
		if err := s.embed(ctx, m); err != nil {
			return memory.WriteResult{}, err
		}
	}
	res, _, err := s.store.Put(ctx, c.Tenant, m, key)
	if err != nil {
		return memory.WriteResult{}, s.storeErr("write", err)
	}
	return res, nil
}

// ttl is how long a write to scope lives: run and task default to the
// scratch TTL; every ttl_seconds must lie between MinTTL and the scope's
// maximum.
func (s *Service) ttl(scope memory.Scope, seconds *int64) (time.Duration, error) {
	limit := s.maxDurable
	if !scope.Durable() {
		limit = s.maxScratch
	}
	if seconds == nil {
		if scope.Durable() {
			return 0, nil
		}
		return s.scratchTTL, nil
	}
	if *seconds < int64(MinTTL/time.Second) || *seconds > int64(limit/time.Second) {
		return 0, refuse(http.StatusUnprocessableEntity, memory.CodeInvalid, "ttl_seconds",
			"must be "+durationSeconds(MinTTL)+" to "+durationSeconds(limit)+" seconds for "+string(scope)+" memory")
	}
	return time.Duration(*seconds) * time.Second, nil
}

// key is c's idempotency key name for the request whose canonical form
// is req; no name is no key.
func (c *Caller) key(name string, req any) (memory.Key, error) {
	if name == "" {
		return memory.Key{}, nil
	}
	d, err := memory.RequestDigest(req)
	if err != nil {
		return memory.Key{}, refuse(http.StatusUnprocessableEntity, memory.CodeInvalid, "metadata.custom", "must be a JSON object")
	}
	return memory.Key{Name: name, Agent: c.Agent, Run: c.Run, Request: d}, nil
}

// writeDigest is the canonical form of a write: what it stores, without
// its idempotency key and the correlation ids a retry may renew. Two
// spellings of one request (the type as memory_type or as
// metadata.memory_type, metadata absent or empty) are the same request.
func writeDigest(r *memory.WriteRequest) any {
	type canonical struct {
		Op             string         `json:"op"`
		Scope          memory.Scope   `json:"scope"`
		Content        string         `json:"content"`
		Type           memory.Type    `json:"type"`
		TTLSeconds     *int64         `json:"ttl_seconds"`
		Classification string         `json:"classification"`
		ConversationID string         `json:"conversation_id"`
		Tags           []string       `json:"tags"`
		Source         *string        `json:"source"`
		Confidence     *float64       `json:"confidence"`
		Custom         map[string]any `json:"custom"`
	}
	c := canonical{Op: "write", Scope: r.Scope, Content: r.Content, Type: r.Type(), TTLSeconds: r.TTLSeconds,
		Classification: r.Classification, ConversationID: r.ConversationID}
	if md := r.Metadata; md != nil {
		c.Source, c.Confidence = md.Source, md.Confidence
		if len(md.Tags) > 0 {
			c.Tags = md.Tags
		}
		if len(md.Custom) > 0 {
			c.Custom = md.Custom
		}
	}
	return c
}

// forgetDigest is the canonical form of a forget, as writeDigest.
func forgetDigest(r *memory.ForgetRequest) any {
	return struct {
		Op       string       `json:"op"`
		Scope    memory.Scope `json:"scope"`
		MemoryID string       `json:"memory_id"`
		Reason   string       `json:"reason"`
	}{"forget", r.Scope, r.MemoryID, r.Reason}
}

func durationSeconds(d time.Duration) string {
	return jsonNumber(int64(d / time.Second))
}

func jsonNumber(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

func marshalCustom(custom map[string]any) (json.RawMessage, error) {
	if len(custom) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(custom)
	if err != nil {
		return nil, refuse(http.StatusUnprocessableEntity, memory.CodeInvalid, "metadata.custom", "must be a JSON object")
	}
	return b, nil
}

// field is a named text a memory call would store.
type field struct{ name, text string }

// screenMemory refuses a memory that holds personal data or a credential
// in any text it stores: memories are retrieved into other prompts later,
// so what must not leak must not be stored. Type and classification are
// checked enums; every free text is here.
func screenMemory(m *memory.Memory) error {
	return screenFields(
		field{"content", m.Content},
		field{"metadata.tags", strings.Join(m.Tags, "\n")},
		field{"metadata.source", m.Source},
		field{"conversation_id", m.ConversationID},
		field{"metadata.custom", customText(m.Custom)},
	)
}

// customText is custom as the screen reads it: its keys and values as
// text, a line for each ("key: value"), so JSON's escapes (a "\u2028"
// between a secret's name and its value) hide nothing. A document that
// does not decode is screened as it is.
func customText(custom json.RawMessage) string {
	if len(custom) == 0 {
		return ""
	}
	d := json.NewDecoder(bytes.NewReader(custom))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return string(custom)
	}
	var b strings.Builder
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(x)) {
				b.WriteString(k)
				b.WriteString(": ")
				walk(x[k])
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		case string:
			b.WriteString(x)
			b.WriteByte('\n')
		case json.Number:
			b.WriteString(x.String())
			b.WriteByte('\n')
		default:
			b.WriteByte('\n')
		}
	}
	walk(v)
	return b.String()
}

// screenFields refuses the first field that pii.Scan flags. The error
// names the field and the kinds found, never the text.
func screenFields(fields ...field) error {
	for _, f := range fields {
		if kinds := pii.Scan(f.text); len(kinds) > 0 {
			names := make([]string, len(kinds))
			for i, k := range kinds {
				names[i] = string(k)
			}
			return refuse(http.StatusUnprocessableEntity, memory.CodeScreened, f.name,
				"holds "+strings.Join(names, ", ")+"; memories may not store personal data or credentials")
		}
	}
	return nil
}

// embed sets m's vector. A failing embedder makes the write fail as
// unavailable: a durable memory without a vector would be invisible to
// half of every search.
func (s *Service) embed(ctx context.Context, m *memory.Memory) error {
	vecs, err := s.embedder.Embed(ctx, []string{m.Content})
	if err != nil || len(vecs) != 1 {
		s.log.Warn("memory: embedding failed", "model", s.embedder.ModelID(), "err", err)
		return &memory.Error{Status: http.StatusServiceUnavailable, Code: memory.CodeUnavailable, Message: "the embedding model is unavailable; retry"}
	}
	m.Embedding = &memory.Embedding{Model: s.embedder.ModelID(), Vector: vecs[0]}
	return nil
}

// Update changes an agent-scope memory in place if r.Version is still its
// version (409 otherwise), screening new content as a write is screened.
func (s *Service) Update(ctx context.Context, c *Caller, r *memory.UpdateRequest) (memory.UpdateResult, error) {
	if err := r.Validate(); err != nil {
		return memory.UpdateResult{}, memory.ErrorFor(err)
	}
	p, err := c.writable(r.Scope, opUpdate)
	if err != nil {
		return memory.UpdateResult{}, err
	}
	ch := memory.Change{EventID: newID(), Now: s.now()}
	var content string
	var tags []string
	if r.Content != nil {
		ch.Content, content = r.Content, *r.Content
	}
	if md := r.Metadata; md != nil {
		if md.Tags != nil {
			ch.Tags, tags = &md.Tags, md.Tags
		}
		ch.Confidence = md.Confidence
		if ch.Custom, err = marshalCustom(md.Custom); err != nil {
			return memory.UpdateResult{}, err
		}
	}
	if err := screenFields(field{"content", content}, field{"metadata.tags", strings.Join(tags, "\n")},
		field{"metadata.custom", customText(ch.Custom)}); err != nil {
		return memory.UpdateResult{}, err
	}
	if r.Content != nil {
		tmp := memory.Memory{Content: content}
		if err := s.embed(ctx, &tmp); err != nil {
			return memory.UpdateResult{}, err
		}
		ch.Embedding = tmp.Embedding
	}
	m, err := s.store.Update(ctx, c.Tenant, p, r.MemoryID, r.Version, ch)
	if errors.Is(err, memory.ErrNotFound) && r.Scope == memory.ScopeAgent {
		err = s.notOwned(ctx, c, r.MemoryID, err)
	}
	if err != nil {
		return memory.UpdateResult{}, s.storeErr("update", err)
	}
	return memory.UpdateResult{MemoryID: m.ID, Scope: r.Scope, Version: m.Version, UpdateEventID: ch.EventID, UpdatedAt: m.UpdatedAt}, nil
}

// notOwned is the error of an update that found no memory id among c's
// agent memories (notFound): 403 when id is an agent memory of another
// agent of c's tenant, as the memory guide's update says, and notFound
// otherwise. Nothing of another tenant is ever looked at.
func (s *Service) notOwned(ctx context.Context, c *Caller, id string, notFound error) error {
	m, err := s.store.Get(ctx, c.Tenant, id, s.now())
	switch {
	case errors.Is(err, memory.ErrNotFound):
		return notFound
	case err != nil:
		return err
	case m.Partition.Scope == memory.ScopeAgent && m.Partition.Owner != c.Agent:
		return refuse(http.StatusForbidden, memory.CodeNotOwner, "memory_id",
			"belongs to another agent: an agent updates its own memories only")
	}
	return notFound
}

// Forget deletes one memory and records why in the audit trail; no such
// memory in the caller's part of the scope is 404. Idempotency keys are
// as for Write, apart from its keys: a forget under a key the caller sent
// with another forget is refused, so a forget is never answered with
// another memory's deletion.
func (s *Service) Forget(ctx context.Context, c *Caller, r *memory.ForgetRequest) (memory.ForgetResult, error) {
	if err := r.Validate(); err != nil {
		return memory.ForgetResult{}, memory.ErrorFor(err)
	}
	p, err := c.writable(r.Scope, opForget)
	if err != nil {
		return memory.ForgetResult{}, err
	}
	if err := screenFields(field{"reason", r.Reason}); err != nil {
		return memory.ForgetResult{}, err
	}
	key, err := c.key(r.IdempotencyKey, forgetDigest(r))
	if err != nil {
		return memory.ForgetResult{}, err
	}
	res, _, err := s.store.Forget(ctx, c.Tenant, p, r.MemoryID, memory.Audit{
		EventID: newID(), Actor: c.Agent, Reason: r.Reason, Key: key, At: s.now(),
	})
	if err != nil {
		return memory.ForgetResult{}, s.storeErr("forget", err)
	}
	if res.DeletedCount == 0 {
		return memory.ForgetResult{}, memory.ErrorFor(memory.ErrNotFound)
	}
	return res, nil
}

// ProposalStatus reports what the write gate decided on an agent-scope
// proposal of the caller's tenant.
func (s *Service) ProposalStatus(ctx context.Context, c *Caller, id string) (memory.ProposalStatus, error) {
	if !strings.HasPrefix(id, memory.ProposalPrefix) || len(id) > memory.MaxIDBytes {
		return memory.ProposalStatus{}, refuse(http.StatusUnprocessableEntity, memory.CodeInvalid, "proposal_id", "must be a prop_ id returned by write")
	}
	if need := ScopeWritePrefix + string(memory.ScopeAgent); !c.grants(need) {
		return memory.ProposalStatus{}, forbidden(need)
	}
	p, err := s.store.Proposal(ctx, c.Tenant, id)
	if err != nil {
		return memory.ProposalStatus{}, s.storeErr("proposal status", err)
	}
	if p.Memory.Partition.Owner != c.Agent {
		// Another agent's proposal is as good as absent.
		return memory.ProposalStatus{}, memory.ErrorFor(memory.ErrNotFound)
	}
	return p.StatusResult(), nil
}

func (s *Service) kickGate() {
	select {
	case s.gateKick <- struct{}{}:
	default:
	}
}

// judgeProposals is the agent write gate: each pending proposal is
// screened and then committed under a new memory id, or rejected with the
// reason. A proposal it cannot decide now (the embedder is down) stays
// pending for the next pass.
func (s *Service) judgeProposals(ctx context.Context) {
	for ctx.Err() == nil {
		props, err := s.store.PendingProposals(ctx, 100)
		if err != nil {
			if ctx.Err() == nil {
				s.log.Warn("memory: reading proposals failed", "err", err)
			}
			return
		}
		decided := 0
		for i := range props {
			if s.judge(ctx, &props[i]) {
				decided++
			}
		}
		if len(props) < 100 || decided == 0 {
			return
		}
	}
}

func (s *Service) judge(ctx context.Context, p *memory.Proposal) bool {
	now := s.now()
	if err := screenMemory(&p.Memory); err != nil {
		reason := err.(*memory.Error).Field + " " + err.(*memory.Error).Rule
		if rerr := s.store.ResolveProposal(ctx, p.Tenant, p.ID, nil, reason, now); rerr != nil && ctx.Err() == nil {
			s.log.Warn("memory: rejecting a proposal failed", "proposal", p.ID, "err", rerr)
			return false
		}
		return true
	}
	m := p.Memory
	m.ID, m.CreatedAt, m.UpdatedAt, m.Version = newID(), now, now, 1
	if err := s.embed(ctx, &m); err != nil {
		return false
	}
	if err := s.store.ResolveProposal(ctx, p.Tenant, p.ID, &m, "", now); err != nil && ctx.Err() == nil {
		s.log.Warn("memory: committing a proposal failed", "proposal", p.ID, "err", err)
		return false
	}
	return true
}
