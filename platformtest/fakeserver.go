package platformtest

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/adapter"
	"novaos.dev/novaos/delivery"
	"novaos.dev/novaos/dpop"
	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/internal/auth"
	deliverysvc "novaos.dev/novaos/internal/delivery"
	"novaos.dev/novaos/internal/execgw"
	"novaos.dev/novaos/jwk"
	"novaos.dev/novaos/secret"
)

// Timing is what a platform's times are: how long a token lives, the
// skew it allows, when an unacknowledged event comes again, and how
// long a started run may go without a sign of life of it (a heartbeat
// listing it, a patch) before it ends stale.
type Timing struct {
	TokenTTL      time.Duration
	ClockLeeway   time.Duration
	AckTimeout    time.Duration
	RunStaleAfter time.Duration
}

// Options configure a FakeServer; nil means the defaults.
type Options struct {
	// Clock is the platform's time (a new FakeClock when nil); give the
	// adapter under test the same one.
	Clock *FakeClock
	// Timing's zero fields are the platform's defaults.
	Timing Timing
	// Logger receives the platform's logs (nil: discarded).
	Logger *slog.Logger
}

// Names of the fake's world: a tenant with a person who triggers runs
// and two pull agents.
const (
	Tenant     = "acme"
	Triggerer  = "alex"
	AgentName  = "helper"
	OtherAgent = "writer"
	fakeAdmin  = "fake-admin-token"
)

// FakeServer is the platform's pull delivery in process, on 127.0.0.1 at
// a free port: the real delivery service and execution gateway on
// in-memory stores, with a FakeClock for their time and injectable
// faults in front. It is closed at the end of the test.
type FakeServer struct {
	t      testing.TB
	clock  *FakeClock
	timing Timing
	srv    *httptest.Server
	base   string
	faults faults
	gw     *execgw.Service
	dl     *deliverysvc.Service
	runs   gateway.Store
	store  delivery.Store
	keys   *auth.Issuer

	agentID, otherID string
	creds            adapter.Credentials
	seq              atomic.Int64
}

// NewFakeServer starts a fake platform with two pull agents and an API
// token (DPoP-bound) for the first.
func NewFakeServer(t testing.TB, opts *Options) *FakeServer {
	t.Helper()
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Clock == nil {
		o.Clock = NewFakeClock(time.Time{})
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	f := &FakeServer{t: t, clock: o.Clock, runs: gateway.NewMemoryStore(), store: delivery.NewMemStore()}
	f.srv = httptest.NewUnstartedServer(nil)
	f.srv.Listener = &faultListener{Listener: f.srv.Listener, fs: &f.faults}
	f.base = "http://" + f.srv.Listener.Addr().String()

	platformTokens, err := auth.Open("", auth.Options{Issuer: f.base})
	if err != nil {
		t.Fatal(err)
	}
	if f.keys, err = auth.Open("", auth.Options{Issuer: f.base, Algorithm: auth.EdDSA}); err != nil {
		t.Fatal(err)
	}
	dopts := &deliverysvc.Options{Logger: o.Logger, Now: f.clock.Now, TokenTTL: o.Timing.TokenTTL,
		ClockLeeway: o.Timing.ClockLeeway, AckTimeout: o.Timing.AckTimeout, RunStaleAfter: o.Timing.RunStaleAfter}
	f.dl, err = deliverysvc.New(deliverysvc.Deps{Store: f.store, Runs: f.runs, Keys: f.keys,
		Tokens: platformTokens.Authenticator(), AdminToken: secret.New(fakeAdmin), BaseURL: f.base}, dopts)
	if err != nil {
		t.Fatal(err)
	}
	f.timing = Timing{TokenTTL: orDefault(o.Timing.TokenTTL, deliverysvc.DefaultTokenTTL),
		ClockLeeway: orDefault(o.Timing.ClockLeeway, deliverysvc.DefaultClockLeeway),
		AckTimeout:  orDefault(o.Timing.AckTimeout, deliverysvc.DefaultAckTimeout), RunStaleAfter: f.dl.StaleAfter()}
	// The gateway claims runs whose lease lapsed by the same clock that
	// leased them.
	f.gw = execgw.New(f.runs, execgw.Deps{AdminToken: secret.New(fakeAdmin), Tokens: platformTokens, BaseURL: f.base, Pull: f.dl},
		&execgw.Options{Logger: o.Logger, Now: f.clock.Now})

	mux := http.NewServeMux()
	for _, r := range f.dl.Routes() {
		mux.Handle(r.Pattern, r.Handler)
	}
	for _, r := range f.gw.Routes() {
		mux.Handle(r.Pattern, r.Handler)
	}
	f.srv.Config.Handler = f.faults.wrap(mux)
	f.srv.Start()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, 2)
	go func() { f.gw.Run(ctx); done <- struct{}{} }()
	go func() { f.dl.Run(ctx); done <- struct{}{} }()
	t.Cleanup(func() {
		_ = f.dl.Shutdown(context.Background())
		_ = f.gw.Shutdown(context.Background())
		f.srv.CloseClientConnections()
		f.srv.Close()
		cancel()
		<-done
		<-done
	})

	f.agentID = f.install(AgentName)
	f.otherID = f.install(OtherAgent)
	key, err := dpop.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	f.creds = adapter.Credentials{APIToken: secret.New(f.CreateToken(f.agentID, key.Thumbprint())), DPoP: key}
	return f
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// install stores a pull instance of the fake's tenant.
func (f *FakeServer) install(name string) string {
	inst, err := f.runs.CreateInstance(context.Background(), gateway.Instance{ID: a2a.NewID(), TenantID: Tenant, Name: name,
		Delivery: gateway.DeliveryPull}, time.Now())
	if err != nil {
		f.t.Fatal(err)
	}
	return inst.ID
}

// URL is the platform's base URL.
func (f *FakeServer) URL() string { return f.base }

// AgentID is the agent whose API token Credentials holds; OtherAgentID
// is a second agent of the tenant.
func (f *FakeServer) AgentID() string      { return f.agentID }
func (f *FakeServer) OtherAgentID() string { return f.otherID }

// Credentials are the agent's API token and DPoP key.
func (f *FakeServer) Credentials() adapter.Credentials { return f.creds }

// Clock is the platform's clock.
func (f *FakeServer) Clock() *FakeClock { return f.clock }

// Timing is the platform's times.
func (f *FakeServer) Timing() Timing { return f.timing }

// PassTime moves the platform's clock on.
func (f *FakeServer) PassTime(_ context.Context, d time.Duration) {
	f.clock.Advance(d)
	f.dl.WakeAll()
}

// Config is an adapter configuration for the agent with consumer name.
func (f *FakeServer) Config(consumer string) adapter.Config {
	return adapter.Config{BaseURL: f.base, AgentID: f.agentID, Consumer: consumer, Credentials: f.creds}
}

// Inject makes the next times requests of target (an operation id such
// as "startRun", GatewayUpgrade, or a GatewayFrame of either side) go
// wrong as fault says.
func (f *FakeServer) Inject(target string, fault Fault, times int) {
	f.faults.inject(target, fault, times)
}

// Pending is how many injected faults of target wait for a request.
func (f *FakeServer) Pending(target string) int { return f.faults.pendingCount(target) }

// ClearFaults drops the injected faults that did not go off yet.
func (f *FakeServer) ClearFaults() { f.faults.clear() }

// FiredByKind is how many injected faults went off, by Fault.Kind.
func (f *FakeServer) FiredByKind() map[string]int { return f.faults.firedKinds() }

// Requests lists the requests the platform received, in order.
func (f *FakeServer) Requests() []Request { return f.faults.requests() }

// Calls counts the requests of an operation, but those answered 401
// (a DPoP nonce that went stale, repeated at once with the new one).
func (f *FakeServer) Calls(op string) int {
	n := 0
	for _, r := range f.faults.requests() {
		if r.Operation == op && r.Status != http.StatusUnauthorized {
			n++
		}
	}
	return n
}

// AdapterClock is the clock an adapter under test runs on.
func (f *FakeServer) AdapterClock() adapter.Clock { return f.clock }

// Fired is how many injected faults of target went off.
func (f *FakeServer) Fired(target string) int { return f.faults.firedCount(target) }

// CreateToken issues an API token for an agent as a tenant admin would,
// bound to the DPoP key with thumbprint jkt (unbound when empty).
func (f *FakeServer) CreateToken(agentID, jkt string) string {
	var g delivery.TokenGrant
	if err := f.admin(http.MethodPost, delivery.TokensPath(agentID), delivery.TokenCreate{DPoPJKT: jkt}, &g); err != nil {
		f.t.Fatal(err)
	}
	return g.Token
}

// admin calls the platform as its operator.
func (f *FakeServer) admin(method, path string, in, out any) error {
	return operatorCall(context.Background(), f.base, secret.New(fakeAdmin), Tenant, method, path, in, out)
}

// operatorCall calls the platform at base with an admin token for tenant.
func operatorCall(ctx context.Context, base string, token secret.Value, tenant, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token.Reveal())
	req.Header.Set("X-Tenant-ID", tenant)
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("platformtest: %s %s: %d %s", method, path, resp.StatusCode, raw)
	}
	if out != nil {
		return json.Unmarshal(raw, out)
	}
	return nil
}

// Triggered is a run a person triggered.
type Triggered struct {
	RunID, ThreadID, MessageID string
}

// Trigger has the tenant's person send text to the agent: a new run,
// offered to the agent's consumers.
func (f *FakeServer) Trigger(ctx context.Context, text string) (Triggered, error) {
	return f.TriggerAgent(ctx, f.agentID, text)
}

// TriggerAgent is Trigger for any agent of the tenant.
func (f *FakeServer) TriggerAgent(ctx context.Context, agentID, text string) (Triggered, error) {
	run, err := f.gw.StartRun(ctx, execgw.StartRequest{TenantID: Tenant, InstanceID: agentID, Input: text, RunID: a2a.NewID(),
		Caller: gateway.Caller{Subject: Triggerer, UserID: Triggerer}})
	if err != nil {
		return Triggered{}, err
	}
	return Triggered{RunID: run.ID, ThreadID: run.ThreadID, MessageID: run.ID + "/1"}, nil
}

// Reply answers a run that waits for input, as the person who triggered
// it: the agent gets a follow-up.
func (f *FakeServer) Reply(_ context.Context, runID, text string) error {
	return f.admin(http.MethodPost, gateway.RunsPath+"/"+runID+"/reply", map[string]string{"input": text}, nil)
}

// Cancel cancels a run as its person would.
func (f *FakeServer) Cancel(_ context.Context, runID string) error {
	return f.admin(http.MethodPost, gateway.RunsPath+"/"+runID+"/cancel", nil, nil)
}

// RunState is a run as its agent sees it (Starts counts accepted starts).
func (f *FakeServer) RunState(ctx context.Context, runID string) (delivery.Run, error) {
	r, err := f.runs.GetRun(ctx, Tenant, runID)
	if err != nil {
		return delivery.Run{}, err
	}
	return deliverysvc.View(r), nil
}

// WaitRun waits until cond holds of the run, or ctx ends.
func (f *FakeServer) WaitRun(ctx context.Context, runID string, cond func(delivery.Run) bool) (delivery.Run, error) {
	return waitRun(ctx, f.runs, func(ctx context.Context) (delivery.Run, error) { return f.RunState(ctx, runID) }, runID, cond)
}

// Messages are the messages agents sent to a thread (createMessage), in
// the order they were stored: one per client_msg_id however often it
// was sent.
func (f *FakeServer) Messages(ctx context.Context, threadID string) ([]delivery.StoredMessage, error) {
	return f.store.ThreadMessages(ctx, Tenant, threadID, 1000)
}

// NewestToken is the record of a run's newest invocation token (its id,
// event and consumer, never the token): the one a start must carry.
func (f *FakeServer) NewestToken(ctx context.Context, runID string) (delivery.TokenRecord, error) {
	return f.store.NewestToken(ctx, runID)
}

// ConsumerState is a consumer of the agent as the platform keeps it.
func (f *FakeServer) ConsumerState(ctx context.Context, consumer string) (delivery.ConsumerState, error) {
	c, err := f.store.GetConsumer(ctx, f.agentID, consumer)
	if err != nil {
		return delivery.ConsumerState{}, err
	}
	head, err := f.store.HeadSeq(ctx, f.agentID)
	if err != nil {
		return delivery.ConsumerState{}, err
	}
	return delivery.ConsumerState{Consumer: c.Name, AckedSeq: c.AckedSeq, HeadSeq: head, UpdatedAt: c.UpdatedAt}, nil
}

// Restart sets a consumer's cursor back to ackedSeq, as a platform
// restored from a backup would: the events after it come again.
func (f *FakeServer) Restart(ctx context.Context, consumer string, ackedSeq int64) error {
	_, err := f.dl.Rewind(ctx, f.agentID, consumer, ackedSeq)
	return err
}

// ForgeToken makes an invocation token for a run that the platform must
// refuse (and so must every adapter): Variant says how it is wrong.
func (f *FakeServer) ForgeToken(ctx context.Context, runID string, v Variant) (string, error) {
	run, err := f.runs.GetRun(ctx, Tenant, runID)
	if err != nil {
		return "", err
	}
	return forge(ctx, f.keys, f.base, run, v, f.clock.Now(), f.timing.TokenTTL)
}

// Variant is a way an invocation token is forged.
type Variant string

// The forged variants: none at all, a broken signature, HS256 keyed
// with the platform's public key, a token of another type, and one for
// another agent.
const (
	VariantMissing       Variant = "missing"
	VariantBadSignature  Variant = "bad_signature"
	VariantAlgHS256      Variant = "alg_hs256"
	VariantTypAccess     Variant = "typ_access"
	VariantAudOtherAgent Variant = "aud_other_agent"
)

// Variants lists every forged variant.
var Variants = []Variant{VariantMissing, VariantBadSignature, VariantAlgHS256, VariantTypAccess, VariantAudOtherAgent}

// signer signs JWTs with the platform's invocation-token key.
type signer interface {
	SignJWT(ctx context.Context, typ string, claims []byte) (string, error)
	PublicKeys() []*jwk.Key
}

// forge builds v for run, with claims as the platform's would be.
func forge(ctx context.Context, keys signer, issuer string, run gateway.Run, v Variant, now time.Time, ttl time.Duration) (string, error) {
	c := delivery.Claims{Issuer: issuer, Audience: run.InstanceID, Subject: run.Caller.UserID, IssuedAt: now.Unix(),
		ExpiresAt: now.Add(ttl).Unix(), ID: a2a.NewID(), TenantID: run.TenantID, RunID: run.ID, ThreadID: run.ThreadID,
		TriggerKind: delivery.TriggerMessage, MessageID: run.ID + "/1", BillingMode: delivery.BillingPlatform,
		ToolClass: delivery.ToolChat}
	sign := func(typ string) (string, error) {
		b, _ := json.Marshal(c)
		return keys.SignJWT(ctx, typ, b)
	}
	switch v {
	case VariantMissing:
		return "", nil
	case VariantTypAccess:
		return sign("at+jwt")
	case VariantAudOtherAgent:
		c.Audience = "another-agent"
		return sign(delivery.TokenType)
	case VariantBadSignature:
		tok, err := sign(delivery.TokenType)
		if err != nil {
			return "", err
		}
		i := strings.LastIndexByte(tok, '.')
		sig, err := base64.RawURLEncoding.DecodeString(tok[i+1:])
		if err != nil {
			return "", err
		}
		sig[0] ^= 0xff
		return tok[:i+1] + base64.RawURLEncoding.EncodeToString(sig), nil
	case VariantAlgHS256:
		tok, err := sign(delivery.TokenType)
		if err != nil {
			return "", err
		}
		var h map[string]any
		raw, _ := base64.RawURLEncoding.DecodeString(tok[:strings.IndexByte(tok, '.')])
		if err := json.Unmarshal(raw, &h); err != nil {
			return "", err
		}
		pub, err := publicKeyBytes(keys, h["kid"])
		if err != nil {
			return "", err
		}
		h["alg"] = "HS256"
		hb, _ := json.Marshal(h)
		cb, _ := json.Marshal(c)
		signing := base64.RawURLEncoding.EncodeToString(hb) + "." + base64.RawURLEncoding.EncodeToString(cb)
		m := hmac.New(sha256.New, pub)
		m.Write([]byte(signing))
		return signing + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil)), nil
	}
	return "", fmt.Errorf("platformtest: no forged variant %q", v)
}

// publicKeyBytes is the raw public key of kid, which an HS256 forgery
// keys its MAC with.
func publicKeyBytes(keys signer, kid any) ([]byte, error) {
	for _, k := range keys.PublicKeys() {
		if k.KeyID() != kid {
			continue
		}
		if pub, ok := k.PublicKey().(ed25519.PublicKey); ok {
			return pub, nil
		}
	}
	return nil, errors.New("platformtest: the signing key is not published")
}

// waitRun reads a run again after every change of its events until cond
// holds of it. The watch starts in the background, so a change between
// the first read and the watch's start would go unnoticed: a slow tick
// reads the run again regardless.
func waitRun(ctx context.Context, runs gateway.Store, read func(context.Context) (delivery.Run, error), runID string, cond func(delivery.Run) bool) (delivery.Run, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	news := make(chan struct{}, 1)
	go func() {
		_ = runs.WatchEvents(ctx, func(id string, _ int64) {
			if id == runID || id == "" {
				select {
				case news <- struct{}{}:
				default:
				}
			}
		})
	}()
	for {
		r, err := read(ctx)
		if err == nil && cond(r) {
			return r, nil
		}
		select {
		case <-news:
		case <-tick.C:
		case <-ctx.Done():
			return r, fmt.Errorf("platformtest: run %s is %s (%s): %w", runID, r.State, r.StateReason, ctx.Err())
		}
	}
}

// WaitConsumer waits until the agent's consumer exists: an adapter that
// connected opened it, at the agent's newest event, so a run triggered
// after reaches it.
func (f *FakeServer) WaitConsumer(ctx context.Context, consumer string) error {
	return waitFor(ctx, func() bool {
		_, err := f.store.GetConsumer(ctx, f.agentID, consumer)
		return err == nil
	})
}

// waitFor checks cond until it holds or ctx ends. It polls: what it
// waits for has no notification of its own.
func waitFor(ctx context.Context, cond func() bool) error {
	t := time.NewTicker(2 * time.Millisecond)
	defer t.Stop()
	for !cond() {
		select {
		case <-t.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}
