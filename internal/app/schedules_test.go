package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"novaos.dev/novaos/agent"
	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/heartbeat"
	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/app"
	"novaos.dev/novaos/internal/schedsvc"
	"novaos.dev/novaos/llm"
	"novaos.dev/novaos/llm/llmtest"
	"novaos.dev/novaos/store/sqlite"
)

// A heartbeat schedule on the server, end to end: a tenant's user
// installs the hosted echo agent, schedules it with the heartbeat client,
// and at the tick the agent runs with the task as its input, as the user.
func TestSchedulesEndToEnd(t *testing.T) {
	clock := schedsvc.NewManualClock(time.Date(2026, 7, 1, 10, 0, 30, 0, time.UTC))
	srv := start(t, &app.Options{DataDir: t.TempDir(), Schedules: app.SchedulesOptions{Clock: clock}})
	ctx := context.Background()
	gw, hb, inst := scheduleClients(t, srv, []string{"runs:*", "instances:*", "schedules:*"},
		gateway.InstallRequest{Name: "echo", Hosted: "echo"})
	created, err := hb.CreateConfig(ctx, "echo", inst.ID, heartbeat.CreateRequest{CronExpression: "*/5 * * * *",
		AgentImage: "registry.example.com/agents/echo", AgentImageTag: "1.0.0", TaskContent: "heartbeat check",
		Budget: &heartbeat.Budget{MaxDailyRuns: 10}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hb.CreateConfig(ctx, "echo", inst.ID, heartbeat.CreateRequest{CronExpression: "* * * * *",
		AgentImage: "i", AgentImageTag: "t", TaskContent: "x", Budget: &heartbeat.Budget{MaxDailyRuns: 1}}); !errors.Is(err, heartbeat.ErrExists) {
		t.Errorf("a second config for the instance: %v", err)
	}
	tick := time.Date(2026, 7, 1, 10, 5, 0, 0, time.UTC)
	awaitTick(t, clock, tick)
	runID := schedsvc.RunIDFor(created.ConfigID, tick)
	var last gateway.StreamEvent
	for ev, err := range gw.EventsWithReconnect(ctx, runID, nil) {
		if err != nil {
			t.Fatal(err)
		}
		last = ev
	}
	if !last.IsTerminal() || last.IsFailure() {
		t.Fatalf("the run ended on %+v", last)
	}
	run, err := gw.GetRun(ctx, runID)
	if err != nil {
		t.Fatal(err)
	}
	if run.Input != "heartbeat check" || run.Caller.UserID != "alice" || run.Status != gateway.StatusCompleted {
		t.Errorf("the scheduled run: %+v", run)
	}
	list, err := hb.ListConfigs(ctx, "echo", inst.ID)
	if err != nil || len(list) != 1 {
		t.Fatalf("ListConfigs = %+v, %v", list, err)
	}
	s := list[0].Schedules[0]
	if !s.LastRunAt.Equal(tick) || !s.NextRunAt.Equal(tick.Add(5*time.Minute)) || s.LastFire.RunID != runID {
		t.Errorf("schedule after the tick: %+v", s)
	}
}

// A schedule's daily token cap is checked against the LLM gateway's
// ledger: once its runs' calls used the cap, the next tick is skipped.
func TestSchedulesTokenBudget(t *testing.T) {
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "novaos.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	st := db.Stores()
	clock := schedsvc.NewManualClock(time.Date(2026, 7, 1, 10, 0, 30, 0, time.UTC))
	srv := start(t, &app.Options{Stores: st, Schedules: app.SchedulesOptions{Clock: clock}})
	ctx := t.Context()
	_, hb, inst := scheduleClients(t, srv, []string{"instances:*", "schedules:*"}, gateway.InstallRequest{Name: "echo", Hosted: "echo"})
	created, err := hb.CreateConfig(ctx, "echo", inst.ID, heartbeat.CreateRequest{CronExpression: "* * * * *",
		AgentImage: "registry.example.com/agents/echo", AgentImageTag: "1.0.0", TaskContent: "heartbeat check",
		Budget: &heartbeat.Budget{MaxDailyRuns: 100, MaxDailyTokens: 100}})
	if err != nil {
		t.Fatal(err)
	}
	first := time.Date(2026, 7, 1, 10, 1, 0, 0, time.UTC)
	awaitTick(t, clock, first)
	// The first run's model calls, as the LLM gateway records them.
	run := schedsvc.RunIDFor(created.ConfigID, first)
	var uses []llm.CounterUse
	for _, c := range llm.CountersOf(llm.Keys{TenantID: "acme", InstanceID: inst.ID, RunID: run, Day: llm.DayOf(first)}) {
		uses = append(uses, llm.CounterUse{Counter: c, Used: llm.Amount{Tokens: 150}})
	}
	if _, err := st.LLM.Commit(ctx, llm.Batch{Unleased: uses, At: first, Expires: first.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	awaitTick(t, clock, first.Add(time.Minute))
	list, err := hb.ListConfigs(ctx, "echo", inst.ID)
	if err != nil || len(list) != 1 {
		t.Fatalf("ListConfigs = %+v, %v", list, err)
	}
	lf := list[0].Schedules[0].LastFire
	if lf == nil || lf.Outcome != heartbeat.OutcomeSkippedBudget || !strings.Contains(lf.Reason, "100 tokens is spent (150 used)") {
		t.Errorf("the second tick: %+v", lf)
	}
}

// committedRuns is an LLM store that tells when a commit counts a run's
// model tokens, and how many each run has committed so far.
type committedRuns struct {
	llm.Store
	mu      sync.Mutex
	tokens  map[string]int64
	commits chan struct{}
}

func (c *committedRuns) Commit(ctx context.Context, b llm.Batch) ([]llm.LeaseResult, error) {
	res, err := c.Store.Commit(ctx, b)
	if err != nil {
		return res, err
	}
	c.mu.Lock()
	for _, u := range b.Leases {
		if u.Counter.Scope == llm.ScopeRun {
			c.tokens[u.Counter.ID] += u.Used.Tokens
		}
	}
	for _, u := range b.Unleased {
		if u.Counter.Scope == llm.ScopeRun {
			c.tokens[u.Counter.ID] += u.Used.Tokens
		}
	}
	c.mu.Unlock()
	select {
	case c.commits <- struct{}{}:
	default:
	}
	return res, nil
}

// waitFor waits until run's commits count want tokens.
func (c *committedRuns) waitFor(t *testing.T, run string, want int64) {
	t.Helper()
	for {
		c.mu.Lock()
		got := c.tokens[run]
		c.mu.Unlock()
		if got >= want {
			return
		}
		select {
		case <-c.commits:
		case <-time.After(time.Minute): // a failure bound
			t.Fatalf("run %s's commits count %d tokens after a minute, want %d", run, got, want)
		}
	}
}

// spender's skill asks a model (20 tokens an answer) until the LLM
// gateway refuses a call as over budget, or firstCalls times in its first
// run, and says how many calls went through and why it stopped.
func spender(firstCalls int) *agent.Agent {
	var runs atomic.Int32
	a := agent.New("spender", "1.0.0", nil)
	a.MustRegister(agent.Skill{ID: "spend", Handler: func(c *agent.Context) (agent.Result, error) {
		m, err := llm.From(c, nil)
		if err != nil {
			return agent.Result{}, err
		}
		most := 100
		if runs.Add(1) == 1 {
			most = firstCalls
		}
		for calls := 0; calls < most; calls++ {
			_, err := m.ChatCompletion(c, &llm.ChatCompletionRequest{Model: llmtest.ModelChat, MaxTokens: 20,
				Messages: []llm.Message{{Role: llm.RoleUser, Content: llm.Text("Say hello.")}}})
			if e := (*llm.APIError)(nil); errors.As(err, &e) && e.BudgetExceeded() {
				return agent.Result{Output: fmt.Sprintf("%d calls; refused: %s", calls, e.Message)}, nil
			}
			if err != nil {
				return agent.Result{}, err
			}
		}
		return agent.Result{Output: fmt.Sprintf("%d calls", most)}, nil
	}})
	return a
}

// A scheduled run's model calls stop at what the schedule's daily token
// cap has left when it starts: the LLM gateway holds the run to it as
// its own limit, and refuses the call past it naming the schedule's
// limit.
func TestSchedulesRunStopsAtTheDaysTokens(t *testing.T) {
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "novaos.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	st := db.Stores()
	committed := &committedRuns{Store: st.LLM, tokens: map[string]int64{}, commits: make(chan struct{}, 1)}
	st.LLM = committed
	// Answers of 100 words, cut at max_tokens: a call uses 2 prompt
	// tokens and 20 of the answer.
	const perCall = 22
	provider := llmtest.NewServer(&llmtest.Options{Reply: func(*llm.ChatCompletionRequest) string { return strings.Repeat("word ", 100) }})
	t.Cleanup(provider.Close)
	clock := schedsvc.NewManualClock(time.Date(2026, 7, 1, 10, 0, 30, 0, time.UTC))
	srv := start(t, &app.Options{Stores: st, Schedules: app.SchedulesOptions{Clock: clock}, LLM: app.LLMOptions{AllowPrivate: true},
		Agents: app.AgentOptions{Hosted: map[string]app.Agent{"spender": spender(3)}}})
	ctx := t.Context()
	admin := mint(t, srv, identity.Claims{TenantID: "acme", Subject: "ops", Scopes: []string{llm.ScopeAdmin}})
	// The provider first: a route naming a provider not there is refused.
	for _, put := range []struct {
		path string
		body any
	}{
		{llm.ProvidersPath + "/fake", llm.ProviderRequest{BaseURL: provider.BaseURL()}},
		{llm.ModelsPath + "/" + llmtest.ModelChat, llm.RouteRequest{Targets: []llm.Target{{Provider: "fake", Model: llmtest.ModelChat}}}},
	} {
		path := put.path
		data, _ := json.Marshal(put.body)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPut, srv.URL()+path, bytes.NewReader(data))
		req.Header.Set("Authorization", "Bearer "+admin.Reveal())
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			t.Fatalf("PUT %s: %s", path, resp.Status)
		}
	}
	gw, hb, inst := scheduleClients(t, srv, []string{"runs:*", "instances:*", "schedules:*"},
		gateway.InstallRequest{Name: "spender", Hosted: "spender", Scopes: []string{"llm:model:*"}})
	// The day's cap leaves 200 tokens after the first run's three calls.
	const dayCap = 3*perCall + 200
	created, err := hb.CreateConfig(ctx, "spender", inst.ID, heartbeat.CreateRequest{CronExpression: "* * * * *",
		AgentImage: "registry.example.com/agents/spender", AgentImageTag: "1.0.0", TaskContent: "spend",
		Budget: &heartbeat.Budget{MaxDailyRuns: 100, MaxDailyTokens: dayCap}})
	if err != nil {
		t.Fatal(err)
	}
	// fire moves the clock to a tick and follows its run to its end.
	fire := func(at time.Time) *gateway.Run {
		t.Helper()
		awaitTick(t, clock, at)
		id := schedsvc.RunIDFor(created.ConfigID, at)
		for _, err := range gw.EventsWithReconnect(ctx, id, nil) {
			if err != nil {
				t.Fatal(err)
			}
		}
		run, err := gw.GetRun(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if run.Status != gateway.StatusCompleted {
			t.Fatalf("run %s ended %s: %s", id, run.Status, run.Reason)
		}
		return run
	}
	first := fire(time.Date(2026, 7, 1, 10, 1, 0, 0, time.UTC))
	if first.Output != "3 calls" || first.LLMLimit.MaxTokens != dayCap {
		t.Fatalf("the first run: %q, limit %+v, want 3 calls under the whole day's %d", first.Output, first.LLMLimit, dayCap)
	}
	// The next tick's budget check reads the first run's use once the
	// gateway has written it.
	committed.waitFor(t, first.ID, 3*perCall)
	second := fire(time.Date(2026, 7, 1, 10, 2, 0, 0, time.UTC))
	if second.LLMLimit.MaxTokens != 200 {
		t.Errorf("the second run's limit %+v, want the 200 tokens the day has left", second.LLMLimit)
	}
	var calls int
	_, reason, found := strings.Cut(second.Output, " calls; refused: ")
	if _, err := fmt.Sscanf(second.Output, "%d calls", &calls); err != nil || !found {
		t.Fatalf("the second run: %q, want its calls refused at the day's limit", second.Output)
	}
	if calls < 1 || calls*perCall > 200 ||
		!strings.Contains(reason, "The run's schedule limit (what the schedule's daily token budget had left when the run started) is spent: ") ||
		!strings.Contains(reason, fmt.Sprintf("%d tokens of 200 tokens used in this run", calls*perCall)) {
		t.Errorf("the second run made %d calls and stopped: %s", calls, reason)
	}
	if n := provider.Calls(llmtest.PathChatCompletions); n != 3+calls {
		t.Errorf("the provider answered %d calls, want %d", n, 3+calls)
	}
}

// scheduleClients are alice's gateway and heartbeat clients on srv, with
// the token's scopes, and the instance install made with them.
func scheduleClients(t *testing.T, srv *app.Server, scopes []string, install gateway.InstallRequest) (*gateway.Client, *heartbeat.Client, *gateway.Instance) {
	t.Helper()
	tok := mint(t, srv, identity.Claims{TenantID: "acme", UserID: "alice", AgentID: "console", Scopes: scopes})
	gw, err := gateway.NewClient(srv.URL(), &gateway.ClientOptions{Token: tok})
	if err != nil {
		t.Fatal(err)
	}
	inst, err := gw.Install(t.Context(), install)
	if err != nil {
		t.Fatal(err)
	}
	hb, err := heartbeat.New(srv.URL(), tok, nil)
	if err != nil {
		t.Fatal(err)
	}
	return gw, hb, inst
}

// awaitTick moves clock to at and waits for the scheduler to have handled
// the tick.
func awaitTick(t *testing.T, clock *schedsvc.ManualClock, at time.Time) {
	t.Helper()
	clock.Set(at)
	select {
	case <-clock.Asleep():
	case <-time.After(time.Minute): // a failure bound
		t.Fatal("the scheduler did not handle the tick within a minute")
	}
}
