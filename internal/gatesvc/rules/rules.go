package rules

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"cel.dev/cel-go/cel"
	celast "cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/cost"
	"cel.dev/cel-go/common/operators"
	"cel.dev/cel-go/common/types/ref"
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
	progs []program // parallel to set.Rules; zero for judge-only rules
	reads map[string]fieldReads
}

// fieldReads is what the conditions read of one map variable.
type fieldReads struct {
	fields map[string]bool
	all    bool // some condition reads the map otherwise than by a constant key
}

// Reads reports which fields of the map variable the conditions read: all
// is true when some condition uses the map otherwise than through a
// constant key (agg.x, agg["x"], has(agg.x)), as in size(agg) or a macro
// over it. The gate uses it to refuse a rule set that reads an aggregate
// it does not declare.
func (c *Compiled) Reads(variable string) (fields []string, all bool) {
	r := c.reads[variable]
	for f := range r.fields {
		fields = append(fields, f)
	}
	slices.Sort(fields)
	return fields, r.all
}

// collectReads records in reads the uses of every variable in e.
func collectReads(e celast.Expr, reads map[string]fieldReads) {
	note := func(variable, field string) {
		r := reads[variable]
		if r.fields == nil {
			r.fields = map[string]bool{}
		}
		if field == "" {
			r.all = true
		} else {
			r.fields[field] = true
		}
		reads[variable] = r
	}
	switch e.Kind() {
	case celast.IdentKind:
		note(e.AsIdent(), "")
	case celast.SelectKind:
		sel := e.AsSelect()
		if sel.Operand().Kind() == celast.IdentKind {
			note(sel.Operand().AsIdent(), sel.FieldName())
			return
		}
		collectReads(sel.Operand(), reads)
	case celast.CallKind:
		call := e.AsCall()
		args := call.Args()
		if fn := call.FunctionName(); (fn == operators.Index || fn == operators.OptIndex) && len(args) == 2 &&
			args[0].Kind() == celast.IdentKind && args[1].Kind() == celast.LiteralKind {
			if key, ok := args[1].AsLiteral().Value().(string); ok {
				note(args[0].AsIdent(), key)
				return
			}
		}
		if call.IsMemberFunction() {
			collectReads(call.Target(), reads)
		}
		for _, a := range args {
			collectReads(a, reads)
		}
	case celast.ComprehensionKind:
		c := e.AsComprehension()
		for _, x := range []celast.Expr{c.IterRange(), c.AccuInit(), c.LoopCondition(), c.LoopStep(), c.Result()} {
			collectReads(x, reads)
		}
	case celast.ListKind:
		for _, x := range e.AsList().Elements() {
			collectReads(x, reads)
		}
	case celast.MapKind:
		for _, en := range e.AsMap().Entries() {
			collectReads(en.AsMapEntry().Key(), reads)
			collectReads(en.AsMapEntry().Value(), reads)
		}
	case celast.StructKind:
		for _, en := range e.AsStruct().Fields() {
			collectReads(en.AsStructField().Value(), reads)
		}
	}
}

// program is one condition planned twice. Tracking the cost of an
// evaluation is most of its CPU (it measured 2.3× the evaluation itself),
// so untracked runs when the condition provably stays inside the limit:
// CEL's estimator bounds a condition's cost from the sizes of the lists,
// maps and strings it reads, and safeSize is the largest size for which
// that bound is within the limit. An activation none of whose values is
// larger runs untracked; any other runs tracked, under the limit.
type program struct {
	tracked, untracked cel.Program
	safeSize           uint64
}

// maxSafeSize caps the sizes tried for a condition's safe size; a
// condition whose bound at it is within the limit reads nothing whose
// size matters.
const maxSafeSize = 1 << 40

// safeSize is the largest power of two s (up to maxSafeSize; 0 when none)
// for which the condition's estimated cost, with no value larger than s,
// is within limit.
func safeSize(env *cel.Env, ast *cel.Ast, limit uint64) (uint64, error) {
	within := func(s uint64) (bool, error) {
		est, err := env.EstimateCost(ast, sizeHint(s))
		return err == nil && est.Max <= limit, err
	}
	lo, hi := 0, 40 // exponents: 2^lo is within (or lo is 0 and unknown), 2^hi is the cap
	if ok, err := within(1 << hi); err != nil || ok {
		return 1 << hi, err
	}
	if ok, _ := within(1); !ok {
		return 0, nil
	}
	for hi-lo > 1 { // 2^lo within, 2^hi not
		mid := (lo + hi) / 2
		if ok, _ := within(1 << mid); ok {
			lo = mid
		} else {
			hi = mid
		}
	}
	return 1 << lo, nil
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
	c := &Compiled{set: s, progs: make([]program, len(s.Rules)), reads: map[string]fieldReads{}}
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
		collectReads(ast.NativeRep().Expr(), c.reads)
		p := program{}
		if p.safeSize, err = safeSize(env, ast, limit); err != nil {
			return nil, &CompileError{RuleID: r.ID, Err: fmt.Errorf("cost estimate: %w", err)}
		}
		if p.tracked, err = env.Program(ast, cel.CostLimit(limit), cel.EvalOptions(cel.OptOptimize)); err != nil {
			return nil, &CompileError{RuleID: r.ID, Err: err}
		}
		if p.untracked, err = env.Program(ast, cel.EvalOptions(cel.OptOptimize)); err != nil {
			return nil, &CompileError{RuleID: r.ID, Err: err}
		}
		c.progs[i] = p
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
	vars := map[string]any(widenAgg(act))
	largest := largestSize(vars)
	res := Result{Shadow: c.set.Shadow}
	for i, p := range c.progs {
		if p.tracked == nil {
			continue
		}
		prg := p.tracked
		if largest <= p.safeSize {
			prg = p.untracked
		}
		r := c.set.Rules[i]
		// The cost limit bounds each program, so the context is checked
		// between rules rather than inside them: ContextEval's per-call
		// cancellable context was a third of the evaluation's CPU.
		var out ref.Val
		err := ctx.Err()
		if err != nil {
			err = fmt.Errorf("interrupted: %w", err)
		} else {
			out, _, err = prg.Eval(vars)
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

// largestSize is the size of the largest list, map or string (in bytes,
// which is at least its length in code points, CEL's size) anywhere in
// v, map keys included.
func largestSize(v any) uint64 {
	var n uint64
	switch x := v.(type) {
	case string:
		return uint64(len(x))
	case []byte:
		return uint64(len(x))
	case map[string]any:
		n = uint64(len(x))
		for k, e := range x {
			n = max(n, uint64(len(k)), largestSize(e))
		}
	case map[string]string:
		n = uint64(len(x))
		for k, e := range x {
			n = max(n, uint64(len(k)), uint64(len(e)))
		}
	case map[string]float64:
		n = uint64(len(x))
		for k := range x {
			n = max(n, uint64(len(k)))
		}
	case []any:
		n = uint64(len(x))
		for _, e := range x {
			n = max(n, largestSize(e))
		}
	case []map[string]any:
		n = uint64(len(x))
		for _, e := range x {
			n = max(n, largestSize(e))
		}
	case nil, bool, int, int32, int64, uint, uint32, uint64, float32, float64, time.Time, time.Duration:
	default:
		// A value of another shape is measured as unbounded, so the
		// condition that reads it runs tracked.
		return math.MaxUint64
	}
	return n
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
