package rules

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/cost"
)

// Verdict is a rule's effect; the zero value is Pass.
type Verdict int

// Verdicts in increasing severity.
const (
	Pass Verdict = iota
	Hold
	Kill
)

func (v Verdict) String() string {
	switch v {
	case Pass:
		return "pass"
	case Hold:
		return "hold"
	case Kill:
		return "kill"
	}
	return fmt.Sprintf("verdict(%d)", int(v))
}

// ParseVerdict reads "pass", "hold" or "kill".
func ParseVerdict(s string) (Verdict, error) {
	switch s {
	case "pass":
		return Pass, nil
	case "hold":
		return Hold, nil
	case "kill":
		return Kill, nil
	}
	return Pass, fmt.Errorf("rules: unknown verdict %q", s)
}

// A Rule is plain-English text with an optional CEL condition.
type Rule struct {
	ID      string
	Text    string  // what people and the LLM judge read
	When    string  // CEL bool expression; empty: judge-only rule
	Verdict Verdict // Hold or Kill
}

// A Set is one tenant's rules at one version.
type Set struct {
	Tenant  string
	Version int64
	Shadow  bool // log-only: evaluate, record, enforce Pass
	Rules   []Rule
}

// Activation maps the declared variable names (see the package doc) to
// values. Missing variables are runtime errors, which fail closed.
type Activation map[string]any

// Defaults of Options.
const (
	DefaultCostLimit = 100_000
	// DefaultInterruptEvery is how many comprehension iterations run
	// between checks of the context.
	DefaultInterruptEvery = 100
)

// DefaultSizeHint is the assumed largest size of any list, map or string
// a condition reads, for the load-time cost estimate.
const DefaultSizeHint = 256

// Options tune compilation; nil or zero fields mean the defaults.
type Options struct {
	// CostLimit bounds one rule's evaluation in CEL cost units
	// (default DefaultCostLimit); past it the rule fails closed.
	CostLimit uint64
	// SizeHint is the assumed largest size of any list, map or string in
	// the activation (default DefaultSizeHint).
	SizeHint uint64
	// MaxEstimatedCost rejects at load a condition whose worst-case cost,
	// estimated with SizeHint, is above it (default 10 × CostLimit), so
	// that a rule that could never finish inside the limit on ordinary
	// inputs is a load error rather than a kill on every write.
	MaxEstimatedCost uint64
}

// sizeHint tells the cost estimator how large any value may be; CEL
// cannot know, since action, ctx and evidence are dyn.
type sizeHint uint64

func (h sizeHint) EstimateSize(cost.AstNode) *cost.SizeEstimate {
	return &cost.SizeEstimate{Min: 0, Max: uint64(h)}
}

func (sizeHint) EstimateCallCost(string, string, *cost.AstNode, []cost.AstNode) *cost.CallEstimate {
	return nil
}

// Compiled is a Set whose conditions all compiled; safe for concurrent use.
type Compiled struct {
	set   Set
	progs []cel.Program // parallel to set.Rules; nil for judge-only rules
}

// CompileError names the rule that failed to compile.
type CompileError struct {
	RuleID string
	Err    error
}

func (e *CompileError) Error() string { return fmt.Sprintf("rules: rule %q: %v", e.RuleID, e.Err) }
func (e *CompileError) Unwrap() error { return e.Err }

// ErrInvalidSet is matched by every error about a set's shape (ids,
// verdicts) rather than a condition.
var ErrInvalidSet = errors.New("rules: invalid rule set")

func newEnv() (*cel.Env, error) {
	return cel.NewEnv(
		cel.Variable("action", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("ctx", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("evidence", cel.ListType(cel.MapType(cel.StringType, cel.DynType))),
		cel.Variable("agg", cel.MapType(cel.StringType, cel.DoubleType)),
		cel.Variable("session", cel.MapType(cel.StringType, cel.StringType)),
		cel.Variable("now", cel.TimestampType),
		cel.CrossTypeNumericComparisons(true),
	)
}

// Compile checks and compiles every condition of s. Any failure is an
// error: the caller must refuse every gated write rather than run a
// partial set.
func Compile(s Set, o *Options) (*Compiled, error) {
	if o == nil {
		o = &Options{}
	}
	limit := cmp.Or(o.CostLimit, DefaultCostLimit)
	hint := sizeHint(cmp.Or(o.SizeHint, DefaultSizeHint))
	maxEst := cmp.Or(o.MaxEstimatedCost, 10*limit)
	env, err := newEnv()
	if err != nil {
		return nil, fmt.Errorf("rules: environment: %w", err)
	}
	c := &Compiled{set: s, progs: make([]cel.Program, len(s.Rules))}
	c.set.Rules = append([]Rule(nil), s.Rules...)
	seen := make(map[string]bool, len(s.Rules))
	for i, r := range c.set.Rules {
		if r.ID == "" {
			return nil, fmt.Errorf("%w: rule %d has no id", ErrInvalidSet, i)
		}
		if seen[r.ID] {
			return nil, fmt.Errorf("%w: duplicate rule id %q", ErrInvalidSet, r.ID)
		}
		seen[r.ID] = true
		if r.Verdict != Hold && r.Verdict != Kill {
			return nil, fmt.Errorf("%w: rule %q: verdict must be hold or kill, not %v", ErrInvalidSet, r.ID, r.Verdict)
		}
		if r.When == "" {
			continue
		}
		ast, iss := env.Compile(r.When)
		if iss.Err() != nil {
			return nil, &CompileError{RuleID: r.ID, Err: iss.Err()}
		}
		if !ast.OutputType().IsExactType(cel.BoolType) {
			return nil, &CompileError{RuleID: r.ID, Err: fmt.Errorf("condition is %v, not bool", ast.OutputType())}
		}
		est, err := env.EstimateCost(ast, hint)
		if err != nil {
			return nil, &CompileError{RuleID: r.ID, Err: fmt.Errorf("cost estimate: %w", err)}
		}
		if est.Max > maxEst {
			return nil, &CompileError{RuleID: r.ID, Err: fmt.Errorf("estimated cost up to %d exceeds %d", est.Max, maxEst)}
		}
		prg, err := env.Program(ast,
			cel.CostLimit(limit),
			cel.InterruptCheckFrequency(DefaultInterruptEvery),
			cel.EvalOptions(cel.OptOptimize),
		)
		if err != nil {
			return nil, &CompileError{RuleID: r.ID, Err: err}
		}
		c.progs[i] = prg
	}
	return c, nil
}

// Set returns the source of c.
func (c *Compiled) Set() Set { return c.set }

// A Match is a rule whose condition held, or whose evaluation failed.
type Match struct {
	RuleID  string
	Verdict Verdict // Kill when Err is set
	Err     error   // evaluation error; the match is fail-closed
}

// Result is the outcome of one evaluation.
type Result struct {
	// Verdict is what the gate enforces: the most severe match, or Pass
	// for a shadow set.
	Verdict Verdict
	// Would is the most severe match whether or not the set is shadow.
	Would   Verdict
	Shadow  bool
	Matched []Match
}

// Evaluate runs every condition against act. It never returns an error:
// failures are kill matches (see the package doc).
func (c *Compiled) Evaluate(ctx context.Context, act Activation) Result {
	act = widenAgg(act)
	res := Result{Shadow: c.set.Shadow}
	for i, prg := range c.progs {
		if prg == nil {
			continue
		}
		r := c.set.Rules[i]
		out, _, err := prg.ContextEval(ctx, map[string]any(act))
		if err == nil {
			if err = ctx.Err(); err != nil {
				err = fmt.Errorf("interrupted: %w", err)
			}
		}
		var m *Match
		switch {
		case err != nil:
			m = &Match{RuleID: r.ID, Verdict: Kill, Err: err}
		case out.Value() == true:
			m = &Match{RuleID: r.ID, Verdict: r.Verdict}
		case out.Value() != false:
			m = &Match{RuleID: r.ID, Verdict: Kill, Err: fmt.Errorf("condition gave %v, not bool", out.Type())}
		}
		if m != nil {
			res.Matched = append(res.Matched, *m)
			res.Would = max(res.Would, m.Verdict)
		}
	}
	if !c.set.Shadow {
		res.Verdict = res.Would
	}
	return res
}

// widenAgg turns integer aggregates into doubles, as agg is declared
// map(string, double); it copies rather than edits the caller's map.
func widenAgg(act Activation) Activation {
	var w map[string]any
	switch agg := act["agg"].(type) {
	case map[string]any:
		w = make(map[string]any, len(agg))
		for k, v := range agg {
			w[k] = widen(v)
		}
	case map[string]int:
		w = widenAll(agg)
	case map[string]int64:
		w = widenAll(agg)
	default:
		return act // map[string]float64 is already right; others fail closed
	}
	out := make(Activation, len(act))
	for k, v := range act {
		out[k] = v
	}
	out["agg"] = w
	return out
}

func widenAll[T int | int64](m map[string]T) map[string]any {
	w := make(map[string]any, len(m))
	for k, v := range m {
		w[k] = float64(v)
	}
	return w
}

func widen(v any) any {
	switch n := v.(type) {
	case int:
		return float64(n)
	case int64:
		return float64(n)
	case int32:
		return float64(n)
	case uint:
		return float64(n)
	case uint64:
		return float64(n)
	case uint32:
		return float64(n)
	case float32:
		return float64(n)
	}
	return v
}
