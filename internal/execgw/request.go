package execgw

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"go.opentelemetry.io/otel/trace"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2aclient"
	"novaos.dev/novaos/agent"
	"novaos.dev/novaos/ext/usercontext"
	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/tools"
)

// request builds the A2A request of a delivery: the message (the input,
// or the answer to a pause), the platform context under
// agent.ContextMetadataKey with a fresh execution token, the instance's
// secrets sealed to the agent, and the call's headers.
func (s *Service) request(ctx context.Context, run gateway.Run, t *target) (*a2a.SendMessageRequest, []a2aclient.CallOption, error) {
	msg, callID, err := turnMessage(&run)
	if err != nil {
		return nil, nil, err
	}
	claims := identity.Claims{
		TenantID: run.TenantID, UserID: run.Caller.UserID, RunID: run.ID, InstanceID: run.InstanceID,
		AgentID: run.AgentID, AgentName: t.inst.Name, ConversationID: run.ConversationID, Scopes: t.inst.Scopes,
		CallID:       callID, // a resume token is good for the approved write only
		LLMMaxTokens: run.LLMLimit.MaxTokens, LLMMaxCostUSD: run.LLMLimit.MaxCostUSD,
	}
	var token string
	if t.inst.Hosted != "" {
		// A hosted agent runs in this process and its token is checked
		// by the platform's own verifier, which takes EdDSA: some thirty
		// times cheaper to sign than RS256, which agents elsewhere (the
		// Python SDK's) require.
		token, err = s.deps.Tokens.MintAs(ctx, identity.EdDSA, claims, s.o.TokenTTL)
	} else {
		token, err = s.deps.Tokens.Mint(ctx, claims, s.o.TokenTTL)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("execgw: mint the run's token: %w", err)
	}
	traceID, spanID, traceparent := traceContext(ctx, run.ID)
	pc := map[string]any{
		"run_id": run.ID, "tenant_id": run.TenantID, "instance_id": run.InstanceID, "agent_id": run.AgentID,
		"idempotency_key": run.IdempotencyKey, "execution_token": token,
		"trace_id": traceID, "span_id": spanID, "traceparent": traceparent,
	}
	setIf := func(k, v string) {
		if v != "" {
			pc[k] = v
		}
	}
	setIf("thread_id", run.ThreadID)
	setIf("user_id", run.Caller.UserID)
	setIf("conversation_id", run.ConversationID)
	setIf("session_id", run.ContextID)
	setIf("task_id", run.TaskID)
	setIf("gateway_url", s.deps.BaseURL)
	if s.deps.BaseURL != "" {
		// The agent calls its tools through the tool gateway with the
		// run's own token: the gateway checks its scopes per tool.
		pc["mcp_gateway_url"] = strings.TrimSuffix(s.deps.BaseURL, "/") + tools.Path
		pc["mcp_gateway_token"] = token
	}
	pc["mcp_write_hitl_active"] = writeHITLActive(t.inst.Scopes, run.Caller)
	if len(t.inst.Config) > 0 {
		pc["config"] = t.inst.Config
	}
	if len(run.OutputSchema) > 0 {
		pc["output_schema"] = run.OutputSchema
	}
	if t.inst.Memory {
		b := gateway.MemoryBudget{TokenBudget: agent.DefaultMemoryTokenBudget, LatencyBudgetMS: agent.DefaultMemoryLatencyBudgetMS}
		if mb := t.inst.MemoryBudget; mb != nil {
			if mb.TokenBudget > 0 {
				b.TokenBudget = mb.TokenBudget
			}
			if mb.LatencyBudgetMS > 0 {
				b.LatencyBudgetMS = mb.LatencyBudgetMS
			}
		}
		pc["memory_budget"] = b
	}
	if run.ThreadID != "" {
		hist, err := s.history(ctx, &run)
		if err != nil {
			return nil, nil, err
		}
		if len(hist) > 0 {
			pc["history"] = hist
		}
	}
	req := &a2a.SendMessageRequest{Message: msg, Metadata: map[string]any{agent.ContextMetadataKey: pc}}
	opts := []a2aclient.CallOption{
		a2aclient.WithHeader("Authorization", "Bearer "+token),
		a2aclient.WithHeader("traceparent", traceparent),
	}
	headers, err := s.openHeaders(&run)
	if err != nil {
		return nil, nil, permanentf("the run's custom headers cannot be opened: %v", err)
	}
	for name, v := range headers {
		opts = append(opts, a2aclient.WithHeader(name, v))
	}
	if len(t.inst.SecretNames) > 0 {
		act, err := s.sealSecrets(req, &run, t)
		if err != nil {
			return nil, nil, err
		}
		opts = append(opts, a2aclient.WithExtensions(act.Extensions...))
	}
	return req, opts, nil
}

// writeHITLActive is the platform context's mcp_write_hitl_active: whether
// the run's token may call a tool the tool gateway would hold for a
// person, because the instance's scopes grant every tool (mcp:*,
// mcp:tools:*) or a write-class one by name. It is false for a service
// account's run, as the NovaOS Python SDK's contract says. A hint for the agent;
// the gateway decides each call itself.
func writeHITLActive(scopes []string, caller gateway.Caller) bool {
	if caller.Service {
		return false
	}
	if identity.AnyScopeMatches(scopes, "mcp:tools:*") {
		return true
	}
	for _, s := range scopes {
		if name, ok := strings.CutPrefix(s, "mcp:tools:"); ok && tools.RequiresWriteHITL(name) {
			return true
		}
	}
	return false
}

// turnMessage is the message of the run's current turn: the answer a
// paused run was given, or its input with its attachments. Every attempt
// of a turn sends the same message id, so an agent that keeps them can
// recognise a redelivery.
func turnMessage(run *gateway.Run) (*a2a.Message, string, error) {
	if len(run.PendingInput) > 0 {
		var pi pendingInput
		if err := json.Unmarshal(run.PendingInput, &pi); err != nil || pi.Message == nil {
			return nil, "", permanentf("the answer to the paused run cannot be read")
		}
		pi.Message.MessageID = run.IdempotencyKey
		return pi.Message, pi.CallID, nil
	}
	parts := []a2a.Part{a2a.TextPart(run.Input)}
	for _, at := range run.Attachments {
		if at.URL != "" {
			parts = append(parts, a2a.URLPart(at.URL, at.Name, at.Type))
		} else {
			parts = append(parts, a2a.RawPart(at.Data, at.Name, at.Type))
		}
	}
	m := a2a.NewMessage(a2a.RoleUser, parts...)
	m.MessageID = run.IdempotencyKey
	m.ContextID = run.ContextID
	return m, "", nil
}

// history is the thread's earlier turns, oldest first: each earlier run's
// input, and its answer when it gave one. A thread id is the caller's to
// choose, so only the same caller's runs count: another user naming the
// thread reads nothing of it.
func (s *Service) history(ctx context.Context, run *gateway.Run) ([]agent.ConversationTurn, error) {
	runs, err := s.store.ListRuns(ctx, gateway.RunFilter{TenantID: run.TenantID, ThreadID: run.ThreadID,
		UserID: run.Caller.UserID, AfterCreated: run.CreatedAt, AfterID: run.ID, Limit: s.o.HistoryTurns})
	if err != nil {
		return nil, fmt.Errorf("execgw: read the thread's history: %w", err)
	}
	slices.Reverse(runs)
	var out []agent.ConversationTurn
	for _, r := range runs {
		if r.Caller != run.Caller {
			continue
		}
		out = append(out, agent.ConversationTurn{Role: "user", Content: r.Input})
		if r.Output != "" {
			out = append(out, agent.ConversationTurn{Role: "assistant", Content: r.Output})
		}
	}
	return out, nil
}

// sealSecrets opens the instance's secrets and seals them to the agent's
// recipient key for this delivery.
func (s *Service) sealSecrets(req *a2a.SendMessageRequest, run *gateway.Run, t *target) (usercontext.Activation, error) {
	if t.recipient.Public == nil {
		return usercontext.Activation{}, permanentf("the instance has secrets but its agent publishes no recipient key to seal them to")
	}
	values, err := s.openSecrets(&t.inst)
	if err != nil {
		return usercontext.Activation{}, permanentf("the instance's secrets cannot be opened: %v", err)
	}
	sec := make(map[string]usercontext.Secret, len(values))
	for k, v := range values {
		sec[k] = usercontext.NewSecret(v)
	}
	act, err := usercontext.SealRequest(req, t.recipient, usercontext.Run{TenantID: run.TenantID, InstanceID: run.InstanceID, RunID: run.ID}, sec)
	if err != nil {
		return usercontext.Activation{}, permanentf("sealing the instance's secrets failed: %v", err)
	}
	return act, nil
}

// traceContext is the W3C trace context a call of an agent sends in its
// platform context and its traceparent header: the span in ctx (a
// delivery's, or the tool call's that calls an agent), else, when nothing
// traces, one of the run's own trace id, so the agent's logs of every
// delivery of a run share a trace id.
func traceContext(ctx context.Context, runID string) (traceID, spanID, traceparent string) {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		flags := "00"
		if sc.IsSampled() {
			flags = "01"
		}
		traceID, spanID = sc.TraceID().String(), sc.SpanID().String()
		return traceID, spanID, "00-" + traceID + "-" + spanID + "-" + flags
	}
	traceID, spanID = traceIDOf(runID), randomHex(8)
	return traceID, spanID, "00-" + traceID + "-" + spanID + "-01"
}

// traceIDOf is the run's W3C trace id: its UUID's 32 hex digits, so
// every delivery of a run is one trace.
func traceIDOf(runID string) string {
	h := strings.ReplaceAll(runID, "-", "")
	if len(h) == 32 && strings.Trim(h, "0123456789abcdef") == "" && strings.Trim(h, "0") != "" {
		return h
	}
	return randomHex(16)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// toJSON encodes plain data the gateway built; one that does not encode
// (a bug) is recorded as an error object rather than lost or panicked on.
func toJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(map[string]string{"error": "unencodable: " + err.Error()})
	}
	return b
}
