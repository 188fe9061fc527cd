package agent

import (
	"encoding/json"
	"math"
	"strings"
)

// Metadata keys the agent reads.
const (
	// ContextMetadataKey is where the platform puts its execution context
	// (run id, tenant, history, idempotency key, …) in SendMessage request
	// metadata, or in message metadata for a hand-built message. The value
	// is a JSON object shaped like PlatformContext.
	ContextMetadataKey = "novaos.dev/context"
	// SkillIDMetadataKey names the skill to run, in message metadata (or,
	// failing that, request metadata).
	SkillIDMetadataKey = "skillId"
)

// PlatformContext is the execution context the platform sends with a
// message under ContextMetadataKey. Field names are snake_case on the wire;
// lowerCamelCase spellings are accepted too. The execution token sent in
// the same object ("execution_token") is not a field: it is read into
// Context.Execution, as a secret.Value, so printing or logging a
// PlatformContext can never show it. Nor is the tool gateway's token
// ("mcp_gateway_token"): package tools reads it, as a secret.Value.
type PlatformContext struct {
	RunID      string `json:"run_id,omitempty"`
	ThreadID   string `json:"thread_id,omitempty"`
	SessionID  string `json:"session_id,omitempty"`
	AgentID    string `json:"agent_id,omitempty"`
	InstanceID string `json:"instance_id,omitempty"`
	UserID     string `json:"user_id,omitempty"`
	TenantID   string `json:"tenant_id,omitempty"`
	// TraceID and Traceparent are the platform's W3C trace context, used
	// when the request carried no traceparent header.
	TraceID     string `json:"trace_id,omitempty"`
	SpanID      string `json:"span_id,omitempty"`
	Traceparent string `json:"traceparent,omitempty"`
	// IdempotencyKey is stable across the platform's retries of one
	// logical request: execution is at-least-once.
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	// ConversationID is the conversation the run belongs to; memory
	// recall and hints use it.
	ConversationID string `json:"conversation_id,omitempty"`
	// GatewayURL is the platform's base URL, where the agent calls its
	// services (memory, tools) with Context.Execution's token.
	GatewayURL string `json:"gateway_url,omitempty"`
	// MCPGatewayURL is the tool gateway's MCP endpoint, where the agent
	// calls its tools (package tools); "" means the one under GatewayURL.
	MCPGatewayURL string `json:"mcp_gateway_url,omitempty"`
	// MCPWriteHITLActive says whether the run's token grants a tool the
	// gateway holds for a person (write-class, -32042): a hint a skill
	// may read before it calls, never a guarantee. Always false for a
	// service account's run.
	MCPWriteHITLActive bool `json:"mcp_write_hitl_active,omitempty"`
	// MemoryBudget is the memory pre-fetch budget the platform attaches to
	// the requests of an agent that declared the memory capability (the
	// NovaOS Python SDK's memory_budget); nil when it did not.
	MemoryBudget *MemoryBudget `json:"memory_budget,omitempty"`
	// History holds the conversation's earlier turns, oldest first.
	History      []ConversationTurn `json:"history,omitempty"`
	Config       map[string]any     `json:"config,omitempty"`
	OutputSchema map[string]any     `json:"output_schema,omitempty"`
}

// ConversationTurn is one earlier turn of the conversation. Role is passed
// through as the platform sent it ("user", "assistant" in practice).
type ConversationTurn struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// ParsePlatformContext returns the platform context from the first of the
// metadata maps that carries one under ContextMetadataKey; pass request
// metadata before message metadata. ok is false when none does. Malformed
// fields are skipped rather than failing the request: a turn that is not an
// object with a string role is left out of History.
func ParsePlatformContext(metadata ...map[string]any) (pc PlatformContext, ok bool) {
	pc, _, ok = findPlatformContext(metadata)
	return pc, ok
}

// findPlatformContext is ParsePlatformContext, also returning the object
// as a map when it arrived as one (or as JSON), for the members that are
// not PlatformContext fields.
func findPlatformContext(metadata []map[string]any) (PlatformContext, map[string]any, bool) {
	for _, md := range metadata {
		v, found := md[ContextMetadataKey]
		if !found || v == nil {
			continue
		}
		switch x := v.(type) {
		case PlatformContext:
			return x, nil, true
		case *PlatformContext:
			if x != nil {
				return *x, nil, true
			}
		case map[string]any:
			return platformFromMap(x), x, true
		case string:
			var m map[string]any
			if json.Unmarshal([]byte(x), &m) == nil {
				return platformFromMap(m), m, true
			}
		case json.RawMessage:
			var m map[string]any
			if json.Unmarshal(x, &m) == nil {
				return platformFromMap(m), m, true
			}
		}
	}
	return PlatformContext{}, nil, false
}

func platformFromMap(m map[string]any) PlatformContext {
	return PlatformContext{
		RunID:              str(m, "run_id", "runId"),
		ThreadID:           str(m, "thread_id", "threadId"),
		SessionID:          str(m, "session_id", "sessionId"),
		AgentID:            str(m, "agent_id", "agentId"),
		InstanceID:         str(m, "instance_id", "instanceId"),
		UserID:             str(m, "user_id", "userId"),
		TenantID:           str(m, "tenant_id", "tenantId"),
		TraceID:            str(m, "trace_id", "traceId"),
		SpanID:             str(m, "span_id", "spanId"),
		Traceparent:        str(m, "traceparent"),
		IdempotencyKey:     str(m, "idempotency_key", "idempotencyKey"),
		ConversationID:     str(m, "conversation_id", "conversationId"),
		GatewayURL:         str(m, "gateway_url", "gatewayUrl"),
		MCPGatewayURL:      str(m, "mcp_gateway_url", "mcpGatewayUrl"),
		MCPWriteHITLActive: boolean(m, "mcp_write_hitl_active", "mcpWriteHitlActive"),
		MemoryBudget:       memoryBudget(obj(m, "memory_budget", "memoryBudget")),
		History:            turns(m["history"]),
		Config:             obj(m, "config"),
		OutputSchema:       obj(m, "output_schema", "outputSchema"),
	}
}

func str(m map[string]any, keys ...string) string {
	for _, k := range keys {
		if s, ok := m[k].(string); ok {
			return s
		}
	}
	return ""
}

func boolean(m map[string]any, keys ...string) bool {
	for _, k := range keys {
		if b, ok := m[k].(bool); ok {
			return b
		}
	}
	return false
}

func obj(m map[string]any, keys ...string) map[string]any {
	for _, k := range keys {
		if o, ok := m[k].(map[string]any); ok {
			return o
		}
	}
	return nil
}

func turns(v any) []ConversationTurn {
	list, ok := v.([]any)
	if !ok {
		if ts, ok := v.([]ConversationTurn); ok {
			return ts
		}
		return nil
	}
	out := make([]ConversationTurn, 0, len(list))
	for _, e := range list {
		m, ok := e.(map[string]any)
		if !ok {
			continue
		}
		role, ok := m["role"].(string)
		if !ok {
			continue
		}
		content, _ := m["content"].(string)
		out = append(out, ConversationTurn{Role: role, Content: content})
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// parseTraceparent returns the trace id of a valid W3C traceparent
// (version-traceid-parentid-flags, lower-case hex, ids not all zero).
func parseTraceparent(tp string) (traceID string, ok bool) {
	tp = strings.TrimSpace(tp)
	parts := strings.Split(tp, "-")
	if len(parts) < 4 || len(parts[0]) != 2 || parts[0] == "ff" ||
		len(parts[1]) != 32 || len(parts[2]) != 16 || len(parts[3]) != 2 {
		return "", false
	}
	if parts[0] == "00" && len(parts) != 4 {
		return "", false
	}
	for _, p := range parts[:4] {
		if !isLowerHex(p) {
			return "", false
		}
	}
	if allZero(parts[1]) || allZero(parts[2]) {
		return "", false
	}
	return parts[1], true
}

func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func allZero(s string) bool { return strings.Trim(s, "0") == "" }

// MemoryBudget bounds the memory pre-fetch: the assembled context's size
// in tokens and the time the memory service may take.
type MemoryBudget struct {
	TokenBudget     int `json:"token_budget"`
	LatencyBudgetMS int `json:"latency_budget_ms"`
}

// Defaults of a memory budget whose fields are missing, as the NovaOS
// memory guide gives them.
const (
	DefaultMemoryTokenBudget     = 4000
	DefaultMemoryLatencyBudgetMS = 800
)

// memoryBudget reads a memory_budget object: missing or non-positive
// fields take the defaults; no object is no budget.
func memoryBudget(m map[string]any) *MemoryBudget {
	if m == nil {
		return nil
	}
	b := &MemoryBudget{TokenBudget: DefaultMemoryTokenBudget, LatencyBudgetMS: DefaultMemoryLatencyBudgetMS}
	if n, ok := positiveInt(m["token_budget"]); ok {
		b.TokenBudget = n
	}
	if n, ok := positiveInt(m["latency_budget_ms"]); ok {
		b.LatencyBudgetMS = n
	}
	return b
}

// positiveInt reads a JSON number that is a positive whole number small
// enough for an int32.
func positiveInt(v any) (int, bool) {
	f, ok := v.(float64)
	if !ok || f < 1 || f > math.MaxInt32 || f != math.Trunc(f) {
		return 0, false
	}
	return int(f), true
}
