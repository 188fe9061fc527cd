package toolgw

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"

	"novaos.dev/novaos/tools"
)

// A tenant's policy is one CEL expression, evaluated for every call and
// for every tool tools/list would show. Its variables:
//
//	tool    string               the tool's full name
//	server  string               its server segment (memory, a registered server, …)
//	class   string               "read" or "write", as the classifier placed it
//	args    map(string, dyn)     the call's arguments (empty when listing)
//	caller  map(string, dyn)     tenant, agent, user, run, instance (strings) and scopes (list)
//	listing bool                 true when tools/list asks
//
// It answers a bool (true: allow as classified; false: deny) or one of
// the strings "allow", "deny", "read" (run without the gate), "write"
// (through the gate, a person deciding) and "gate" (through the gate,
// its rules alone deciding). Any other answer, or an error, denies.
type policyDecision int

const (
	policyAllow policyDecision = iota
	policyDeny
	policyRead
	policyWrite
	policyGate
)

// MaxPolicyBytes bounds a policy's source, and policyCost its evaluation.
const (
	MaxPolicyBytes = 16 << 10
	policyCost     = 100_000
)

// ErrInvalidPolicy wraps a policy that does not compile or answers the
// wrong type.
var ErrInvalidPolicy = errors.New("toolgw: invalid policy")

var policyEnv = sync.OnceValues(func() (*cel.Env, error) {
	return cel.NewEnv(
		cel.Variable("tool", cel.StringType),
		cel.Variable("server", cel.StringType),
		cel.Variable("class", cel.StringType),
		cel.Variable("args", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("caller", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("listing", cel.BoolType),
	)
})

// compiledPolicy is a tenant's policy, ready to evaluate.
type compiledPolicy struct {
	version int64
	prg     cel.Program
}

// CompilePolicy checks a policy's source as the gateway will run it.
func CompilePolicy(src string) error {
	_, err := compilePolicy(src)
	return err
}

func compilePolicy(src string) (cel.Program, error) {
	if len(src) > MaxPolicyBytes {
		return nil, fmt.Errorf("%w: over %d bytes", ErrInvalidPolicy, MaxPolicyBytes)
	}
	env, err := policyEnv()
	if err != nil {
		return nil, err
	}
	ast, iss := env.Compile(src)
	if iss.Err() != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidPolicy, iss.Err())
	}
	if out := ast.OutputType(); !out.IsExactType(cel.BoolType) && !out.IsExactType(cel.StringType) && !out.IsExactType(cel.DynType) {
		return nil, fmt.Errorf("%w: it answers %v; want a bool or a string", ErrInvalidPolicy, out)
	}
	prg, err := env.Program(ast, cel.CostLimit(policyCost), cel.EvalOptions(cel.OptOptimize))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidPolicy, err)
	}
	return prg, nil
}

// decide evaluates the policy for a call of t with args (nil: listing).
func (p *compiledPolicy) decide(ctx context.Context, c *Caller, t *Tool, args map[string]any) (policyDecision, error) {
	listing := args == nil
	if listing {
		args = map[string]any{}
	}
	scopes := make([]any, len(c.Scopes))
	for i, s := range c.Scopes {
		scopes[i] = s
	}
	out, _, err := p.prg.ContextEval(ctx, map[string]any{
		"tool": t.Name, "server": tools.Server(t.Name), "class": string(tools.ActionClass(t.Name, t.Annotations)),
		"args": args, "listing": listing,
		"caller": map[string]any{"tenant": c.Tenant, "agent": c.Agent, "user": c.User, "run": c.Run, "instance": c.Instance, "scopes": scopes},
	})
	if err != nil {
		return policyDeny, err
	}
	switch v := out.(type) {
	case types.Bool:
		if v {
			return policyAllow, nil
		}
		return policyDeny, nil
	case types.String:
		switch v {
		case "allow":
			return policyAllow, nil
		case "deny":
			return policyDeny, nil
		case "read":
			return policyRead, nil
		case "write":
			return policyWrite, nil
		case "gate":
			return policyGate, nil
		}
		return policyDeny, fmt.Errorf("the policy answered %q", string(v))
	}
	return policyDeny, fmt.Errorf("the policy answered a %v", out.Type())
}

// policies caches tenants' compiled policies. A cached policy is checked
// against the store at most every policyRecheck, so a change made on
// another replica applies within it.
type policies struct {
	store tools.Store
	now   func() time.Time

	mu sync.Mutex
	m  map[string]policyEntry
}

type policyEntry struct {
	p       *compiledPolicy // nil: the tenant has none
	checked time.Time
}

const policyRecheck = 2 * time.Second

func newPolicies(st tools.Store, now func() time.Time) *policies {
	return &policies{store: st, now: now, m: map[string]policyEntry{}}
}

// get returns the tenant's policy, nil when it has none.
func (ps *policies) get(ctx context.Context, tenant string) (*compiledPolicy, error) {
	now := ps.now()
	ps.mu.Lock()
	e, ok := ps.m[tenant]
	ps.mu.Unlock()
	if ok && now.Sub(e.checked) < policyRecheck {
		return e.p, nil
	}
	stored, err := ps.store.GetPolicy(ctx, tenant)
	switch {
	case errors.Is(err, tools.ErrNotFound):
		e = policyEntry{checked: now}
	case err != nil:
		return nil, err
	case e.p != nil && e.p.version == stored.Version:
		e.checked = now
	default:
		prg, err := compilePolicy(stored.Expr)
		if err != nil {
			// Stored policies were compiled when they were put; one
			// that no longer compiles refuses every call.
			return nil, fmt.Errorf("tenant %s: %w", tenant, err)
		}
		e = policyEntry{p: &compiledPolicy{version: stored.Version, prg: prg}, checked: now}
	}
	ps.mu.Lock()
	if len(ps.m) > 10000 {
		clear(ps.m)
	}
	ps.m[tenant] = e
	ps.mu.Unlock()
	return e.p, nil
}

// forget drops the tenant's cached policy, after this process changed it.
func (ps *policies) forget(tenant string) {
	ps.mu.Lock()
	delete(ps.m, tenant)
	ps.mu.Unlock()
}
