package toolgw

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/secret"
	"novaos.dev/novaos/tools"
)

// toolMethods answers tools/list and tools/call for the caller the HTTP
// layer established, and passes every other method to the SDK.
func (s *Service) toolMethods(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "tools/list", "tools/call":
		default:
			return next(ctx, method, req)
		}
		r := requestOf(req)
		if r == nil {
			return nil, rpcError(tools.CodeUnauthorized, "a verified bearer token is required", nil)
		}
		if method == "tools/list" {
			return s.list(ctx, r)
		}
		res, err := s.call(ctx, r)
		if err == nil && res != nil && newProtocol(req) {
			return completeResult{res}, nil
		}
		return res, err
	}
}

// newProtocol reports whether req was made under MCP 2026-07-28 or later,
// as the SDK tells: its _meta names the protocol version.
func newProtocol(req mcp.Request) bool {
	v, _ := req.GetParams().GetMeta()[mcp.MetaKeyProtocolVersion].(string)
	return v >= "2026-07-28"
}

// completeResult is a tools/call result marked final (resultType
// "complete"), which clients of MCP 2026-07-28 require of it. The SDK
// marks the results of the tools registered with it only, and keeps the
// field unexported, so the gateway, which answers tools/call itself,
// writes the mark into the result's JSON.
type completeResult struct{ *mcp.CallToolResult }

func (r completeResult) MarshalJSON() ([]byte, error) {
	b, err := r.CallToolResult.MarshalJSON()
	if err != nil || len(b) < 2 || b[0] != '{' {
		return b, err
	}
	if b[1] == '}' {
		return []byte(`{"resultType":"complete"}`), nil
	}
	return append([]byte(`{"resultType":"complete",`), b[1:]...), nil
}

func requestOf(req mcp.Request) *request {
	extra := req.GetExtra()
	if extra == nil || extra.TokenInfo == nil {
		return nil
	}
	r, _ := extra.TokenInfo.Extra[requestKey].(*request)
	return r
}

// list answers tools/list: the tools the caller may call, filtered by the
// same scope and policy checks a call meets, and by the query when one
// is given.
func (s *Service) list(ctx context.Context, r *request) (*mcp.ListToolsResult, error) {
	query := strings.ToLower(strings.TrimSpace(r.env.Params.Query))
	if query == "" {
		query = strings.ToLower(strings.TrimSpace(r.env.Params.Meta.Query))
	}
	pol, err := s.policies.get(ctx, r.caller.Tenant)
	if err != nil {
		return nil, s.unavailable("the tenant's tool policy could not be loaded", err)
	}
	// The list depends on the caller's token and the tenant's policy, so
	// no cache may share it between callers (MCP's cacheScope "private",
	// which 2026-07-28 clients require to be present), and a policy may
	// change at any time (ttlMs 0: stale at once).
	out := &mcp.ListToolsResult{Tools: []*mcp.Tool{}, Cacheable: mcp.Cacheable{CacheScope: "private"}}
	seen := map[string]bool{}
	for _, p := range s.deps.Providers {
		list, err := p.Tools(ctx, r.caller)
		if err != nil {
			// One source down leaves the others listed.
			s.log.Warn("toolgw: list tools", "tenant", r.caller.Tenant, "err", err)
			continue
		}
		for i := range list {
			t := &list[i]
			if seen[t.Name] || !tools.ValidName(t.Name) || missingScope(r.caller, t) != "" {
				continue
			}
			if query != "" && !strings.Contains(strings.ToLower(t.Name), query) && !strings.Contains(strings.ToLower(t.Description), query) {
				continue
			}
			if pol != nil {
				d, err := pol.decide(ctx, r.caller, t, nil)
				if err != nil || d == policyDeny {
					continue
				}
			}
			seen[t.Name] = true
			out.Tools = append(out.Tools, mcpTool(t))
		}
	}
	slices.SortFunc(out.Tools, func(a, b *mcp.Tool) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// find returns the tool called name, from the first provider that has it.
func (s *Service) find(ctx context.Context, c *Caller, name string) (*Tool, Provider, error) {
	if !tools.ValidName(name) {
		return nil, nil, rpcError(-32602, fmt.Sprintf("unknown tool %q: tool names are novaos.<server>.<tool>", clip(name)),
			&tools.ErrorData{Code: tools.ReasonToolNotFound, Tool: clip(name)})
	}
	for _, p := range s.deps.Providers {
		t, ok, err := p.Find(ctx, c, name)
		if err != nil {
			return nil, nil, s.providerError(name, err)
		}
		if ok {
			return t, p, nil
		}
	}
	return nil, nil, rpcError(-32602, fmt.Sprintf("unknown tool %q", name), &tools.ErrorData{Code: tools.ReasonToolNotFound, Tool: name})
}

// call answers tools/call, traced and counted (telemetry.go).
func (s *Service) call(ctx context.Context, r *request) (*mcp.CallToolResult, error) {
	start := time.Now()
	ctx, span := s.tel.start(ctx, r)
	var st callStat
	res, err := s.callTool(ctx, r, &st)
	s.tel.end(span, &st, start, res, err)
	return res, err
}

// callTool answers tools/call: find, authorise, check, classify, and run
// the call, through the gate when it is write-class; st learns the
// call's class and request as they are settled.
func (s *Service) callTool(ctx context.Context, r *request, st *callStat) (*mcp.CallToolResult, error) {
	c, name := r.caller, r.env.Params.Name
	select {
	case s.inflight <- struct{}{}:
		defer func() { <-s.inflight }()
	default:
		return nil, rpcError(tools.CodeUnavailable, "the gateway is at its limit of calls in flight: retry", &tools.ErrorData{Code: tools.ReasonUnavailable})
	}
	t, p, err := r.tool, r.provider, r.findErr
	if t == nil && err == nil {
		t, p, err = s.find(ctx, c, name)
	}
	if err != nil {
		return nil, err
	}
	class := tools.ActionClass(name, t.Annotations)
	st.class = class
	if scope := missingScope(c, t); scope != "" {
		return nil, rpcError(tools.CodeForbidden, "the token lacks the scope "+scope,
			&tools.ErrorData{Code: tools.ReasonInsufficientScope, Scope: scope, Tool: name})
	}
	args := r.env.Params.Arguments
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	if int64(len(args)) > s.o.MaxArgumentBytes {
		return nil, rpcError(-32602, fmt.Sprintf("the arguments are over %d bytes", s.o.MaxArgumentBytes),
			&tools.ErrorData{Code: tools.ReasonInvalidArguments, Tool: name})
	}
	var argMap map[string]any
	if err := json.Unmarshal(args, &argMap); err != nil || argMap == nil {
		return nil, rpcError(-32602, "the arguments must be a JSON object", &tools.ErrorData{Code: tools.ReasonInvalidArguments, Tool: name})
	}
	if err := s.schemas.validate(t, argMap); err != nil {
		return nil, rpcError(-32602, "the arguments do not match the tool's input schema: "+err.Error(),
			&tools.ErrorData{Code: tools.ReasonInvalidArguments, Tool: name})
	}
	pol, err := s.policies.get(ctx, c.Tenant)
	if err != nil {
		return nil, s.unavailable("the tenant's tool policy could not be loaded", err)
	}
	if pol != nil {
		d, err := pol.decide(ctx, c, t, argMap)
		if err != nil {
			// A policy that cannot decide refuses: it may exist to stop
			// this very call.
			return nil, rpcError(tools.CodeForbidden, "the tenant's tool policy could not decide: "+err.Error(),
				&tools.ErrorData{Code: tools.ReasonPolicyDenied, Tool: name})
		}
		switch d {
		case policyDeny:
			return nil, rpcError(tools.CodeForbidden, "the tenant's tool policy refuses this call",
				&tools.ErrorData{Code: tools.ReasonPolicyDenied, Tool: name, Rule: "policy"})
		case policyRead:
			class = tools.ClassRead
		case policyWrite, policyGate:
			class = tools.ClassWrite
		}
		if d == policyGate {
			r.gateOnly = true
		}
	}
	call := &Request{Caller: c, Tool: t, Arguments: args, CallID: freshCallID(r)}
	st.class, st.call = class, call
	if class == tools.ClassWrite {
		return s.callWrite(ctx, r, p, call)
	}
	return s.run(ctx, p, call, class, nil)
}

// run makes the call, shows it in the caller's run, meters and audits it.
func (s *Service) run(ctx context.Context, p Provider, call *Request, class tools.Class, audit map[string]any) (*mcp.CallToolResult, error) {
	timeout := call.Tool.Timeout
	if timeout <= 0 {
		timeout = DefaultBuiltinTimeout
	}
	s.runEvent(ctx, call.Caller, eventToolCall, map[string]any{"call_id": call.CallID, "tool": call.Tool.Name, "class": class})
	cctx, cancel := context.WithTimeout(ctx, timeout)
	unhook := context.AfterFunc(s.calls, cancel)
	start := time.Now()
	res, err := p.Call(cctx, call)
	elapsed := time.Since(start)
	timedOut := cctx.Err() == context.DeadlineExceeded && ctx.Err() == nil
	cutOff := err != nil && !timedOut && s.calls.Err() != nil && ctx.Err() == nil
	unhook()
	cancel()
	if err == nil && res == nil {
		err = Failf(tools.ReasonUnavailable, "the tool answered nothing")
	}
	outcome, size := "ok", 0
	switch {
	case cutOff:
		err = Failf(tools.ReasonUnavailable, "the server shut down during the call")
		outcome = "failed"
	case timedOut:
		err = Failf(tools.ReasonTimeout, "no answer within %s", timeout)
		outcome = "timeout"
	case err != nil:
		outcome = "failed"
	default:
		if res.IsError {
			outcome = "error"
		}
		b, mErr := json.Marshal(res)
		if size = len(b); mErr != nil || int64(size) > s.o.MaxResultBytes {
			res, err, outcome = nil, Failf(tools.ReasonUnavailable, "the tool's result is over %d bytes", s.o.MaxResultBytes), "failed"
		}
	}
	fields := map[string]any{"call_id": call.CallID, "tool": call.Tool.Name, "success": err == nil && !res.IsError,
		"duration_ms": elapsed.Milliseconds()}
	if err != nil {
		fields["error"] = errText(err)
	} else if res.IsError {
		fields["error"] = firstText(res)
	}
	s.runEvent(ctx, call.Caller, eventToolResult, fields)
	call.outcome = outcome
	s.meter.add(call.Caller, call.Tool.Name, outcome, int64(len(call.Arguments)), int64(size), elapsed)
	entry := map[string]any{"tool": call.Tool.Name, "class": class, "outcome": outcome, "run_id": call.Caller.Run,
		"instance_id": call.Caller.Instance, "user_id": call.Caller.User, "duration_us": elapsed.Microseconds(),
		"args_bytes": len(call.Arguments), "result_bytes": size}
	for k, v := range audit {
		entry[k] = v
	}
	s.audit.add(auditCall, call.Caller, call.CallID, entry)
	if err != nil {
		return nil, s.providerError(call.Tool.Name, err)
	}
	return res, nil
}

// freshCallID is the id of a call: the one the client gave it (so its own
// tool events and the run's agree), else a new one; never the call a
// resume token is bound to, which only the write that call approved
// takes (callWrite).
func freshCallID(r *request) string {
	if id := r.env.Params.Meta.CallID; validCallID(id) && id != r.caller.CallID {
		return id
	}
	return newCallID()
}

// validCallID reports whether a client's call id may be used: 1 to 64 of
// a-z, A-Z, 0-9, '_', '-' and '.'.
func validCallID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

func newCallID() string { return "call_" + strings.ToLower(rand.Text()) }

// missingScope is a scope the caller lacks for t, or "": the tool's own
// mcp:tools scope (its full name, or its server's name, each granted by
// wildcards such as mcp:tools:* and mcp:*) and every scope the tool adds.
func missingScope(c *Caller, t *Tool) string {
	need := "mcp:tools:" + t.Name
	if !identity.AnyScopeMatches(c.Scopes, need) && !identity.AnyScopeMatches(c.Scopes, "mcp:tools:"+tools.Server(t.Name)) {
		return need
	}
	for _, sc := range t.Scopes {
		if !identity.AnyScopeMatches(c.Scopes, sc) {
			return sc
		}
	}
	return ""
}

// mcpTool is the tools/list entry of t.
func mcpTool(t *Tool) *mcp.Tool {
	out := &mcp.Tool{Name: t.Name, Title: t.Title, Description: t.Description}
	if len(t.InputSchema) > 0 {
		out.InputSchema = t.InputSchema
	} else {
		out.InputSchema = json.RawMessage(`{"type":"object"}`)
	}
	if len(t.OutputSchema) > 0 {
		out.OutputSchema = t.OutputSchema
	}
	if a := t.Annotations; a != nil {
		out.Annotations = &mcp.ToolAnnotations{DestructiveHint: a.Destructive, OpenWorldHint: a.OpenWorld}
		if a.ReadOnly != nil {
			out.Annotations.ReadOnlyHint = *a.ReadOnly
		}
		if a.Idempotent != nil {
			out.Annotations.IdempotentHint = *a.Idempotent
		}
	}
	return out
}

// providerError is the JSON-RPC error of a call a provider could not make.
func (s *Service) providerError(tool string, err error) error {
	if e, ok := errors.AsType[*Error](err); ok {
		code := tools.CodeUnavailable
		switch e.Reason {
		case tools.ReasonInvalidArguments, tools.ReasonToolNotFound:
			code = -32602
		case tools.ReasonInsufficientScope, tools.ReasonPolicyDenied, tools.ReasonGateKilled, tools.ReasonAlreadyExecuted:
			code = tools.CodeForbidden
		}
		return rpcError(code, e.Error(), &tools.ErrorData{Code: e.Reason, Tool: tool})
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return rpcError(tools.CodeUnavailable, "the call was cancelled", &tools.ErrorData{Code: tools.ReasonTimeout, Tool: tool})
	}
	s.log.Error("toolgw: call failed", "tool", tool, "err", err)
	return rpcError(tools.CodeUnavailable, "the tool could not be called", &tools.ErrorData{Code: tools.ReasonUnavailable, Tool: tool})
}

func (s *Service) unavailable(msg string, err error) error {
	s.log.Error("toolgw: "+msg, "err", err)
	return rpcError(tools.CodeUnavailable, msg, &tools.ErrorData{Code: tools.ReasonUnavailable})
}

// rpcError is a JSON-RPC error with data, as the SDK sends it.
func rpcError(code int, msg string, data any) error {
	e := &jsonrpc.Error{Code: int64(code), Message: msg}
	if data != nil {
		if b, err := json.Marshal(data); err == nil {
			e.Data = b
		}
	}
	return e
}

func errText(err error) string {
	if e, ok := errors.AsType[*Error](err); ok {
		return e.Error()
	}
	return "the tool could not be called"
}

func firstText(r *mcp.CallToolResult) string {
	for _, c := range r.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			return clip(t.Text)
		}
	}
	return ""
}

// clip bounds a caller's text echoed in an error or an event.
func clip(s string) string {
	if len(s) <= 200 {
		return s
	}
	return s[:200] + "…"
}

func secretOf(tok string) secret.Value { return secret.New(tok) }
