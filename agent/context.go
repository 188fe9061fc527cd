package agent

import (
	"encoding/json"
	"fmt"
	"strconv"
	"sync/atomic"

	"context"
	"errors"
	"log/slog"
	"novaos.dev/novaos/a2a/hitl"
	"slices"
	"sync"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/secret"
)

// Context is everything a skill handler knows about one invocation. It is
// a context.Context (the execution's: Done closes when the task is
// cancelled, superseded or the server shuts down), so it can be passed to
// anything that takes one. It is valid only until the handler returns.
type Context struct {
	context.Context

	agent    *Agent
	req      *a2asrv.RequestContext
	skill    *Skill
	up       *Updater
	pc       PlatformContext
	token    secret.Value // the platform context's execution_token
	outModes []string

	st *state
}

// state is what every view of one execution's Context shares (see view).
type state struct {
	logOnce sync.Once
	log     *slog.Logger

	tel telemetry // extension data reported for the result (conventions.go)

	writes   atomic.Int64 // WriteKey's ordinal
	eventsMu sync.Mutex
	events   []map[string]any // platform events held for the final message
}

// view returns a Context for the same execution over the context c has
// now. A BeforeSkill hook gets a view, so the context it derives from its
// argument (context.WithValue(c, …)) does not hold the Context whose
// context it becomes: that one would ask itself for every value.
func (c *Context) view() *Context {
	v := *c
	return &v
}

// WriteKey returns the idempotency key of this execution's next platform
// write: "<IdempotencyKey>:<n>", n counting 1, 2, … per execution, so a
// retried execution that makes the same writes in the same order sends the
// same keys, which the platform deduplicates, and no two writes of one
// execution collide. "" when the platform gave no idempotency key.
func (c *Context) WriteKey() string {
	n := c.st.writes.Add(1)
	if c.pc.IdempotencyKey == "" {
		return ""
	}
	return c.pc.IdempotencyKey + ":" + strconv.FormatInt(n, 10)
}

// PlatformEvent reports a platform event (such as memory.assembled) to the
// caller: on a streaming request at once, as a WORKING status update whose
// message carries it in a platform part (tagged PlatformMediaType) under
// "events"; otherwise it is held and folded into the final message's
// platform part. fields must encode as JSON; "event" is set to name.
func (c *Context) PlatformEvent(name string, fields map[string]any) error {
	ev := make(map[string]any, len(fields)+1)
	for k, v := range fields {
		ev[k] = v
	}
	ev["event"] = name
	if _, err := json.Marshal(ev); err != nil {
		return fmt.Errorf("agent: platform event %s: %w", name, err)
	}
	if c.Streaming() && !c.up.Closed() {
		msg := a2a.NewMessage(a2a.RoleAgent, eventsPart([]map[string]any{ev}))
		msg.TaskID, msg.ContextID = c.up.TaskID(), c.up.ContextID()
		return c.up.UpdateStatus(c.Context, a2a.TaskStateWorking, msg)
	}
	c.st.eventsMu.Lock()
	c.st.events = append(c.st.events, ev)
	c.st.eventsMu.Unlock()
	return nil
}

func (c *Context) heldEvents() []map[string]any {
	c.st.eventsMu.Lock()
	defer c.st.eventsMu.Unlock()
	return c.st.events
}

// eventsPart is the platform part carrying events.
func eventsPart(events []map[string]any) a2a.Part {
	// PlatformEvent checked that every event encodes.
	p, _ := hitl.TaggedDataPart(map[string]any{"events": events}, PlatformMediaType)
	return p
}

// Input returns the text of the caller's message (text parts joined by
// newlines).
func (c *Context) Input() string { return c.req.Message.Text() }

// Message returns the caller's message. Treat it as read-only.
func (c *Context) Message() *a2a.Message { return c.req.Message }

// Request returns the server's view of the call: the stored task being
// continued, referenced tasks, request metadata, configuration, scope.
// Treat it as read-only.
func (c *Context) Request() *a2asrv.RequestContext { return c.req }

// ReferencedTasks returns the tasks the message's referenceTaskIds name
// that the server resolved in the caller's scope and context; read-only.
func (c *Context) ReferencedTasks() []*a2a.Task { return slices.Clone(c.req.ReferencedTasks) }

// UnresolvedReferences returns the referenceTaskIds that did not resolve:
// unknown, not the caller's, or from another context.
func (c *Context) UnresolvedReferences() []string { return slices.Clone(c.req.UnresolvedReferences) }

// Skill returns the id of the skill being run.
func (c *Context) Skill() string { return c.skill.ID }

// Streaming reports whether the caller asked for a stream
// (SendStreamingMessage), for skills that chunk their output only then.
func (c *Context) Streaming() bool { return c.req.Streaming }

// TaskID returns the A2A task id. It correlates with RunID but is not the
// same identifier.
func (c *Context) TaskID() string { return c.req.TaskID }

// ContextID returns the A2A context id grouping related tasks.
func (c *Context) ContextID() string { return c.req.ContextID }

// RunID returns the platform's run id, "" when no platform context came.
// It is stable across retries and reused by a human-in-the-loop
// continuation, so do not deduplicate on it; use IdempotencyKey.
func (c *Context) RunID() string { return c.pc.RunID }

// IdempotencyKey returns the platform's dedup key for this execution, ""
// when none was sent. Execution is at-least-once: a skill with side effects
// should record the key with the effect and skip a key it has handled.
func (c *Context) IdempotencyKey() string { return c.pc.IdempotencyKey }

// Tenant returns the tenant the request acts for: the server-verified
// scope's tenant when there is one, else the platform context's.
func (c *Context) Tenant() string {
	if c.req.Scope.Tenant != "" {
		return c.req.Scope.Tenant
	}
	return c.pc.TenantID
}

// User returns the caller: the server-verified scope's owner when there is
// one, else the platform context's user id.
func (c *Context) User() string {
	if c.req.Scope.Owner != "" {
		return c.req.Scope.Owner
	}
	return c.pc.UserID
}

// History returns the conversation's earlier turns, oldest first, as the
// platform sent them; the current turn is Input. Empty does not mean first
// turn: only runs that belong to a conversation thread carry history.
func (c *Context) History() []ConversationTurn { return slices.Clone(c.pc.History) }

// Execution returns the execution context the skill calls platform
// services with, as itself (the NovaOS Python SDK's ExecutionContext):
//
//	e := c.Execution()
//	e.Authorize(req.Header) // Authorization: Bearer <execution token>
//
// It comes from, in order:
//
//  1. a token verified in front of the agent: by identity.Middleware
//     around the agent's handler, or by the server's a2asrv
//     Options.Identify, which leaves an identity.Verified as the call's
//     Identity (the platform does so for the agents it hosts): the token
//     and its claims, Verified true;
//  2. the platform context (the "execution_token", tenant_id, user_id,
//     run_id, agent_id, instance_id and conversation_id of
//     ContextMetadataKey);
//  3. the platform auth proxy's headers (X-NovaOS-Execution-Token,
//     X-NovaOS-Tenant-Id, …), for each field the platform context left
//     empty.
//  4. for the token alone, when none came: Options.ExecutionToken.
//
// In cases 2 to 4 the ids are what the request said (Verified false);
// the service the token is sent to verifies it. The token is a
// secret.Value; the maps AuthHeaders and ContextHeaders return hold it in
// the clear and must not be logged. A service client reaches a skill as
// a helper over this (memory.From(c)), not as a method of Context.
func (c *Context) Execution() identity.Execution {
	if e, ok := identity.ExecutionFromContext(c.Context); ok {
		return e
	}
	if v, ok := c.req.Identity.(identity.Verified); ok && v.Claims != nil {
		return v.Execution()
	}
	e := identity.ExecutionFromHeaders(c.req.Header)
	if !c.token.IsZero() {
		e.Token = c.token
	}
	if c.agent != nil {
		e = e.WithFallbackToken(c.agent.opts.ExecutionToken)
	}
	for _, f := range []struct {
		dst *string
		v   string
	}{
		{&e.TenantID, c.pc.TenantID}, {&e.UserID, c.pc.UserID}, {&e.RunID, c.pc.RunID},
		{&e.AgentID, c.pc.AgentID}, {&e.InstanceID, c.pc.InstanceID},
		{&e.ConversationID, c.pc.ConversationID},
	} {
		if f.v != "" {
			*f.dst = f.v
		}
	}
	return e
}

// ExecutionToken returns the execution token the skill calls platform
// services with (Execution().RequireToken()), or identity.ErrNoToken when
// the request carried none.
func (c *Context) ExecutionToken() (secret.Value, error) { return c.Execution().RequireToken() }

// GatewayURL returns the platform's base URL from the platform context,
// where the agent calls its services; "" when none came.
func (c *Context) GatewayURL() string { return c.pc.GatewayURL }

// MemoryBudget returns the platform context's memory pre-fetch budget
// (Platform().MemoryBudget) as plain values, so a package need not import
// this one to read it; ok is false when the request carried none.
func (c *Context) MemoryBudget() (tokens, latencyMS int, ok bool) {
	if b := c.pc.MemoryBudget; b != nil {
		return b.TokenBudget, b.LatencyBudgetMS, true
	}
	return 0, 0, false
}

// Platform returns the whole platform context (zero when none came).
func (c *Context) Platform() PlatformContext { return c.pc }

// Traceparent returns the inbound W3C traceparent header, falling back to
// the platform context's; "" when neither is valid.
func (c *Context) Traceparent() string {
	if tp := c.header("traceparent"); tp != "" {
		if _, ok := parseTraceparent(tp); ok {
			return tp
		}
	}
	if _, ok := parseTraceparent(c.pc.Traceparent); ok {
		return c.pc.Traceparent
	}
	return ""
}

// TraceID returns the 32-hex-digit W3C trace id of Traceparent, falling
// back to the platform context's trace_id; "" when none is known.
func (c *Context) TraceID() string {
	if id, ok := parseTraceparent(c.Traceparent()); ok {
		return id
	}
	if len(c.pc.TraceID) == 32 && isLowerHex(c.pc.TraceID) && !allZero(c.pc.TraceID) {
		return c.pc.TraceID
	}
	return ""
}

func (c *Context) header(name string) string {
	if c.req.Header == nil {
		return ""
	}
	return c.req.Header.Get(name)
}

// CustomHeaders returns a copy of the caller's custom headers, names
// lower-cased: every request header except those IsSafeCustomHeader
// refuses (credentials, X-NovaOS-*, A2A-*, trace context, hop-by-hop).
// Values may carry credentials of the caller's own: do not log them.
func (c *Context) CustomHeaders() map[string]string { return customHeaders(c.req.Header) }

// Extensions returns the A2A extensions in force for this request and the
// data published for them.
func (c *Context) Extensions() Extensions {
	var md1 map[string]any
	if c.req.Message != nil {
		md1 = c.req.Message.Metadata
	}
	var requested []string
	if c.req.Header != nil {
		requested = a2a.ParseExtensions(c.req.Header.Values(a2a.HeaderExtensions))
	}
	return Extensions{active: c.req.Extensions, requested: requested, metadata: [2]map[string]any{c.req.Metadata, md1}}
}

// OutputModes returns the media types the skill may answer in: its own
// output modes that the caller accepts, in the skill's order.
func (c *Context) OutputModes() []string { return slices.Clone(c.outModes) }

// Updater returns the task updater, for progress, artifacts and pauses
// before the handler returns.
func (c *Context) Updater() *Updater { return c.up }

// IsCancelled reports whether CancelTask asked this execution to stop. A
// skill blocked in I/O sees Done close; one in a tight loop polls this.
func (c *Context) IsCancelled() bool {
	return errors.Is(context.Cause(c.Context), a2asrv.ErrCanceled)
}

// Logger returns the agent's logger bound to this execution's run_id,
// agent_id (the platform's, else the agent's name), tenant_id, task_id
// and skill; an empty id is left out. It masks PII like every agent log.
// With NewLogHandler each record is one NDJSON line the platform's log
// pipeline reads.
func (c *Context) Logger() *slog.Logger {
	c.st.logOnce.Do(func() {
		agentID := c.pc.AgentID
		if agentID == "" {
			agentID = c.agent.name
		}
		var attrs []any
		for _, kv := range [...][2]string{
			{"run_id", c.pc.RunID}, {"agent_id", agentID}, {"tenant_id", c.Tenant()},
			{"task_id", c.req.TaskID}, {"skill", c.skill.ID},
		} {
			if kv[1] != "" {
				attrs = append(attrs, slog.String(kv[0], kv[1]))
			}
		}
		c.st.log = c.agent.log.With(attrs...)
	})
	return c.st.log
}
