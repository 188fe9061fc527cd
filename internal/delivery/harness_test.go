package delivery

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/delivery"
	"novaos.dev/novaos/dpop"
	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/internal/auth"
	"novaos.dev/novaos/secret"
)

const (
	testTenant = "acme"
	testAdmin  = "admin-secret-for-tests"
)

// h0 is when every test's clock starts.
func h0() time.Time { return time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC) }

// fakeClock is the service's clock in tests: it moves only when told.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// harness is a mounted service behind an httptest server, over a fake
// delivery store and the gateway's memory store, with one pull instance
// ("lotse") and another ("texter").
type harness struct {
	t     testing.TB
	svc   *Service
	srv   *httptest.Server
	st    *fakeStore
	runs  gateway.Store
	clock *fakeClock
	inst  gateway.Instance
	other gateway.Instance
	mux   *http.ServeMux
	reg   *prometheus.Registry
}

func newHarness(t testing.TB, o *Options) *harness { return newHarnessWith(t, o, nil) }

// newHarnessWith is newHarness with edit's changes to the service's
// Deps.
func newHarnessWith(t testing.TB, o *Options, edit func(*Deps)) *harness {
	t.Helper()
	return newHarnessOver(t, o, gateway.NewMemoryStore(), edit)
}

// newHarnessOver is newHarnessWith over runs: the execution gateway's
// store.
func newHarnessOver(t testing.TB, o *Options, runs gateway.Store, edit func(*Deps)) *harness {
	t.Helper()
	h := &harness{t: t, st: newFakeStore(), runs: runs, reg: prometheus.NewRegistry(),
		clock: &fakeClock{t: h0()}}
	var handler atomic.Pointer[http.ServeMux]
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.Load().ServeHTTP(w, r) }))
	t.Cleanup(h.srv.Close)
	ring, err := auth.Open("", auth.Options{Issuer: h.srv.URL, Algorithm: auth.EdDSA, Now: h.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{}
	if o != nil {
		opts = *o
	}
	opts.Now = h.clock.Now
	deps := Deps{Store: h.st, Runs: h.runs, Keys: ring, AdminToken: secret.New(testAdmin), BaseURL: h.srv.URL, Metrics: h.reg}
	if edit != nil {
		edit(&deps)
	}
	h.svc, err = New(deps, &opts)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	for _, rt := range h.svc.Routes() {
		mux.Handle(rt.Pattern, rt.Handler)
	}
	handler.Store(mux)
	h.mux = mux
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); h.svc.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	h.inst = h.install("lotse", "platform", "scoped")
	h.other = h.install("texter", "", "")
	return h
}

func (h *harness) install(name, billing, class string) gateway.Instance {
	h.t.Helper()
	inst, err := h.runs.CreateInstance(context.Background(), gateway.Instance{ID: a2a.NewID(), TenantID: testTenant, Name: name,
		Delivery: gateway.DeliveryPull, BillingMode: billing, ToolClass: class}, h.clock.Now())
	if err != nil {
		h.t.Fatal(err)
	}
	return inst
}

// trigger creates a queued run of inst and offers it, as the execution
// gateway does a pull instance's.
func (h *harness) trigger(inst gateway.Instance, input string) gateway.Run {
	h.t.Helper()
	ctx := context.Background()
	run, _, err := h.runs.CreateRun(ctx, gateway.RunWrite{Run: gateway.Run{ID: a2a.NewID(), TenantID: testTenant, InstanceID: inst.ID,
		ThreadID: "thread-1", Caller: gateway.Caller{Subject: "alex", UserID: "alex"}, Status: gateway.StatusQueued, Input: input, Turn: 1,
		Pull: &gateway.PullState{}},
		Events: []gateway.Event{gateway.StatusEvent(gateway.StatusQueued, "queued")}, Now: h.clock.Now()})
	if err != nil {
		h.t.Fatal(err)
	}
	if err := h.svc.Offer(ctx, run, inst); err != nil {
		h.t.Fatal(err)
	}
	return h.run(run.ID)
}

func (h *harness) run(id string) gateway.Run {
	h.t.Helper()
	r, err := h.runs.GetRun(context.Background(), "", id)
	if err != nil {
		h.t.Fatal(err)
	}
	return r
}

// answer is an HTTP answer.
type answer struct {
	status int
	header http.Header
	body   []byte
}

func (a answer) problem(t testing.TB) delivery.Problem {
	t.Helper()
	var p delivery.Problem
	if err := json.Unmarshal(a.body, &p); err != nil {
		t.Fatalf("answer %d is not a problem: %s", a.status, a.body)
	}
	return p
}

func decodeAs[T any](t testing.TB, a answer) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(a.body, &v); err != nil {
		t.Fatalf("answer %d: %v: %s", a.status, err, a.body)
	}
	return v
}

// do sends a request with headers, body as JSON (a []byte as it is).
func (h *harness) do(method, path string, body any, headers map[string]string) answer {
	h.t.Helper()
	return h.doAt(h.srv.URL, method, path, body, headers)
}

// doAt sends a request to the server at base, as do does to the
// harness's.
func (h *harness) doAt(base, method, path string, body any, headers map[string]string) answer {
	h.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			h.t.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, base+path, rd)
	if err != nil {
		h.t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := h.srv.Client().Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, header: resp.Header, body: b}
}

// createToken issues an API token for inst as the operator; key binds
// it (nil: unbound).
func (h *harness) createToken(inst gateway.Instance, key *dpop.Key) string {
	h.t.Helper()
	in := delivery.TokenCreate{Name: "test"}
	if key != nil {
		in.DPoPJKT = key.Thumbprint()
	}
	a := h.do("POST", delivery.TokensPath(inst.ID), in, map[string]string{"Authorization": "Bearer " + testAdmin, "X-Tenant-ID": testTenant})
	if a.status != http.StatusCreated {
		h.t.Fatalf("createToken: %d %s", a.status, a.body)
	}
	return decodeAs[delivery.TokenGrant](h.t, a).Token
}

// agent is an agent's client: its API token, its DPoP key when bound,
// and the newest nonce it was given.
type agent struct {
	h     *harness
	id    string
	token string
	key   *dpop.Key
	mu    sync.Mutex
	nonce string
}

func (h *harness) agent(inst gateway.Instance, bound bool) *agent {
	h.t.Helper()
	a := &agent{h: h, id: inst.ID}
	if bound {
		k, err := dpop.GenerateKey()
		if err != nil {
			h.t.Fatal(err)
		}
		a.key = k
	}
	a.token = h.createToken(inst, a.key)
	return a
}

// call sends an agent's request, with the run's token when runToken is
// set and an Idempotency-Key when key is; a bound agent retries once on
// use_dpop_nonce, as the SDK does.
func (a *agent) call(method, path string, body any, runToken, key string) answer {
	a.h.t.Helper()
	for attempt := 0; ; attempt++ {
		headers := map[string]string{}
		if runToken != "" {
			headers[delivery.InvocationTokenHeader] = runToken
		}
		if key != "" {
			headers[delivery.IdempotencyKeyHeader] = key
		}
		if a.key == nil {
			headers["Authorization"] = "Bearer " + a.token
		} else {
			a.mu.Lock()
			nonce := a.nonce
			a.mu.Unlock()
			proof, err := a.key.Proof(dpop.Claims{Method: method, URL: a.h.srv.URL + path, AccessToken: a.token, Nonce: nonce,
				IssuedAt: a.h.clock.Now()})
			if err != nil {
				a.h.t.Fatal(err)
			}
			headers["Authorization"] = "DPoP " + a.token
			headers[dpop.Header] = proof
		}
		ans := a.h.do(method, path, body, headers)
		if n := ans.header.Get(dpop.NonceHeader); n != "" {
			a.mu.Lock()
			a.nonce = n
			a.mu.Unlock()
		}
		if ans.status == http.StatusUnauthorized && attempt == 0 && a.key != nil && ans.problem(a.h.t).Code == delivery.CodeUseDPoPNonce {
			continue
		}
		return ans
	}
}

// poll takes the consumer's next events.
func (a *agent) poll(consumer string) delivery.EventPage {
	a.h.t.Helper()
	ans := a.call("GET", delivery.ConsumerEventsPath(a.id, consumer), nil, "", "")
	if ans.status != http.StatusOK {
		a.h.t.Fatalf("poll %s: %d %s", consumer, ans.status, ans.body)
	}
	return decodeAs[delivery.EventPage](a.h.t, ans)
}

func (a *agent) ack(consumer string, seq int64) answer {
	return a.call("POST", delivery.ConsumerAckPath(a.id, consumer), delivery.ConsumerAck{Seq: seq}, "", "")
}

// open opens a consumer at the head (a first poll).
func (a *agent) open(consumer string) {
	a.h.t.Helper()
	if page := a.poll(consumer); len(page.Events) != 0 {
		a.h.t.Fatalf("a new consumer got %d events", len(page.Events))
	}
}

// tokenFor polls consumer and returns the token of the event of runID.
func (a *agent) tokenFor(consumer, runID string) (string, delivery.Event) {
	a.h.t.Helper()
	for _, e := range a.poll(consumer).Events {
		if bytes.Contains(e.Payload, []byte(strconv.Quote(runID))) && e.InvocationToken != "" {
			return e.InvocationToken, e
		}
	}
	a.h.t.Fatalf("no event of run %s for consumer %s", runID, consumer)
	return "", delivery.Event{}
}

var keyCounter atomic.Int64

func newKey() string { return "key-" + strconv.FormatInt(keyCounter.Add(1), 10) }

func startBody() delivery.RunStart {
	return delivery.RunStart{BillingModeUsed: delivery.BillingPlatform, ToolClassUsed: delivery.ToolChat}
}

func secretOf(s string) secret.Value { return secret.New(s) }
