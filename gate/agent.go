package gate

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"os"

	"novaos.dev/novaos/agent"
)

// FromOptions configure From.
type FromOptions struct {
	ClientOptions
	// URL is the gate server's base URL; "" finds it as From says.
	URL string
}

// From returns a Client bound to the execution c serves, so a skill is
// governed as its agent:
//   - it calls with the execution token the platform gave it
//     (c.Execution(); the token must carry gate:submit);
//   - at o's URL, else $NOVAOS_GATE_URL, else the platform context's
//     gateway_url (the platform serves the gate beside its gateway).
//
// A missing token or URL is a [fail_closed_config] KillError. o may be nil.
func From(c *agent.Context, o *FromOptions) (*Client, error) {
	tok, err := c.Execution().RequireToken()
	if err != nil {
		return nil, &KillError{Verdict: Kill, Reason: ReasonConfig, Err: err}
	}
	if o == nil {
		o = &FromOptions{}
	}
	base := cmp.Or(o.URL, os.Getenv(URLEnv), c.Platform().GatewayURL)
	return NewClient(Config{URL: base, Token: tok}, &o.ClientOptions)
}

// AgentRead is Read for a tool of an agent skill: the call is also
// reported through the agent's tool-call convention (tool-call-v1
// started, then completed or failed), and its evidence carries the
// reported call id. Reporting is best effort: an agent that does not
// declare tool-call-v1 reports nothing, and a report that fails is
// logged, never a reason to fail the read.
func AgentRead[A, R any](ac *agent.Context, name string, fn func(context.Context, A) (R, error)) func(context.Context, A) (R, error) {
	return func(ctx context.Context, args A) (R, error) {
		tc := startToolCall(ac, name, args)
		r, err := fn(ctx, args)
		var result any = r
		if err != nil {
			result = nil
		}
		recordRead(ctx, name, tc.ID(), args, result, err)
		endToolCall(ac, tc, r, err)
		return r, err
	}
}

// AgentWrite is Write for a tool of an agent skill: the call is reported
// through the agent's tool-call convention as well, and a call the gate
// stopped is reported failed with the stop's message (which never holds
// the token).
func AgentWrite[A, R any](ac *agent.Context, c *Client, name string, spec WriteSpec[A], fn func(context.Context, A) (R, error)) func(context.Context, A) (R, error) {
	gated := Write(c, spec, fn)
	return func(ctx context.Context, args A) (R, error) {
		tc := startToolCall(ac, name, args)
		r, err := gated(ctx, args)
		endToolCall(ac, tc, r, err)
		return r, err
	}
}

// AgentSeam is ToolGate.Call for a skill: the call is reported through
// the agent's tool-call convention too. A denied write is reported
// completed with its blocked result, since the model receives it as the
// tool's answer; a halt is reported failed.
func (g *ToolGate) AgentSeam(ac *agent.Context) func(ctx context.Context, name string, args json.RawMessage, next func(context.Context, json.RawMessage) (json.RawMessage, error)) (ToolResult, error) {
	return func(ctx context.Context, name string, args json.RawMessage, next func(context.Context, json.RawMessage) (json.RawMessage, error)) (ToolResult, error) {
		tc := startToolCall(ac, name, args)
		res, err := g.call(ctx, name, tc.ID(), args, next)
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
		endToolCall(ac, tc, out, err)
		return res, err
	}
}

func startToolCall(ac *agent.Context, name string, args any) *agent.ToolCall {
	tc, err := ac.StartToolCall("", name, args)
	if err != nil && tc != nil && !isNotDeclared(err) {
		ac.Logger().WarnContext(ac, "gate: tool call not reported", "tool", name, "err", err)
	}
	return tc
}

func endToolCall(ac *agent.Context, tc *agent.ToolCall, result any, err error) {
	var rerr error
	if err != nil {
		rerr = tc.Fail(err)
	} else {
		rerr = tc.Complete(result)
	}
	if rerr != nil {
		ac.Logger().WarnContext(ac, "gate: tool call end not reported", "tool_call_id", tc.ID(), "err", rerr)
	}
}

func isNotDeclared(err error) bool {
	return err != nil && errors.Is(err, agent.ErrNotDeclared)
}
