package gate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// ToolKind classifies a tool at the seam: reads run and are buffered,
// writes are gated.
type ToolKind string

const (
	ToolRead  ToolKind = "read"
	ToolWrite ToolKind = "write"
)

// WriteSpecJSON is WriteSpec for a tool seen at a framework's tool seam,
// where a call is a name and its raw JSON arguments: the builders get the
// call's arguments object (the Python gate SDK's WriteSpec
// context_builder, which gets a single args dict).
type WriteSpecJSON struct {
	ActionType string
	// Context builds the write's context from the call's arguments.
	// Required.
	Context func(args json.RawMessage) (Context, error)
	// ActionID derives the work item's id from the arguments; required in
	// a resumed session (see WriteSpec.ActionID).
	ActionID func(args json.RawMessage) (string, error)
}

// ToolResult is what a tool call at the seam gives back to the model.
type ToolResult struct {
	// Content is the tool's result (its JSON text) or, when Blocked, a
	// message the model can read: that an operator denied the write,
	// with the reason and the rationale, so it can try something else.
	Content string
	// Blocked is set when an operator denied the write; the tool did not
	// run.
	Blocked bool
	// Denial is the denial behind a blocked result, for logs and audit.
	Denial *KillError
}

// ToolGate gates every tool call of an agent at one seam (the Python gate
// SDK's NovarchToolGate): classify each tool once in Kinds, describe each
// write in Writes, and pass every call through Call.
//
//   - A read runs and is buffered as evidence.
//   - A write is gated: a pass runs it.
//   - An operator's deny comes back as a blocked ToolResult, so the model
//     sees why and can recover.
//   - A kill, every fail-closed case, a resume refusal,
//     execution_unconfirmed, a pause and an already-executed work item
//     return their error, which must halt the run (see KillSafe).
//
// A tool missing from Kinds, or a write missing from Writes, fails
// closed with [fail_closed_config] before anything runs: an unclassified
// tool may be a write, and running a write ungated is the one thing the
// gate exists to prevent. Classify a harmless tool as a read to let it
// through.
type ToolGate struct {
	Client *Client
	Kinds  map[string]ToolKind
	Writes map[string]WriteSpecJSON
}

// Call runs one tool call through the gate: next is the tool itself. The
// session is the one ctx carries.
func (g *ToolGate) Call(ctx context.Context, name string, args json.RawMessage, next func(context.Context, json.RawMessage) (json.RawMessage, error)) (ToolResult, error) {
	return g.call(ctx, name, "", args, next)
}

func (g *ToolGate) call(ctx context.Context, name, callID string, args json.RawMessage, next func(context.Context, json.RawMessage) (json.RawMessage, error)) (ToolResult, error) {
	sid := ""
	if s, ok := SessionFrom(ctx); ok {
		sid = s.ID
	}
	switch g.Kinds[name] {
	case ToolRead:
		res, err := next(ctx, args)
		var result any = res
		if err != nil {
			result = nil
		}
		recordRead(ctx, name, callID, args, result, err)
		if err != nil {
			return ToolResult{}, err
		}
		return ToolResult{Content: string(res)}, nil
	case ToolWrite:
	default:
		return ToolResult{}, configError(sid, "", fmt.Sprintf("tool %q is not classified as read or write; the seam runs no unclassified tool", name))
	}
	spec, ok := g.Writes[name]
	if !ok {
		return ToolResult{}, configError(sid, "", fmt.Sprintf("write tool %q has no WriteSpecJSON", name))
	}
	w := writeCall{actionType: spec.ActionType}
	if spec.Context != nil {
		w.context = func() (Context, error) { return spec.Context(args) }
	}
	if spec.ActionID != nil {
		w.actionID = func() (string, error) { return spec.ActionID(args) }
	}
	var res json.RawMessage
	err := g.Client.gated(ctx, w, func(ctx context.Context) error {
		var err error
		res, err = next(ctx, args)
		return err
	})
	var k *KillError
	if errors.As(err, &k) && k.Reason == ReasonOperatorDenied {
		return ToolResult{Content: blockedText(name, k), Blocked: true, Denial: k}, nil
	}
	if err != nil {
		return ToolResult{}, err
	}
	return ToolResult{Content: string(res)}, nil
}

// blockedText is what the model reads for a denied write.
func blockedText(tool string, k *KillError) string {
	var b strings.Builder
	fmt.Fprintf(&b, "BLOCKED: the %s call was not executed: an operator denied it (reason: %s)", tool, k.Reason)
	if k.RuleIDCited != "" {
		fmt.Fprintf(&b, " under rule %s", k.RuleIDCited)
	}
	if k.Rationale != "" {
		b.WriteString(". Rationale: " + k.Rationale)
	}
	b.WriteString(". Do not retry the same call; choose another course or ask the user.")
	return b.String()
}

// Halts reports whether err must stop the agent's run rather than reach
// the model as a tool error: a *KillError (a kill, a fail-closed stop, a
// refusal; an operator's deny at the seam is already a blocked result) or
// a *PausedError (a person is deciding; the run should park).
func Halts(err error) bool {
	var k *KillError
	var p *PausedError
	return errors.As(err, &k) || errors.As(err, &p)
}

// KillSafe wraps a tool-error handler (the function a framework calls to
// turn a tool's error into a message for the model, as the Python gate SDK's
// kill_safe_handle_tool_errors wraps handle_tool_errors) so that it sees
// ordinary errors but never swallows a halt: for an error that Halts, the
// returned handler gives the error back instead of a message. A nil
// handler renders err.Error().
func KillSafe(handle func(error) string) func(error) (string, error) {
	return func(err error) (string, error) {
		if Halts(err) {
			return "", err
		}
		if handle == nil {
			return err.Error(), nil
		}
		return handle(err), nil
	}
}
