package storetest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/memory"
)

// TestMemoryStore runs the memory.Store contract. newStore must return a
// new, empty store each time it is called.
func TestMemoryStore(t *testing.T, newStore func(t *testing.T) memory.Store) {
	t.Run("PutGet", func(t *testing.T) { testMemPutGet(t, newStore(t)) })
	t.Run("PutDuplicateID", func(t *testing.T) { testMemDuplicate(t, newStore(t)) })
	t.Run("IdempotentReplay", func(t *testing.T) { testMemIdempotent(t, newStore(t)) })
	t.Run("IdempotencyKeyScope", func(t *testing.T) { testMemKeyScope(t, newStore(t)) })
	t.Run("IdempotencyKeyReused", func(t *testing.T) { testMemKeyReused(t, newStore(t)) })
	t.Run("IdempotencyKeyReusedConcurrent", func(t *testing.T) { testMemKeyReusedConcurrent(t, newStore(t)) })
	t.Run("Update", func(t *testing.T) { testMemUpdate(t, newStore(t)) })
	t.Run("UpdateConcurrent", func(t *testing.T) { testMemUpdateConcurrent(t, newStore(t)) })
	t.Run("Forget", func(t *testing.T) { testMemForget(t, newStore(t)) })
	t.Run("TTL", func(t *testing.T) { testMemTTL(t, newStore(t)) })
	t.Run("Filters", func(t *testing.T) { testMemFilters(t, newStore(t)) })
	t.Run("KeywordSearch", func(t *testing.T) { testMemKeyword(t, newStore(t)) })
	t.Run("VectorSearch", func(t *testing.T) { testMemVector(t, newStore(t)) })
	t.Run("TermStats", func(t *testing.T) { testMemTermStats(t, newStore(t)) })
	t.Run("Adjacent", func(t *testing.T) { testMemAdjacent(t, newStore(t)) })
	t.Run("Retrieve", func(t *testing.T) { testMemRetrieve(t, newStore(t)) })
	t.Run("CrossTenantRandomised", func(t *testing.T) { testMemCrossTenant(t, newStore(t)) })
	t.Run("Proposals", func(t *testing.T) { testMemProposals(t, newStore(t)) })
	t.Run("Hints", func(t *testing.T) { testMemHints(t, newStore(t)) })
	t.Run("HintRetention", func(t *testing.T) { testMemHintRetention(t, newStore(t)) })
	t.Run("Messages", func(t *testing.T) { testMemMessages(t, newStore(t)) })
}

// memT0 is the suite's clock: every time is an offset from it, so TTLs
// and windows are tested without waiting.
var memT0 = time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)

var (
	agentA = memory.Partition{Scope: memory.ScopeAgent, Owner: "agent-a"}
	agentB = memory.Partition{Scope: memory.ScopeAgent, Owner: "agent-b"}
	runR   = memory.Partition{Scope: memory.ScopeRun, Owner: "run-1"}
)

var memEmbedder = memory.NewHashEmbedder(64)

func newMemory(id string, p memory.Partition, content string, at time.Time) *memory.Memory {
	return &memory.Memory{
		ID: id, Partition: p, Content: content, Version: 1, CreatedAt: at, UpdatedAt: at,
		WriteEventID: "ev-" + id,
		Embedding:    &memory.Embedding{Model: memEmbedder.ModelID(), Vector: memEmbedder.Vector(content)},
	}
}

func mustPutMem(t *testing.T, s memory.Store, tenant string, ms ...*memory.Memory) {
	t.Helper()
	for _, m := range ms {
		if _, _, err := s.Put(ctxT(t), tenant, m, memory.Key{}); err != nil {
			t.Fatalf("Put %s: %v", m.ID, err)
		}
	}
}

func hitIDs(hs []memory.Hit) []string {
	out := []string{}
	for _, h := range hs {
		out = append(out, h.Memory.ID)
	}
	return out
}

func memIDs(ms []memory.Memory) []string {
	out := []string{}
	for _, m := range ms {
		out = append(out, m.ID)
	}
	return out
}

// storedMem is m as a read returns it: without its vector.
func storedMem(m *memory.Memory) *memory.Memory {
	c := *m
	c.Embedding = nil
	return &c
}

func testMemPutGet(t *testing.T, s memory.Store) {
	ctx := ctxT(t)
	conf := 0.75
	m := newMemory("m1", agentA, "User prefers concise summaries", memT0)
	m.Type, m.Tags, m.Source, m.ConversationID = memory.TypeSemantic, []string{"prefs", "style guide"}, "support-chat", "conv-1"
	m.Classification, m.Confidence, m.Custom = memory.ClassExplicit, &conf, []byte(`{"k":"v"}`)
	m.ExpiresAt = memT0.Add(90 * 24 * time.Hour)
	res, replayed, err := s.Put(ctx, "acme", m, memory.Key{})
	if err != nil || replayed {
		t.Fatalf("Put = %v, replayed %v", err, replayed)
	}
	want := memory.WriteResult{MemoryID: "m1", Scope: memory.ScopeAgent, WriteEventID: "ev-m1", CreatedAt: memT0, Durable: true}
	if d := gocmp.Diff(want, res); d != "" {
		t.Errorf("WriteResult (-want +got):\n%s", d)
	}
	got, err := s.Get(ctx, "acme", "m1", memT0)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if d := gocmp.Diff(storedMem(m), got); d != "" {
		t.Errorf("Get (-want +got):\n%s", d)
	}
	// An untyped memory with no metadata round-trips as such.
	bare := newMemory("m2", runR, "scratch", memT0)
	mustPutMem(t, s, "acme", bare)
	if got, err := s.Get(ctx, "acme", "m2", memT0); err != nil {
		t.Fatal(err)
	} else if d := gocmp.Diff(storedMem(bare), got); d != "" {
		t.Errorf("Get bare (-want +got):\n%s", d)
	}
	for _, tenant := range []string{"other", "ACME", "acme "} {
		if _, err := s.Get(ctx, tenant, "m1", memT0); !errors.Is(err, memory.ErrNotFound) {
			t.Errorf("Get from tenant %q = %v, want ErrNotFound", tenant, err)
		}
	}
}

func testMemDuplicate(t *testing.T, s memory.Store) {
	ctx := ctxT(t)
	mustPutMem(t, s, "acme", newMemory("m1", agentA, "first", memT0))
	_, _, err := s.Put(ctx, "acme", newMemory("m1", agentA, "second", memT0), memory.Key{})
	if !errors.Is(err, memory.ErrExists) {
		t.Fatalf("second Put of id m1 = %v, want ErrExists", err)
	}
	// Ids are per tenant.
	mustPutMem(t, s, "globex", newMemory("m1", agentA, "theirs", memT0))
	if got, _ := s.Get(ctx, "acme", "m1", memT0); got == nil || got.Content != "first" {
		t.Errorf("acme's m1 = %+v, want the first write", got)
	}
}

func testMemIdempotent(t *testing.T, s memory.Store) {
	ctx := ctxT(t)
	first, replayed, err := s.Put(ctx, "acme", newMemory("m1", agentA, "Customer chose the annual plan", memT0), key("exec-1:1"))
	if err != nil || replayed {
		t.Fatalf("Put = %v, replayed %v", err, replayed)
	}
	// A retried execution replays the key with a new id and a later clock.
	again, replayed, err := s.Put(ctx, "acme", newMemory("m2", agentA, "Customer chose the annual plan", memT0.Add(time.Hour)), key("exec-1:1"))
	if err != nil || !replayed {
		t.Fatalf("replay = %v, replayed %v; want the first result", err, replayed)
	}
	if d := gocmp.Diff(first, again); d != "" {
		t.Errorf("replay result (-first +replay):\n%s", d)
	}
	if _, err := s.Get(ctx, "acme", "m2", memT0.Add(time.Hour)); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("a replay stored a second memory (Get m2 = %v)", err)
	}
	// Another key, another tenant's same key: new writes.
	if _, replayed, err := s.Put(ctx, "acme", newMemory("m3", agentA, "x", memT0), key("exec-1:2")); err != nil || replayed {
		t.Errorf("other key: %v, replayed %v", err, replayed)
	}
	if _, replayed, err := s.Put(ctx, "globex", newMemory("m4", agentA, "x", memT0), key("exec-1:1")); err != nil || replayed {
		t.Errorf("same key in another tenant: %v, replayed %v", err, replayed)
	}
	// Concurrent replays of one key store one memory.
	var wg sync.WaitGroup
	results := make([]memory.WriteResult, 8)
	for i := range results {
		wg.Go(func() {
			r, _, err := s.Put(ctx, "acme", newMemory(fmt.Sprintf("c%d", i), agentA, "race", memT0), key("exec-2:1"))
			if err != nil {
				t.Errorf("concurrent Put: %v", err)
			}
			results[i] = r
		})
	}
	wg.Wait()
	for _, r := range results[1:] {
		if r.MemoryID != results[0].MemoryID {
			t.Fatalf("concurrent replays answered different ids: %v and %v", r.MemoryID, results[0].MemoryID)
		}
	}
	list, err := s.List(ctx, "acme", memory.Filter{Partition: agentA, Now: memT0}, 100)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, m := range list {
		if m.Content == "race" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d memories stored for one key, want 1", n)
	}
	// After the 24h window the key is new again.
	late := memT0.Add(memory.IdempotencyWindow + time.Minute)
	if r, replayed, err := s.Put(ctx, "acme", newMemory("m5", agentA, "Customer chose the annual plan", late), key("exec-1:1")); err != nil || replayed || r.MemoryID != "m5" {
		t.Errorf("Put after the window = %+v, replayed %v, %v; want a new write", r, replayed, err)
	}
}

// testMemKeyScope: a key belongs to its caller (agent and run) and its
// kind (write or forget); the same name elsewhere is another key.
func testMemKeyScope(t *testing.T, s memory.Store) {
	ctx := ctxT(t)
	k := key("exec-1:1")
	first, replayed, err := s.Put(ctx, "acme", newMemory("m1", agentA, "Customer chose the annual plan", memT0), k)
	if err != nil || replayed {
		t.Fatalf("Put = %v, replayed %v", err, replayed)
	}
	otherAgent, otherRun := k, k
	otherAgent.Agent, otherRun.Run = "agent-b", "run-2"
	for _, tt := range []struct {
		name string
		id   string
		k    memory.Key
	}{
		{"another agent", "m2", otherAgent},
		{"another run", "m3", otherRun},
	} {
		res, replayed, err := s.Put(ctx, "acme", newMemory(tt.id, agentB, "Customer chose the monthly plan", memT0), tt.k)
		if err != nil || replayed || res.MemoryID != tt.id {
			t.Errorf("%s: Put with the same key name = %+v, replayed %v, %v; want a new write", tt.name, res, replayed, err)
		}
		if _, err := s.Get(ctx, "acme", tt.id, memT0); err != nil {
			t.Errorf("%s: the write was not stored: %v", tt.name, err)
		}
	}
	// A forget's keys are not a write's: the same name forgets.
	r, replayed, err := s.Forget(ctx, "acme", agentB, "m2", memory.Audit{EventID: "del-1", Actor: "agent-a", Reason: "r", Key: k, At: memT0})
	if err != nil || replayed || r.DeletedCount != 1 {
		t.Errorf("Forget under a write's key = %+v, replayed %v, %v; want 1 deleted", r, replayed, err)
	}
	// A proposal shares the write keys: the same request replays.
	p := &memory.Proposal{ID: "prop_1", Memory: *newMemory("", agentA, "x", memT0), CreatedAt: memT0}
	if res, replayed, err := s.PutProposal(ctx, "acme", p, k); err != nil || !replayed || res != first {
		t.Errorf("PutProposal of the same request = %+v, replayed %v, %v; want the first result", res, replayed, err)
	}
	if _, err := s.Proposal(ctx, "acme", "prop_1"); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("a replayed PutProposal stored a proposal (Proposal = %v)", err)
	}
}

// testMemKeyReused: a key used for one request and sent with another is
// refused, the second request is not carried out, and the first result
// still replays.
func testMemKeyReused(t *testing.T, s memory.Store) {
	ctx := ctxT(t)
	k := key("exec-1:1")
	other := k
	other.Request = "digest-2"
	first, _, err := s.Put(ctx, "acme", newMemory("m1", runR, "Customer chose the annual plan", memT0), k)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Put(ctx, "acme", newMemory("m2", agentA, "another note", memT0), other); !errors.Is(err, memory.ErrKeyReused) {
		t.Errorf("Put of another request under the key = %v, want ErrKeyReused", err)
	}
	if _, err := s.Get(ctx, "acme", "m2", memT0); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("the refused write was stored (Get = %v)", err)
	}
	p := &memory.Proposal{ID: "prop_1", Memory: *newMemory("", agentA, "x", memT0), CreatedAt: memT0}
	if _, _, err := s.PutProposal(ctx, "acme", p, other); !errors.Is(err, memory.ErrKeyReused) {
		t.Errorf("PutProposal of another request under the key = %v, want ErrKeyReused", err)
	}
	if _, err := s.Proposal(ctx, "acme", "prop_1"); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("the refused proposal was stored (Proposal = %v)", err)
	}
	if again, replayed, err := s.Put(ctx, "acme", newMemory("m3", runR, "Customer chose the annual plan", memT0.Add(time.Hour)), k); err != nil || !replayed || again != first {
		t.Errorf("replay after a refusal = %+v, replayed %v, %v; want the first result", again, replayed, err)
	}
	// Past the window the key is free for any request.
	late := memT0.Add(memory.IdempotencyWindow + time.Minute)
	if r, replayed, err := s.Put(ctx, "acme", newMemory("m4", agentA, "another note", late), other); err != nil || replayed || r.MemoryID != "m4" {
		t.Errorf("Put after the window = %+v, replayed %v, %v; want a new write", r, replayed, err)
	}

	// Forget: X under the key, then Y under it is refused and Y stays.
	mustPutMem(t, s, "acme", newMemory("x", runR, "x", memT0), newMemory("y", runR, "y", memT0))
	fk := key("exec-1:forget")
	a := memory.Audit{EventID: "del-1", Actor: "agent-a", Reason: "r", Key: fk, At: memT0}
	if r, _, err := s.Forget(ctx, "acme", runR, "x", a); err != nil || r.DeletedCount != 1 {
		t.Fatalf("Forget x = %+v, %v", r, err)
	}
	a.EventID, a.Key.Request = "del-2", "digest-2"
	if r, replayed, err := s.Forget(ctx, "acme", runR, "y", a); !errors.Is(err, memory.ErrKeyReused) {
		t.Errorf("Forget y under x's key = %+v, replayed %v, %v; want ErrKeyReused", r, replayed, err)
	}
	if _, err := s.Get(ctx, "acme", "y", memT0); err != nil {
		t.Errorf("y is gone after a refused forget: %v", err)
	}
	a.Key = fk
	if r, replayed, err := s.Forget(ctx, "acme", runR, "x", a); err != nil || !replayed || r != (memory.ForgetResult{DeletedCount: 1, DeleteEventID: "del-1"}) {
		t.Errorf("replayed Forget x = %+v, replayed %v, %v; want the first result", r, replayed, err)
	}
}

// testMemKeyReusedConcurrent: concurrent uses of one key for two requests
// store one memory; every other call replays it or is refused.
func testMemKeyReusedConcurrent(t *testing.T, s memory.Store) {
	ctx := ctxT(t)
	type answer struct {
		res      memory.WriteResult
		replayed bool
		err      error
		request  string
	}
	answers := make([]answer, 8)
	var wg sync.WaitGroup
	for i := range answers {
		wg.Go(func() {
			k := key("exec-1:1")
			k.Request = fmt.Sprintf("digest-%d", i%2)
			r, replayed, err := s.Put(ctx, "acme", newMemory(fmt.Sprintf("c%d", i), agentA, "race", memT0), k)
			answers[i] = answer{r, replayed, err, k.Request}
		})
	}
	wg.Wait()
	var winner *answer
	for i := range answers {
		if a := &answers[i]; a.err == nil && !a.replayed {
			if winner != nil {
				t.Fatalf("two writes under one key: %s and %s", winner.res.MemoryID, a.res.MemoryID)
			}
			winner = a
		}
	}
	if winner == nil {
		t.Fatalf("no write under the key succeeded: %+v", answers)
	}
	for _, a := range answers {
		switch {
		case a.request == winner.request && (a.err != nil || a.res != winner.res):
			t.Errorf("same request as the first: %+v, %v; want the first result", a.res, a.err)
		case a.request != winner.request && !errors.Is(a.err, memory.ErrKeyReused):
			t.Errorf("another request than the first: %+v, %v; want ErrKeyReused", a.res, a.err)
		}
	}
	list, err := s.List(ctx, "acme", memory.Filter{Partition: agentA, Now: memT0}, 100)
	if err != nil || len(list) != 1 {
		t.Errorf("List = %d memories, %v; want 1", len(list), err)
	}
}

func testMemUpdate(t *testing.T, s memory.Store) {
	ctx := ctxT(t)
	mustPutMem(t, s, "acme", newMemory("m1", agentA, "deploys go through the blue cluster", memT0))
	content := "deploys go through the green cluster"
	conf := 0.5
	tags := []string{"ops"}
	at := memT0.Add(time.Minute)
	vec := memEmbedder.Vector(content)
	m, err := s.Update(ctx, "acme", agentA, "m1", 1, memory.Change{Content: &content, Tags: &tags, Confidence: &conf,
		Custom: []byte(`{"a":1}`), Embedding: &memory.Embedding{Model: memEmbedder.ModelID(), Vector: vec}, Now: at, EventID: "ev-u1"})
	if err != nil {
		t.Fatalf("Update: %v", err)
	}
	if m.Version != 2 || m.Content != content || !m.UpdatedAt.Equal(at) || !m.CreatedAt.Equal(memT0) || *m.Confidence != 0.5 {
		t.Errorf("Update returned %+v", m)
	}
	got, err := s.Get(ctx, "acme", "m1", at)
	if err != nil {
		t.Fatal(err)
	}
	if d := gocmp.Diff(m, got); d != "" {
		t.Errorf("Get after Update (-updated +got):\n%s", d)
	}
	// The index follows the content: the old word is gone, the new found.
	f := memory.Filter{Partition: agentA, Now: at}
	if hs, err := s.SearchKeyword(ctx, "acme", f, memory.Terms("blue"), 10); err != nil || len(hs) != 0 {
		t.Errorf("search for the old word = %v, %v", hitIDs(hs), err)
	}
	if hs, err := s.SearchKeyword(ctx, "acme", f, memory.Terms("green"), 10); err != nil || !slices.Equal(hitIDs(hs), []string{"m1"}) {
		t.Errorf("search for the new word = %v, %v", hitIDs(hs), err)
	}
	if hs, err := s.SearchKeyword(ctx, "acme", f, memory.Terms("ops"), 10); err != nil || !slices.Equal(hitIDs(hs), []string{"m1"}) {
		t.Errorf("search for the new tag = %v, %v", hitIDs(hs), err)
	}
	if hs, err := s.SearchVector(ctx, "acme", f, memory.Embedding{Model: memEmbedder.ModelID(), Vector: vec}, 1); err != nil || len(hs) != 1 || hs[0].Score < 0.999 {
		t.Errorf("vector search for the new content = %+v, %v", hs, err)
	}
	// A stale version is a conflict and changes nothing.
	stale := "stale"
	if _, err := s.Update(ctx, "acme", agentA, "m1", 1, memory.Change{Content: &stale, Now: at}); !errors.Is(err, memory.ErrConflict) {
		t.Errorf("Update at version 1 = %v, want ErrConflict", err)
	}
	// Only confidence: tags and content stay.
	conf2 := 0.9
	if m, err := s.Update(ctx, "acme", agentA, "m1", 2, memory.Change{Confidence: &conf2, Now: at}); err != nil || m.Version != 3 || m.Content != content || !slices.Equal(m.Tags, tags) {
		t.Errorf("Update of confidence = %+v, %v", m, err)
	}
	// A search returns the memory as it now is, whatever changed.
	if hs, err := s.SearchKeyword(ctx, "acme", f, memory.Terms("green"), 10); err != nil || len(hs) != 1 ||
		hs[0].Memory.Version != 3 || hs[0].Memory.Confidence == nil || *hs[0].Memory.Confidence != conf2 {
		t.Errorf("search after the confidence update = %+v, %v; want version 3, confidence %v", hs, err, conf2)
	}
	for _, c := range []struct {
		tenant string
		p      memory.Partition
	}{{"globex", agentA}, {"acme", agentB}, {"acme", memory.Partition{Scope: memory.ScopeUser, Owner: "agent-a"}}} {
		if _, err := s.Update(ctx, c.tenant, c.p, "m1", 3, memory.Change{Content: &stale, Now: at}); !errors.Is(err, memory.ErrNotFound) {
			t.Errorf("Update from %s %v = %v, want ErrNotFound", c.tenant, c.p, err)
		}
	}
	if _, err := s.Update(ctx, "acme", agentA, "nope", 1, memory.Change{Content: &stale, Now: at}); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("Update of a missing memory = %v, want ErrNotFound", err)
	}
}

func testMemUpdateConcurrent(t *testing.T, s memory.Store) {
	ctx := ctxT(t)
	mustPutMem(t, s, "acme", newMemory("m1", agentA, "v1", memT0))
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins, conflicts := 0, 0
	for i := range 8 {
		wg.Go(func() {
			c := fmt.Sprintf("writer %d", i)
			_, err := s.Update(ctx, "acme", agentA, "m1", 1, memory.Change{Content: &c, Now: memT0})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				wins++
			case errors.Is(err, memory.ErrConflict):
				conflicts++
			default:
				t.Errorf("Update: %v", err)
			}
		})
	}
	wg.Wait()
	if wins != 1 || conflicts != 7 {
		t.Errorf("%d updates of version 1 won and %d conflicted, want 1 and 7", wins, conflicts)
	}
}

func testMemForget(t *testing.T, s memory.Store) {
	ctx := ctxT(t)
	mustPutMem(t, s, "acme", newMemory("m1", runR, "Draft outline, superseded", memT0), newMemory("m2", runR, "keep", memT0))
	a := memory.Audit{EventID: "del-1", Actor: "agent-a", Reason: "superseded by final outline", At: memT0}
	// Another tenant or partition cannot forget it.
	if r, _, err := s.Forget(ctx, "globex", runR, "m1", a); err != nil || r.DeletedCount != 0 {
		t.Errorf("Forget from another tenant = %+v, %v; want 0 deleted", r, err)
	}
	// Another partition, of another scope or of the same scope with
	// another owner, cannot forget it either.
	for _, p := range []memory.Partition{agentA, {Scope: memory.ScopeRun, Owner: "run-2"}, {Scope: memory.ScopeTask, Owner: "run-1"}} {
		if r, _, err := s.Forget(ctx, "acme", p, "m1", a); err != nil || r.DeletedCount != 0 {
			t.Errorf("Forget from partition %v = %+v, %v; want 0 deleted", p, r, err)
		}
	}
	if got, err := s.Get(ctx, "acme", "m1", memT0); err != nil || got.ID != "m1" {
		t.Fatalf("a Forget from another tenant or partition deleted m1: %v", err)
	}
	a.Key = key("exec-1:forget")
	r, replayed, err := s.Forget(ctx, "acme", runR, "m1", a)
	if err != nil || replayed || r != (memory.ForgetResult{DeletedCount: 1, DeleteEventID: "del-1"}) {
		t.Fatalf("Forget = %+v, replayed %v, %v", r, replayed, err)
	}
	if _, err := s.Get(ctx, "acme", "m1", memT0); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("Get after Forget = %v", err)
	}
	f := memory.Filter{Partition: runR, Now: memT0}
	if hs, _ := s.SearchKeyword(ctx, "acme", f, memory.Terms("draft outline"), 10); len(hs) != 0 {
		t.Errorf("keyword search still finds %v", hitIDs(hs))
	}
	if hs, _ := s.SearchVector(ctx, "acme", f, memory.Embedding{Model: memEmbedder.ModelID(), Vector: memEmbedder.Vector("Draft outline, superseded")}, 10); slices.Contains(hitIDs(hs), "m1") {
		t.Errorf("vector search still finds m1")
	}
	// The retry replays the first answer; without a key it is a miss.
	a2 := a
	a2.EventID = "del-2"
	if r, replayed, err := s.Forget(ctx, "acme", runR, "m1", a2); err != nil || !replayed || r.DeletedCount != 1 || r.DeleteEventID != "del-1" {
		t.Errorf("replayed Forget = %+v, replayed %v, %v", r, replayed, err)
	}
	a2.Key = memory.Key{}
	if r, _, err := s.Forget(ctx, "acme", runR, "m1", a2); err != nil || r.DeletedCount != 0 {
		t.Errorf("second Forget = %+v, %v; want 0 deleted", r, err)
	}
	if got, err := s.Get(ctx, "acme", "m2", memT0); err != nil || got.ID != "m2" {
		t.Errorf("Forget touched another memory: %v", err)
	}
}

func testMemTTL(t *testing.T, s memory.Store) {
	ctx := ctxT(t)
	m := newMemory("m1", runR, "scratch note about invoices", memT0)
	m.ExpiresAt = memT0.Add(5 * time.Minute)
	keep := newMemory("m2", runR, "durable note about invoices", memT0)
	mustPutMem(t, s, "acme", m, keep)
	before, after := memT0.Add(5*time.Minute-time.Millisecond), memT0.Add(5*time.Minute)
	if _, err := s.Get(ctx, "acme", "m1", before); err != nil {
		t.Errorf("Get before expiry: %v", err)
	}
	if _, err := s.Get(ctx, "acme", "m1", after); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("Get at expiry = %v, want ErrNotFound", err)
	}
	f := memory.Filter{Partition: runR, Now: after}
	if l, _ := s.List(ctx, "acme", f, 10); !slices.Equal(memIDs(l), []string{"m2"}) {
		t.Errorf("List at expiry = %v", memIDs(l))
	}
	if hs, _ := s.SearchKeyword(ctx, "acme", f, memory.Terms("invoices"), 10); !slices.Equal(hitIDs(hs), []string{"m2"}) {
		t.Errorf("keyword search at expiry = %v", hitIDs(hs))
	}
	if hs, _ := s.SearchVector(ctx, "acme", f, memory.Embedding{Model: memEmbedder.ModelID(), Vector: memEmbedder.Vector("note about invoices")}, 10); !slices.Equal(hitIDs(hs), []string{"m2"}) {
		t.Errorf("vector search at expiry = %v", hitIDs(hs))
	}
	if _, err := s.Update(ctx, "acme", runR, "m1", 1, memory.Change{Now: after}); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("Update at expiry = %v, want ErrNotFound", err)
	}
	if sw, err := s.Sweep(ctx, before, 100); err != nil || sw.Memories != 0 {
		t.Errorf("Sweep before expiry = %+v, %v", sw, err)
	}
	if sw, err := s.Sweep(ctx, after, 100); err != nil || sw.Memories != 1 {
		t.Errorf("Sweep at expiry = %+v, %v; want 1 memory", sw, err)
	}
	// Swept for good: even an earlier clock no longer sees it.
	if _, err := s.Get(ctx, "acme", "m1", memT0); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("Get of a swept memory = %v", err)
	}
	if _, err := s.Get(ctx, "acme", "m2", after.Add(1000*time.Hour)); err != nil {
		t.Errorf("a memory without TTL expired: %v", err)
	}
	// The sweep is bounded by its limit.
	for i := range 5 {
		e := newMemory(fmt.Sprintf("e%d", i), runR, "x", memT0)
		e.ExpiresAt = memT0.Add(time.Second)
		mustPutMem(t, s, "acme", e)
	}
	if sw, _ := s.Sweep(ctx, after, 3); sw.Memories != 3 {
		t.Errorf("Sweep with limit 3 removed %d", sw.Memories)
	}
	if sw, _ := s.Sweep(ctx, after, 3); sw.Memories != 2 {
		t.Errorf("second Sweep removed %d, want 2", sw.Memories)
	}
}

func testMemFilters(t *testing.T, s memory.Store) {
	ctx := ctxT(t)
	mk := func(id string, typ memory.Type, tags []string, conv, class string, at time.Duration) *memory.Memory {
		m := newMemory(id, agentA, "invoice currency is euro "+id, memT0.Add(at))
		m.Type, m.Tags, m.ConversationID, m.Classification = typ, tags, conv, class
		return m
	}
	mustPutMem(t, s, "acme",
		mk("untyped", "", nil, "", "", 0),
		mk("sem", memory.TypeSemantic, []string{"billing", "eu"}, "c1", memory.ClassExplicit, time.Minute),
		mk("epi", memory.TypeEpisodic, []string{"billing"}, "c2", memory.ClassInferred, 2*time.Minute),
		mk("proc", memory.TypeProcedural, []string{"eu"}, "c1", "", 3*time.Minute),
	)
	now := memT0.Add(time.Hour)
	tests := []struct {
		name string
		f    memory.Filter
		want []string
	}{
		{"none", memory.Filter{}, []string{"proc", "epi", "sem", "untyped"}},
		{"type", memory.Filter{Type: memory.TypeEpisodic}, []string{"epi"}},
		{"tag", memory.Filter{Tags: []string{"billing"}}, []string{"epi", "sem"}},
		{"every tag", memory.Filter{Tags: []string{"billing", "eu"}}, []string{"sem"}},
		{"tag prefix is no tag", memory.Filter{Tags: []string{"bill"}}, []string{}},
		{"conversation", memory.Filter{ConversationID: "c1"}, []string{"proc", "sem"}},
		{"classification", memory.Filter{Classification: memory.ClassInferred}, []string{"epi"}},
		{"after", memory.Filter{After: memT0.Add(time.Minute)}, []string{"proc", "epi"}},
		{"before", memory.Filter{Before: memT0.Add(time.Minute)}, []string{"untyped"}},
		{"after and before", memory.Filter{After: memT0, Before: memT0.Add(3 * time.Minute)}, []string{"epi", "sem"}},
		{"type and conversation", memory.Filter{Type: memory.TypeSemantic, ConversationID: "c2"}, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := tt.f
			f.Partition, f.Now = agentA, now
			l, err := s.List(ctx, "acme", f, 10)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(memIDs(l), tt.want) {
				t.Errorf("List = %v, want %v", memIDs(l), tt.want)
			}
			// Searches filter before they rank, so a filter never
			// costs a match its place.
			hs, err := s.SearchKeyword(ctx, "acme", f, memory.Terms("invoice currency"), 2)
			if err != nil {
				t.Fatal(err)
			}
			if len(hs) != min(2, len(tt.want)) || !subset(hitIDs(hs), tt.want) {
				t.Errorf("keyword search = %v, want 2 of %v", hitIDs(hs), tt.want)
			}
			hs, err = s.SearchVector(ctx, "acme", f, memory.Embedding{Model: memEmbedder.ModelID(), Vector: memEmbedder.Vector("invoice currency")}, 2)
			if err != nil {
				t.Fatal(err)
			}
			if len(hs) != min(2, len(tt.want)) || !subset(hitIDs(hs), tt.want) {
				t.Errorf("vector search = %v, want 2 of %v", hitIDs(hs), tt.want)
			}
		})
	}
	if l, _ := s.List(ctx, "acme", memory.Filter{Partition: agentA, Now: now}, 2); len(l) != 2 {
		t.Errorf("List with limit 2 returned %d", len(l))
	}
}

func subset(got, of []string) bool {
	for _, g := range got {
		if !slices.Contains(of, g) {
			return false
		}
	}
	return true
}

func testMemKeyword(t *testing.T, s memory.Store) {
	ctx := ctxT(t)
	mustPutMem(t, s, "acme",
		newMemory("m1", agentA, "The reporting API requires ISO 8601 date ranges", memT0),
		newMemory("m2", agentA, "Reports are emailed every Monday", memT0),
		newMemory("m3", agentA, "The user likes dark mode", memT0),
		newMemory("m4", agentB, "The reporting API requires ISO 8601 date ranges", memT0),
	)
	f := memory.Filter{Partition: agentA, Now: memT0}
	hs, err := s.SearchKeyword(ctx, "acme", f, memory.Terms("what date format does the reporting API need?"), 10)
	if err != nil {
		t.Fatal(err)
	}
	if ids := hitIDs(hs); len(ids) == 0 || ids[0] != "m1" || slices.Contains(ids, "m4") || slices.Contains(ids, "m3") {
		t.Errorf("search = %v, want m1 first, never m3 nor agent-b's m4", ids)
	}
	for i := 1; i < len(hs); i++ {
		if hs[i].Score > hs[i-1].Score {
			t.Errorf("scores not best first: %v", hs)
		}
	}
	// Stemming meets forms: "reported" finds "reporting" and "Reports".
	if hs, _ := s.SearchKeyword(ctx, "acme", f, memory.Terms("reported"), 10); len(hs) != 2 {
		t.Errorf("search for reported = %v, want m1 and m2", hitIDs(hs))
	}
	if hs, err := s.SearchKeyword(ctx, "acme", f, nil, 10); err != nil || len(hs) != 0 {
		t.Errorf("search without terms = %v, %v", hitIDs(hs), err)
	}
	// Terms are letters and digits; a long query is cut, never refused.
	long := memory.Terms(strings.Repeat("alpha beta gamma delta ", 50) + strings.Repeat("word", 1) + " mode")
	if _, err := s.SearchKeyword(ctx, "acme", f, long, 10); err != nil {
		t.Errorf("long query: %v", err)
	}
	many := make([]string, 500)
	for i := range many {
		many[i] = fmt.Sprintf("w%d", i)
	}
	if _, err := s.SearchKeyword(ctx, "acme", f, append(many, "dark"), 10); err != nil {
		t.Errorf("query of 501 terms: %v", err)
	}
}

func testMemVector(t *testing.T, s memory.Store) {
	ctx := ctxT(t)
	other := memory.NewHashEmbedder(32)
	m1 := newMemory("m1", agentA, "weekly summary emails", memT0)
	m2 := newMemory("m2", agentA, "summary of the weekly meeting", memT0)
	m3 := newMemory("m3", agentA, "weekly summary emails", memT0)
	m3.Embedding = &memory.Embedding{Model: other.ModelID(), Vector: other.Vector(m3.Content)}
	m4 := newMemory("m4", agentA, "no vector", memT0)
	m4.Embedding = nil
	mustPutMem(t, s, "acme", m1, m2, m3, m4)
	f := memory.Filter{Partition: agentA, Now: memT0}
	hs, err := s.SearchVector(ctx, "acme", f, memory.Embedding{Model: memEmbedder.ModelID(), Vector: memEmbedder.Vector("weekly summary emails")}, 10)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(hitIDs(hs), []string{"m1", "m2"}) {
		t.Fatalf("vector search = %v, want m1, m2 (never another model's m3)", hitIDs(hs))
	}
	if hs[0].Score < 0.999 || hs[1].Score >= hs[0].Score {
		t.Errorf("scores %v, %v", hs[0].Score, hs[1].Score)
	}
	hs, _ = s.SearchVector(ctx, "acme", f, memory.Embedding{Model: other.ModelID(), Vector: other.Vector("weekly summary emails")}, 10)
	if !slices.Equal(hitIDs(hs), []string{"m3"}) {
		t.Errorf("search with the other model = %v, want m3", hitIDs(hs))
	}
	if hs, _ := s.SearchVector(ctx, "acme", f, memory.Embedding{Model: "unknown", Vector: []float32{1}}, 10); len(hs) != 0 {
		t.Errorf("unknown model found %v", hitIDs(hs))
	}
	if hs, _ := s.SearchVector(ctx, "acme", f, memory.Embedding{Model: memEmbedder.ModelID(), Vector: memEmbedder.Vector("weekly")}, 1); len(hs) != 1 {
		t.Errorf("limit 1 returned %d", len(hs))
	}
}

// testMemCrossTenant writes the same content under the same ids and
// partitions in many tenants, then runs random reads as random tenants:
// every answer must hold only the asking tenant's memories. Each memory's
// source names its tenant, which is how an answer is checked.
func testMemCrossTenant(t *testing.T, s memory.Store) {
	ctx := ctxT(t)
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 0x6d656d))
	t.Logf("seed %d", seed)
	tenants := []string{"t0", "t1", "t2", "t3", "t4", "t5", "T0", "t0 ", "t00"}
	contents := []string{"User prefers concise summaries", "Deploy on Tuesdays", "Invoices are in euro", "The API key rotates monthly"}
	parts := []memory.Partition{agentA, agentB, runR, {Scope: memory.ScopeUser, Owner: "u1"}, {Scope: memory.ScopeTenant}}
	for _, tn := range tenants {
		for i, c := range contents {
			for j, p := range parts {
				m := newMemory(fmt.Sprintf("m%d-%d", i, j), p, c, memT0)
				m.Source, m.Tags, m.ConversationID = tn, []string{"shared"}, "conv"
				if _, _, err := s.Put(ctx, tn, m, key(fmt.Sprintf("key-%d-%d", i, j))); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := s.AppendMessage(ctx, tn, "conv", memory.LiveMessage{MessageID: "msg", Role: "user", Content: tn, Timestamp: memT0}); err != nil {
			t.Fatal(err)
		}
	}
	check := func(tn, what string, ms []memory.Memory) {
		t.Helper()
		for _, m := range ms {
			if m.Source != tn {
				t.Fatalf("seed %d: %s as tenant %q returned tenant %q's memory %s", seed, what, tn, m.Source, m.ID)
			}
		}
	}
	for range 300 {
		tn := tenants[rng.IntN(len(tenants))]
		p := parts[rng.IntN(len(parts))]
		c := contents[rng.IntN(len(contents))]
		f := memory.Filter{Partition: p, Now: memT0}
		if rng.IntN(2) == 0 {
			f.Tags, f.ConversationID = []string{"shared"}, "conv"
		}
		switch rng.IntN(5) {
		case 0:
			l, err := s.List(ctx, tn, f, 50)
			if err != nil || len(l) != len(contents) {
				t.Fatalf("List: %d, %v", len(l), err)
			}
			check(tn, "List", l)
		case 1:
			hs, err := s.SearchKeyword(ctx, tn, f, memory.Terms(c), 50)
			if err != nil || len(hs) == 0 {
				t.Fatalf("SearchKeyword: %d, %v", len(hs), err)
			}
			for _, h := range hs {
				check(tn, "SearchKeyword", []memory.Memory{h.Memory})
			}
		case 2:
			hs, err := s.SearchVector(ctx, tn, f, memory.Embedding{Model: memEmbedder.ModelID(), Vector: memEmbedder.Vector(c)}, 50)
			if err != nil || len(hs) != len(contents) {
				t.Fatalf("SearchVector: %d, %v", len(hs), err)
			}
			for _, h := range hs {
				check(tn, "SearchVector", []memory.Memory{h.Memory})
			}
		case 3:
			m, err := s.Get(ctx, tn, fmt.Sprintf("m%d-%d", rng.IntN(len(contents)), rng.IntN(len(parts))), memT0)
			if err != nil {
				t.Fatal(err)
			}
			check(tn, "Get", []memory.Memory{*m})
		case 4:
			msgs, err := s.RecentMessages(ctx, tn, "conv", 10)
			if err != nil || len(msgs) != 1 || msgs[0].Content != tn {
				t.Fatalf("RecentMessages as %q = %+v, %v", tn, msgs, err)
			}
		}
	}
	// A write through one tenant's key never replays another's.
	r, replayed, err := s.Put(ctx, "t9", newMemory("new", agentA, "x", memT0), key("key-0-0"))
	if err != nil || replayed || r.MemoryID != "new" {
		t.Errorf("key of another tenant replayed: %+v, %v", r, err)
	}
}

func testMemProposals(t *testing.T, s memory.Store) {
	ctx := ctxT(t)
	p := &memory.Proposal{ID: "prop_1", Memory: *newMemory("", agentA, "User prefers concise summaries", memT0), CreatedAt: memT0}
	p.Memory.Embedding = nil
	res, replayed, err := s.PutProposal(ctx, "acme", p, key("exec-1:1"))
	if err != nil || replayed {
		t.Fatalf("PutProposal = %v, %v", err, replayed)
	}
	want := memory.WriteResult{MemoryID: "prop_1", Scope: memory.ScopeAgent, WriteEventID: "ev-", CreatedAt: memT0, Durable: false}
	if d := gocmp.Diff(want, res); d != "" {
		t.Errorf("WriteResult (-want +got):\n%s", d)
	}
	p2 := &memory.Proposal{ID: "prop_2", Memory: p.Memory, CreatedAt: memT0.Add(time.Second)}
	if again, replayed, err := s.PutProposal(ctx, "acme", p2, key("exec-1:1")); err != nil || !replayed || again != res {
		t.Errorf("replayed PutProposal = %+v, %v, %v; want the first result", again, replayed, err)
	}
	if _, _, err := s.PutProposal(ctx, "acme", &memory.Proposal{ID: "prop_1", Memory: p.Memory, CreatedAt: memT0}, memory.Key{}); !errors.Is(err, memory.ErrExists) {
		t.Errorf("PutProposal of a taken id = %v, want ErrExists", err)
	}
	mustPutProposal(t, s, "acme", &memory.Proposal{ID: "prop_3", Memory: p.Memory, CreatedAt: memT0.Add(2 * time.Second)})
	mustPutProposal(t, s, "globex", &memory.Proposal{ID: "prop_1", Memory: p.Memory, CreatedAt: memT0.Add(3 * time.Second)})

	got, err := s.Proposal(ctx, "acme", "prop_1")
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != memory.ProposalPending || got.Memory.Content != p.Memory.Content || got.Memory.Partition != agentA {
		t.Errorf("Proposal = %+v", got)
	}
	if _, err := s.Proposal(ctx, "initech", "prop_1"); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("Proposal from another tenant = %v", err)
	}
	pending, err := s.PendingProposals(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, p := range pending {
		keys = append(keys, p.Tenant+"/"+p.ID)
	}
	if !slices.Equal(keys, []string{"acme/prop_1", "acme/prop_3", "globex/prop_1"}) {
		t.Errorf("PendingProposals = %v", keys)
	}
	// Commit: the memory lands under a new id in the same transaction.
	commit := newMemory("mem-9", agentA, p.Memory.Content, memT0.Add(time.Minute))
	if err := s.ResolveProposal(ctx, "acme", "prop_1", commit, "", memT0.Add(time.Minute)); err != nil {
		t.Fatalf("ResolveProposal commit: %v", err)
	}
	if err := s.ResolveProposal(ctx, "acme", "prop_1", nil, "pii_detected", memT0.Add(time.Minute)); !errors.Is(err, memory.ErrConflict) {
		t.Errorf("second ResolveProposal = %v, want ErrConflict", err)
	}
	if err := s.ResolveProposal(ctx, "acme", "prop_3", nil, "secrets_detected", memT0.Add(time.Minute)); err != nil {
		t.Fatalf("ResolveProposal reject: %v", err)
	}
	if err := s.ResolveProposal(ctx, "acme", "nope", nil, "x", memT0); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("ResolveProposal of a missing proposal = %v", err)
	}
	st1, _ := s.Proposal(ctx, "acme", "prop_1")
	st3, _ := s.Proposal(ctx, "acme", "prop_3")
	mid, reason := "mem-9", "secrets_detected"
	if d := gocmp.Diff(memory.ProposalStatus{ProposalID: "prop_1", Status: memory.ProposalCommitted, MemoryID: &mid}, st1.StatusResult()); d != "" {
		t.Errorf("committed status (-want +got):\n%s", d)
	}
	if d := gocmp.Diff(memory.ProposalStatus{ProposalID: "prop_3", Status: memory.ProposalRejected, Reason: &reason}, st3.StatusResult()); d != "" {
		t.Errorf("rejected status (-want +got):\n%s", d)
	}
	if m, err := s.Get(ctx, "acme", "mem-9", memT0.Add(time.Minute)); err != nil || m.Content != p.Memory.Content {
		t.Errorf("committed memory = %+v, %v", m, err)
	}
	if pending, _ := s.PendingProposals(ctx, 10); len(pending) != 1 || pending[0].Tenant != "globex" {
		t.Errorf("PendingProposals after resolving = %+v", pending)
	}
	// A commit whose memory id is taken fails whole: still pending.
	if err := s.ResolveProposal(ctx, "globex", "prop_1", newMemory("mem-9", agentA, "x", memT0), "", memT0.Add(time.Minute)); err != nil {
		t.Errorf("commit in another tenant under the same memory id: %v", err)
	}
	mustPutProposal(t, s, "acme", &memory.Proposal{ID: "prop_4", Memory: p.Memory, CreatedAt: memT0})
	if err := s.ResolveProposal(ctx, "acme", "prop_4", newMemory("mem-9", agentA, "x", memT0), "", memT0); !errors.Is(err, memory.ErrExists) {
		t.Errorf("commit under a taken id = %v, want ErrExists", err)
	}
	if st, _ := s.Proposal(ctx, "acme", "prop_4"); st == nil || st.Status != memory.ProposalPending {
		t.Errorf("a failed commit changed the proposal: %+v", st)
	}
	// Resolved proposals are kept 24h, then swept; pending ones stay.
	if sw, _ := s.Sweep(ctx, memT0.Add(time.Minute+memory.StatusRetention-time.Second), 100); sw.Proposals != 0 {
		t.Errorf("Sweep within 24h removed %d proposals", sw.Proposals)
	}
	if sw, _ := s.Sweep(ctx, memT0.Add(time.Minute+memory.StatusRetention), 100); sw.Proposals != 3 {
		t.Errorf("Sweep after 24h removed %d proposals, want 3", sw.Proposals)
	}
	if _, err := s.Proposal(ctx, "acme", "prop_1"); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("Proposal after retention = %v", err)
	}
	if _, err := s.Proposal(ctx, "acme", "prop_4"); err != nil {
		t.Errorf("a pending proposal was swept: %v", err)
	}
}

func mustPutProposal(t *testing.T, s memory.Store, tenant string, p *memory.Proposal) {
	t.Helper()
	if _, _, err := s.PutProposal(ctxT(t), tenant, p, memory.Key{}); err != nil {
		t.Fatalf("PutProposal %s: %v", p.ID, err)
	}
}

func newHint(id, prio string, at time.Time) *memory.Hint {
	return &memory.Hint{ID: id, Agent: "agent-a", User: "u1", ConversationID: "conv-1", Text: "User is based in Lisbon",
		Priority: prio, Tags: []string{"location"}, Context: "support chat", SubmittedAt: at}
}

func testMemHints(t *testing.T, s memory.Store) {
	ctx := ctxT(t)
	for _, h := range []*memory.Hint{
		newHint("h1", memory.PriorityNormal, memT0),
		newHint("h2", memory.PriorityHigh, memT0.Add(time.Second)),
		newHint("h3", memory.PriorityLow, memT0),
		newHint("h4", memory.PriorityNormal, memT0.Add(2*time.Second)),
	} {
		if err := s.EnqueueHint(ctx, "acme", h); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.EnqueueHint(ctx, "acme", newHint("h1", "", memT0)); !errors.Is(err, memory.ErrExists) {
		t.Errorf("EnqueueHint of a taken id = %v", err)
	}
	if err := s.EnqueueHint(ctx, "globex", newHint("h1", "", memT0.Add(3*time.Second))); err != nil {
		t.Fatal(err)
	}
	got, err := s.Hint(ctx, "acme", "h1")
	if err != nil {
		t.Fatal(err)
	}
	want := newHint("h1", memory.PriorityNormal, memT0)
	want.Tenant, want.Status = "acme", memory.HintPending
	if d := gocmp.Diff(want, got); d != "" {
		t.Errorf("Hint (-want +got):\n%s", d)
	}
	if _, err := s.Hint(ctx, "initech", "h1"); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("Hint from another tenant = %v", err)
	}

	lease := 30 * time.Second
	claimed, err := s.ClaimHints(ctx, memT0.Add(time.Minute), lease, 3)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, h := range claimed {
		keys = append(keys, h.Tenant+"/"+h.ID)
		if h.Attempts != 1 {
			t.Errorf("%s attempts %d, want 1", h.ID, h.Attempts)
		}
	}
	if !slices.Equal(keys, []string{"acme/h2", "acme/h1", "acme/h4"}) {
		t.Errorf("ClaimHints = %v, want high priority first, then oldest", keys)
	}
	// Leased hints are not handed out again until the lease lapses.
	if more, _ := s.ClaimHints(ctx, memT0.Add(time.Minute+time.Second), lease, 10); len(more) != 2 {
		t.Errorf("second claim got %d hints, want the 2 unleased ones", len(more))
	}
	if err := s.ResolveHint(ctx, "acme", "h2", memory.HintConsolidated, memT0.Add(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := s.ResolveHint(ctx, "acme", "h2", memory.HintDeadLettered, memT0.Add(2*time.Minute)); !errors.Is(err, memory.ErrConflict) {
		t.Errorf("second ResolveHint = %v, want ErrConflict", err)
	}
	if err := s.ResolveHint(ctx, "acme", "h1", memory.HintPending, memT0); !errors.Is(err, memory.ErrInvalid) {
		t.Errorf("ResolveHint to pending = %v, want ErrInvalid", err)
	}
	if err := s.ResolveHint(ctx, "initech", "h1", memory.HintConsolidated, memT0); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("ResolveHint from another tenant = %v", err)
	}
	// After the lease, unresolved hints come back with another attempt.
	again, _ := s.ClaimHints(ctx, memT0.Add(time.Minute+lease), lease, 10)
	var ids []string
	for _, h := range again {
		ids = append(ids, h.ID)
		if h.ID == "h1" && h.Attempts != 2 {
			t.Errorf("h1 attempts %d, want 2", h.Attempts)
		}
	}
	if !slices.Equal(ids, []string{"h1", "h4"}) {
		t.Errorf("claim after the lease = %v, want h1, h4", ids)
	}
	st, _ := s.Hint(ctx, "acme", "h2")
	resolved := memT0.Add(2 * time.Minute)
	sub := memT0.Add(time.Second)
	if d := gocmp.Diff(memory.HintStatus{HintID: "h2", Status: memory.HintConsolidated, SubmittedAt: &sub, ResolvedAt: &resolved}, st.StatusResult()); d != "" {
		t.Errorf("hint status (-want +got):\n%s", d)
	}
}

func testMemHintRetention(t *testing.T, s memory.Store) {
	ctx := ctxT(t)
	for _, h := range []*memory.Hint{newHint("old", "", memT0), newHint("young", "", memT0.Add(30*time.Minute)), newHint("done", "", memT0)} {
		if err := s.EnqueueHint(ctx, "acme", h); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.ResolveHint(ctx, "acme", "done", memory.HintDeadLettered, memT0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	// Pending for an hour: expired.
	at := memT0.Add(memory.HintPendingLimit)
	sw, err := s.Sweep(ctx, at, 100)
	if err != nil || sw.HintsExpired != 1 {
		t.Fatalf("Sweep = %+v, %v; want 1 hint expired", sw, err)
	}
	if h, _ := s.Hint(ctx, "acme", "old"); h == nil || h.Status != memory.HintExpired || !h.ResolvedAt.Equal(at) {
		t.Errorf("old hint = %+v, want expired at %v", h, at)
	}
	if h, _ := s.Hint(ctx, "acme", "young"); h == nil || h.Status != memory.HintPending {
		t.Errorf("young hint = %+v, want pending", h)
	}
	if claimed, _ := s.ClaimHints(ctx, at, time.Minute, 10); len(claimed) != 1 || claimed[0].ID != "young" {
		t.Errorf("an expired hint was claimed: %+v", claimed)
	}
	// Resolved states are readable for 24h after resolution, then gone.
	if sw, _ := s.Sweep(ctx, memT0.Add(time.Minute+memory.StatusRetention), 100); sw.Hints != 1 {
		t.Errorf("Sweep 24h after dead-lettering removed %d hints, want 1", sw.Hints)
	}
	if _, err := s.Hint(ctx, "acme", "done"); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("Hint after retention = %v", err)
	}
	if _, err := s.Hint(ctx, "acme", "old"); err != nil {
		t.Errorf("expired hint gone before its 24h: %v", err)
	}
}

func testMemMessages(t *testing.T, s memory.Store) {
	ctx := ctxT(t)
	var all []memory.LiveMessage
	for i := range 5 {
		m := memory.LiveMessage{MessageID: fmt.Sprintf("m%d", i), Role: "user", Content: fmt.Sprintf("turn %d", i), Timestamp: memT0.Add(time.Duration(i) * time.Second)}
		if i%2 == 1 {
			m.Role = "assistant"
		}
		all = append(all, m)
		if err := s.AppendMessage(ctx, "acme", "conv-1", m); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.AppendMessage(ctx, "acme", "conv-2", memory.LiveMessage{MessageID: "x", Role: "user", Content: "other", Timestamp: memT0}); err != nil {
		t.Fatal(err)
	}
	got, err := s.RecentMessages(ctx, "acme", "conv-1", 3)
	if err != nil {
		t.Fatal(err)
	}
	if d := gocmp.Diff(all[2:], got); d != "" {
		t.Errorf("RecentMessages(3) (-want +got):\n%s", d)
	}
	if got, _ := s.RecentMessages(ctx, "acme", "conv-1", 100); len(got) != 5 {
		t.Errorf("RecentMessages(100) = %d messages", len(got))
	}
	if got, _ := s.RecentMessages(ctx, "globex", "conv-1", 10); len(got) != 0 {
		t.Errorf("another tenant read %d messages", len(got))
	}
}

// TestMemoryReopen checks that acknowledged memory writes survive closing
// and reopening the database: a memory, a proposal, a hint and a message
// written through one handle are read back through a new one. open must
// return a fresh handle on the same database at every call, and its
// close function.
func TestMemoryReopen(t *testing.T, open func(t *testing.T) (memory.Store, func())) {
	ctx := ctxT(t)
	s, closeDB := open(t)
	m := newMemory("m1", agentA, "survives a restart", memT0)
	m.Tags = []string{"durable"}
	mustPutMem(t, s, "acme", m)
	mustPutProposal(t, s, "acme", &memory.Proposal{ID: "prop_1", Memory: *storedMem(m), CreatedAt: memT0})
	if err := s.EnqueueHint(ctx, "acme", newHint("h1", "", memT0)); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendMessage(ctx, "acme", "c", memory.LiveMessage{MessageID: "x", Role: "user", Content: "hi", Timestamp: memT0}); err != nil {
		t.Fatal(err)
	}
	closeDB()

	s, closeDB = open(t)
	defer closeDB()
	got, err := s.Get(ctx, "acme", "m1", memT0)
	if err != nil {
		t.Fatalf("Get after reopen: %v", err)
	}
	if d := gocmp.Diff(storedMem(m), got); d != "" {
		t.Errorf("memory after reopen (-want +got):\n%s", d)
	}
	f := memory.Filter{Partition: agentA, Now: memT0}
	if hs, _ := s.SearchKeyword(ctx, "acme", f, memory.Terms("restart"), 10); !slices.Equal(hitIDs(hs), []string{"m1"}) {
		t.Errorf("keyword index after reopen: %v", hitIDs(hs))
	}
	if hs, _ := s.SearchVector(ctx, "acme", f, *m.Embedding, 10); !slices.Equal(hitIDs(hs), []string{"m1"}) {
		t.Errorf("vectors after reopen: %v", hitIDs(hs))
	}
	if _, err := s.Proposal(ctx, "acme", "prop_1"); err != nil {
		t.Errorf("proposal after reopen: %v", err)
	}
	if _, err := s.Hint(ctx, "acme", "h1"); err != nil {
		t.Errorf("hint after reopen: %v", err)
	}
	if msgs, _ := s.RecentMessages(ctx, "acme", "c", 10); len(msgs) != 1 {
		t.Errorf("messages after reopen: %d", len(msgs))
	}
}

func testMemTermStats(t *testing.T, s memory.Store) {
	ctx := ctxT(t)
	mustPutMem(t, s, "acme",
		newMemory("m1", agentA, "Caroline went to the support group", memT0),
		newMemory("m2", agentA, "Caroline paints sunsets", memT0),
		newMemory("m3", agentA, "Melanie paints too", memT0),
		newMemory("m4", agentB, "Caroline Caroline Caroline", memT0),
	)
	mustPutMem(t, s, "globex", newMemory("m1", agentA, "Caroline Caroline", memT0))
	docs, df, err := s.TermStats(ctx, "acme", agentA, memory.Terms("Caroline paints a support group with nobody"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"carolin": 2, "paint": 2, "support": 1, "group": 1, "nobodi": 0}
	if docs != 3 {
		t.Errorf("docs = %d, want 3", docs)
	}
	for term, n := range want {
		if df[term] != n {
			t.Errorf("df[%s] = %d, want %d (all %v)", term, df[term], n, df)
		}
	}
	if docs, df, err := s.TermStats(ctx, "initech", agentA, []string{"carolin"}); err != nil || docs != 0 || df["carolin"] != 0 {
		t.Errorf("another tenant: %d %v %v", docs, df, err)
	}
}

func testMemAdjacent(t *testing.T, s memory.Store) {
	ctx := ctxT(t)
	conv := func(id, c string, at time.Duration, typ memory.Type) *memory.Memory {
		m := newMemory(id, agentA, "turn "+id, memT0.Add(at))
		m.ConversationID, m.Type = c, typ
		return m
	}
	// Written out of order; c2 interleaves with c1; same-time turns keep
	// their write order.
	mustPutMem(t, s, "acme",
		conv("a3", "c1", 3*time.Second, ""), conv("a1", "c1", time.Second, ""), conv("b1", "c2", 2*time.Second, ""),
		conv("a2", "c1", 2*time.Second, memory.TypeEpisodic), conv("a4", "c1", 3*time.Second, ""),
		newMemory("lone", agentA, "no conversation", memT0),
	)
	mustPutMem(t, s, "globex", conv("a5", "c1", 4*time.Second, ""))
	f := memory.Filter{Partition: agentA, Now: memT0}
	adj, err := s.Adjacent(ctx, "acme", f, []string{"a1", "a2", "a4", "b1", "lone", "missing"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for id, ms := range adj {
		got[id] = memIDs(ms)
		slices.Sort(got[id])
	}
	want := map[string][]string{"a1": {"a2"}, "a2": {"a1", "a3"}, "a4": {"a3"}}
	if d := gocmp.Diff(want, got); d != "" {
		t.Errorf("Adjacent (-want +got):\n%s", d)
	}
	// The filter applies to the neighbours too.
	f.Type = memory.TypeEpisodic
	if adj, _ := s.Adjacent(ctx, "acme", f, []string{"a1", "a3"}); len(adj["a1"]) != 1 || adj["a1"][0].ID != "a2" || len(adj["a3"]) != 1 {
		t.Errorf("Adjacent with a type filter = %v", adj)
	}
	if adj, _ := s.Adjacent(ctx, "acme", memory.Filter{Partition: agentB, Now: memT0}, []string{"a1"}); len(adj) != 0 {
		t.Errorf("Adjacent from another partition = %v", adj)
	}
}

// testMemRetrieve runs the default stack end to end on the store: the
// memory answering a question is found even when it shares no word with
// it, through its neighbour in the conversation.
func testMemRetrieve(t *testing.T, s memory.Store) {
	ctx := ctxT(t)
	turns := []string{
		"Maya: I finally adopted a rescue greyhound last weekend",
		"Tom: What did you name her?",
		"Maya: Pepper, she loves long walks by the river",
		"Tom: I am learning to play the cello at the community school",
		"Maya: My new job as a pharmacist starts in Leeds",
	}
	for i, c := range turns {
		m := newMemory(fmt.Sprintf("t%d", i), agentA, c, memT0.Add(time.Duration(i)*time.Second))
		m.ConversationID = "conv"
		mustPutMem(t, s, "acme", m)
	}
	mustPutMem(t, s, "acme", newMemory("other", agentB, "Tom: What did you name her? Pepper", memT0))
	f := memory.Filter{Partition: agentA, Now: memT0}
	emb := memEmbedder
	tests := []struct {
		q    string
		want string
		top  int
	}{
		{"Which instrument is Tom learning?", "t3", 1},
		{"Where does Maya work as a pharmacist?", "t4", 1},
		{"What did Maya name her greyhound?", "t2", 3},
	}
	for _, tt := range tests {
		got, err := memory.Retrieve(ctx, s, emb, "acme", f, tt.q, 10, nil)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, r := range got {
			ids = append(ids, r.Memory.ID)
			if r.Score < 0 || r.Score > 1 {
				t.Errorf("%q: score %v outside 0..1", tt.q, r.Score)
			}
		}
		if i := slices.Index(ids, tt.want); i < 0 || i >= tt.top {
			t.Errorf("%q: %v, want %s in the first %d", tt.q, ids, tt.want, tt.top)
		}
		if slices.Contains(ids, "other") {
			t.Errorf("%q: returned another partition's memory", tt.q)
		}
	}
	if got, err := memory.Retrieve(ctx, s, nil, "acme", f, "cello", 1, &memory.RetrieveOptions{Neighbours: -1}); err != nil || len(got) != 1 || got[0].Memory.ID != "t3" {
		t.Errorf("keyword-only Retrieve = %v, %v", got, err)
	}
}

// key is an idempotency key of agent-a in run-1 for one request.
func key(name string) memory.Key {
	return memory.Key{Name: name, Agent: "agent-a", Run: "run-1", Request: "digest-1"}
}
