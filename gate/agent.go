package gate

import (
	"cmp"
	"context"
	"encoding/json"
	"log/slog"
	"os"

	"novaos.dev/novaos/secret"
)

// Execution is what From reads of the execution a skill serves.
// *agent.Context satisfies it; gate declares it rather than importing
// agent, so the stores built on gate's contract do not link the agent SDK.
type Execution interface {
	// ExecutionToken returns the execution token, or an error when the
	// execution carries none.
	ExecutionToken() (secret.Value, error)
	// GatewayURL is the platform's base URL, "" when unknown.
	GatewayURL() string
}

// ToolReporter is what AgentRead, AgentWrite and ToolGate.AgentSeam use of a
// skill's execution: its context, its logger, and its tool-call reports
// (tool-call-v1). *agent.Context satisfies it.
type ToolReporter interface {
	context.Context
	Logger() *slog.Logger
	// BeginToolCall reports a call of the tool name with args as started
	// and returns its id and end, which reports it completed with result
	// (err nil) or failed with err. An agent that does not declare
	// tool-call-v1 reports nothing and returns no error.
	BeginToolCall(id, name string, args any) (callID string, end func(result any, err error) error, err error)
}

// FromOptions configure From.
type FromOptions struct {
	ClientOptions
	// URL is the gate server's base URL; "" finds it as From says.
	URL string
}

// From returns a Client bound to the execution c serves (a skill passes
// its *agent.Context), so a skill is governed as its agent:
//   - it calls with the execution token the platform gave it
//     (c.ExecutionToken(); the token must carry gate:submit);
//   - at o's URL, else $NOVAOS_GATE_URL, else the platform context's
//     gateway_url (the platform serves the gate beside its gateway).
//
// A missing token or URL is a [fail_closed_config] KillError. o may be nil.
func From(c Execution, o *FromOptions) (*Client, error) {
	tok, err := c.ExecutionToken()
	if err != nil {
		return nil, &KillError{Verdict: Kill, Reason: ReasonConfig, Err: err}
	}
	if o == nil {
		o = &FromOptions{}
	}
	base := cmp.Or(o.URL, os.Getenv(URLEnv), c.GatewayURL())
	return NewClient(Config{URL: base, Token: tok}, &o.ClientOptions)
}

// AgentRead is Read for a tool of an agent skill: the call is also
// reported through the agent's tool-call convention (tool-call-v1
// started, then completed or failed), and its evidence carries the
// reported call id. Reporting is best effort: an agent that does not
// declare tool-call-v1 reports nothing, and a report that fails is
// logged, never a reason to fail the read.
func AgentRead[A, R any](ac ToolReporter, name string, fn func(context.Context, A) (R, error)) func(context.Context, A) (R, error) {
	return func(ctx context.Context, args A) (R, error) {
		id, end := startToolCall(ac, name, args)
		r, err := fn(ctx, args)
		var result any = r
		if err != nil {
			result = nil
		}
		recordRead(ctx, name, id, args, result, err)
		endToolCall(ac, id, end, r, err)
		return r, err
	}
}

// AgentWrite is Write for a tool of an agent skill: the call is reported
// through the agent's tool-call convention as well, and a call the gate
// stopped is reported failed with the stop's message (which never holds
// the token).
func AgentWrite[A, R any](ac ToolReporter, c *Client, name string, spec WriteSpec[A], fn func(context.Context, A) (R, error)) func(context.Context, A) (R, error) {
	gated := Write(c, spec, fn)
	return func(ctx context.Context, args A) (R, error) {
		id, end := startToolCall(ac, name, args)
		r, err := gated(ctx, args)
		endToolCall(ac, id, end, r, err)
		return r, err
	}
}

// AgentSeam is ToolGate.Call for a skill: the call is reported through
// the agent's tool-call convention too. A denied write is reported
// completed with its blocked result, since the model receives it as the
// tool's answer; a halt is reported failed.
func (g *ToolGate) AgentSeam(ac ToolReporter) func(ctx context.Context, name string, args json.RawMessage, next func(context.Context, json.RawMessage) (json.RawMessage, error)) (ToolResult, error) {
	return func(ctx context.Context, name string, args json.RawMessage, next func(context.Context, json.RawMessage) (json.RawMessage, error)) (ToolResult, error) {
		id, end := startToolCall(ac, name, args)
		res, err := g.call(ctx, name, id, args, next)
		var out any
		if err == nil {
			if res.Blocked {
				out = map[string]any{"blocked": true, "message": res.Content}
			} else if json.Valid([]byte(res.Content)) {
				out = json.RawMessage(res.Content)
			} else {
				out = res.Content
			}
		}
		endToolCall(ac, id, end, out, err)
		return res, err
	}
}

func startToolCall(ac ToolReporter, name string, args any) (string, func(any, error) error) {
	id, end, err := ac.BeginToolCall("", name, args)
	if err != nil {
		ac.Logger().WarnContext(ac, "gate: tool call not reported", "tool", name, "err", err)
	}
	return id, end
}

func endToolCall(ac ToolReporter, id string, end func(any, error) error, result any, err error) {
	if rerr := end(result, err); rerr != nil {
		ac.Logger().WarnContext(ac, "gate: tool call end not reported", "tool_call_id", id, "err", rerr)
	}
}
