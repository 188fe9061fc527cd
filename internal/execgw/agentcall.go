package execgw

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2aclient"
	"novaos.dev/novaos/agent"
	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/secret"
)

// DefaultMaxAgentHops bounds a chain of agent calls when an AgentCall
// names no bound.
const DefaultMaxAgentHops = 4

// HopScopePrefix starts the scope that counts the hops of a chained
// token: the callee of an agent call gets "agents:hops:<n>", n one more
// than its caller's (a run's own token has none: 0). It is a scope
// because scopes are the one claim a chained token can carry beyond the
// run's ids: signed, so a callee cannot lower it, and on every replica.
// It grants nothing.
const HopScopePrefix = "agents:hops:"

// AgentCall is one agent's call of another (the tool gateway's
// novaos.agents.call). Its fields are those of the tool's own AgentCall,
// so one converts to the other.
type AgentCall struct {
	// Agent is the id of the instance called, in the caller's tenant.
	Agent string
	// Message is the text sent; Data, when set, a JSON object sent as a
	// data part beside it; SkillID, when set, the skill asked for.
	Message string
	SkillID string
	Data    json.RawMessage
	// CallID is the tool call's id, sent as the message's id.
	CallID string
	// MaxHops bounds the chain (DefaultMaxAgentHops when not positive).
	MaxHops int
}

// AgentAnswer is what the called agent answered.
type AgentAnswer struct {
	TaskID string
	// State is the task's A2A state name; a message answer is
	// TASK_STATE_COMPLETED.
	State string
	// Text is the artifacts' text, or without any the status message's.
	Text      string
	Artifacts []a2a.Artifact
}

// CallAgent calls the instance req.Agent of the caller's tenant over A2A
// for the caller whose execution token is token, and waits for its
// answer (bounded by ctx). The callee gets a token of its own, minted as
// a run's is, for the caller's tenant, user, run and conversation with
// the callee instance's scopes and the chain's hop count, expiring no
// later than the caller's.
//
// Errors wrap gateway.ErrUnauthorized (the token does not verify),
// gateway.ErrInvalidRequest, gateway.ErrForbidden (the caller's own
// instance, or a chain already req.MaxHops long) and gateway.ErrNotFound
// (no such instance in the tenant); the callee's own refusal is an
// *a2aclient.CallError, one not reached matches a2aclient.ErrUnreachable.
func (s *Service) CallAgent(ctx context.Context, token secret.Value, req AgentCall) (AgentAnswer, error) {
	if token.IsZero() {
		return AgentAnswer{}, fmt.Errorf("%w: calling an agent chains the caller's token, and the call carries none", gateway.ErrUnauthorized)
	}
	claims, err := s.deps.Tokens.Verify(ctx, token.Reveal())
	if err != nil || claims.TenantID == "" {
		return AgentAnswer{}, fmt.Errorf("%w: the caller's token does not verify as a platform token of a tenant", gateway.ErrUnauthorized)
	}
	// A chained token does not outlive the token it was chained from.
	ttl := s.o.TokenTTL
	if !claims.Expiry.IsZero() {
		left := claims.Expiry.Sub(s.o.Now()).Truncate(time.Second)
		if left <= 0 {
			return AgentAnswer{}, fmt.Errorf("%w: the caller's token has expired", gateway.ErrUnauthorized)
		}
		ttl = min(ttl, left)
	}
	if req.Agent == "" || req.Message == "" {
		return AgentAnswer{}, fmt.Errorf("%w: a call names an agent instance and a message", gateway.ErrInvalidRequest)
	}
	if req.Agent == claims.InstanceID {
		return AgentAnswer{}, fmt.Errorf("%w: an agent cannot call its own instance", gateway.ErrForbidden)
	}
	maxHops := req.MaxHops
	if maxHops <= 0 {
		maxHops = DefaultMaxAgentHops
	}
	hops, ok := chainHops(claims.Scopes)
	if !ok {
		return AgentAnswer{}, fmt.Errorf("%w: the caller's token carries a hop count that does not read", gateway.ErrForbidden)
	}
	if hops >= maxHops {
		return AgentAnswer{}, fmt.Errorf("%w: the chain of agent calls is %d hops long already, the most allowed", gateway.ErrForbidden, hops)
	}
	if _, err := s.store.GetInstance(ctx, claims.TenantID, req.Agent); err != nil {
		if isNotFound(err) {
			return AgentAnswer{}, fmt.Errorf("%w: no agent instance %.128q in the tenant", gateway.ErrNotFound, req.Agent)
		}
		return AgentAnswer{}, fmt.Errorf("execgw: call agent: %w", err)
	}
	t, err := s.target(ctx, gateway.Run{TenantID: claims.TenantID, InstanceID: req.Agent})
	if err != nil {
		return AgentAnswer{}, fmt.Errorf("execgw: call agent %s: %w", req.Agent, err)
	}
	sreq, opts, err := s.agentRequest(ctx, claims, req, t, hops+1, ttl)
	if err != nil {
		return AgentAnswer{}, err
	}
	// The caller's context bounds the call: the tool's timeout, not the
	// client's default for unary calls.
	opts = append(opts, a2aclient.WithTimeout(-1))
	res, err := t.client.SendMessage(ctx, sreq, opts...)
	if err != nil {
		s.log.Info("execgw: agent call failed", "tenant", claims.TenantID, "instance", req.Agent, "hops", hops+1, "err", describe(err))
		return AgentAnswer{}, fmt.Errorf("execgw: call agent %s: %w", req.Agent, err)
	}
	return answerOf(res), nil
}

// agentRequest builds the request of an agent call: the message, the
// platform context with the callee's chained token, the instance's
// secrets sealed to the agent, and the call's headers.
func (s *Service) agentRequest(ctx context.Context, caller *identity.Claims, req AgentCall, t *target, hops int, ttl time.Duration) (*a2a.SendMessageRequest, []a2aclient.CallOption, error) {
	inst := &t.inst
	claims := identity.Claims{
		TenantID: caller.TenantID, UserID: caller.UserID, RunID: caller.RunID, InstanceID: inst.ID,
		AgentID: agentID(inst), AgentName: inst.Name, ConversationID: caller.ConversationID,
		Scopes: chainScopes(inst.Scopes, hops),
		// The callee works in the caller's run: its model calls count
		// against the run's own limit too.
		LLMMaxTokens: caller.LLMMaxTokens, LLMMaxCostUSD: caller.LLMMaxCostUSD,
	}
	var token string
	var err error
	if inst.Hosted != "" {
		token, err = s.deps.Tokens.MintAs(ctx, identity.EdDSA, claims, ttl)
	} else {
		token, err = s.deps.Tokens.Mint(ctx, claims, ttl)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("execgw: mint the callee's token: %w", err)
	}
	parts := []a2a.Part{a2a.TextPart(req.Message)}
	if len(req.Data) > 0 {
		if !json.Valid(req.Data) {
			return nil, nil, fmt.Errorf("%w: data is not JSON", gateway.ErrInvalidRequest)
		}
		parts = append(parts, a2a.Part{Kind: a2a.PartData, Data: req.Data, MediaType: "application/json"})
	}
	msg := a2a.NewMessage(a2a.RoleUser, parts...)
	if req.CallID != "" {
		msg.MessageID = req.CallID
	}
	if req.SkillID != "" {
		msg.Metadata = map[string]any{agent.SkillIDMetadataKey: req.SkillID}
	}
	traceID, spanID, traceparent := traceContext(ctx, caller.RunID)
	pc := map[string]any{
		"tenant_id": caller.TenantID, "instance_id": inst.ID, "agent_id": agentID(inst),
		"execution_token": token, "trace_id": traceID, "span_id": spanID, "traceparent": traceparent,
	}
	setIf := func(k, v string) {
		if v != "" {
			pc[k] = v
		}
	}
	setIf("run_id", caller.RunID)
	setIf("user_id", caller.UserID)
	setIf("conversation_id", caller.ConversationID)
	setIf("idempotency_key", req.CallID)
	setIf("gateway_url", s.deps.BaseURL)
	if len(inst.Config) > 0 {
		pc["config"] = inst.Config
	}
	if inst.Memory {
		b := gateway.MemoryBudget{TokenBudget: agent.DefaultMemoryTokenBudget, LatencyBudgetMS: agent.DefaultMemoryLatencyBudgetMS}
		if mb := inst.MemoryBudget; mb != nil {
			if mb.TokenBudget > 0 {
				b.TokenBudget = mb.TokenBudget
			}
			if mb.LatencyBudgetMS > 0 {
				b.LatencyBudgetMS = mb.LatencyBudgetMS
			}
		}
		pc["memory_budget"] = b
	}
	sreq := &a2a.SendMessageRequest{Message: msg, Metadata: map[string]any{agent.ContextMetadataKey: pc}}
	opts := []a2aclient.CallOption{
		a2aclient.WithHeader("Authorization", "Bearer "+token),
		a2aclient.WithHeader("traceparent", traceparent),
	}
	if len(inst.SecretNames) > 0 {
		run := gateway.Run{ID: caller.RunID, TenantID: caller.TenantID, InstanceID: inst.ID}
		act, err := s.sealSecrets(sreq, &run, t)
		if err != nil {
			return nil, nil, fmt.Errorf("execgw: call agent %s: %w", inst.ID, err)
		}
		opts = append(opts, a2aclient.WithExtensions(act.Extensions...))
	}
	return sreq, opts, nil
}

// answerOf reads an agent's answer.
func answerOf(res *a2a.SendMessageResponse) AgentAnswer {
	if m := res.Message; m != nil {
		return AgentAnswer{TaskID: m.TaskID, State: a2a.TaskStateCompleted.String(), Text: m.Text()}
	}
	t := res.Task
	var text strings.Builder
	for i := range t.Artifacts {
		text.WriteString(a2a.PartsText(t.Artifacts[i].Parts))
	}
	if text.Len() == 0 {
		text.WriteString(t.Status.Message.Text())
	}
	return AgentAnswer{TaskID: t.ID, State: t.Status.State.String(), Text: text.String(), Artifacts: t.Artifacts}
}

// chainHops reads the hop count a token's scopes carry (0 without one);
// ok is false when a hop scope does not read as a count, which fails the
// call closed.
func chainHops(scopes []string) (hops int, ok bool) {
	for _, sc := range scopes {
		rest, found := strings.CutPrefix(sc, HopScopePrefix)
		if !found {
			continue
		}
		n, err := strconv.Atoi(rest)
		if err != nil || n < 0 || n > 1<<20 {
			return 0, false
		}
		hops = max(hops, n)
	}
	return hops, true
}

// chainScopes are a callee's scopes: its instance's, less any hop scope
// configured there, and the chain's hop count.
func chainScopes(inst []string, hops int) []string {
	out := make([]string, 0, len(inst)+1)
	for _, sc := range inst {
		if !strings.HasPrefix(sc, HopScopePrefix) {
			out = append(out, sc)
		}
	}
	return append(out, HopScopePrefix+strconv.Itoa(hops))
}
