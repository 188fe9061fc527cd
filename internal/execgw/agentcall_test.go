package execgw_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2aclient"
	"novaos.dev/novaos/agent"
	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/identity"
	hosted "novaos.dev/novaos/internal/builtin"
	"novaos.dev/novaos/internal/execgw"
	"novaos.dev/novaos/internal/toolgw"
	toolbuiltin "novaos.dev/novaos/internal/toolgw/builtin"
	"novaos.dev/novaos/secret"
	"novaos.dev/novaos/tools"
)

// chainTokens is fakeTokens that also verifies the tokens it minted, so
// a callee's token can call on down the chain, and records their TTLs.
type chainTokens struct {
	*fakeTokens
	ttls *[]time.Duration
}

func (c chainTokens) Mint(ctx context.Context, cl identity.Claims, ttl time.Duration) (string, error) {
	return c.MintAs(ctx, "", cl, ttl)
}

func (c chainTokens) MintAs(ctx context.Context, alg string, cl identity.Claims, ttl time.Duration) (string, error) {
	c.mu.Lock()
	*c.ttls = append(*c.ttls, ttl)
	c.mu.Unlock()
	return c.fakeTokens.MintAs(ctx, alg, cl, ttl)
}

func (c chainTokens) lastTTL() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return (*c.ttls)[len(*c.ttls)-1]
}

func (c chainTokens) Verify(ctx context.Context, tok string) (*identity.Claims, error) {
	if n, ok := strings.CutPrefix(tok, "run:"); ok {
		i, err := strconv.Atoi(n)
		c.mu.Lock()
		defer c.mu.Unlock()
		if err != nil || i < 1 || i > len(c.minted) {
			return nil, identity.ErrInvalid
		}
		cl := c.minted[i-1]
		return &cl, nil
	}
	return c.fakeTokens.Verify(ctx, tok)
}

// mint mints a token of claims the way a run's is minted, as a caller's.
func (c chainTokens) mint(t *testing.T, claims identity.Claims) secret.Value {
	t.Helper()
	tok, err := c.Mint(context.Background(), claims, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return secret.New(tok)
}

func (c chainTokens) claims(tok string) identity.Claims {
	cl, err := c.Verify(context.Background(), tok)
	if err != nil {
		panic(err)
	}
	return *cl
}

// recorder is a hosted agent that answers with what it got: its skill
// "upper" answers in upper case, "echo" as is.
type recorder struct {
	mu   sync.Mutex
	msgs []*a2a.Message
	pcs  []agent.PlatformContext
	toks []string
	skls []string
}

func (r *recorder) agent() *agent.Agent {
	a := agent.New("recorder", "1.0.0", &agent.Options{DefaultInputModes: []string{"text/plain", "application/json"}})
	handle := func(transform func(string) string) agent.HandlerFunc {
		return func(c *agent.Context) (agent.Result, error) {
			tok, _ := c.ExecutionToken()
			r.mu.Lock()
			r.msgs = append(r.msgs, c.Message())
			r.pcs = append(r.pcs, c.Platform())
			r.toks = append(r.toks, tok.Reveal())
			r.skls = append(r.skls, c.Skill())
			r.mu.Unlock()
			return agent.Result{Output: transform(c.Input())}, nil
		}
	}
	a.MustRegister(agent.Skill{ID: "echo", Handler: handle(func(s string) string { return s })})
	a.MustRegister(agent.Skill{ID: "upper", Handler: handle(strings.ToUpper)})
	return a
}

// newCallEnv is a gateway serving the hosted agents echo, recorder and
// failing, whose tokens verify the tokens it mints.
func newCallEnv(t *testing.T) (*env, chainTokens, *recorder) {
	t.Helper()
	rec := &recorder{}
	failing := agent.New("failing", "1.0.0", nil)
	failing.MustRegister(agent.Skill{ID: "fail", Handler: func(*agent.Context) (agent.Result, error) {
		return agent.Result{}, errors.New("the skill broke")
	}})
	agents := hostedAgents{"echo": sdkAgent(t, hosted.Echo()), "recorder": sdkAgent(t, rec.agent()), "failing": sdkAgent(t, failing)}
	e := &env{t: t, store: gateway.NewMemoryStore(), tokens: &fakeTokens{}}
	tokens := chainTokens{e.tokens, new([]time.Duration)}
	e.svc = execgw.New(e.store, execgw.Deps{AdminToken: secret.New(adminTok), Tokens: tokens, Hosted: agents, BaseURL: "http://gateway.test"},
		&execgw.Options{SweepEvery: 20 * time.Millisecond, RetryBackoff: time.Millisecond})
	e.serve()
	return e, tokens, rec
}

func TestCallAgent(t *testing.T) {
	e, tokens, rec := newCallEnv(t)
	ctx := context.Background()
	echo := e.install("echo-1", "echo", nil)
	recInst := e.install("recorder-1", "recorder", map[string]any{
		"scopes": []string{"memory:read:agent", "agents:hops:0"}, "config": map[string]any{"tone": "dry"},
	})
	caller := e.install("caller-1", "echo", nil)

	t.Run("echo", func(t *testing.T) {
		ans, err := e.svc.CallAgent(ctx, secret.New(userTok), execgw.AgentCall{Agent: echo, Message: "hello there", MaxHops: 4})
		if err != nil {
			t.Fatal(err)
		}
		if ans.State != "TASK_STATE_COMPLETED" || ans.Text != "hello there" || ans.TaskID == "" || len(ans.Artifacts) != 1 {
			t.Errorf("answer %+v", ans)
		}
	})

	t.Run("the callee's token and context", func(t *testing.T) {
		callerTok := tokens.mint(t, identity.Claims{TenantID: "acme", UserID: "alice", RunID: "run-77", ConversationID: "conv-1",
			InstanceID: caller, AgentID: "echo", Scopes: []string{"mcp:tools:*"}, LLMMaxTokens: 900, LLMMaxCostUSD: 0.5})
		ans, err := e.svc.CallAgent(ctx, callerTok, execgw.AgentCall{Agent: recInst, Message: "shout this", SkillID: "upper",
			Data: json.RawMessage(`{"k":1}`), CallID: "call-42", MaxHops: 4})
		if err != nil {
			t.Fatal(err)
		}
		if ans.Text != "SHOUT THIS" || ans.State != "TASK_STATE_COMPLETED" {
			t.Errorf("answer %+v", ans)
		}
		rec.mu.Lock()
		msg, pc, tok, skill := rec.msgs[0], rec.pcs[0], rec.toks[0], rec.skls[0]
		rec.mu.Unlock()
		if skill != "upper" || msg.MessageID != "call-42" || len(msg.Parts) != 2 || string(msg.Parts[1].Data) != `{"k":1}` {
			t.Errorf("skill %s, message %+v", skill, msg)
		}
		if pc.TenantID != "acme" || pc.UserID != "alice" || pc.RunID != "run-77" || pc.ConversationID != "conv-1" ||
			pc.InstanceID != recInst || pc.AgentID != "recorder" || pc.IdempotencyKey != "call-42" ||
			pc.GatewayURL != "http://gateway.test" || pc.Config["tone"] != "dry" {
			t.Errorf("platform context %+v", pc)
		}
		got := tokens.claims(tok)
		want := identity.Claims{TenantID: "acme", UserID: "alice", RunID: "run-77", ConversationID: "conv-1",
			InstanceID: recInst, AgentID: "recorder", AgentName: "recorder-1",
			// The instance's scopes, its own hop scope replaced by the chain's.
			Scopes: []string{"memory:read:agent", "agents:hops:1"},
			// The run's own model limit: the callee works in the run.
			LLMMaxTokens: 900, LLMMaxCostUSD: 0.5}
		if !equalClaims(got, want) {
			t.Errorf("callee's claims %+v, want %+v", got, want)
		}
		e.tokens.mu.Lock()
		alg := e.tokens.algs[len(e.tokens.algs)-1]
		e.tokens.mu.Unlock()
		if alg != identity.EdDSA {
			t.Errorf("a hosted callee's token is %q, want EdDSA", alg)
		}
	})

	t.Run("the callee's token expires with the caller's", func(t *testing.T) {
		soon := tokens.mint(t, identity.Claims{TenantID: "acme", UserID: "alice", Expiry: time.Now().Add(90 * time.Second)})
		if _, err := e.svc.CallAgent(ctx, soon, execgw.AgentCall{Agent: echo, Message: "hi"}); err != nil {
			t.Fatal(err)
		}
		if ttl := tokens.lastTTL(); ttl <= 0 || ttl > 90*time.Second {
			t.Errorf("callee's token lives %s, want at most the caller's 90s", ttl)
		}
		if _, err := e.svc.CallAgent(ctx, secret.New(userTok), execgw.AgentCall{Agent: echo, Message: "hi"}); err != nil {
			t.Fatal(err)
		}
		if ttl := tokens.lastTTL(); ttl != execgw.DefaultTokenTTL {
			t.Errorf("callee's token lives %s, want the run token's %s", ttl, execgw.DefaultTokenTTL)
		}
		gone := tokens.mint(t, identity.Claims{TenantID: "acme", Expiry: time.Now().Add(-time.Second)})
		if _, err := e.svc.CallAgent(ctx, gone, execgw.AgentCall{Agent: echo, Message: "hi"}); !errors.Is(err, gateway.ErrUnauthorized) {
			t.Errorf("an expired caller: %v", err)
		}
	})

	t.Run("a failing callee is an answer", func(t *testing.T) {
		failing := e.install("failing-1", "failing", nil)
		ans, err := e.svc.CallAgent(ctx, secret.New(userTok), execgw.AgentCall{Agent: failing, Message: "go"})
		if err != nil {
			t.Fatal(err)
		}
		if ans.State != "TASK_STATE_FAILED" || !strings.Contains(ans.Text, "the skill broke") {
			t.Errorf("answer %+v", ans)
		}
	})

	t.Run("refusals", func(t *testing.T) {
		own := tokens.mint(t, identity.Claims{TenantID: "acme", UserID: "alice", InstanceID: echo})
		tests := []struct {
			name  string
			token secret.Value
			call  execgw.AgentCall
			want  error
			says  string
		}{
			{"unknown instance", secret.New(userTok), execgw.AgentCall{Agent: "no-such", Message: "hi"}, gateway.ErrNotFound, "no agent instance"},
			{"another tenant's instance", secret.New(otherTok), execgw.AgentCall{Agent: echo, Message: "hi"}, gateway.ErrNotFound, "no agent instance"},
			{"its own instance", own, execgw.AgentCall{Agent: echo, Message: "hi"}, gateway.ErrForbidden, "its own instance"},
			{"no token", secret.Value{}, execgw.AgentCall{Agent: echo, Message: "hi"}, gateway.ErrUnauthorized, "carries none"},
			{"a token that does not verify", secret.New("forged"), execgw.AgentCall{Agent: echo, Message: "hi"}, gateway.ErrUnauthorized, "does not verify"},
			{"no message", secret.New(userTok), execgw.AgentCall{Agent: echo}, gateway.ErrInvalidRequest, "a message"},
			{"an unreadable hop count", tokens.mint(t, identity.Claims{TenantID: "acme", Scopes: []string{"agents:hops:many"}}),
				execgw.AgentCall{Agent: echo, Message: "hi"}, gateway.ErrForbidden, "does not read"},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				e.tokens.mu.Lock()
				before := len(e.tokens.minted)
				e.tokens.mu.Unlock()
				_, err := e.svc.CallAgent(ctx, tc.token, tc.call)
				if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.says) {
					t.Errorf("error %v, want %v saying %q", err, tc.want, tc.says)
				}
				e.tokens.mu.Lock()
				after := len(e.tokens.minted)
				e.tokens.mu.Unlock()
				if after != before {
					t.Error("a refused call minted a token")
				}
			})
		}
	})

	t.Run("the callee refuses the message", func(t *testing.T) {
		// Echo takes text only: a data part is refused by the agent.
		_, err := e.svc.CallAgent(ctx, secret.New(userTok), execgw.AgentCall{Agent: echo, Message: "hi", Data: json.RawMessage(`{"a":1}`)})
		var ce *a2aclient.CallError
		if !errors.As(err, &ce) {
			t.Errorf("error %v, want the agent's A2A error", err)
		}
	})
}

// A chain of calls, each callee calling on with the token it got, stops
// at the hop bound.
func TestCallAgentHops(t *testing.T) {
	e, tokens, rec := newCallEnv(t)
	ctx := context.Background()
	a := e.install("a", "recorder", nil)
	b := e.install("b", "recorder", nil)
	tok := secret.New(userTok)
	for hop, next := range []string{a, b, a} {
		_, err := e.svc.CallAgent(ctx, tok, execgw.AgentCall{Agent: next, Message: "pass it on", SkillID: "echo", MaxHops: 3})
		if err != nil {
			t.Fatalf("hop %d: %v", hop+1, err)
		}
		rec.mu.Lock()
		tok = secret.New(rec.toks[len(rec.toks)-1]) // what the callee would call on with
		rec.mu.Unlock()
		if got := tokens.claims(tok.Reveal()).Scopes; !slices.Contains(got, "agents:hops:"+strconv.Itoa(hop+1)) {
			t.Fatalf("hop %d: scopes %v", hop+1, got)
		}
	}
	_, err := e.svc.CallAgent(ctx, tok, execgw.AgentCall{Agent: b, Message: "pass it on", MaxHops: 3})
	if !errors.Is(err, gateway.ErrForbidden) || !strings.Contains(err.Error(), "3 hops long already") {
		t.Errorf("fourth hop: %v, want refused", err)
	}
	// With no bound given, DefaultMaxAgentHops applies.
	if _, err := e.svc.CallAgent(ctx, tok, execgw.AgentCall{Agent: b, Message: "pass it on"}); err != nil {
		t.Errorf("fourth hop under the default bound: %v", err)
	}
}

// The execution gateway is the agents tool's AgentCaller, as the server
// wires it: the two AgentCall and AgentAnswer types convert one to the
// other.
func TestAgentsToolThroughTheGateway(t *testing.T) {
	e, tokens, _ := newCallEnv(t)
	echo := e.install("echo-1", "echo", nil)
	caller := toolbuiltin.AgentCallerFunc(func(ctx context.Context, c *toolgw.Caller, req toolbuiltin.AgentCall) (toolbuiltin.AgentAnswer, error) {
		ans, err := e.svc.CallAgent(ctx, c.Token, execgw.AgentCall(req))
		return toolbuiltin.AgentAnswer(ans), err
	})
	p, err := toolbuiltin.Agents(caller, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tool, ok, err := p.Find(ctx, nil, toolbuiltin.AgentsCall)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	run := tokens.mint(t, identity.Claims{TenantID: "acme", UserID: "alice", RunID: "run-1", InstanceID: "inst-caller"})
	c := &toolgw.Caller{Tenant: "acme", User: "alice", Run: "run-1", Instance: "inst-caller", Token: run}
	res, err := p.Call(ctx, &toolgw.Request{Caller: c, Tool: tool, Arguments: json.RawMessage(`{"agent":"` + echo + `","message":"ping"}`), CallID: "call-7"})
	if err != nil || res.IsError {
		t.Fatalf("call: %v, %+v", err, res)
	}
	var got map[string]any
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got["text"] != "ping" || got["state"] != "TASK_STATE_COMPLETED" {
		t.Errorf("answer %v", got)
	}

	// An unknown instance is a result the model can correct; its own
	// instance a refusal.
	res, err = p.Call(ctx, &toolgw.Request{Caller: c, Tool: tool, Arguments: json.RawMessage(`{"agent":"nope","message":"ping"}`)})
	if err != nil || !res.IsError {
		t.Errorf("unknown instance: %v, %+v", err, res)
	}
	own := &toolgw.Caller{Tenant: "acme", Instance: echo, Token: tokens.mint(t, identity.Claims{TenantID: "acme", InstanceID: echo})}
	_, err = p.Call(ctx, &toolgw.Request{Caller: own, Tool: tool, Arguments: json.RawMessage(`{"agent":"` + echo + `","message":"ping"}`)})
	var te *toolgw.Error
	if !errors.As(err, &te) || te.Reason != tools.ReasonPolicyDenied {
		t.Errorf("own instance: %v", err)
	}
}

func equalClaims(a, b identity.Claims) bool {
	return a.TenantID == b.TenantID && a.UserID == b.UserID && a.RunID == b.RunID && a.ConversationID == b.ConversationID &&
		a.InstanceID == b.InstanceID && a.AgentID == b.AgentID && a.AgentName == b.AgentName && a.CallID == b.CallID &&
		slices.Equal(a.Scopes, b.Scopes) && a.LLMMaxTokens == b.LLMMaxTokens && a.LLMMaxCostUSD == b.LLMMaxCostUSD
}
