package tools

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/secret"
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

// contextMetadataKey is where the platform puts its execution context
// in request (or message) metadata: agent.ContextMetadataKey.
const contextMetadataKey = "novaos.dev/context"

// Execution is what From uses of the execution a skill serves.
// *agent.Context satisfies it; tools declares it rather than importing
// the agent SDK, so the stores built on this package's contracts do not
// link it.
type Execution interface {
	context.Context
	// ExecutionToken returns the execution token, or an error when the
	// execution carries none.
	ExecutionToken() (secret.Value, error)
	// GatewayURL is the platform's base URL, "" when unknown.
	GatewayURL() string
	// Request is the server's view of the call; From reads the platform
	// context (mcp_gateway_url, mcp_gateway_token) from its metadata
	// and its message's.
	Request() *a2asrv.RequestContext
	Tenant() string
	Traceparent() string
	// CustomHeaders are the caller's headers a skill may forward.
	CustomHeaders() map[string]string
	Logger() *slog.Logger
	// PlatformEvent reports an event to the caller: live on a streaming
	// request, folded into the final message otherwise.
	PlatformEvent(name string, fields map[string]any) error
	// BeginToolCall reports a tool call as started (tool-call-v1) and
	// returns its end; an agent that does not declare the extension
	// reports nothing and returns no error.
	BeginToolCall(id, name string, args any) (callID string, end func(result any, err error) error, err error)
	// WriteKey returns the idempotency key of the execution's next write.
	WriteKey() string
	ContextID() string
	RunID() string
	TraceID() string
}

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

// From returns the bindings of the execution c serves (a skill passes
// its *agent.Context), so a skill calls tools as its agent:
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
// folded into the final message otherwise; except in a platform run (the
// platform context names a run and mcp_gateway_url), where the gateway
// shows each call in the run under the id the binding sends it
// (CallIDMetaKey), so it is not shown twice. A call the gateway holds for
// a person returns a *WriteConfirmationRequired, whose Pause is what the
// skill returns to pause its task. o may be nil.
func From(c Execution, o *FromOptions) (*Bindings, error) {
	if o == nil {
		o = &FromOptions{}
	}
	var md []map[string]any
	if r := c.Request(); r != nil {
		md = append(md, r.Metadata)
		if r.Message != nil {
			md = append(md, r.Message.Metadata)
		}
	}
	pc := platformContext(md)
	url := cmp.Or(o.GatewayURL, str(pc, "mcp_gateway_url", "mcpGatewayUrl"), c.GatewayURL())
	if url == "" {
		return nil, errors.New("tools: no gateway URL: the platform context carries neither mcp_gateway_url nor gateway_url")
	}
	// Read into a secret at once, as the agent SDK reads execution_token.
	tok := secret.New(str(pc, "mcp_gateway_token", "mcpGatewayToken"))
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
	// In a platform run the gateway shows every call in the run itself,
	// under the id the observer sends it; the agent reporting them too
	// would show each twice.
	inRun := str(pc, "run_id", "runId") != "" && str(pc, "mcp_gateway_url", "mcpGatewayUrl") != ""
	b, err := newBindings(cl, &o.BindingsOptions, eventObserver(c, maxArgs, !inRun))
	if err != nil {
		return nil, err
	}
	b.Memory.k.exec = c
	return b, nil
}

// platformContext returns the platform context object of the first
// metadata map that carries one, as the agent SDK finds it (pass
// request metadata first): a JSON object, its encoding as a string, or
// any value that encodes as one (the agent SDK's PlatformContext).
func platformContext(metadata []map[string]any) map[string]any {
	for _, md := range metadata {
		v, ok := md[contextMetadataKey]
		if !ok || v == nil {
			continue
		}
		var raw []byte
		switch x := v.(type) {
		case map[string]any:
			return x
		case string:
			raw = []byte(x)
		case json.RawMessage:
			raw = x
		default:
			b, err := json.Marshal(x)
			if err != nil {
				continue
			}
			raw = b
		}
		var m map[string]any
		if json.Unmarshal(raw, &m) == nil && m != nil {
			return m
		}
	}
	return nil
}

func str(m map[string]any, keys ...string) string {
	for _, k := range keys {
		if s, ok := m[k].(string); ok {
			return s
		}
	}
	return ""
}

// eventObserver raises tool.call and tool.result for every call, and
// reports it as tool-call-v1 when the agent declares that. An event that
// cannot be sent is logged; the call goes on.
func eventObserver(c Execution, maxArgs int, events bool) observer {
	return func(tool string, args json.RawMessage) (string, func(*Response, error)) {
		id := "call_" + newID()
		fields := map[string]any{"call_id": id, "tool": tool}
		var reported any
		switch {
		case maxArgs < 0:
		case len(args) <= maxArgs:
			fields["arguments"], reported = args, args
		default:
			fields["arguments_bytes"] = len(args)
		}
		if events {
			if err := c.PlatformEvent(EventToolCall, fields); err != nil {
				c.Logger().WarnContext(c, "tools: tool.call event not sent", "tool", tool, "err", err)
			}
		}
		_, end, err := c.BeginToolCall(id, tool, reported)
		if err != nil {
			c.Logger().WarnContext(c, "tools: tool call not reported", "tool", tool, "err", err)
		}
		return id, func(resp *Response, err error) {
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
			if !events {
				return
			}
			if err := c.PlatformEvent(EventToolResult, fields); err != nil {
				c.Logger().WarnContext(c, "tools: tool.result event not sent", "tool", tool, "err", err)
			}
		}
	}
}

// The pause a held call asks for, in the NovaOS conventions the agent
// SDK and the platform read (package a2a/hitl): a data part tagged with
// the platform's control-data media type, holding the write confirmation
// under its key. A test holds these to that package.
const (
	pauseStatus        = "AUTH_REQUIRED" // agent.StatusAuthRequired
	controlMediaType   = "application/vnd.novaos.metadata+json"
	controlMarkerKey   = "mediaType"
	writeConfirmKey    = "write_confirmation"
	defaultPauseFormat = "The call of %s waits for your approval."
)

// Pause returns what a skill returns to pause its task until a person
// decides on the held call, as agent.Result's Status and Output:
//
//	if held, ok := errors.AsType[*tools.WriteConfirmationRequired](err); ok {
//		status, output := held.Pause("")
//		return agent.Result{Status: status, Output: output}, nil
//	}
//
// The status is AUTH_REQUIRED (an approval out of band, not a question);
// the output is content as text ("" says which tool waits and where to
// decide) and the write confirmation: the gateway's call id, the tool
// and, as extra fields, the gate's action, the run and the approval
// page. The platform shows it as tool.write_confirmation_required and
// resumes the run once the person approved: the skill calls again, and
// the call runs once.
func (e *WriteConfirmationRequired) Pause(content string) (status string, output []a2a.Part) {
	if content == "" {
		content = fmt.Sprintf(defaultPauseFormat, cmp.Or(e.Data.ToolName, "a tool"))
		if u := e.ApprovalURL(); u != "" {
			content += " Decide at " + u
		}
	}
	wc := map[string]any{"call_id": e.Data.CallID, "tool_name": e.Data.ToolName}
	for k, v := range map[string]string{"session_id": e.Data.SessionID, "action_id": e.Data.ActionID,
		"run_id": e.Data.RunID, "approval_url": e.ApprovalURL()} {
		if v != "" {
			wc[k] = v
		}
	}
	data, _ := json.Marshal(map[string]any{writeConfirmKey: wc}) // strings only: always encodes
	part := a2a.Part{Kind: a2a.PartData, Data: data, Metadata: map[string]any{controlMarkerKey: controlMediaType}}
	return pauseStatus, []a2a.Part{a2a.TextPart(content), part}
}
