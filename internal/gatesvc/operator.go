package gatesvc

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"novaos.dev/novaos/gate"
)

// OpenSession creates a session or, with attach, re-enters an existing
// one (re-opening it when it was suspended or completed). The granted hold
// window is the smaller of the deployment's and the declared one. The
// session is the token's agent's: an omitted agent_id is the token's, and
// one naming another agent is refused.
func (s *Service) OpenSession(ctx context.Context, c *Caller, req gate.SessionRequest) (gate.SessionInfo, bool, error) {
	if err := c.tenantOK(req.TenantID); err != nil {
		return gate.SessionInfo{}, false, err
	}
	if err := c.agentOK(&req.AgentID); err != nil {
		return gate.SessionInfo{}, false, err
	}
	if err := req.Validate(); err != nil {
		return gate.SessionInfo{}, false, fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	if req.SessionID == "" {
		req.SessionID = newID()
	}
	window, indefinite := s.grantWindow(req)
	now := s.o.Now()
	rec := gate.SessionRecord{TenantID: req.TenantID, ID: req.SessionID, TeamID: req.TeamID, AgentID: req.AgentID,
		Resumable: req.Resumable, HoldWindow: window, HoldIndefinite: indefinite, State: gate.SessionStateOpen,
		CreatedAt: now, UpdatedAt: now}
	stored, err := s.store.CreateSession(ctx, rec)
	switch {
	case err == nil:
		return sessionInfo(stored, false), true, nil
	case !errors.Is(err, gate.ErrExists):
		return gate.SessionInfo{}, false, fmt.Errorf("gate: open session: %w", err)
	case !req.Attach:
		return gate.SessionInfo{}, false, fmt.Errorf("%w: session %q exists; attach to re-enter it", ErrSessionState, req.SessionID)
	case stored.TeamID != req.TeamID || stored.AgentID != req.AgentID:
		return gate.SessionInfo{}, false, fmt.Errorf("%w: session %q belongs to team %q, agent %q", ErrSessionState, req.SessionID, stored.TeamID, stored.AgentID)
	}
	for range 16 {
		next := stored
		next.State, next.Resumable, next.HoldWindow, next.HoldIndefinite, next.UpdatedAt = gate.SessionStateOpen, req.Resumable, window, indefinite, now
		out, err := s.store.UpdateSession(ctx, next)
		if errors.Is(err, gate.ErrConflict) {
			if stored, err = s.store.GetSession(ctx, req.TenantID, req.SessionID); err != nil {
				return gate.SessionInfo{}, false, fmt.Errorf("gate: attach session: %w", err)
			}
			continue
		}
		if err != nil {
			return gate.SessionInfo{}, false, fmt.Errorf("gate: attach session: %w", err)
		}
		return sessionInfo(out, true), false, nil
	}
	return gate.SessionInfo{}, false, fmt.Errorf("gate: attach session: %w", gate.ErrConflict)
}

// grantWindow is the smaller of the deployment's window and the
// session's declaration (adopting the deployment's when it says so).
func (s *Service) grantWindow(req gate.SessionRequest) (time.Duration, bool) {
	if req.AdoptDeploymentWindow {
		if s.o.HoldIndefinite {
			return 0, true
		}
		return s.o.HoldWindow, false
	}
	declared := time.Duration(math.Round(req.MaxHoldS * float64(time.Second)))
	if !s.o.HoldIndefinite && s.o.HoldWindow < declared {
		return s.o.HoldWindow, false
	}
	return declared, false
}

func sessionInfo(r gate.SessionRecord, attached bool) gate.SessionInfo {
	return gate.SessionInfo{SessionID: r.ID, HoldWindowS: r.HoldWindow.Seconds(), HoldIndefinite: r.HoldIndefinite, Attached: attached}
}

// EndSession completes a session or parks it for a later run. Any
// session may be parked: the SDK parks one whose resume met
// resume_no_standing_verdict so the retry can attach, resumable or not.
func (s *Service) EndSession(ctx context.Context, c *Caller, end gate.SessionEnd) error {
	state := gate.SessionState(end.State)
	if state != gate.SessionStateCompleted && state != gate.SessionStateSuspended {
		return fmt.Errorf("%w: state: %q is not completed or suspended", ErrBadRequest, end.State)
	}
	for range 16 {
		rec, err := s.store.GetSession(ctx, c.Tenant, end.SessionID)
		if err != nil {
			return fmt.Errorf("gate: end session: %w", err)
		}
		if err := c.owns(rec.AgentID, rec.ID); err != nil {
			return err
		}
		rec.State, rec.UpdatedAt = state, s.o.Now()
		if _, err = s.store.UpdateSession(ctx, rec); errors.Is(err, gate.ErrConflict) {
			continue
		}
		if err != nil {
			return fmt.Errorf("gate: end session: %w", err)
		}
		return nil
	}
	return fmt.Errorf("gate: end session: %w", gate.ErrConflict)
}

// operatorStates are the states an operator acts on.
var operatorStates = []gate.ActionState{gate.ActionHeld, gate.ActionUnconfirmed}

// List returns a page of tenant's actions in states (default: held and
// unconfirmed); tenant "" lists every tenant. after is the Next of the
// previous page; limit is at most 500 (default 100).
func (s *Service) List(ctx context.Context, tenant string, states []gate.ActionState, after string, limit int) (gate.ActionList, error) {
	if len(states) == 0 {
		states = operatorStates
	}
	if limit <= 0 || limit > 500 {
		limit = 100
	}
	f := gate.ActionFilter{TenantID: tenant, States: states, Limit: limit}
	if after != "" {
		created, key, err := parseCursor(after)
		if err != nil {
			return gate.ActionList{}, err
		}
		f.AfterCreated, f.AfterSessionID, f.AfterActionID, f.AfterTenantID = created, key.session, key.action, key.tenant
	}
	recs, err := s.store.ListActions(ctx, f)
	if err != nil {
		return gate.ActionList{}, fmt.Errorf("gate: list: %w", err)
	}
	out := gate.ActionList{Actions: recs}
	// A full page may be the last one: the next is then empty. (Asking the
	// store for one more would pass its 500-row page limit.)
	if len(recs) == limit {
		out.Next = cursor(recs[limit-1])
	}
	if out.Actions == nil {
		out.Actions = []gate.ActionRecord{}
	}
	return out, nil
}

// cursor encodes a listing position: the creation time and the key, as
// JSON in URL-safe base64 so ids with any characters survive a query.
func cursor(r gate.ActionRecord) string {
	b := mustJSON([]string{r.CreatedAt.UTC().Format(time.RFC3339Nano), r.SessionID, r.ActionID, r.TenantID})
	return base64.RawURLEncoding.EncodeToString(b)
}

func parseCursor(c string) (time.Time, actionKey, error) {
	bad := fmt.Errorf("%w: after: not a listing cursor", ErrBadRequest)
	b, err := base64.RawURLEncoding.DecodeString(c)
	var parts []string
	if err != nil || json.Unmarshal(b, &parts) != nil || len(parts) != 4 {
		return time.Time{}, actionKey{}, bad
	}
	t, err := time.Parse(time.RFC3339Nano, parts[0])
	if err != nil {
		return time.Time{}, actionKey{}, bad
	}
	return t, actionKey{tenant: parts[3], session: parts[1], action: parts[2]}, nil
}

// Get returns one action; tenant "" finds it in any tenant (admin).
func (s *Service) Get(ctx context.Context, tenant, sessionID, actionID string) (gate.ActionRecord, error) {
	if tenant != "" {
		rec, err := s.store.GetAction(ctx, tenant, sessionID, actionID)
		if err != nil {
			return gate.ActionRecord{}, fmt.Errorf("gate: action: %w", err)
		}
		return rec, nil
	}
	return gate.ActionRecord{}, fmt.Errorf("%w: name the tenant (?tenant=)", ErrBadRequest)
}

// Decide applies an operator's decision: approve or deny a held action,
// or settle an unconfirmed one. actor is recorded in the action and the
// audit.
func (s *Service) Decide(ctx context.Context, tenant, sessionID, actionID string, d gate.OperatorDecision, actor string) (gate.ActionRecord, error) {
	if !d.Decision.Valid() {
		return gate.ActionRecord{}, fmt.Errorf("%w: decision %q", ErrBadRequest, d.Decision)
	}
	rec, err := s.Get(ctx, tenant, sessionID, actionID)
	if err != nil {
		return gate.ActionRecord{}, err
	}
	for range 16 {
		next := rec
		now := s.o.Now()
		switch d.Decision {
		case gate.DecisionApprove, gate.DecisionDeny:
			if rec.State != gate.ActionHeld {
				return rec, fmt.Errorf("%w: the action is %s, not held", gate.ErrConflict, rec.State)
			}
			if !rec.HoldExpiresAt.IsZero() && !now.Before(rec.HoldExpiresAt) {
				out, err := s.expireHold(ctx, rec, gate.ReasonOperatorTimeout)
				if err != nil && !errors.Is(err, gate.ErrConflict) {
					return out, err
				}
				return out, fmt.Errorf("%w: the hold's window had passed; it failed closed", gate.ErrConflict)
			}
			next.State, next.DecidedBy, next.DecidedAt = gate.ActionApproved, actor, now
			if d.Decision == gate.DecisionDeny {
				next.State, next.Reason = gate.ActionDenied, gate.ReasonOperatorDenied
				if d.Note != "" {
					next.Rationale = "denied by an operator: " + d.Note
				}
			}
		case gate.DecisionConfirmExecuted, gate.DecisionConfirmNotExecuted:
			switch {
			case rec.State == gate.ActionClaimed && s.claimLive(rec, now):
				// Voiding a live claim would let a second claim be granted
				// while the first holder still writes.
				return rec, fmt.Errorf("%w: the action is claimed and its holder may still be writing; it can be confirmed once the claim timeout (%s) has passed, at %s",
					gate.ErrConflict, s.o.ClaimTimeout, rec.ClaimedAt.Add(s.o.ClaimTimeout).UTC().Format(time.RFC3339))
			case rec.State != gate.ActionUnconfirmed && rec.State != gate.ActionClaimed:
				return rec, fmt.Errorf("%w: the action is %s, not unconfirmed", gate.ErrConflict, rec.State)
			}
			if d.Decision == gate.DecisionConfirmExecuted {
				next.State, next.AcknowledgedAt = gate.ActionExecuted, now
			} else {
				// The claim is void; a later run may claim again and gets
				// the next fencing token, so the old one can never ack.
				next.State, next.ClaimedAt = gate.ActionPassed, time.Time{}
				if rec.Verdict == gate.Hold {
					next.State = gate.ActionApproved
				}
			}
		}
		out, err := s.write(ctx, rec, next, "operator_"+string(d.Decision), actor, map[string]any{"note": d.Note, "from": rec.State})
		if errors.Is(err, gate.ErrConflict) {
			rec = out
			continue
		}
		if err != nil {
			return rec, err
		}
		s.waiters.wake(keyOf(out))
		switch {
		case rec.State == gate.ActionHeld && out.State == gate.ActionApproved:
			s.tel.holdEnded(out, "approved")
		case rec.State == gate.ActionHeld && out.State == gate.ActionDenied:
			s.tel.holdEnded(out, "denied")
		}
		if s.deps.Decided != nil {
			s.deps.Decided(out)
		}
		return out, nil
	}
	return rec, fmt.Errorf("gate: decide: %w", gate.ErrConflict)
}

// AppendAudit appends entries to the audit chain, in order, for a service
// that audits its own events in the gate's chain (the tool gateway's
// calls). Kind and TenantID are required.
func (s *Service) AppendAudit(ctx context.Context, entries ...gate.AuditEntry) error {
	for _, e := range entries {
		if e.Kind == "" || e.TenantID == "" {
			return fmt.Errorf("%w: an audit entry needs a kind and a tenant", ErrBadRequest)
		}
	}
	if _, err := s.store.AppendAudits(ctx, entries); err != nil {
		return fmt.Errorf("gate: append audit: %w", err)
	}
	return nil
}

// Audit returns a page of the audit chain with its head.
func (s *Service) Audit(ctx context.Context, after int64, limit int) (gate.AuditPage, error) {
	entries, err := s.store.Audit(ctx, after, limit)
	if err != nil {
		return gate.AuditPage{}, fmt.Errorf("gate: audit: %w", err)
	}
	seq, hash, err := s.store.AuditHead(ctx)
	if err != nil {
		return gate.AuditPage{}, fmt.Errorf("gate: audit head: %w", err)
	}
	if entries == nil {
		entries = []gate.AuditEntry{}
	}
	return gate.AuditPage{Entries: entries, HeadSeq: seq, HeadHash: hash}, nil
}
