package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2aclient"
	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/internal/toolgw"
	"novaos.dev/novaos/tools"
)

// AgentsCall is the agent-call tool's name.
const AgentsCall = tools.Prefix + tools.ServerAgents + ".call"

// Defaults of AgentsOptions.
const (
	DefaultAgentTimeout    = toolgw.DefaultBuiltinTimeout
	DefaultMaxAgentHops    = 4
	DefaultMaxMessageBytes = 256 << 10
)

// maxAgentIDLen bounds an instance id and a skill id.
const maxAgentIDLen = 128

// AgentCall is one agent's call of another: what novaos.agents.call
// asks an AgentCaller to do.
type AgentCall struct {
	// Agent is the id of the instance called, in the caller's tenant.
	Agent string
	// Message is the text sent; Data, when set, a JSON object sent as a
	// data part beside it; SkillID, when set, the skill asked for.
	Message string
	SkillID string
	Data    json.RawMessage
	// CallID is the tool call's id: the message's id, so a callee that
	// keeps them recognises a redelivery.
	CallID string
	// MaxHops bounds the chain of agent calls: a caller already that many
	// calls away from its run's own agent is refused.
	MaxHops int
}

// AgentAnswer is what the called agent answered.
type AgentAnswer struct {
	// TaskID is the callee's task ("" when it answered with a message).
	TaskID string
	// State is the task's A2A state (TASK_STATE_COMPLETED, …); a message
	// answer is TASK_STATE_COMPLETED.
	State string
	// Text is the answer's text: its artifacts' text parts, or, without
	// any, its status message's.
	Text      string
	Artifacts []a2a.Artifact
}

// AgentCaller calls an installed agent over A2A for a caller, with the
// caller's token chained: the execution gateway is one. Its errors say
// why with the gateway package's sentinels: gateway.ErrNotFound (no such
// instance in the caller's tenant), gateway.ErrForbidden (a loop, too
// many hops), gateway.ErrUnauthorized (no token to chain),
// gateway.ErrInvalidRequest; an *a2a.Error is the callee's own refusal.
type AgentCaller interface {
	CallAgent(ctx context.Context, c *toolgw.Caller, req AgentCall) (AgentAnswer, error)
}

// AgentCallerFunc is a function that is an AgentCaller.
type AgentCallerFunc func(ctx context.Context, c *toolgw.Caller, req AgentCall) (AgentAnswer, error)

// CallAgent calls f.
func (f AgentCallerFunc) CallAgent(ctx context.Context, c *toolgw.Caller, req AgentCall) (AgentAnswer, error) {
	return f(ctx, c, req)
}

// AgentsOptions configure the agents server. Zero fields mean the
// defaults.
type AgentsOptions struct {
	// Timeout bounds one call, until the callee's answer
	// (DefaultAgentTimeout).
	Timeout time.Duration
	// MaxAgentHops bounds a chain of agent calls (DefaultMaxAgentHops):
	// the run's agent calling another is one hop, that one calling a
	// third two, and so on.
	MaxAgentHops int
	// MaxMessageBytes bounds the message, and the data, sent
	// (DefaultMaxMessageBytes each).
	MaxMessageBytes int
	// Logger hears failed calls (never a message); nil discards.
	Logger *slog.Logger
}

func (o *AgentsOptions) withDefaults() AgentsOptions {
	var v AgentsOptions
	if o != nil {
		v = *o
	}
	if v.Timeout <= 0 {
		v.Timeout = DefaultAgentTimeout
	}
	if v.MaxAgentHops <= 0 {
		v.MaxAgentHops = DefaultMaxAgentHops
	}
	if v.MaxMessageBytes <= 0 {
		v.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if v.Logger == nil {
		v.Logger = slog.New(slog.DiscardHandler)
	}
	return v
}

// Agents returns the agents server: novaos.agents.call, an A2A call of
// another agent installed in the caller's tenant. With a nil caller the
// tool is listed and answers SERVICE_DISABLED.
func Agents(caller AgentCaller, opts *AgentsOptions) (toolgw.Provider, error) {
	o := opts.withDefaults()
	a := &agents{o: o, caller: caller}
	schema := fmt.Sprintf(`{"type":"object","properties":{`+
		`"agent":{"type":"string","minLength":1,"maxLength":%d,"description":"The id of an agent instance installed in your tenant."},`+
		`"message":{"type":"string","minLength":1,"maxLength":%d,"description":"The text sent to the agent."},`+
		`"skill_id":{"type":"string","maxLength":%d,"description":"The agent's skill to run; its only or default skill when left out."},`+
		`"data":{"type":"object","description":"Structured input, sent as a data part beside the text."}},`+
		`"required":["agent","message"],"additionalProperties":false}`, maxAgentIDLen, o.MaxMessageBytes, maxAgentIDLen)
	t := toolgw.Tool{
		Tool: tools.Tool{
			Name:  AgentsCall,
			Title: "Call another agent",
			Description: "Sends a message to another agent instance installed in your tenant over A2A and waits for its answer. " +
				"The callee gets a token of its own for the same run, user and conversation; an agent cannot call its own " +
				fmt.Sprintf("instance, and a chain of calls stops after %d hops. ", o.MaxAgentHops) +
				`Answers {"task_id": <the callee's task, "" for a message answer>, "state": <A2A task state, e.g. TASK_STATE_COMPLETED, ` +
				`TASK_STATE_FAILED, TASK_STATE_INPUT_REQUIRED>, "text": <the answer's text>, "artifacts": [<A2A artifacts>]}.`,
			InputSchema: json.RawMessage(schema),
			OutputSchema: json.RawMessage(`{"type":"object","properties":{"task_id":{"type":"string"},"state":{"type":"string"},` +
				`"text":{"type":"string"},"artifacts":{"type":"array","items":{"type":"object"}}},` +
				`"required":["task_id","state","text","artifacts"]}`),
			// Whether the call changes anything is the callee's to
			// govern (its own writes go through the gate); so neither
			// read-only nor destructive is claimed.
			Annotations: &tools.Annotations{Idempotent: ptr(false), OpenWorld: ptr(false)},
		},
		Timeout: o.Timeout,
	}
	return newStatic(entry{tool: t, call: a.call}), nil
}

type agents struct {
	o      AgentsOptions
	caller AgentCaller
}

type agentArgs struct {
	Agent   string          `json:"agent"`
	Message string          `json:"message"`
	SkillID string          `json:"skill_id"`
	Data    json.RawMessage `json:"data"`
}

func (a *agents) call(parent context.Context, r *toolgw.Request) (*mcp.CallToolResult, error) {
	if a.caller == nil {
		return nil, toolgw.Failf(tools.ReasonServiceDisabled, "calling agents is not available on this server")
	}
	var args agentArgs
	if res := decodeArgs(r.Arguments, &args); res != nil {
		return res, nil
	}
	switch {
	case args.Agent == "" || len(args.Agent) > maxAgentIDLen:
		return invalidf("agent must be an instance id of 1-%d bytes", maxAgentIDLen), nil
	case args.Message == "":
		return invalidf("message is required"), nil
	case len(args.Message) > a.o.MaxMessageBytes:
		return invalidf("the message is larger than %d bytes", a.o.MaxMessageBytes), nil
	case len(args.SkillID) > maxAgentIDLen:
		return invalidf("skill_id is longer than %d bytes", maxAgentIDLen), nil
	case len(args.Data) > a.o.MaxMessageBytes:
		return invalidf("data is larger than %d bytes", a.o.MaxMessageBytes), nil
	}
	if len(args.Data) > 0 && string(args.Data) != "null" && args.Data[0] != '{' {
		return invalidf("data must be a JSON object"), nil
	}
	if string(args.Data) == "null" {
		args.Data = nil
	}
	if r.Caller.Instance != "" && args.Agent == r.Caller.Instance {
		return nil, toolgw.Failf(tools.ReasonPolicyDenied, "an agent cannot call its own instance")
	}
	ctx, cancel := context.WithTimeout(parent, a.o.Timeout)
	defer cancel()
	ans, err := a.caller.CallAgent(ctx, r.Caller, AgentCall{
		Agent: args.Agent, Message: args.Message, SkillID: args.SkillID, Data: args.Data,
		CallID: r.CallID, MaxHops: a.o.MaxAgentHops,
	})
	if err != nil {
		return a.failed(parent, ctx, r, args.Agent, err)
	}
	arts := ans.Artifacts
	if arts == nil {
		arts = []a2a.Artifact{}
	}
	return toolgw.JSONResult(map[string]any{"task_id": ans.TaskID, "state": ans.State, "text": ans.Text, "artifacts": arts})
}

// failed says what became of a call that got no answer.
func (a *agents) failed(parent, ctx context.Context, r *toolgw.Request, agent string, err error) (*mcp.CallToolResult, error) {
	a.o.Logger.Info("builtin: agent call failed", "tool", AgentsCall, "tenant", r.Caller.Tenant, "agent", agent, "call_id", r.CallID, "err", err)
	var ae *a2a.Error
	switch {
	case errors.Is(err, gateway.ErrNotFound):
		return invalidf("there is no agent instance %.128q in your tenant", agent), nil
	case errors.Is(err, gateway.ErrInvalidRequest):
		return invalidf("%s", reasonOf(err, gateway.ErrInvalidRequest)), nil
	case errors.Is(err, gateway.ErrForbidden):
		return nil, toolgw.Failf(tools.ReasonPolicyDenied, "%s", reasonOf(err, gateway.ErrForbidden))
	case errors.Is(err, gateway.ErrUnauthorized):
		return nil, toolgw.Failf(tools.ReasonPolicyDenied, "%s", reasonOf(err, gateway.ErrUnauthorized))
	case parent.Err() != nil:
		return nil, fmt.Errorf("builtin: call agent: %w", parent.Err())
	case ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded):
		return nil, toolgw.Failf(tools.ReasonTimeout, "the agent gave no answer within %s", a.o.Timeout)
	case errors.Is(err, a2aclient.ErrUnreachable):
		return nil, toolgw.Failf(tools.ReasonUnavailable, "the agent could not be reached")
	case errors.As(err, &ae):
		return toolgw.ErrorResult(tools.ReasonUnavailable, "the agent refused the call: "+clip(ae.Message, 300)), nil
	}
	return nil, toolgw.Failf(tools.ReasonUnavailable, "the agent could not be called")
}

// reasonOf is err's text after the sentinel's own ("gateway: forbidden:
// an agent cannot …" gives "an agent cannot …").
func reasonOf(err, sentinel error) string {
	msg := err.Error()
	if i := strings.Index(msg, sentinel.Error()+": "); i >= 0 {
		msg = msg[i+len(sentinel.Error())+2:]
	}
	return clip(msg, 300)
}
