package tools

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/hitl"
	"novaos.dev/novaos/agent"
)

// Platform events the bindings From returns raise for every call. An
// agent that declares the tool-call-v1 extension also reports each call
// there, under the same call id, its result when it is as small as the
// arguments must be.
const (
	// EventToolCall is raised before a call: call_id, tool and, when
	// they are small enough, arguments (else arguments_bytes).
	EventToolCall = "tool.call"
	// EventToolResult is raised after it: call_id, tool, success, and
	// when it failed error; held and gateway_call_id when a person must
	// approve it first.
	EventToolResult = "tool.result"
)

// DefaultMaxEventArgumentBytes bounds the arguments a tool.call event
// carries.
const DefaultMaxEventArgumentBytes = 4 << 10

// FromOptions configure From; nil or zero fields mean the defaults.
type FromOptions struct {
	// ClientOptions configure the client; TenantID, Traceparent and
	// Header default to the execution's tenant, trace context and the
	// caller's custom headers.
	ClientOptions
	BindingsOptions
	// GatewayURL is the gateway's URL; "" takes the platform context's
	// mcp_gateway_url, else its gateway_url.
	GatewayURL string
	// MaxEventArgumentBytes bounds the encoded arguments a tool.call
	// event carries (default 4 KiB); larger ones are left out and their
	// size given instead. Negative leaves every argument out.
	MaxEventArgumentBytes int
}

// From returns the bindings of the execution c serves, so a skill calls
// tools as its agent:
//   - at o's gateway URL, else the platform context's mcp_gateway_url,
//     else its gateway_url;
//   - with the platform context's mcp_gateway_token, else the execution
//     token (c.ExecutionToken());
//   - for the execution's tenant (X-Tenant-ID), with its traceparent and
//     the caller's custom headers;
//   - a memory write or forget without an idempotency key takes
//     c.WriteKey(), so a retried execution replays its writes.
//
// Every call raises tool.call before it and tool.result after it as
// platform events (c.PlatformEvent): live on a streaming request,
// folded into the final message otherwise. A call the gateway holds for
// a person returns a *WriteConfirmationRequired, whose Result pauses the
// task. o may be nil.
func From(c *agent.Context, o *FromOptions) (*Bindings, error) {
	if o == nil {
		o = &FromOptions{}
	}
	pc := c.Platform()
	url := cmp.Or(o.GatewayURL, pc.MCPGatewayURL, pc.GatewayURL)
	if url == "" {
		return nil, errors.New("tools: no gateway URL: the platform context carries neither mcp_gateway_url nor gateway_url")
	}
	var msgMD map[string]any
	if m := c.Message(); m != nil {
		msgMD = m.Metadata
	}
	tok := agent.MCPGatewayToken(c.Request().Metadata, msgMD)
	if tok.IsZero() {
		var err error
		if tok, err = c.ExecutionToken(); err != nil {
			return nil, fmt.Errorf("tools: no token to call the gateway with: %w", err)
		}
	}
	co := o.ClientOptions
	co.TenantID = cmp.Or(co.TenantID, c.Tenant())
	co.Traceparent = cmp.Or(co.Traceparent, c.Traceparent())
	if co.Header == nil {
		co.Header = make(http.Header)
		for k, v := range c.CustomHeaders() {
			co.Header.Set(k, v)
		}
	}
	if co.Logger == nil {
		co.Logger = c.Logger()
	}
	cl, err := NewClient(url, tok, &co)
	if err != nil {
		return nil, err
	}
	maxArgs := cmp.Or(o.MaxEventArgumentBytes, DefaultMaxEventArgumentBytes)
	b, err := newBindings(cl, &o.BindingsOptions, eventObserver(c, maxArgs))
	if err != nil {
		return nil, err
	}
	b.Memory.k.exec = c
	return b, nil
}

// eventObserver raises tool.call and tool.result for every call. An
// event that cannot be sent is logged; the call goes on.
func eventObserver(c *agent.Context, maxArgs int) observer {
	return func(tool string, args json.RawMessage) func(*Response, error) {
		id := "call_" + newID()
		fields := map[string]any{"call_id": id, "tool": tool}
		switch {
		case maxArgs < 0:
		case len(args) <= maxArgs:
			fields["arguments"] = args
		default:
			fields["arguments_bytes"] = len(args)
		}
		if err := c.PlatformEvent(EventToolCall, fields); err != nil {
			c.Logger().WarnContext(c, "tools: tool.call event not sent", "tool", tool, "err", err)
		}
		// An agent that declares tool-call-v1 reports the call there too,
		// under the same id; one that does not reports nothing.
		_, end, err := c.BeginToolCall(id, tool, fields["arguments"])
		if err != nil {
			c.Logger().WarnContext(c, "tools: tool call not reported", "tool", tool, "err", err)
		}
		return func(resp *Response, err error) {
			var result any
			if resp.Success && len(resp.Data) > 0 && len(resp.Data) <= maxArgs {
				result = resp.Data
			}
			failure := err
			if failure == nil && !resp.Success {
				failure = errors.New(resp.Error)
			}
			if err := end(result, failure); err != nil {
				c.Logger().WarnContext(c, "tools: tool call end not reported", "tool", tool, "err", err)
			}
			fields := map[string]any{"call_id": id, "tool": tool, "success": resp.Success}
			if !resp.Success {
				fields["error"] = clip(resp.Error, 1000)
			}
			var w *WriteConfirmationRequired
			if errors.As(err, &w) {
				fields["held"] = true
				if w.Data.CallID != "" {
					fields["gateway_call_id"] = w.Data.CallID
				}
			}
			if err := c.PlatformEvent(EventToolResult, fields); err != nil {
				c.Logger().WarnContext(c, "tools: tool.result event not sent", "tool", tool, "err", err)
			}
		}
	}
}

// Result returns the skill result that pauses the task until a person
// decides on the held call: AUTH_REQUIRED (an out-of-band approval, not
// a question), with content as its text ("" says which tool waits) and
// a write-confirmation part (package a2a/hitl) naming the gateway's
// call id, the tool and, as extra fields, the gate's action, the run and
// where to decide. The platform shows it as
// tool.write_confirmation_required, and resumes the run once the person
// approved: the skill calls again and the call runs once.
func (e *WriteConfirmationRequired) Result(content string) agent.Result {
	if content == "" {
		content = fmt.Sprintf("The call of %s waits for your approval.", cmp.Or(e.Data.ToolName, "a tool"))
		if u := e.ApprovalURL(); u != "" {
			content += " Decide at " + u
		}
	}
	extra := map[string]any{}
	if e.Data.ActionID != "" {
		extra["action_id"] = e.Data.ActionID
	}
	if e.Data.RunID != "" {
		extra["run_id"] = e.Data.RunID
	}
	if u := e.ApprovalURL(); u != "" {
		extra["approval_url"] = u
	}
	if len(extra) == 0 {
		extra = nil
	}
	wc := &hitl.WriteConfirmation{CallID: e.Data.CallID, ToolName: e.Data.ToolName, SessionID: e.Data.SessionID, Extra: extra}
	return agent.Result{Status: agent.StatusAuthRequired, Output: []a2a.Part{a2a.TextPart(content), hitl.Part(wc)}}
}
