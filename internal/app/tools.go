package app

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"novaos.dev/novaos/gate"
	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/execgw"
	"novaos.dev/novaos/internal/gatesvc"
	"novaos.dev/novaos/internal/httpapi"
	"novaos.dev/novaos/internal/memorysvc"
	"novaos.dev/novaos/internal/sealkey"
	"novaos.dev/novaos/internal/toolgw"
	"novaos.dev/novaos/internal/toolgw/builtin"
	"novaos.dev/novaos/internal/toolgw/files"
	"novaos.dev/novaos/internal/toolgw/knowledge"
	"novaos.dev/novaos/internal/toolgw/upstream"
	"novaos.dev/novaos/store"
	"novaos.dev/novaos/tools"
)

// The tool gateway reaches the other services through these adapters:
// the gate judges its write-class calls, the execution gateway shows its
// calls in runs, and the memory service is its novaos.memory.* tools.

// toolGate is the gate as the tool gateway sees it.
type toolGate struct{ svc *gatesvc.Service }

func gateCaller(c *toolgw.Caller) *gatesvc.Caller {
	return &gatesvc.Caller{Tenant: c.Tenant, Agent: c.Agent, Actor: c.Subject,
		Grants: func(scope string) bool { return identity.AnyScopeMatches(c.Scopes, scope) }}
}

func (g toolGate) OpenSession(ctx context.Context, c *toolgw.Caller, req gate.SessionRequest) error {
	_, _, err := g.svc.OpenSession(ctx, gateCaller(c), req)
	return err
}

func (g toolGate) Submit(ctx context.Context, c *toolgw.Caller, act gate.Action) (gate.Verdict, error) {
	raw, err := json.Marshal(act)
	if err != nil {
		return gate.Verdict{}, fmt.Errorf("app: encode the action: %w", err)
	}
	return g.svc.Submit(ctx, gateCaller(c), raw, true)
}

func (g toolGate) Claim(ctx context.Context, c *toolgw.Caller, req gate.ClaimRequest) (gate.Claim, error) {
	return g.svc.Claim(ctx, gateCaller(c), req)
}

func (g toolGate) Ack(ctx context.Context, c *toolgw.Caller, req gate.AckRequest) (gate.Ack, error) {
	return g.svc.Ack(ctx, gateCaller(c), req)
}

func (g toolGate) Action(ctx context.Context, tenant, session, action string) (gate.ActionRecord, error) {
	return g.svc.Get(ctx, tenant, session, action)
}

func (g toolGate) Audit(ctx context.Context, entries ...gate.AuditEntry) error {
	return g.svc.AppendAudit(ctx, entries...)
}

// toolRuns is the execution gateway's runs as the tool gateway sees them.
type toolRuns struct{ svc *execgw.Service }

func (r toolRuns) AppendEvents(ctx context.Context, tenant, runID string, events ...gateway.Event) error {
	return r.svc.AppendEvents(ctx, tenant, runID, events...)
}

func (r toolRuns) RecentEvents(ctx context.Context, tenant, runID string, limit int) ([]gateway.Event, error) {
	return r.svc.RecentEvents(ctx, tenant, runID, limit)
}

func (r toolRuns) AnswerWrite(ctx context.Context, tenant, runID, callID string, approved bool, actor string) error {
	return r.svc.AnswerWrite(ctx, tenant, runID, callID, approved, actor)
}

func (r toolRuns) WaitingWrites(ctx context.Context, after string, limit int) ([]toolgw.WaitingWrite, string, error) {
	list, next, err := r.svc.WaitingWrites(ctx, after, limit)
	out := make([]toolgw.WaitingWrite, len(list))
	for i, w := range list {
		out[i] = toolgw.WaitingWrite{Tenant: w.Tenant, RunID: w.RunID, CallID: w.CallID}
	}
	return out, next, err
}

// builtinTools are the tool servers behind the gateway besides memory:
// notify, http, hitl, connectors, agents (with the execution gateway),
// files and knowledge (off without their stores), and the tenants'
// upstream servers.
func (s *Server) builtinTools(st *store.Stores, g *execgw.Service, sealer *sealkey.Sealer, tokens httpapi.Authenticator) ([]toolgw.Provider, error) {
	o := s.opts.BuiltinTools
	logger := s.log.With("service", "tools")
	o.Notify.Logger = cmp.Or(o.Notify.Logger, logger)
	o.HTTP.Logger = cmp.Or(o.HTTP.Logger, logger)
	o.Connectors.Logger = cmp.Or(o.Connectors.Logger, logger)
	o.Agents.Logger = cmp.Or(o.Agents.Logger, logger)
	o.Files.Logger = cmp.Or(o.Files.Logger, logger)
	o.Knowledge.Logger = cmp.Or(o.Knowledge.Logger, logger)
	o.Upstream.Logger = cmp.Or(o.Upstream.Logger, logger)
	if o.Knowledge.Embedder == nil {
		o.Knowledge.Embedder = s.opts.Memory.Embedder
	}
	if o.Files.MaxFileBytes == 0 {
		// A larger file's base64 would not fit a call's arguments.
		o.Files.MaxFileBytes = toolgw.DefaultFileBytes
	}
	notify, err := builtin.Notify(&o.Notify)
	if err != nil {
		return nil, fmt.Errorf("app: notify tools: %w", err)
	}
	web, err := builtin.HTTP(&o.HTTP)
	if err != nil {
		return nil, fmt.Errorf("app: http tools: %w", err)
	}
	conns, err := builtin.Connectors(&o.Connectors)
	if err != nil {
		return nil, fmt.Errorf("app: connector tools: %w", err)
	}
	var caller builtin.AgentCaller
	if g != nil {
		caller = builtin.AgentCallerFunc(func(ctx context.Context, c *toolgw.Caller, r builtin.AgentCall) (builtin.AgentAnswer, error) {
			a, err := g.CallAgent(ctx, c.Token, execgw.AgentCall(r))
			return builtin.AgentAnswer(a), err
		})
	}
	agents, err := builtin.Agents(caller, &o.Agents)
	if err != nil {
		return nil, fmt.Errorf("app: agents tools: %w", err)
	}
	fileTools, err := files.New(st.Files, &o.Files)
	if err != nil {
		return nil, fmt.Errorf("app: files tools: %w", err)
	}
	list := []toolgw.Provider{notify, web, builtin.HITL(), conns, agents, fileTools,
		knowledge.New(st.Knowledge, st.Memory, &o.Knowledge)}
	if st.ToolServers != nil {
		deps := upstream.Deps{Auth: httpapi.AdminOrToken(s.opts.AdminToken, tokens)}
		if sealer != nil {
			deps.Sealer = sealer
		}
		up, err := upstream.New(st.ToolServers, deps, &o.Upstream)
		if err != nil {
			return nil, fmt.Errorf("app: upstream tool servers: %w", err)
		}
		list = append(list, up)
	}
	return list, nil
}

// memoryTools serves the memory service's tools behind the tool gateway:
// the memory service checks its own memory scopes, as on its own door.
type memoryTools struct{ svc *memorysvc.Service }

func memoryCaller(c *toolgw.Caller) *memorysvc.Caller {
	return &memorysvc.Caller{Tenant: c.Tenant, Agent: c.Agent, User: c.User, Run: c.Run, Conversation: c.Conversation,
		Grants: func(scope string) bool { return identity.AnyScopeMatches(c.Scopes, scope) }}
}

func (m memoryTools) Tools(context.Context, *toolgw.Caller) ([]toolgw.Tool, error) {
	list := m.svc.Tools()
	out := make([]toolgw.Tool, 0, len(list))
	for _, t := range list {
		out = append(out, memoryTool(t))
	}
	return out, nil
}

func (m memoryTools) Find(_ context.Context, _ *toolgw.Caller, name string) (*toolgw.Tool, bool, error) {
	if tools.Server(name) != tools.ServerMemory {
		return nil, false, nil
	}
	for _, t := range m.svc.Tools() {
		if t.Name == name {
			tool := memoryTool(t)
			return &tool, true, nil
		}
	}
	return nil, false, nil
}

func (m memoryTools) Call(ctx context.Context, r *toolgw.Request) (*mcp.CallToolResult, error) {
	res, ok := m.svc.CallTool(ctx, memoryCaller(r.Caller), r.Tool.Name, r.Arguments)
	if !ok {
		return nil, toolgw.Failf(tools.ReasonToolNotFound, "no memory tool %s", r.Tool.Name)
	}
	return res, nil
}

func memoryTool(t *mcp.Tool) toolgw.Tool {
	out := toolgw.Tool{Tool: tools.Tool{Name: t.Name, Title: t.Title, Description: t.Description}}
	out.InputSchema, _ = json.Marshal(t.InputSchema)
	if t.OutputSchema != nil {
		out.OutputSchema, _ = json.Marshal(t.OutputSchema)
	}
	// Only a read-only hint is passed on: a memory write changes the
	// agent's own memory, which the platform's rules place as read-class
	// (tools.ActionClass), where MCP's absent hint would mean a write.
	if a := t.Annotations; a != nil && a.ReadOnlyHint {
		ro := true
		out.Annotations = &tools.Annotations{ReadOnly: &ro}
	}
	return out
}
