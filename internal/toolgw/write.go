package toolgw

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"novaos.dev/novaos/gate"
	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/tools"
)

// gateTeam is the team the gate files tool calls under; rules can tell
// them from an SDK's own writes by it.
const gateTeam = "tools"

// callWrite runs a write-class call through the gate: a pass runs it once
// (claim, call, acknowledge), a hold answers -32042 and shows the pause
// in the run, a kill refuses. A caller whose token is bound to an
// approved call (the token of a run resumed after a person's approval)
// presents it again: the gate answers from its standing verdict, so the
// approved call runs once and only with the arguments approved.
func (s *Service) callWrite(ctx context.Context, r *request, p Provider, call *Request) (*mcp.CallToolResult, error) {
	c, name := call.Caller, call.Tool.Name
	if s.deps.Gate == nil {
		return nil, rpcError(tools.CodeForbidden, "write-class calls need the governance gate, which this server does not run",
			&tools.ErrorData{Code: tools.ReasonGateKilled, Tool: name})
	}
	if c.Agent == "" {
		return nil, rpcError(tools.CodeForbidden, "only an agent's token makes write-class calls: the token names no agent",
			&tools.ErrorData{Code: tools.ReasonInsufficientScope, Tool: name})
	}
	session := sessionOf(c)
	if err := s.openGateSession(ctx, c, session); err != nil {
		return nil, s.gateDown(name, err)
	}
	act := gate.Action{ActionType: name, TenantID: c.Tenant, TeamID: gateTeam, AgentID: c.Agent, SessionID: session,
		Context: writeContext(call), Evidence: s.evidence(ctx, c), Floor: gate.Hold}
	if r.gateOnly {
		act.Floor = ""
	}
	var v gate.Verdict
	var err error
	if c.CallID != "" {
		// The token is bound to an approved call: this is that call again,
		// unless the gate finds its content changed.
		act.ActionID, act.Resume = c.CallID, true
		if v, err = s.submit(ctx, c, act); err != nil {
			return nil, s.gateDown(name, err)
		}
		if v.Reason == gate.ResumeFingerprintMismatch {
			// Another call than the approved one (a later write of the
			// resumed run): it is judged on its own, under an id of its
			// own, as the approved call's id names the approved content.
			act.ActionID, act.Resume = "", false
		} else {
			call.CallID = c.CallID
		}
	}
	if act.ActionID == "" {
		act.ActionID = call.CallID
		if v, err = s.submit(ctx, c, act); err != nil {
			return nil, s.gateDown(name, err)
		}
	}
	audit := map[string]any{"verdict": v.Verdict, "rule_id_cited": v.RuleIDCited, "gate_session": session}
	switch {
	case v.Verdict == gate.Pass:
		claim := v.Claim
		if claim == nil {
			// A standing pass (an approval) is claimed now.
			gctx, cancel := context.WithTimeout(ctx, s.o.GateTimeout)
			got, err := s.deps.Gate.Claim(gctx, c, gate.ClaimRequest{SessionID: session, ActionID: call.CallID})
			cancel()
			if err != nil {
				return nil, s.gateDown(name, err)
			}
			claim = &got
		}
		if claim.Status != gate.ClaimGranted {
			s.audit.add(auditRefused, c, call.CallID, map[string]any{"tool": name, "claim": claim.Status, "run_id": c.Run})
			if claim.Status == gate.ClaimExecutionUnconfirmed {
				return nil, unconfirmed(name, call.CallID)
			}
			return nil, rpcError(tools.CodeForbidden, fmt.Sprintf("the approved call %s was %s: it runs once", call.CallID, claim.Status),
				&tools.ErrorData{Code: tools.ReasonAlreadyExecuted, Tool: name})
		}
		res, err := s.run(ctx, p, call, tools.ClassWrite, audit)
		if err != nil {
			// Whether a write that failed in flight took effect is an
			// operator's call: it stays claimed, and turns unconfirmed.
			return nil, err
		}
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.o.GateTimeout)
		_, err = s.deps.Gate.Ack(actx, c, gate.AckRequest{SessionID: session, ActionID: call.CallID,
			FencingToken: claim.FencingToken, ExecutedAt: s.o.Now()})
		cancel()
		if err != nil {
			s.log.Error("toolgw: acknowledge a write that ran; it shows unconfirmed until an operator settles it",
				"tool", name, "call", call.CallID, "err", err)
		}
		return res, nil
	case v.Verdict == gate.Hold:
		data := tools.WriteConfirmationData{Code: tools.ReasonHITLRequired, CallID: call.CallID, ToolName: name,
			SessionID: session, ActionID: call.CallID, RunID: c.Run,
			Elicitations: []tools.Elicitation{{Mode: "url", ElicitationID: call.CallID, URL: s.deps.BaseURL + s.o.GatePage,
				Message: "A person must approve this call of " + name + " on the gate page."}}}
		s.runEvent(ctx, c, eventToolCall, map[string]any{"call_id": call.CallID, "tool": name, "class": tools.ClassWrite})
		// The run's pause, in the shape the execution gateway announces an
		// agent's write confirmation in, so a run that then pauses on this
		// call is not announced twice.
		held := map[string]any{"call_id": call.CallID, "tool_name": name, "session_id": session, "action_id": call.CallID,
			"rule_id_cited": v.RuleIDCited, "rationale": clip(v.Rationale)}
		s.runEvent(ctx, c, eventWriteHeld, map[string]any{"write_confirmation": held, "call_id": call.CallID, "tool_name": name,
			"content": "A person must approve this call of " + name + " on the gate page."})
		s.audit.add(auditRefused, c, call.CallID, map[string]any{"tool": name, "verdict": v.Verdict, "run_id": c.Run})
		return nil, rpcError(tools.CodeWriteConfirmationRequired, "a person must approve this call first ("+tools.ReasonHITLRequired+")", data)
	case v.Verdict == gate.AlreadyExecuted:
		return nil, rpcError(tools.CodeForbidden, "the approved call "+call.CallID+" has run already: it runs once",
			&tools.ErrorData{Code: tools.ReasonAlreadyExecuted, Tool: name})
	case v.Verdict == gate.ExecutionUnconfirmed:
		s.audit.add(auditRefused, c, call.CallID, map[string]any{"tool": name, "verdict": v.Verdict, "run_id": c.Run})
		return nil, unconfirmed(name, call.CallID)
	case v.Verdict == gate.Kill && v.Reason == gate.ReasonStore:
		// The gate could not read or record a decision: it decided
		// nothing and keeps no record, so this is the gate down, and a
		// retry is judged afresh.
		return nil, s.gateDown(name, fmt.Errorf("the gate answered %s", v.Reason))
	default:
		why := string(v.Reason)
		if why == "" {
			why = v.Rationale
		}
		s.audit.add(auditRefused, c, call.CallID, map[string]any{"tool": name, "verdict": v.Verdict, "reason": v.Reason, "run_id": c.Run})
		return nil, rpcError(tools.CodeForbidden, "the gate refused this call: "+clip(why),
			&tools.ErrorData{Code: tools.ReasonGateKilled, Tool: name, Rule: v.RuleIDCited})
	}
}

// submit submits act within the gate timeout.
func (s *Service) submit(ctx context.Context, c *Caller, act gate.Action) (gate.Verdict, error) {
	ctx, cancel := context.WithTimeout(ctx, s.o.GateTimeout)
	defer cancel()
	return s.deps.Gate.Submit(ctx, c, act)
}

// writeContext is what the gate judges and a person approves: the tool,
// its exact arguments and where the call comes from. Arguments the gate
// can fingerprint exactly travel as the object; others (numbers beyond a
// double's exact range) as their JSON text, so no two different calls
// share an approval.
func writeContext(call *Request) gate.GenericContext {
	c := call.Caller
	extra := map[string]any{"tool": call.Tool.Name, "server": tools.Server(call.Tool.Name), "run_id": c.Run,
		"instance_id": c.Instance, "user_id": c.User}
	if canon, err := gate.Canonicalize(call.Arguments); err == nil {
		extra["arguments"] = json.RawMessage(canon)
	} else {
		extra["arguments_json"] = string(call.Arguments)
	}
	// The record is the tool: the gate's ledger then totals each tool's
	// calls, and a resumed call, made again under another id, keeps the
	// fingerprint of the call a person approved.
	return gate.GenericContext{RecordID: call.Tool.Name, Summary: "call " + call.Tool.Name, Extra: extra}
}

// openGateSession opens (or attaches to) the caller's gate session, once
// per process and session.
func (s *Service) openGateSession(ctx context.Context, c *Caller, session string) error {
	key := c.Tenant + "/" + session
	s.openedMu.Lock()
	_, ok := s.opened[key]
	s.openedMu.Unlock()
	if ok {
		return nil
	}
	gctx, cancel := context.WithTimeout(ctx, s.o.GateTimeout)
	defer cancel()
	err := s.deps.Gate.OpenSession(gctx, c, gate.SessionRequest{TenantID: c.Tenant, TeamID: gateTeam, AgentID: c.Agent,
		SessionID: session, Attach: true, AdoptDeploymentWindow: true})
	if err != nil {
		return err
	}
	s.openedMu.Lock()
	if len(s.opened) > 100_000 {
		clear(s.opened)
	}
	s.opened[key] = s.o.Now()
	s.openedMu.Unlock()
	return nil
}

// recentEvents bounds the run's latest events read for a write's
// evidence: a long run's early calls are left out.
const recentEvents = 500

// evidence is the run's earlier tool calls, as the gate reads a
// trajectory: each result with its tool and outcome.
func (s *Service) evidence(ctx context.Context, c *Caller) []gate.Evidence {
	if s.deps.Runs == nil || c.Run == "" {
		return nil
	}
	events, err := s.deps.Runs.RecentEvents(ctx, c.Tenant, c.Run, recentEvents)
	if errors.Is(err, gateway.ErrNotFound) {
		return nil // a token naming a run the gateway does not keep
	}
	if err != nil {
		s.log.Warn("toolgw: read the run's calls for the gate", "run", c.Run, "err", err)
		return nil
	}
	var out []gate.Evidence
	for _, e := range events {
		if e.Type != eventToolResult {
			continue
		}
		var f struct {
			CallID  string `json:"call_id"`
			Tool    string `json:"tool"`
			Success bool   `json:"success"`
			Error   string `json:"error"`
		}
		if json.Unmarshal(e.Payload, &f) != nil || f.Tool == "" {
			continue
		}
		res, _ := json.Marshal(map[string]bool{"success": f.Success})
		out = append(out, gate.Evidence{Tool: f.Tool, Result: res, Error: f.Error,
			Provenance: gate.Provenance{CallID: f.CallID, ObservedAt: e.At}})
	}
	if len(out) > s.o.Evidence {
		out = out[len(out)-s.o.Evidence:]
	}
	for i := range out {
		out[i].Provenance.Sequence = i + 1
		if out[i].Provenance.ObservedAt.IsZero() {
			out[i].Provenance.ObservedAt = time.Unix(0, 0).UTC()
		}
	}
	return out
}

// unconfirmed refuses an approved call whose earlier attempt claimed it
// and never acknowledged it (its replica died, or its tool failed or
// timed out in flight): it may have run, so it is not made again, and
// an operator settles it at the gate.
func unconfirmed(tool, callID string) error {
	return rpcError(tools.CodeForbidden, "the approved call "+callID+" may have run already: an earlier attempt claimed it and never confirmed it, "+
		"so it is not made again; an operator confirms at the gate whether it ran",
		&tools.ErrorData{Code: tools.ReasonAlreadyExecuted, Tool: tool})
}

// gateDown refuses a write the gate could not judge: fail closed.
func (s *Service) gateDown(tool string, err error) error {
	s.log.Error("toolgw: the gate could not judge a write; refused", "tool", tool, "err", err)
	return rpcError(tools.CodeUnavailable, "the governance gate could not judge this write-class call; it was not made",
		&tools.ErrorData{Code: tools.ReasonUnavailable, Tool: tool})
}
