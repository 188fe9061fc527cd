package gatesvc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"novaos.dev/novaos/gate"
	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/httpapi"
	"novaos.dev/novaos/resilience"
	"novaos.dev/novaos/secret"
)

// The crash-injection suite: an SDK process or the gate server
// is killed at each step of a gated write; later runs resume the work
// item and an operator settles what only a person can. A fake downstream
// counts effects by action id. Every action id must end with at most one
// effect, in exactly one terminal state, and executed exactly when the
// effect landed.

// crashStep is where a trial kills a process.
type crashStep int

const (
	beforeSubmit crashStep = iota
	afterVerdict
	afterClaim
	afterWrite
	beforeAck
	afterAck
	numSteps
)

func (s crashStep) String() string {
	return [...]string{"before submit", "after the verdict", "after the claim", "after the write", "before the ack", "after the ack"}[s]
}

// errCrashed is what a killed process's pending request sees.
var errCrashed = errors.New("crash injected")

// gateServer is a gate that can be killed and restarted over one store.
type gateServer struct {
	store gate.Store
	opts  Options
	mu    sync.Mutex
	h     http.Handler
	svc   *Service
}

func (g *gateServer) restart(t testing.TB) {
	t.Helper()
	svc := New(g.store, &g.opts)
	if err := svc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	auth := httpapi.AuthenticatorFunc(func(r *http.Request) (*httpapi.Caller, error) {
		return &httpapi.Caller{Scheme: "test", Subject: "agent", Claims: &identity.Claims{TenantID: "acme", AgentID: "po-agent",
			Subject: "agent", Scopes: []string{gate.ScopeSubmit}}}, nil
	})
	g.mu.Lock()
	g.svc, g.h = svc, svc.Handler(auth, nil)
	g.mu.Unlock()
}

func (g *gateServer) handler() http.Handler {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.h
}

func (g *gateServer) service() *Service {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.svc
}

// crashTransport delivers an SDK process's requests to the gate in
// process, killing the SDK process or the server at the armed step.
type crashTransport struct {
	t      testing.TB
	g      *gateServer
	step   crashStep
	server bool // kill the server rather than the SDK process
	armed  atomic.Bool
	dead   atomic.Bool // the SDK process is dead: nothing more leaves it
	fired  atomic.Bool
}

func (c *crashTransport) fire() bool {
	if c.armed.CompareAndSwap(true, false) {
		c.fired.Store(true)
		if !c.server {
			c.dead.Store(true)
		}
		return true
	}
	return false
}

func (c *crashTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if c.dead.Load() {
		return nil, errCrashed
	}
	var body []byte
	if r.Body != nil {
		body, _ = io.ReadAll(r.Body)
		r.Body.Close()
	}
	path := r.URL.Path
	before := (c.step == beforeSubmit && path == gate.APIPath+"/actions") ||
		(c.step == beforeAck && path == gate.APIPath+"/acks")
	if before && c.fire() {
		if c.server {
			c.g.restart(c.t)
		}
		return nil, errCrashed
	}
	req := r.Clone(r.Context())
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.RemoteAddr = "127.0.0.1:1"
	rec := httptest.NewRecorder()
	c.g.handler().ServeHTTP(rec, req)
	resp := rec.Result()
	switch {
	case c.step == afterVerdict && (path == gate.APIPath+"/actions" || path == gate.APIPath+"/actions/wait"),
		c.step == afterClaim && (path == gate.APIPath+"/claims" || (path == gate.APIPath+"/actions" && bytes.Contains(rec.Body.Bytes(), []byte(`"fencing_token"`)))),
		c.step == afterAck && path == gate.APIPath+"/acks":
		if c.fire() {
			if c.server {
				c.g.restart(c.t)
			}
			return nil, errCrashed
		}
	}
	return resp, nil
}

// downstream counts the effects of writes by action id.
type downstream struct {
	mu      sync.Mutex
	effects map[string]int
}

func (d *downstream) apply(id string) {
	d.mu.Lock()
	d.effects[id]++
	d.mu.Unlock()
}

func (d *downstream) count(id string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.effects[id]
}

type refund struct {
	ID     string
	Amount float64
}

func TestCrashInjection(t *testing.T) {
	trials := 1000
	if v := os.Getenv("NOVAOS_GATE_CRASH_TRIALS"); v != "" {
		trials, _ = strconv.Atoi(v)
	}
	if testing.Short() {
		trials = 120
	}
	ctx := context.Background()
	// The gate's clock moves only when the operator lets a claim time out
	// (the restart grace outlasts that, so restarts keep every hold).
	clk := &clock{t: time.Now().UTC()}
	g := &gateServer{store: openStore(t), opts: Options{HoldIndefinite: true, Now: clk.now, ClaimTimeout: time.Minute, RestartGrace: 24 * time.Hour}}
	g.restart(t)
	if _, err := g.service().PutRules(ctx, "acme", "admin", []byte(`{"rules":[
		{"id":"big","text":"Hold refunds over 500.","when":"ctx.amount > 500.0","verdict":"hold"},
		{"id":"fraud","text":"Kill refunds of exactly 13.","when":"ctx.amount == 13.0","verdict":"kill"}]}`)); err != nil {
		t.Fatal(err)
	}
	down := &downstream{effects: map[string]int{}}
	operator := "ops@acme"
	outcomes := map[string]int{}
	for trial := range trials {
		rng := rand.New(rand.NewPCG(uint64(trial), 0x9a7e))
		step := crashStep(rng.IntN(int(numSteps)))
		server := rng.IntN(2) == 0
		amounts := []float64{20, 900, 13}
		item := refund{ID: fmt.Sprintf("po-%d", trial), Amount: amounts[rng.IntN(len(amounts))]}
		approve := rng.IntN(4) != 0
		session := fmt.Sprintf("night-%d", trial)

		run := func(tr *crashTransport, resume bool) error {
			client, err := gate.NewClient(gate.Config{URL: "http://gate.test", Token: secret.New("t")}, &gate.ClientOptions{
				HTTPClient: &http.Client{Transport: tr},
				Retry:      &resilience.Policy{Attempts: 2, Base: time.Microsecond, Max: time.Microsecond},
				Logger:     discardLog,
			})
			if err != nil {
				return err
			}
			write := gate.Write(client, gate.WriteSpec[refund]{
				ActionType: "refund",
				Context: func(r refund) (gate.Context, error) {
					amount := r.Amount
					return gate.GenericContext{RecordID: r.ID, Amount: &amount}, nil
				},
				ActionID: func(r refund) (string, error) { return r.ID, nil },
			}, func(ctx context.Context, r refund) (string, error) {
				down.apply(r.ID)
				if tr.step == afterWrite && tr.fire() {
					if tr.server {
						g.restart(t)
					} else {
						return "", errCrashed // the process dies holding the claim
					}
				}
				return "ok", nil
			})
			s := gate.Session{TenantID: "acme", TeamID: "ops", AgentID: "po-agent", ID: session, Resumable: true,
				MaxHold: gate.AdoptDeploymentWindow, Attach: resume, Resume: resume}
			return client.Run(ctx, s, func(ctx context.Context) error {
				_, err := write(ctx, item)
				return err
			})
		}

		first := &crashTransport{t: t, g: g, step: step, server: server}
		first.armed.Store(true)
		_ = run(first, false)
		// Later runs resume; the crash stays armed until it fires, so a
		// step first reached on a resume (a held write's claim) is hit too.
		var last error
		for round := 0; ; round++ {
			if round > 8 {
				t.Fatalf("trial %d (%s, server=%v, amount %v): no terminal state after %d rounds; last error %v", trial, step, server, item.Amount, round, last)
			}
			rec, err := g.store.GetAction(ctx, "acme", session, item.ID)
			if err == nil && rec.State.Terminal() {
				break
			}
			// The operator's turn: decide holds, settle unconfirmed claims
			// from the downstream's truth. A claim left without its ack is
			// for the next run to find: it must refuse it, never run the
			// write again; once the claim timeout passes the sweeper hands
			// it to the operator, who settles it.
			if err == nil {
				svc := g.service()
				if rec.State == gate.ActionClaimed {
					clk.add(g.opts.ClaimTimeout)
					if err := svc.Sweep(ctx); err != nil {
						t.Fatalf("trial %d: sweep: %v", trial, err)
					}
					if rec, err = g.store.GetAction(ctx, "acme", session, item.ID); err != nil {
						t.Fatalf("trial %d: %v", trial, err)
					}
				}
				switch rec.State {
				case gate.ActionHeld:
					d := gate.DecisionDeny
					if approve {
						d = gate.DecisionApprove
					}
					if _, err := svc.Decide(ctx, "acme", session, item.ID, gate.OperatorDecision{Decision: d}, operator); err != nil {
						t.Fatalf("trial %d: decide: %v", trial, err)
					}
				case gate.ActionUnconfirmed:
					d := gate.DecisionConfirmNotExecuted
					if down.count(item.ID) > 0 {
						d = gate.DecisionConfirmExecuted
					}
					if _, err := svc.Decide(ctx, "acme", session, item.ID, gate.OperatorDecision{Decision: d}, operator); err != nil {
						t.Fatalf("trial %d: settle: %v", trial, err)
					}
				}
			}
			next := first
			if !first.armed.Load() {
				next = &crashTransport{t: t, g: g}
			}
			// A run that never got its session opened starts afresh;
			// otherwise it attaches and resumes.
			_, serr := g.store.GetSession(ctx, "acme", session)
			last = run(next, serr == nil)
		}
		rec, err := g.store.GetAction(ctx, "acme", session, item.ID)
		if err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		n := down.count(item.ID)
		if n > 1 {
			t.Fatalf("trial %d (%s, server=%v): %d effects for %s", trial, step, server, n, item.ID)
		}
		if (rec.State == gate.ActionExecuted) != (n == 1) {
			t.Fatalf("trial %d (%s, server=%v): state %s with %d effects", trial, step, server, rec.State, n)
		}
		if !first.fired.Load() && stepReachable(step, rec) {
			t.Fatalf("trial %d: the crash %s (server=%v) never fired, state %s", trial, step, server, rec.State)
		}
		outcomes[string(rec.State)]++
	}
	t.Logf("%d trials: %v", trials, outcomes)
	verifyAudit(t, g.store)
}

// stepReachable reports whether a trial's armed step lies on the path its
// action took: a killed or denied write never reaches the claim.
func stepReachable(step crashStep, rec gate.ActionRecord) bool {
	switch step {
	case beforeSubmit, afterVerdict:
		return true
	}
	return rec.State == gate.ActionExecuted || rec.FencingToken > 0
}

var discardLog = slog.New(slog.DiscardHandler)
