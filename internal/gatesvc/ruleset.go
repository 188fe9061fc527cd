package gatesvc

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"novaos.dev/novaos/gate"
	"novaos.dev/novaos/internal/gatesvc/rules"
)

// MaxRuleSetBytes bounds a rule set document.
const MaxRuleSetBytes = 1 << 20

// MaxRules bounds the rules of one set, and MaxAggregates its aggregates.
const (
	MaxRules      = 500
	MaxAggregates = 64
)

// ErrInvalidRuleSet is matched by every error about a rule set document an
// administrator sent.
var ErrInvalidRuleSet = errors.New("gate: invalid rule set")

var aggregateName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,63}$`)

// ruleSet is a tenant's current rules, compiled.
type ruleSet struct {
	version  int64
	hash     string
	doc      gate.RuleSetDocument
	compiled *rules.Compiled
	// subject names, per action type, the context field its ledger
	// entries are filed under.
	subject map[string]string
}

// ParseRuleSet decodes and checks a rule set document strictly, and
// compiles its conditions.
func ParseRuleSet(tenant string, version int64, data []byte, o *rules.Options) (*ruleSet, error) {
	if len(data) > MaxRuleSetBytes {
		return nil, fmt.Errorf("%w: larger than %d bytes", ErrInvalidRuleSet, MaxRuleSetBytes)
	}
	if err := gate.CheckStructure(data); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidRuleSet, err)
	}
	var doc gate.RuleSetDocument
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidRuleSet, err)
	}
	var errs []error
	if len(doc.Rules) > MaxRules {
		errs = append(errs, fmt.Errorf("rules: at most %d", MaxRules))
	}
	if len(doc.Aggregates) > MaxAggregates {
		errs = append(errs, fmt.Errorf("aggregates: at most %d", MaxAggregates))
	}
	set := rules.Set{Tenant: tenant, Version: version, Shadow: doc.Shadow}
	for i, r := range doc.Rules {
		v := rules.Pass
		switch r.Verdict {
		case gate.Hold:
			v = rules.Hold
		case gate.Kill:
			v = rules.Kill
		case "":
			if r.When != "" {
				errs = append(errs, fmt.Errorf("rules[%d].verdict: hold or kill is required with a condition", i))
			}
			v = rules.Hold // a judge-only rule: the judge decides its verdict; package rules never matches it
		default:
			errs = append(errs, fmt.Errorf("rules[%d].verdict: %q is not hold or kill", i, r.Verdict))
		}
		set.Rules = append(set.Rules, rules.Rule{ID: r.ID, Text: r.Text, When: r.When, Verdict: v})
	}
	subject := map[string]string{}
	seen := map[string]bool{}
	for i, a := range doc.Aggregates {
		switch {
		case !aggregateName.MatchString(a.Name):
			errs = append(errs, fmt.Errorf("aggregates[%d].name: %q is not a lower-case identifier", i, a.Name))
		case seen[a.Name]:
			errs = append(errs, fmt.Errorf("aggregates[%d].name: %q twice", i, a.Name))
		}
		seen[a.Name] = true
		if a.ActionType == "" {
			errs = append(errs, fmt.Errorf("aggregates[%d].action_type: required", i))
		}
		if a.Measure != "count" && a.Measure != "sum" {
			errs = append(errs, fmt.Errorf("aggregates[%d].measure: %q is not count or sum", i, a.Measure))
		}
		if w := time.Duration(a.Window); w <= 0 || w > 3*366*24*time.Hour {
			errs = append(errs, fmt.Errorf("aggregates[%d].window: between 1ns and 3 years", i))
		}
		if a.Scope != "" && a.Scope != "subject" && a.Scope != "tenant" {
			errs = append(errs, fmt.Errorf("aggregates[%d].scope: %q is not subject or tenant", i, a.Scope))
		}
		if a.Scope == "tenant" {
			continue
		}
		field := a.SubjectField
		if prev, ok := subject[a.ActionType]; ok && field != "" && prev != "" && prev != field {
			errs = append(errs, fmt.Errorf("aggregates[%d].subject_field: %q, but another aggregate of %q files it under %q; one action type has one subject", i, field, a.ActionType, prev))
		}
		if field != "" {
			subject[a.ActionType] = field
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidRuleSet, err)
	}
	compiled, err := rules.Compile(set, o)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidRuleSet, err)
	}
	sum := sha256.Sum256(data)
	return &ruleSet{version: version, hash: hex.EncodeToString(sum[:]), doc: doc, compiled: compiled, subject: subject}, nil
}

// checkAggregatesDeclared refuses conditions that read an aggregate the
// set does not declare: such a read is a typo that would otherwise kill
// every write reaching it at run time. Only a set being stored is
// checked; one stored before the check still loads.
func (r *ruleSet) checkAggregatesDeclared() error {
	declared := map[string]bool{}
	for _, a := range r.doc.Aggregates {
		declared[a.Name] = true
	}
	read, _ := r.compiled.Reads("agg")
	var missing []string
	for _, name := range read {
		if !declared[name] {
			missing = append(missing, "agg."+name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: conditions read %s, which no aggregate declares", ErrInvalidRuleSet, strings.Join(missing, ", "))
	}
	return nil
}

// subjectField is the context field an action type's ledger entries
// are filed under: the rule set's, else the context vertical's natural key.
func (r *ruleSet) subjectField(actionType, contextType string) string {
	if r != nil {
		if f, ok := r.subject[actionType]; ok {
			return f
		}
	}
	switch contextType {
	case gate.ContextAP:
		return "vendor_id"
	case gate.ContextCS:
		return "customer_id"
	}
	return "record_id"
}

// ruleCache holds each tenant's current compiled rule set, re-read from
// the store at most every refresh (so a change on another replica is seen
// within it) and at once after a change on this one.
type ruleCache struct {
	store   gate.Store
	refresh time.Duration
	opts    *rules.Options
	now     func() time.Time

	mu      sync.Mutex
	tenants map[string]*cachedRules
}

type cachedRules struct {
	mu       sync.Mutex
	set      *ruleSet // nil: the tenant has no rule set
	loadedAt time.Time
	loaded   bool
}

func (c *ruleCache) init(store gate.Store, refresh time.Duration, o *rules.Options, now func() time.Time) {
	c.store, c.refresh, c.opts, c.now = store, refresh, o, now
	c.tenants = map[string]*cachedRules{}
}

// current returns tenant's rule set (nil when it has none). An error
// means the set could not be loaded, and every gated write is refused.
func (c *ruleCache) current(ctx context.Context, tenant string) (*ruleSet, error) {
	c.mu.Lock()
	t := c.tenants[tenant]
	if t == nil {
		t = &cachedRules{}
		c.tenants[tenant] = t
	}
	c.mu.Unlock()
	t.mu.Lock()
	defer t.mu.Unlock()
	now := c.now()
	if t.loaded && now.Sub(t.loadedAt) < c.refresh {
		return t.set, nil
	}
	rec, err := c.store.RuleSet(ctx, tenant, 0)
	switch {
	case errors.Is(err, gate.ErrNotFound):
		t.set, t.loaded, t.loadedAt = nil, true, now
		return nil, nil
	case err != nil:
		t.loaded = false
		return nil, fmt.Errorf("load rule set: %w", err)
	}
	if t.set != nil && t.set.version == rec.Version && t.set.hash == rec.Hash {
		t.loaded, t.loadedAt = true, now
		return t.set, nil
	}
	set, err := ParseRuleSet(tenant, rec.Version, rec.Body, c.opts)
	if err != nil {
		t.loaded = false
		return nil, fmt.Errorf("rule set version %d: %w", rec.Version, err)
	}
	t.set, t.loaded, t.loadedAt = set, true, now
	return set, nil
}

// forget drops tenant's cached set so the next write reads the store.
func (c *ruleCache) forget(tenant string) {
	c.mu.Lock()
	delete(c.tenants, tenant)
	c.mu.Unlock()
}

// PutRules checks and stores the next version of tenant's rule set.
func (s *Service) PutRules(ctx context.Context, tenant, actor string, data []byte) (gate.RuleSetInfo, error) {
	set, err := ParseRuleSet(tenant, 0, data, s.o.Rules)
	if err != nil {
		return gate.RuleSetInfo{}, err
	}
	if err := set.checkAggregatesDeclared(); err != nil {
		return gate.RuleSetInfo{}, err
	}
	rec, err := s.store.PutRuleSet(ctx, gate.RuleSetRecord{TenantID: tenant, Body: data, Hash: set.hash,
		CreatedBy: actor, CreatedAt: s.o.Now()})
	if err != nil {
		return gate.RuleSetInfo{}, fmt.Errorf("gate: store rule set: %w", err)
	}
	s.rules.forget(tenant)
	if _, err := s.store.AppendAudit(ctx, gate.AuditEntry{Kind: "rules_put", TenantID: tenant, Actor: actor,
		Body: mustJSON(map[string]any{"version": rec.Version, "hash": rec.Hash, "shadow": set.doc.Shadow, "rules": len(set.doc.Rules)})}); err != nil {
		return gate.RuleSetInfo{}, fmt.Errorf("gate: audit rule set: %w", err)
	}
	return gate.RuleSetInfo{TenantID: tenant, Version: rec.Version, Hash: rec.Hash, CreatedAt: rec.CreatedAt, CreatedBy: rec.CreatedBy}, nil
}

// Rules returns a version of tenant's rule set (0: the current one).
func (s *Service) Rules(ctx context.Context, tenant string, version int64) (gate.RuleSetInfo, error) {
	rec, err := s.store.RuleSet(ctx, tenant, version)
	if err != nil {
		return gate.RuleSetInfo{}, fmt.Errorf("gate: rule set: %w", err)
	}
	var doc gate.RuleSetDocument
	if err := json.Unmarshal(rec.Body, &doc); err != nil {
		return gate.RuleSetInfo{}, fmt.Errorf("gate: stored rule set %d: %w", rec.Version, err)
	}
	return gate.RuleSetInfo{TenantID: tenant, Version: rec.Version, Hash: rec.Hash, CreatedAt: rec.CreatedAt,
		CreatedBy: rec.CreatedBy, Document: &doc}, nil
}

// mustJSON marshals the service's own records. A value JSON cannot hold
// (an aggregate sum that overflowed to +Inf) must not lose the audit
// entry, so the failure is recorded in its place.
func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(map[string]string{"marshal_error": err.Error()})
	}
	return b
}
