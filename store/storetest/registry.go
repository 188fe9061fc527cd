package storetest

import (
	"bytes"
	"context"
	"crypto/ecdh"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/ext/usercontext"
	"novaos.dev/novaos/registry"
)

// TestRegistryStore runs the agent-registry Store contract. newStore must
// return a new, empty store each time it is called.
func TestRegistryStore(t *testing.T, newStore func(t *testing.T) registry.Store) {
	t.Run("CreateGet", func(t *testing.T) { testAgentCreateGet(t, newStore(t)) })
	t.Run("CreateDuplicate", func(t *testing.T) { testAgentDuplicate(t, newStore(t)) })
	t.Run("GetMissing", func(t *testing.T) { testAgentMissing(t, newStore(t)) })
	t.Run("Update", func(t *testing.T) { testAgentUpdate(t, newStore(t)) })
	t.Run("Rename", func(t *testing.T) { testAgentRename(t, newStore(t)) })
	t.Run("Delete", func(t *testing.T) { testAgentDelete(t, newStore(t)) })
	t.Run("List", func(t *testing.T) { testAgentList(t, newStore(t)) })
	t.Run("ReturnsCopies", func(t *testing.T) { testAgentCopies(t, newStore(t)) })
	t.Run("ConcurrentCreate", func(t *testing.T) { testAgentConcurrentCreate(t, newStore(t)) })
	t.Run("Version", func(t *testing.T) { testAgentVersion(t, newStore(t)) })
	t.Run("RecipientKeys", func(t *testing.T) { testAgentRecipientKeys(t, newStore(t)) })
}

func testAgentVersion(t *testing.T, s registry.Store) {
	ctx := ctxT(t)
	version := func() int64 {
		t.Helper()
		v, err := s.Version(ctx)
		if err != nil {
			t.Fatalf("Version: %v", err)
		}
		return v
	}
	last := version()
	step := func(what string, write func() error) {
		t.Helper()
		if err := write(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if v := version(); v <= last {
			t.Errorf("after %s the version is %d, want more than %d", what, v, last)
		} else {
			last = v
		}
	}
	step("Create", func() error { return s.Create(ctx, testAgent(agentID(1), "alpha")) })
	step("Create", func() error { return s.Create(ctx, testAgent(agentID(2), "beta")) })
	step("Update", func() error { return s.Update(ctx, testAgent(agentID(1), "gamma")) })
	if _, err := s.Get(ctx, agentID(1)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.List(ctx, "", 10); err != nil {
		t.Fatal(err)
	}
	if v := version(); v != last {
		t.Errorf("reads moved the version from %d to %d", last, v)
	}
	step("Delete", func() error { return s.Delete(ctx, agentID(2)) })
}

var agentTime = time.Date(2026, 3, 1, 12, 0, 0, 123_000_000, time.UTC)

// testAgent is a record with every field set.
func testAgent(id, name string) *registry.Agent {
	return &registry.Agent{
		ID:           id,
		Name:         name,
		URL:          "https://" + name + ".agents.example.com/a2a",
		Description:  "Agent " + name + " — émoji 🚀, quotes \" and <tags>",
		Capabilities: []string{"Web Scraping", "data_analysis"},
		Domains:      []string{"finance"},
		Tags:         []string{"beta", "eu"},
		Status:       registry.StatusActive,
		Metadata: map[string]any{
			"capabilities": []any{"summarize", map[string]any{"name": "translate", "description": "any language"}},
			"owner":        "team-a",
			"weight":       1.5,
			"nested":       map[string]any{"ok": true, "list": []any{1.0, "two", nil}},
		},
		RecipientKeys: []json.RawMessage{recipientJWK(1)},
		CreatedAt:     agentTime,
		UpdatedAt:     agentTime.Add(time.Second),
	}
}

// recipientJWK is the public JWK of a fixed X25519 key, as the registry
// keeps an agent's recipient keys.
func recipientJWK(n byte) json.RawMessage {
	priv, err := ecdh.X25519().NewPrivateKey(bytes.Repeat([]byte{n}, 32))
	if err != nil {
		panic(err)
	}
	k, err := usercontext.NewPrivateKey("", priv)
	if err != nil {
		panic(err)
	}
	b, err := k.PublicJWK()
	if err != nil {
		panic(err)
	}
	return b
}

// testAgentRecipientKeys: a key rotation (one key, then two, then the new
// one alone) and the removal of every key survive the store.
func testAgentRecipientKeys(t *testing.T, s registry.Store) {
	a := testAgent(agentID(1), "mailer")
	mustCreateAgents(t, s, a)
	wantAgent(t, s, a)
	for _, keys := range [][]json.RawMessage{
		{recipientJWK(1), recipientJWK(2)},
		{recipientJWK(2)},
		nil,
	} {
		a = a.Clone()
		a.RecipientKeys = keys
		a.UpdatedAt = a.UpdatedAt.Add(time.Minute)
		if err := s.Update(ctxT(t), a); err != nil {
			t.Fatalf("Update with %d keys: %v", len(keys), err)
		}
		wantAgent(t, s, a)
	}
	list, err := s.List(ctxT(t), "", 10)
	if err != nil || len(list) != 1 || len(list[0].RecipientKeys) != 0 {
		t.Errorf("List after removing the keys: %v, %v", list, err)
	}
}

func agentID(n int) string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", n) }

func mustCreateAgents(t *testing.T, s registry.Store, agents ...*registry.Agent) {
	t.Helper()
	for _, a := range agents {
		if err := s.Create(ctxT(t), a); err != nil {
			t.Fatalf("Create(%s): %v", a.Name, err)
		}
	}
}

func wantAgent(t *testing.T, s registry.Store, want *registry.Agent) {
	t.Helper()
	got, err := s.Get(ctxT(t), want.ID)
	if err != nil {
		t.Fatalf("Get(%s): %v", want.ID, err)
	}
	if diff := gocmp.Diff(want, got); diff != "" {
		t.Errorf("Get(%s) (-want +got):\n%s", want.ID, diff)
	}
	got, err = s.GetByName(ctxT(t), want.Name)
	if err != nil {
		t.Fatalf("GetByName(%s): %v", want.Name, err)
	}
	if diff := gocmp.Diff(want, got); diff != "" {
		t.Errorf("GetByName(%s) (-want +got):\n%s", want.Name, diff)
	}
}

func testAgentCreateGet(t *testing.T, s registry.Store) {
	full := testAgent(agentID(1), "alpha")
	bare := &registry.Agent{ID: agentID(2), Name: "bare", URL: "http://127.0.0.1:9/"}
	mustCreateAgents(t, s, full, bare)
	wantAgent(t, s, testAgent(agentID(1), "alpha"))
	wantAgent(t, s, &registry.Agent{ID: agentID(2), Name: "bare", URL: "http://127.0.0.1:9/"})
}

func testAgentDuplicate(t *testing.T, s registry.Store) {
	mustCreateAgents(t, s, testAgent(agentID(1), "alpha"))
	for _, a := range []*registry.Agent{testAgent(agentID(2), "alpha"), testAgent(agentID(1), "beta")} {
		if err := s.Create(ctxT(t), a); !errors.Is(err, registry.ErrExists) {
			t.Errorf("Create(%s, %s) = %v, want ErrExists", a.ID, a.Name, err)
		}
	}
	wantAgent(t, s, testAgent(agentID(1), "alpha"))
	if _, err := s.GetByName(ctxT(t), "beta"); !errors.Is(err, registry.ErrNotFound) {
		t.Errorf("GetByName(beta) after refused Create = %v, want ErrNotFound", err)
	}
}

func testAgentMissing(t *testing.T, s registry.Store) {
	mustCreateAgents(t, s, testAgent(agentID(1), "alpha"))
	ctx := ctxT(t)
	if _, err := s.Get(ctx, agentID(9)); !errors.Is(err, registry.ErrNotFound) {
		t.Errorf("Get(missing) = %v, want ErrNotFound", err)
	}
	if _, err := s.GetByName(ctx, "nobody"); !errors.Is(err, registry.ErrNotFound) {
		t.Errorf("GetByName(missing) = %v, want ErrNotFound", err)
	}
	if _, err := s.GetByName(ctx, "bad\x00name\xff"); !errors.Is(err, registry.ErrNotFound) {
		t.Errorf("GetByName(invalid text) = %v, want ErrNotFound", err)
	}
	if err := s.Update(ctx, testAgent(agentID(9), "ghost")); !errors.Is(err, registry.ErrNotFound) {
		t.Errorf("Update(missing) = %v, want ErrNotFound", err)
	}
	if err := s.Delete(ctx, agentID(9)); !errors.Is(err, registry.ErrNotFound) {
		t.Errorf("Delete(missing) = %v, want ErrNotFound", err)
	}
}

func testAgentUpdate(t *testing.T, s registry.Store) {
	mustCreateAgents(t, s, testAgent(agentID(1), "alpha"))
	repl := &registry.Agent{ID: agentID(1), Name: "alpha", URL: "https://new.example.com/", Status: registry.StatusInactive,
		CreatedAt: agentTime, UpdatedAt: agentTime.Add(time.Hour)}
	if err := s.Update(ctxT(t), repl); err != nil {
		t.Fatalf("Update: %v", err)
	}
	wantAgent(t, s, &registry.Agent{ID: agentID(1), Name: "alpha", URL: "https://new.example.com/", Status: registry.StatusInactive,
		CreatedAt: agentTime, UpdatedAt: agentTime.Add(time.Hour)})
}

func testAgentRename(t *testing.T, s registry.Store) {
	mustCreateAgents(t, s, testAgent(agentID(1), "alpha"), testAgent(agentID(2), "beta"))
	ctx := ctxT(t)
	clash := testAgent(agentID(1), "beta")
	if err := s.Update(ctx, clash); !errors.Is(err, registry.ErrExists) {
		t.Fatalf("Update(rename onto beta) = %v, want ErrExists", err)
	}
	wantAgent(t, s, testAgent(agentID(1), "alpha"))
	if err := s.Update(ctx, testAgent(agentID(1), "gamma")); err != nil {
		t.Fatalf("Update(rename to gamma): %v", err)
	}
	wantAgent(t, s, testAgent(agentID(1), "gamma"))
	if _, err := s.GetByName(ctx, "alpha"); !errors.Is(err, registry.ErrNotFound) {
		t.Errorf("GetByName(old name) = %v, want ErrNotFound", err)
	}
	// The old name is free again.
	mustCreateAgents(t, s, testAgent(agentID(3), "alpha"))
	if got := listNames(t, s, "", 10); !gocmp.Equal(got, []string{"alpha", "beta", "gamma"}) {
		t.Errorf("List after rename = %v", got)
	}
}

func testAgentDelete(t *testing.T, s registry.Store) {
	mustCreateAgents(t, s, testAgent(agentID(1), "alpha"), testAgent(agentID(2), "beta"))
	ctx := ctxT(t)
	if err := s.Delete(ctx, agentID(1)); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := s.Get(ctx, agentID(1)); !errors.Is(err, registry.ErrNotFound) {
		t.Errorf("Get(deleted) = %v, want ErrNotFound", err)
	}
	if err := s.Delete(ctx, agentID(1)); !errors.Is(err, registry.ErrNotFound) {
		t.Errorf("Delete(deleted) = %v, want ErrNotFound", err)
	}
	wantAgent(t, s, testAgent(agentID(2), "beta"))
	mustCreateAgents(t, s, testAgent(agentID(1), "alpha")) // id and name reusable
	wantAgent(t, s, testAgent(agentID(1), "alpha"))
}

func listNames(t *testing.T, s registry.Store, after string, limit int) []string {
	t.Helper()
	got, err := s.List(ctxT(t), after, limit)
	if err != nil {
		t.Fatalf("List(%q, %d): %v", after, limit, err)
	}
	names := []string{}
	for _, a := range got {
		names = append(names, a.Name)
	}
	return names
}

func testAgentList(t *testing.T, s registry.Store) {
	if got := listNames(t, s, "", 10); len(got) != 0 {
		t.Fatalf("List(empty store) = %v", got)
	}
	// Byte order: '-' < '.' < digits < '_' < lower case.
	names := []string{"b-2", "a", "b", "b.1", "b_3", "z9", "0start", "a-b"}
	for i, n := range names {
		mustCreateAgents(t, s, testAgent(agentID(i+1), n))
	}
	tests := []struct {
		after string
		limit int
		want  []string
	}{
		{"", 100, []string{"0start", "a", "a-b", "b", "b-2", "b.1", "b_3", "z9"}},
		{"", 3, []string{"0start", "a", "a-b"}},
		{"a-b", 3, []string{"b", "b-2", "b.1"}},
		{"b", 100, []string{"b-2", "b.1", "b_3", "z9"}},
		{"aa", 2, []string{"b", "b-2"}},
		{"z9", 10, []string{}},
	}
	for _, tc := range tests {
		if diff := gocmp.Diff(tc.want, listNames(t, s, tc.after, tc.limit)); diff != "" {
			t.Errorf("List(%q, %d) (-want +got):\n%s", tc.after, tc.limit, diff)
		}
	}
	full, err := s.List(ctxT(t), "", 1)
	if err != nil || len(full) != 1 {
		t.Fatalf("List = %v, %v", full, err)
	}
	if diff := gocmp.Diff(testAgent(agentID(7), "0start"), full[0]); diff != "" {
		t.Errorf("List returns the whole record (-want +got):\n%s", diff)
	}
}

func testAgentCopies(t *testing.T, s registry.Store) {
	in := testAgent(agentID(1), "alpha")
	mustCreateAgents(t, s, in)
	in.Tags[0] = "mutated"
	in.Metadata["owner"] = "mutated"
	in.RecipientKeys[0][0] = '['
	got, err := s.Get(ctxT(t), agentID(1))
	if err != nil {
		t.Fatal(err)
	}
	got.Capabilities[0] = "mutated"
	got.Metadata["nested"].(map[string]any)["ok"] = false
	wantAgent(t, s, testAgent(agentID(1), "alpha"))
}

func testAgentConcurrentCreate(t *testing.T, s registry.Store) {
	const n = 16
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			errs[i] = s.Create(context.Background(), testAgent(agentID(i+1), "contested"))
		})
	}
	wg.Wait()
	ok := 0
	for i, err := range errs {
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, registry.ErrExists):
			t.Errorf("Create %d: %v, want nil or ErrExists", i, err)
		}
	}
	if ok != 1 {
		t.Errorf("%d concurrent creates of one name succeeded, want 1", ok)
	}
	if got := listNames(t, s, "", 100); !gocmp.Equal(got, []string{"contested"}) {
		t.Errorf("List = %v, want [contested]", got)
	}
}

// BenchmarkRegistryFind stores 1,000 agents with five capabilities each
// (500 distinct names) in s, then measures what a two-capability find
// (GET /api/v1/agents/find) costs apart from HTTP: "cold" is the first
// find after a write, which reads every record through s (Version, then
// List in batches) and indexes them before matching; "exact" and "fuzzy"
// match against the index a current snapshot keeps.
func BenchmarkRegistryFind(b *testing.B, s registry.Store) {
	ctx := context.Background()
	areas := []string{"web", "data", "image", "text", "code", "speech", "video", "api", "report", "search",
		"fraud", "risk", "price", "route", "stock", "email", "chat", "doc", "log", "metric"}
	tasks := []string{"scraping", "analysis", "generation", "translation", "review", "synthesis", "summary",
		"integration", "forecast", "detection", "ranking", "planning", "extraction", "classification", "monitoring",
		"tagging", "cleaning", "indexing", "routing", "scoring", "auditing", "labelling", "parsing", "rendering", "tuning"}
	now := time.Now().UTC().Truncate(time.Millisecond)
	for i := range 1000 {
		a := &registry.Agent{ID: agentID(i + 1), Name: fmt.Sprintf("agent-%04d", i), URL: fmt.Sprintf("https://a%d.example.com/", i),
			Status: registry.StatusActive, CreatedAt: now, UpdatedAt: now}
		for k := range 5 {
			j := (i*5 + k*37) % 500
			a.Capabilities = append(a.Capabilities, areas[j%len(areas)]+" "+tasks[j/len(areas)])
		}
		if err := s.Create(ctx, a); err != nil {
			b.Fatal(err)
		}
	}
	want := []string{"web scraping", "data analytics"}
	// index reads every record as the registry service does after a write.
	index := func() *registry.Index {
		if _, err := s.Version(ctx); err != nil {
			b.Fatal(err)
		}
		var all []*registry.Agent
		for after := ""; ; {
			batch, err := s.List(ctx, after, 500)
			if err != nil {
				b.Fatal(err)
			}
			all = append(all, batch...)
			if len(batch) < 500 {
				return registry.NewIndex(all)
			}
			after = batch[len(batch)-1].Name
		}
	}
	b.Run("fuzzy-cold", func(b *testing.B) {
		for b.Loop() {
			index().Match(want, registry.MatchAll, registry.DefaultThreshold)
		}
	})
	ix := index()
	for _, fuzzy := range []bool{false, true} {
		name, threshold := "exact", 1.0
		if fuzzy {
			name, threshold = "fuzzy", registry.DefaultThreshold
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				ix.Match(want, registry.MatchAll, threshold)
			}
		})
	}
}
