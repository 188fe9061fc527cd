package llmgw

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"novaos.dev/novaos/internal/pgtest"
	"novaos.dev/novaos/llm"
	"novaos.dev/novaos/llm/llmtest"
	"novaos.dev/novaos/store/postgres"
	"novaos.dev/novaos/store/sqlite"
)

// countingStore counts the ledger's writes.
type countingStore struct {
	llm.Store
	leases, commits atomic.Int64
}

func (c *countingStore) Lease(ctx context.Context, r llm.LeaseRequest) ([]llm.Grant, error) {
	c.leases.Add(1)
	return c.Store.Lease(ctx, r)
}

func (c *countingStore) Commit(ctx context.Context, b llm.Batch) ([]llm.LeaseResult, error) {
	c.commits.Add(1)
	return c.Store.Commit(ctx, b)
}

// clock is a test's clock, moved by hand.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// estimateOf is the budget estimate of chatBody(model) with max_tokens.
func estimateOf(t *testing.T, model string, maxTokens int) int64 {
	t.Helper()
	b, err := json.Marshal(chatBody(model, "max_tokens", maxTokens))
	if err != nil {
		t.Fatal(err)
	}
	req, e := parseRequest(opChat, b, DefaultMaxTokens)
	if e != nil {
		t.Fatal(e)
	}
	return req.input + req.output
}

// wordy answers with n words, so that a call with max_tokens of m uses
// the prompt's words and min(n, m) more.
func wordy(n int) *llmtest.Options {
	return &llmtest.Options{Reply: func(*llm.ChatCompletionRequest) string { return strings.Repeat("word ", n) }}
}

// A call under a budget takes its estimate from this replica's lease in
// memory: the first call of a counter leases, the next ones write
// nothing on their path, and what they used is written in one batch.
func TestLeaseOffThePath(t *testing.T) {
	st := &countingStore{Store: llm.NewMemoryStore()}
	h := newHarness(t, nil, Deps{Store: st})
	p := newProvider(t)
	h.provider("openai", p.BaseURL(), "")
	h.route("gpt-4o", llm.Target{Provider: "openai", Model: "gpt-4o"})
	h.admin(http.MethodPut, llm.BudgetsPath+"/acme", llm.BudgetRequest{DailyTokens: 1_000_000}, http.StatusCreated)
	tok := h.token(claims("llm:model:gpt-4o"))
	body := chatBody("gpt-4o", "max_tokens", 50)
	for i := range 3 {
		if resp, data := h.do(http.MethodPost, ChatPath, tok, body); resp.StatusCode != http.StatusOK {
			t.Fatalf("call %d: %d %s", i, resp.StatusCode, data)
		}
	}
	if n := st.leases.Load(); n != 1 {
		t.Errorf("%d leases for three calls, want the first call's one", n)
	}
	if n := st.commits.Load(); n != 0 {
		t.Errorf("%d commits before the batch, want none on the calls' path", n)
	}
	k := llm.Keys{TenantID: "acme", Day: llm.DayOf(testNow)}
	est := estimateOf(t, "gpt-4o", 50)
	sp, _ := h.store.Spent(t.Context(), k)
	if sp.Held.TenantDay.Tokens != 4*est || sp.Used.TenantDay.Tokens != 0 {
		t.Errorf("before the batch: %+v, want a lease of four estimates (%d), nothing used", sp, 4*est)
	}
	h.sync()
	sp, _ = h.store.Spent(t.Context(), k)
	if used := 3 * int64(chatPrompt+chatCompletion); sp.Used.TenantDay.Tokens != used || sp.Held.TenantDay.Tokens != 4*est-used {
		t.Errorf("after the batch: %+v, want %d used, the rest of the lease held", sp, used)
	}
	rows, _ := h.store.Usage(t.Context(), llm.UsageQuery{TenantID: "acme"})
	if len(rows) != 1 || rows[0].Calls != 3 {
		t.Errorf("usage %+v, want the three calls in one row", rows)
	}
	// Shut down, the replica returns what its lease has left.
	if err := h.svc.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	sp, _ = h.store.Spent(t.Context(), k)
	if sp.Held.TenantDay != (llm.Amount{}) || sp.Used.TenantDay.Tokens != 3*(chatPrompt+chatCompletion) {
		t.Errorf("after shutdown: %+v, want nothing held", sp)
	}
}

// A lease running low is grown in the background, before a call finds
// it short; one unused for LeaseIdle is returned; a changed budget
// retires it, and a refusal says what the calls used.
func TestLeaseUpkeep(t *testing.T) {
	clk := &clock{now: testNow}
	st := &countingStore{Store: llm.NewMemoryStore()}
	h := newHarness(t, &Options{Now: clk.Now, LeaseIdle: time.Minute}, Deps{Store: st})
	p := newProviderWith(t, wordy(40))
	h.provider("openai", p.BaseURL(), "")
	h.route("gpt-4o", llm.Target{Provider: "openai", Model: "gpt-4o"})
	h.admin(http.MethodPut, llm.BudgetsPath+"/acme", llm.BudgetRequest{DailyTokens: 1_000_000}, http.StatusCreated)
	tok := h.token(claims("llm:model:gpt-4o"))
	body := chatBody("gpt-4o", "max_tokens", 50)
	call := func() {
		t.Helper()
		if resp, data := h.do(http.MethodPost, ChatPath, tok, body); resp.StatusCode != http.StatusOK {
			t.Fatalf("%d %s", resp.StatusCode, data)
		}
	}
	est, used := estimateOf(t, "gpt-4o", 50), int64(chatPrompt+40)
	// The lease holds four estimates; it is low below two.
	n := 0
	for ; int64(n+1)*used <= 2*est; n++ {
		call()
	}
	if err := h.svc.ledger.refill(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := st.leases.Load(); got != 1 {
		t.Fatalf("after %d calls, %d leases; want no refill yet", n, got)
	}
	call()
	n++
	if err := h.svc.ledger.refill(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := st.leases.Load(); got != 2 {
		t.Fatalf("after %d calls, %d leases; want the first and a refill", n, got)
	}
	for range 3 {
		call()
		n++
	}
	if got := st.leases.Load(); got != 2 {
		t.Errorf("%d leases after three more calls, want none on their path", got)
	}
	h.sync()
	// Unused for LeaseIdle: returned.
	clk.add(time.Minute)
	h.sync()
	k := llm.Keys{TenantID: "acme", Day: llm.DayOf(testNow)}
	sp, _ := h.store.Spent(t.Context(), k)
	if sp.Held.TenantDay != (llm.Amount{}) || sp.Used.TenantDay.Tokens != int64(n)*used {
		t.Errorf("after a minute unused: %+v, want the lease returned, %d used", sp, int64(n)*used)
	}
	// A lowered budget is the next lease's: a call past it is refused,
	// and the refusal counts what the calls used, not this replica's
	// leases.
	call()
	n++
	limit := int64(n)*used + 10
	h.admin(http.MethodPut, llm.BudgetsPath+"/acme", llm.BudgetRequest{DailyTokens: limit}, http.StatusOK)
	resp, data := h.do(http.MethodPost, ChatPath, tok, body)
	e := apiErr(t, resp.StatusCode, data)
	if resp.StatusCode != http.StatusTooManyRequests || !e.BudgetExceeded() {
		t.Fatalf("a call past the lowered budget: %d %s", resp.StatusCode, data)
	}
	want := fmt.Sprintf("%d tokens of %d tokens used today, and this call may need %d tokens", int64(n)*used, limit, est)
	if !strings.Contains(e.Message, want) {
		t.Errorf("refusal %q, want it to say %q", e.Message, want)
	}
}

// Replicas of the gateway sharing one store, each serving calls from its
// own leases, never spend more of a budget together than it allows, and
// spend it to within what their leases hold when the calls stop.
func TestReplicasShareABudget(t *testing.T) {
	for _, backend := range []string{"memory", "sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			st := testStore(t, backend)
			// Answers of 100 words, cut at max_tokens: each call uses 22
			// tokens of its estimate of some 40.
			p := newProviderWith(t, wordy(100))
			const replicas, workers, calls = 3, 4, 12
			est, used := estimateOf(t, "gpt-4o", 20), int64(chatPrompt+20)
			limit := 40 * est
			hs := make([]*harness, replicas)
			for i := range hs {
				hs[i] = newHarness(t, &Options{LeaseShare: 0.5}, Deps{Store: st})
			}
			hs[0].provider("openai", p.BaseURL(), "")
			hs[0].route("gpt-4o", llm.Target{Provider: "openai", Model: "gpt-4o"})
			hs[0].admin(http.MethodPut, llm.BudgetsPath+"/acme", llm.BudgetRequest{DailyTokens: limit}, http.StatusCreated)
			ok, refused := spend(t, hs, workers, calls, func(h *harness) string { return h.token(claims("llm:model:gpt-4o")) })
			// No more than the budget was used; calls were refused only when
			// less was left than a call's estimate and what the replicas'
			// leases held unspent (under five estimates each).
			if ok*used > limit || refused == 0 {
				t.Errorf("%d calls of %d tokens went through a budget of %d; %d refused", ok, used, limit, refused)
			}
			if free := limit - ok*used; free > int64(replicas*5+1)*est {
				t.Errorf("%d tokens of the budget were left while calls were refused", free)
			}
			for _, h := range hs {
				if err := h.svc.Shutdown(t.Context()); err != nil {
					t.Fatal(err)
				}
			}
			sp, err := st.Spent(t.Context(), llm.Keys{TenantID: "acme", Day: llm.DayOf(testNow)})
			if err != nil {
				t.Fatal(err)
			}
			if want := ok * used; sp.Used.TenantDay.Tokens != want || sp.Held.TenantDay != (llm.Amount{}) {
				t.Errorf("after the replicas stopped: %+v, want %d used and nothing held", sp, want)
			}
		})
	}
}

// A replica that dies holding a lease spends none of it again: the lease
// expires, and the sweep leaves its allowance counted as used, so the
// other replicas cannot give it out twice.
func TestCrashedReplicaLease(t *testing.T) {
	clk := &clock{now: testNow}
	st := llm.NewMemoryStore()
	p := newProvider(t)
	est := estimateOf(t, "gpt-4o", 20)
	dead := newHarness(t, &Options{Now: clk.Now, LeaseShare: 1}, Deps{Store: st})
	dead.provider("openai", p.BaseURL(), "")
	dead.route("gpt-4o", llm.Target{Provider: "openai", Model: "gpt-4o"})
	dead.admin(http.MethodPut, llm.BudgetsPath+"/acme", llm.BudgetRequest{DailyTokens: 6 * est}, http.StatusCreated)
	if resp, data := dead.do(http.MethodPost, ChatPath, dead.token(claims("llm:model:gpt-4o")), chatBody("gpt-4o", "max_tokens", 20)); resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, data)
	}
	// It dies without a word: its lease holds four estimates, its call's
	// usage never written.
	clk.add(2 * time.Minute)
	if err := st.Sweep(t.Context(), clk.Now(), clk.Now().Add(-DefaultCounterRetention)); err != nil {
		t.Fatal(err)
	}
	k := llm.Keys{TenantID: "acme", Day: llm.DayOf(testNow)}
	if sp, _ := st.Spent(t.Context(), k); sp.Used.TenantDay.Tokens != 4*est || sp.Held.TenantDay != (llm.Amount{}) {
		t.Fatalf("after the sweep: %+v, want the dead lease's %d tokens counted as used", sp, 4*est)
	}
	alive := newHarness(t, &Options{Now: clk.Now, LeaseShare: 1}, Deps{Store: st})
	tok := alive.token(claims("llm:model:gpt-4o"))
	// A call that may need more than the two estimates left is refused.
	resp, data := alive.do(http.MethodPost, ChatPath, tok, chatBody("gpt-4o", "max_tokens", int(2*est)))
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("a call past what the dead lease left: %d %s", resp.StatusCode, data)
	}
	if resp, data := alive.do(http.MethodPost, ChatPath, tok, chatBody("gpt-4o", "max_tokens", 20)); resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp.StatusCode, data)
	}
	if sp, _ := st.Spent(t.Context(), k); sp.Held.TenantDay.Tokens != 2*est {
		t.Errorf("the live replica's lease: %+v, want the two estimates left", sp)
	}
}

// testStore is an empty store on backend: memory, sqlite or postgres
// (skipped without pgtest.EnvURL).
func testStore(t testing.TB, backend string) llm.Store {
	t.Helper()
	switch backend {
	case "sqlite":
		db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "novaos.db"), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db.LLMStore()
	case "postgres":
		if os.Getenv(pgtest.EnvURL) == "" {
			t.Skip(pgtest.EnvURL + " is not set")
		}
		db, err := postgres.Open(context.Background(), pgtest.URL(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db.LLMStore()
	}
	return llm.NewMemoryStore()
}

// A call's answer ends once the call is in its run, so an agent that ends
// its run on the answer finds the call there; calls ending while an
// append is under way are written together in the next one.
func TestRunEventsCommitted(t *testing.T) {
	h := newHarness(t, nil, Deps{})
	p := newProvider(t)
	h.provider("openai", p.BaseURL(), "")
	h.route("gpt-4o", llm.Target{Provider: "openai", Model: "gpt-4o"})
	tok := h.token(claims("llm:model:gpt-4o"))
	call := func(stream bool) {
		body := chatBody("gpt-4o")
		if stream {
			body["stream"] = true
		}
		if resp, data := h.do(http.MethodPost, ChatPath, tok, body); resp.StatusCode != http.StatusOK {
			t.Errorf("%d %s", resp.StatusCode, data)
		}
	}
	for i, stream := range []bool{false, true} {
		call(stream)
		if evs := h.runs.of("acme", "run-1"); len(evs) != i+1 {
			t.Fatalf("after call %d (stream %v) its run holds %d events", i+1, stream, len(evs))
		}
	}
	// Hold the next append: the calls ending meanwhile wait for it, then
	// share one.
	hold, holding := make(chan struct{}), make(chan struct{})
	h.runs.mu.Lock()
	h.runs.hold, h.runs.holding = hold, holding
	before := h.runs.appends
	h.runs.mu.Unlock()
	var wg sync.WaitGroup
	wg.Go(func() { call(false) })
	<-holding
	for range 3 {
		wg.Go(func() { call(false) })
	}
	// The three are queued once they are counted by the ledger: wait for
	// their events to be queued.
	for {
		h.svc.events.mu.Lock()
		n := h.svc.events.n
		h.svc.events.mu.Unlock()
		if n == 3 {
			break
		}
		runtime.Gosched()
	}
	close(hold)
	wg.Wait()
	h.runs.mu.Lock()
	appends := h.runs.appends - before
	h.runs.mu.Unlock()
	if evs := h.runs.of("acme", "run-1"); len(evs) != 6 || appends != 2 {
		t.Errorf("%d events in %d appends, want 6 in 2", len(evs), appends)
	}
}

// A lease asks for four calls' worth, or what its counter spends in the
// time ahead, whichever is more; and it lacks only what a limited metric
// cannot cover.
func TestLeaseSizing(t *testing.T) {
	est := llm.Amount{Tokens: 100, Cost: 10}
	tests := []struct {
		name  string
		rate  [2]float64 // tokens and cost a second
		ahead time.Duration
		want  llm.Amount
	}{
		{"idle", [2]float64{0, 0}, time.Second, llm.Amount{Tokens: 400, Cost: 40}},
		{"slow", [2]float64{100, 10}, 2 * time.Second, llm.Amount{Tokens: 400, Cost: 40}},
		{"busy", [2]float64{1000, 30}, 2 * time.Second, llm.Amount{Tokens: 2000, Cost: 60}},
		{"busy tokens only", [2]float64{500, 5}, 3 * time.Second, llm.Amount{Tokens: 1500, Cost: 40}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := &lease{rate: tc.rate}
			if got := l.want(est, tc.ahead); got != tc.want {
				t.Errorf("want(%+v, %v) = %+v; want %+v", est, tc.ahead, got, tc.want)
			}
		})
	}
	shorts := []struct {
		name  string
		limit llm.Amount
		held  llm.Amount
		want  llm.Amount
	}{
		{"both limited, both short", llm.Amount{Tokens: 1000, Cost: 1000}, llm.Amount{Tokens: 30, Cost: 4}, llm.Amount{Tokens: 70, Cost: 6}},
		{"tokens unlimited", llm.Amount{Cost: 1000}, llm.Amount{Tokens: 30, Cost: 4}, llm.Amount{Cost: 6}},
		{"cost unlimited", llm.Amount{Tokens: 1000}, llm.Amount{Tokens: 30, Cost: 4}, llm.Amount{Tokens: 70}},
		{"enough", llm.Amount{Tokens: 1000, Cost: 1000}, llm.Amount{Tokens: 100, Cost: 10}, llm.Amount{}},
	}
	for _, tc := range shorts {
		t.Run("short/"+tc.name, func(t *testing.T) {
			l := &lease{limit: tc.limit, held: tc.held}
			if got := l.short(est); got != tc.want {
				t.Errorf("short(%+v) = %+v; want %+v", est, got, tc.want)
			}
		})
	}
}

// spend has workers clients per replica in hs each make calls chat
// completions with the token tok gives for its replica, and counts the
// answers: 200 as ok, 429 as refused, anything else a test error.
func spend(t *testing.T, hs []*harness, workers, calls int, tok func(h *harness) string) (ok, refused int64) {
	t.Helper()
	var okN, refusedN atomic.Int64
	var wg sync.WaitGroup
	for i := range len(hs) * workers {
		h := hs[i%len(hs)]
		tk := tok(h)
		wg.Go(func() {
			for range calls {
				resp, data := h.do(http.MethodPost, ChatPath, tk, chatBody("gpt-4o", "max_tokens", 20))
				switch resp.StatusCode {
				case http.StatusOK:
					okN.Add(1)
				case http.StatusTooManyRequests:
					refusedN.Add(1)
				default:
					t.Errorf("%d %s", resp.StatusCode, data)
				}
			}
		})
	}
	wg.Wait()
	return okN.Load(), refusedN.Load()
}
