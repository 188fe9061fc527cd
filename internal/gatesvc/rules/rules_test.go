package rules

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"cel.dev/cel-go/common/types"
)

func baseAct() Activation {
	return Activation{
		"action":   map[string]any{"type": "refund", "args": map[string]any{"amount": 750.0, "customer_id": "c1"}},
		"ctx":      map[string]any{"open_disputes": 1, "country": "DE"},
		"evidence": []any{map[string]any{"tool": "lookup_customer", "ok": true}},
		"agg":      map[string]any{"refunds_168h": 2},
		"session":  map[string]string{"tenant": "t1", "agent": "a1"},
		"now":      time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC),
	}
}

func TestEvaluate(t *testing.T) {
	tests := []struct {
		name    string
		shadow  bool
		rules   []Rule
		act     func(Activation)
		verdict Verdict
		would   Verdict
		matched []string
		errs    []string // rule ids whose match must carry an error
		errHas  string   // text every such error must contain
	}{
		{name: "matching hold",
			rules:   []Rule{{ID: "r1", When: `action.type == "refund" && action.args.amount > 500 && ctx.open_disputes > 0`, Verdict: Hold}},
			verdict: Hold, would: Hold, matched: []string{"r1"}},
		{name: "non-matching",
			rules:   []Rule{{ID: "r1", When: `action.type == "pay_vendor"`, Verdict: Kill}},
			verdict: Pass, would: Pass},
		{name: "boundary is not over",
			rules:   []Rule{{ID: "r1", When: `action.args.amount > 500`, Verdict: Hold}},
			act:     func(a Activation) { a["action"].(map[string]any)["args"].(map[string]any)["amount"] = 500 },
			verdict: Pass, would: Pass},
		{name: "aggregate int widened",
			rules:   []Rule{{ID: "fourth", When: `action.type == "refund" && agg.refunds_168h >= 3`, Verdict: Hold}},
			act:     func(a Activation) { a["agg"] = map[string]any{"refunds_168h": int64(3)} },
			verdict: Hold, would: Hold, matched: []string{"fourth"}},
		{name: "typed aggregate map",
			rules:   []Rule{{ID: "fourth", When: `agg.refunds_168h >= 3`, Verdict: Hold}},
			act:     func(a Activation) { a["agg"] = map[string]int64{"refunds_168h": 4} },
			verdict: Hold, would: Hold, matched: []string{"fourth"}},
		{name: "most severe wins",
			rules: []Rule{
				{ID: "h", When: `true`, Verdict: Hold},
				{ID: "k", When: `ctx.country == "DE"`, Verdict: Kill},
				{ID: "n", When: `false`, Verdict: Kill},
			},
			verdict: Kill, would: Kill, matched: []string{"h", "k"}},
		{name: "most severe wins when it comes first",
			rules: []Rule{
				{ID: "k", When: `ctx.country == "DE"`, Verdict: Kill},
				{ID: "h", When: `true`, Verdict: Hold},
				{ID: "h2", When: `true`, Verdict: Hold},
			},
			verdict: Kill, would: Kill, matched: []string{"k", "h", "h2"}},
		{name: "a hold after a pass-through and before nothing",
			rules: []Rule{
				{ID: "n", When: `false`, Verdict: Kill},
				{ID: "h", When: `true`, Verdict: Hold},
			},
			verdict: Hold, would: Hold, matched: []string{"h"}},
		{name: "judge-only rule never matches",
			rules:   []Rule{{ID: "prose", Text: "Never promise delivery dates.", Verdict: Kill}},
			verdict: Pass, would: Pass},
		{name: "timestamps and durations",
			rules:   []Rule{{ID: "bank", When: `now - timestamp(ctx.bank_changed_at) < duration("72h")`, Verdict: Kill}},
			act:     func(a Activation) { a["ctx"].(map[string]any)["bank_changed_at"] = "2026-11-30T12:00:00Z" },
			verdict: Kill, would: Kill, matched: []string{"bank"}},
		{name: "missing field fails closed",
			rules:   []Rule{{ID: "miss", When: `ctx.vendor_risk == "low"`, Verdict: Hold}},
			verdict: Kill, would: Kill, matched: []string{"miss"}, errs: []string{"miss"}},
		{name: "missing aggregate fails closed",
			rules:   []Rule{{ID: "agg", When: `agg.unknown_7d > 1`, Verdict: Hold}},
			verdict: Kill, would: Kill, matched: []string{"agg"}, errs: []string{"agg"}},
		{name: "type error fails closed",
			rules:   []Rule{{ID: "ty", When: `ctx.country > 3`, Verdict: Hold}},
			verdict: Kill, would: Kill, matched: []string{"ty"}, errs: []string{"ty"}},
		{name: "missing variable fails closed",
			rules:   []Rule{{ID: "nv", When: `session.tenant == "t1"`, Verdict: Hold}},
			act:     func(a Activation) { delete(a, "session") },
			verdict: Kill, would: Kill, matched: []string{"nv"}, errs: []string{"nv"}},
		{name: "cost limit exceeded fails closed",
			rules: []Rule{{ID: "cost",
				When:    `evidence.all(e, e.ok == true)`,
				Verdict: Hold}},
			act: func(a Activation) {
				// Far more items than the size hint the load-time estimate
				// assumed, so only the run-time limit can stop it.
				ev := make([]any, 50_000)
				for i := range ev {
					ev[i] = map[string]any{"ok": true}
				}
				a["evidence"] = ev
			},
			verdict: Kill, would: Kill, matched: []string{"cost"}, errs: []string{"cost"}, errHas: "cost limit exceeded"},
		{name: "shadow records would-have, enforces pass",
			shadow: true,
			rules: []Rule{
				{ID: "h", When: `action.type == "refund"`, Verdict: Hold},
				{ID: "k", When: `action.args.amount > 700`, Verdict: Kill},
			},
			verdict: Pass, would: Kill, matched: []string{"h", "k"}},
		{name: "shadow with failing rule still enforces pass",
			shadow:  true,
			rules:   []Rule{{ID: "miss", When: `ctx.nope == true`, Verdict: Hold}},
			verdict: Pass, would: Kill, matched: []string{"miss"}, errs: []string{"miss"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Compile(Set{Tenant: "t1", Version: 1, Shadow: tt.shadow, Rules: tt.rules}, nil)
			if err != nil {
				t.Fatalf("Compile: %v", err)
			}
			act := baseAct()
			if tt.act != nil {
				tt.act(act)
			}
			res := c.Evaluate(context.Background(), act)
			if res.Verdict != tt.verdict || res.Would != tt.would || res.Shadow != tt.shadow {
				t.Errorf("verdict %v would %v shadow %v, want %v %v %v", res.Verdict, res.Would, res.Shadow, tt.verdict, tt.would, tt.shadow)
			}
			var ids, errIDs []string
			for _, m := range res.Matched {
				ids = append(ids, m.RuleID)
				if m.Err != nil {
					errIDs = append(errIDs, m.RuleID)
					if !strings.Contains(m.Err.Error(), tt.errHas) {
						t.Errorf("rule %s failed with %v, want %q", m.RuleID, m.Err, tt.errHas)
					}
					if m.Verdict != Kill {
						t.Errorf("failed rule %s has verdict %v, want kill", m.RuleID, m.Verdict)
					}
				}
			}
			if strings.Join(ids, ",") != strings.Join(tt.matched, ",") {
				t.Errorf("matched %v, want %v", ids, tt.matched)
			}
			if strings.Join(errIDs, ",") != strings.Join(tt.errs, ",") {
				t.Errorf("errored %v, want %v (matches %+v)", errIDs, tt.errs, res.Matched)
			}
		})
	}
}

func TestCostLimitError(t *testing.T) {
	c, err := Compile(Set{Rules: []Rule{{ID: "loop", When: `evidence.exists(e, evidence.exists(f, e.ok != f.ok))`, Verdict: Hold}}}, &Options{CostLimit: 50, MaxEstimatedCost: 1 << 40})
	if err != nil {
		t.Fatal(err)
	}
	act := baseAct()
	ev := make([]any, 20)
	for i := range ev {
		ev[i] = map[string]any{"ok": true}
	}
	act["evidence"] = ev
	res := c.Evaluate(context.Background(), act)
	if len(res.Matched) != 1 || res.Matched[0].Err == nil || !strings.Contains(res.Matched[0].Err.Error(), "cost limit") {
		t.Fatalf("got %+v, want a cost-limit failure", res.Matched)
	}
}

func TestCancelledContextFailsClosed(t *testing.T) {
	c, err := Compile(Set{Rules: []Rule{{ID: "r", When: `action.type == "none"`, Verdict: Hold}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res := c.Evaluate(ctx, baseAct())
	if res.Verdict != Kill || len(res.Matched) != 1 || !errors.Is(res.Matched[0].Err, context.Canceled) {
		t.Fatalf("got %+v, want a kill for the cancelled context", res)
	}
}

func TestCompileErrors(t *testing.T) {
	tests := []struct {
		name    string
		rules   []Rule
		compile bool // a *CompileError rather than ErrInvalidSet
	}{
		{"syntax", []Rule{{ID: "a", When: `action.type ==`, Verdict: Hold}}, true},
		{"undeclared variable", []Rule{{ID: "a", When: `request.amount > 5`, Verdict: Hold}}, true},
		{"not bool", []Rule{{ID: "a", When: `action.type`, Verdict: Hold}}, true},
		{"double not bool", []Rule{{ID: "a", When: `agg.x + 1.0`, Verdict: Hold}}, true},
		{"static type error", []Rule{{ID: "a", When: `agg.x == "three"`, Verdict: Hold}}, true},
		{"unknown function", []Rule{{ID: "a", When: `exec("rm")`, Verdict: Hold}}, true},
		{"one bad rule spoils the set", []Rule{{ID: "ok", When: `true`, Verdict: Hold}, {ID: "bad", When: `)(`, Verdict: Kill}}, true},
		{"estimated cost too high", []Rule{{ID: "a", When: `evidence.all(e, evidence.all(f, evidence.all(g, e.ok == f.ok && f.ok == g.ok)))`, Verdict: Hold}}, true},
		{"no id", []Rule{{When: `true`, Verdict: Hold}}, false},
		{"duplicate id", []Rule{{ID: "a", Verdict: Hold}, {ID: "a", Verdict: Kill}}, false},
		{"pass verdict", []Rule{{ID: "a", When: `true`, Verdict: Pass}}, false},
		{"out of range verdict", []Rule{{ID: "a", When: `true`, Verdict: Verdict(7)}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Compile(Set{Rules: tt.rules}, nil)
			if err == nil || c != nil {
				t.Fatalf("Compile = %v, %v; want an error", c, err)
			}
			var ce *CompileError
			if tt.compile != errors.As(err, &ce) || tt.compile == errors.Is(err, ErrInvalidSet) {
				t.Fatalf("error %v: CompileError %v, ErrInvalidSet %v", err, errors.As(err, &ce), errors.Is(err, ErrInvalidSet))
			}
		})
	}
}

func TestParseVerdict(t *testing.T) {
	for _, v := range []Verdict{Pass, Hold, Kill} {
		got, err := ParseVerdict(v.String())
		if err != nil || got != v {
			t.Errorf("ParseVerdict(%q) = %v, %v", v.String(), got, err)
		}
	}
	if _, err := ParseVerdict("approve"); err == nil {
		t.Error("ParseVerdict(approve) accepted")
	}
}

func TestSafeSize(t *testing.T) {
	tests := []struct {
		when     string
		min, max uint64
	}{
		{`action.type == "refund" && agg.refunds_168h > 3.0`, 1 << 20, maxSafeSize},
		{`ctx.note.contains("vip-")`, 1 << 10, maxSafeSize - 1},
		{`evidence.exists(e, evidence.exists(f, e.ok != f.ok))`, 1, 1 << 10},
	}
	for _, tt := range tests {
		c, err := Compile(Set{Rules: []Rule{{ID: "r", When: tt.when, Verdict: Hold}}}, &Options{MaxEstimatedCost: 1 << 40})
		if err != nil {
			t.Fatal(err)
		}
		if got := c.progs[0].safeSize; got < tt.min || got > tt.max {
			t.Errorf("%s: safe size %d, want within [%d, %d]", tt.when, got, tt.min, tt.max)
		}
	}
}

// checkUntrackedSound asserts what the untracked programs rely on: on an
// activation within a condition's safe size, the tracked program stays
// inside the cost limit and agrees with the untracked one.
func checkUntrackedSound(t *testing.T, c *Compiled, act Activation, limit uint64) {
	t.Helper()
	vars := map[string]any(widenAgg(act))
	largest := largestSize(vars)
	for i, p := range c.progs {
		if p.tracked == nil || largest > p.safeSize {
			continue
		}
		tracked, det, terr := p.tracked.Eval(vars)
		untracked, _, uerr := p.untracked.Eval(vars)
		if terr != nil && strings.Contains(terr.Error(), "cost limit") {
			t.Fatalf("rule %q: safe size %d, largest value %d, but the tracked run exceeded the limit", c.set.Rules[i].When, p.safeSize, largest)
		}
		if det != nil && det.ActualCost() != nil && *det.ActualCost() > limit {
			t.Fatalf("rule %q: actual cost %d over the limit %d within the safe size", c.set.Rules[i].When, *det.ActualCost(), limit)
		}
		if (terr == nil) != (uerr == nil) || (terr == nil && tracked.Equal(untracked) != types.True) {
			t.Fatalf("rule %q: tracked %v, %v; untracked %v, %v", c.set.Rules[i].When, tracked, terr, untracked, uerr)
		}
	}
}

func TestUntrackedWithinSafeSize(t *testing.T) {
	const limit = 50
	c, err := Compile(Set{Rules: []Rule{{ID: "loop", When: `evidence.exists(e, evidence.exists(f, e.ok != f.ok))`, Verdict: Hold}}}, &Options{CostLimit: limit, MaxEstimatedCost: 1 << 40})
	if err != nil {
		t.Fatal(err)
	}
	for n := range 24 {
		act := baseAct()
		ev := make([]any, n)
		for i := range ev {
			ev[i] = map[string]any{"ok": true} // exists never stops early
		}
		act["evidence"] = ev
		checkUntrackedSound(t, c, act, limit)
		res := c.Evaluate(context.Background(), act)
		if n == 23 && (len(res.Matched) != 1 || res.Matched[0].Err == nil) {
			t.Fatalf("%d entries, past the safe size %d: %+v, want the tracked run's cost-limit kill", n, c.progs[0].safeSize, res.Matched)
		}
	}
}

func FuzzCompileEvaluate(f *testing.F) {
	for _, s := range []string{`true`, `action.type == "refund"`, `agg.x > 3`, `evidence.all(e, e.ok)`, `)(`, `now > timestamp("2026-01-01T00:00:00Z")`, `"a" + 1`, `size(ctx) > 2`,
		`ctx.note.matches("^a+$")`, `evidence.exists(e, evidence.exists(f, e.ok != f.ok))`, `ctx.note + ctx.note == ctx.country`} {
		f.Add(s, "aaaa", uint8(3))
	}
	const limit = 10_000
	f.Fuzz(func(t *testing.T, when, note string, entries uint8) {
		c, err := Compile(Set{Rules: []Rule{{ID: "f", Text: when, When: when, Verdict: Hold}}}, &Options{CostLimit: limit})
		if err != nil {
			return
		}
		act := baseAct()
		act["ctx"].(map[string]any)["note"] = note
		ev := make([]any, entries)
		for i := range ev {
			ev[i] = map[string]any{"tool": note, "ok": i%3 == 0}
		}
		act["evidence"] = ev
		checkUntrackedSound(t, c, act, limit)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		res := c.Evaluate(ctx, act)
		for _, m := range res.Matched {
			if m.Err != nil && m.Verdict != Kill {
				t.Fatalf("failed rule not fail-closed: %+v", m)
			}
		}
	})
}

func TestReads(t *testing.T) {
	tests := []struct {
		when   []string
		fields []string
		all    bool
	}{
		{[]string{`action.type == "refund"`}, nil, false},
		{[]string{`agg.refunds_1h > 3.0`, `has(agg.sum_24h) && agg["sum_24h"] > 1.0`}, []string{"refunds_1h", "sum_24h"}, false},
		{[]string{`evidence.exists(e, e.tool == "x" && agg.inner > 1.0)`}, []string{"inner"}, false},
		{[]string{`agg.a > 1.0`, `size(agg) > 2`}, []string{"a"}, true},
		{[]string{`agg.exists(k, k == "a")`}, nil, true},
		{[]string{`agg[action.type] > 1.0`}, nil, true},
		{[]string{`[agg.a, 2.0].exists(x, x > 1.0)`, `{"k": agg.b}.k > 0.0`}, []string{"a", "b"}, false},
	}
	for _, tt := range tests {
		var rs []Rule
		for i, w := range tt.when {
			rs = append(rs, Rule{ID: fmt.Sprint(i), When: w, Verdict: Hold})
		}
		c, err := Compile(Set{Rules: rs}, nil)
		if err != nil {
			t.Fatal(err)
		}
		fields, all := c.Reads("agg")
		if !slices.Equal(fields, tt.fields) || all != tt.all {
			t.Errorf("%q: reads %v (all %v), want %v (all %v)", tt.when, fields, all, tt.fields, tt.all)
		}
	}
}
