package gatesvc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"novaos.dev/novaos/gate"
)

// Caller is who calls the service, as the platform established it.
type Caller struct {
	// Tenant is the token's tenant; empty for the server's admin.
	Tenant string
	// Agent is the token's agent (its agent_id claim); empty for the
	// server's admin. Sessions, and the actions in them, are the agent's
	// that opened them: an agent acts only in its own.
	Agent string
	// Actor names the caller in the audit (a token subject, "admin").
	Actor string
	// Admin is the server's admin token (or a loopback operator when the
	// server has none): every tenant, every scope.
	Admin bool
	// Grants reports whether the caller's token carries a scope.
	Grants func(scope string) bool
}

func (c *Caller) has(scope string) bool {
	return c.Admin || (c.Grants != nil && c.Grants(scope))
}

// tenantOK checks that the caller acts within its own tenant.
func (c *Caller) tenantOK(tenant string) error {
	if c.Admin || (c.Tenant != "" && c.Tenant == tenant) {
		return nil
	}
	return fmt.Errorf("%w: tenant %q is not the token's", ErrForbidden, tenant)
}

// agentOK fills an omitted agent id with the token's and refuses one
// that names another agent: the acting agent comes from the verified
// token, never from the body. The server's admin names the agent itself.
func (c *Caller) agentOK(agent *string) error {
	switch {
	case c.Admin:
		return nil
	case c.Agent == "":
		return fmt.Errorf("%w: the token names no agent (agent_id): only an agent's token opens sessions and submits actions", ErrForbidden)
	case *agent == "":
		*agent = c.Agent
	case *agent != c.Agent:
		return fmt.Errorf("%w: agent_id %q is not the token's agent %q", ErrForbidden, *agent, c.Agent)
	}
	return nil
}

// owns refuses an agent acting in a session another agent opened (owner
// is the session's agent, or the agent of an action in it). The server's
// admin acts in any session.
func (c *Caller) owns(owner, session string) error {
	if c.Admin || (c.Agent != "" && c.Agent == owner) {
		return nil
	}
	return fmt.Errorf("%w: session %q belongs to agent %q, not the token's agent %q", ErrForbidden, session, owner, c.Agent)
}

// Claim grants the right to execute a passed or approved action once: a
// compare-and-set that issues the next fencing token.
func (s *Service) Claim(ctx context.Context, c *Caller, req gate.ClaimRequest) (gate.Claim, error) {
	rec, err := s.store.GetAction(ctx, c.Tenant, req.SessionID, req.ActionID)
	if err != nil {
		return gate.Claim{}, fmt.Errorf("gate: claim: %w", err)
	}
	if err := c.owns(rec.AgentID, rec.SessionID); err != nil {
		return gate.Claim{}, err
	}
	cl, _, err := s.claim(ctx, c, rec)
	return cl, err
}

// claim grants a claim on rec (re-reading on a conflict), or answers why
// it cannot be granted. It returns the record as it now stands.
func (s *Service) claim(ctx context.Context, c *Caller, rec gate.ActionRecord) (gate.Claim, gate.ActionRecord, error) {
	for range 16 {
		switch rec.State {
		case gate.ActionPassed, gate.ActionApproved:
			now := s.o.Now()
			next := rec
			next.State, next.FencingToken, next.ClaimedAt = gate.ActionClaimed, rec.FencingToken+1, now
			var stored struct {
				ContextType string         `json:"context_type"`
				Context     map[string]any `json:"context"`
			}
			_ = json.Unmarshal(rec.Action, &stored)      // our own record; a missing subject files under ""
			set, _ := s.rules.current(ctx, rec.TenantID) // the ledger files under the current set's subject; default when unavailable
			out, err := s.write(ctx, rec, next, "claim", c.Actor, map[string]any{"fencing_token": next.FencingToken},
				s.ledgerFor(set, rec, stored.ContextType, stored.Context, now)...)
			if errors.Is(err, gate.ErrConflict) {
				rec = out
				continue
			}
			if err != nil {
				return gate.Claim{}, rec, err
			}
			return *claimOf(out), out, nil
		case gate.ActionClaimed:
			if s.claimLive(rec, s.o.Now()) {
				// Its holder may still be writing: this claimant is refused,
				// and the claim is left alone until the claim timeout.
				return gate.Claim{SessionID: rec.SessionID, ActionID: rec.ActionID, Status: gate.ClaimExecutionUnconfirmed}, rec, nil
			}
			out, err := s.markUnconfirmed(ctx, rec, "claimed again without an acknowledgement")
			if errors.Is(err, gate.ErrConflict) {
				rec = out
				continue
			}
			if err != nil {
				return gate.Claim{}, rec, err
			}
			rec = out
			fallthrough
		case gate.ActionUnconfirmed:
			return gate.Claim{SessionID: rec.SessionID, ActionID: rec.ActionID, Status: gate.ClaimExecutionUnconfirmed}, rec, nil
		case gate.ActionExecuted:
			at := rec.AcknowledgedAt
			return gate.Claim{SessionID: rec.SessionID, ActionID: rec.ActionID, Status: gate.ClaimAlreadyExecuted, AcknowledgedAt: &at}, rec, nil
		default:
			return gate.Claim{}, rec, fmt.Errorf("%w: the action is %s", ErrNotClaimable, rec.State)
		}
	}
	return gate.Claim{}, rec, fmt.Errorf("gate: claim: %w: too much contention", gate.ErrConflict)
}

// Ack records that a claimed write ran. It must present the latest
// claim's fencing token; a repeated acknowledgement answers as the first.
func (s *Service) Ack(ctx context.Context, c *Caller, req gate.AckRequest) (gate.Ack, error) {
	rec, err := s.store.GetAction(ctx, c.Tenant, req.SessionID, req.ActionID)
	if err != nil {
		return gate.Ack{}, fmt.Errorf("gate: ack: %w", err)
	}
	if err := c.owns(rec.AgentID, rec.SessionID); err != nil {
		return gate.Ack{}, err
	}
	for range 16 {
		if req.FencingToken == 0 || req.FencingToken != rec.FencingToken {
			return gate.Ack{}, fmt.Errorf("%w: fencing token %d is not the latest claim's", ErrNotClaimable, req.FencingToken)
		}
		switch rec.State {
		case gate.ActionExecuted:
			return gate.Ack{SessionID: rec.SessionID, ActionID: rec.ActionID, AcknowledgedAt: rec.AcknowledgedAt}, nil
		case gate.ActionClaimed, gate.ActionUnconfirmed:
		default:
			return gate.Ack{}, fmt.Errorf("%w: the action is %s", ErrNotClaimable, rec.State)
		}
		next := rec
		next.State, next.AcknowledgedAt = gate.ActionExecuted, s.o.Now()
		body := map[string]any{"fencing_token": req.FencingToken}
		if !req.ExecutedAt.IsZero() {
			body["executed_at"] = req.ExecutedAt
		}
		out, err := s.write(ctx, rec, next, "ack", c.Actor, body)
		if errors.Is(err, gate.ErrConflict) {
			rec = out
			continue
		}
		if err != nil {
			return gate.Ack{}, err
		}
		s.waiters.wake(keyOf(out))
		return gate.Ack{SessionID: out.SessionID, ActionID: out.ActionID, AcknowledgedAt: out.AcknowledgedAt}, nil
	}
	return gate.Ack{}, fmt.Errorf("gate: ack: %w: too much contention", gate.ErrConflict)
}

// Wait answers a held action's verdict once it is decided, or the hold
// still pending when timeout (capped at MaxWait) passes. An expired
// window is settled here, so a waiter never depends on the sweeper.
func (s *Service) Wait(ctx context.Context, c *Caller, req gate.WaitRequest) (gate.Verdict, error) {
	timeout := s.o.MaxWait
	if req.TimeoutS > 0 && time.Duration(req.TimeoutS*float64(time.Second)) < timeout {
		timeout = time.Duration(req.TimeoutS * float64(time.Second))
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	key := actionKey{c.Tenant, req.SessionID, req.ActionID}
	for {
		wake := s.waiters.add(key)
		rec, err := s.store.GetAction(ctx, c.Tenant, req.SessionID, req.ActionID)
		if err == nil {
			err = c.owns(rec.AgentID, rec.SessionID)
		}
		if err != nil {
			s.waiters.remove(key, wake)
			return gate.Verdict{}, fmt.Errorf("gate: wait: %w", err)
		}
		if rec.State != gate.ActionHeld {
			s.waiters.remove(key, wake)
			return verdictOf(rec), nil
		}
		recheck := s.recheck
		if !rec.HoldExpiresAt.IsZero() {
			left := rec.HoldExpiresAt.Sub(s.o.Now())
			if left <= 0 {
				s.waiters.remove(key, wake)
				out, err := s.expireHold(ctx, rec, gate.ReasonOperatorTimeout)
				if err != nil && !errors.Is(err, gate.ErrConflict) {
					return gate.Verdict{}, err
				}
				return verdictOf(out), nil
			}
			recheck = min(recheck, left)
		}
		done, err := s.waitOnce(ctx, wake, recheck, deadline.C)
		s.waiters.remove(key, wake)
		if err != nil {
			return gate.Verdict{}, err
		}
		if done {
			return verdictOf(rec), nil
		}
	}
}

// waitOnce waits for a wake-up or the recheck interval (false), or the
// wait's deadline or Close (true).
func (s *Service) waitOnce(ctx context.Context, wake <-chan struct{}, recheck time.Duration, deadline <-chan time.Time) (bool, error) {
	t := time.NewTimer(recheck)
	defer t.Stop()
	select {
	case <-wake:
	case <-t.C:
	case <-deadline:
		return true, nil
	case <-s.closing:
		return true, nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
	return false, nil
}

// waiters wakes the long-polls waiting on an action when this process
// changes it.
type waiters struct {
	mu sync.Mutex
	m  map[actionKey]map[chan struct{}]struct{}
}

func (w *waiters) init() { w.m = map[actionKey]map[chan struct{}]struct{}{} }

func (w *waiters) add(k actionKey) chan struct{} {
	ch := make(chan struct{}, 1)
	w.mu.Lock()
	set := w.m[k]
	if set == nil {
		set = map[chan struct{}]struct{}{}
		w.m[k] = set
	}
	set[ch] = struct{}{}
	w.mu.Unlock()
	return ch
}

func (w *waiters) remove(k actionKey, ch chan struct{}) {
	w.mu.Lock()
	if set := w.m[k]; set != nil {
		delete(set, ch)
		if len(set) == 0 {
			delete(w.m, k)
		}
	}
	w.mu.Unlock()
}

func (w *waiters) wake(k actionKey) {
	w.mu.Lock()
	for ch := range w.m[k] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	w.mu.Unlock()
}
