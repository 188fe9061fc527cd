package agent

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"

	"go.opentelemetry.io/otel/trace"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/memory"
	"novaos.dev/novaos/secret"
)

// PanicError is the error a panicking skill handler is turned into.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v", e.Value) }

// Execute runs the skill a message names. It implements a2asrv.Executor:
//
//   - The skill is the one named by message (or request) metadata
//     "skillId", the one that ran a continued task, or the agent's sole
//     skill. A message naming no known skill gets a REJECTED task saying
//     why; it never runs a guess.
//   - A message part of a media type the skill does not accept, or
//     acceptedOutputModes sharing nothing with the skill's output modes,
//     is answered ContentTypeNotSupported before anything is written.
//   - The task is marked WORKING (unless the skill MayReply), the handler
//     runs, and its Result is written: artifact, then final status. A
//     handler that returns an error or panics fails the task with a
//     described error; the process never crashes.
//   - A handler that closed the task itself through the Updater wins over
//     its Result; so does a pause (RequiresInput/RequiresAuth) followed by
//     an empty Result.
//   - A handler ending in its own cancellation (an error matching
//     context.Canceled) writes nothing more and the error is returned as
//     is; so is the execution context's error when the server cancelled
//     it, since the server then owns the outcome.
func (a *Agent) Execute(ctx context.Context, req *a2asrv.RequestContext, u a2asrv.Updater) error {
	up := newUpdater(u, a.opts.MaskOutputPII)
	skill, why := a.resolve(req)
	if skill == nil {
		a.log.WarnContext(ctx, "agent: request rejected", "agent", a.name, "task_id", req.TaskID, "reason", why)
		return up.Reject(ctx, up.NewMessage(a2a.TextPart(why)))
	}
	if e := checkInput(req.Message, skill.ID, a.inputModes(skill)); e != nil {
		return e
	}
	produced := a.outputModes(skill)
	var accepted []string
	if req.Configuration != nil {
		accepted = req.Configuration.AcceptedOutputModes
	}
	outModes := acceptedModes(accepted, produced)
	if len(outModes) == 0 {
		e := a2a.NewError(a2a.CodeContentTypeNotSupported,
			"skill %q produces %s; none is among the accepted output modes %s",
			skill.ID, strings.Join(produced, ", "), truncate(strings.Join(accepted, ", "), 200))
		e.Metadata = map[string]string{"skillId": skill.ID}
		return e
	}

	pc, raw, _ := findPlatformContext([]map[string]any{req.Metadata, messageMetadata(req.Message)})
	c := &Context{Context: ctx, agent: a, req: req, skill: skill, up: up, pc: pc, outModes: outModes,
		token: secret.New(str(raw, "execution_token", "executionToken")), st: &state{}}
	var span trace.Span
	c.Context, span = a.startSkill(c)
	defer span.End()
	if !skill.MayReply {
		if err := up.StartWork(c.Context, nil); err != nil {
			failSkill(span, err)
			return err
		}
	}
	for _, hook := range a.opts.BeforeSkill {
		if hctx := hook(c.view()); hctx != nil {
			c.Context = hctx
		}
	}
	// The budget is checked here as well as in the hook so that a request
	// without one (most) does not pay for the hook's view of c.
	if a.prefetch != nil && c.pc.MemoryBudget != nil && memory.Prefetched(c) == nil {
		if hctx := a.prefetch(c.view()); hctx != nil {
			c.Context = hctx
		}
	}
	res, err := a.call(c)
	endSkill(span, res, err)
	// Ended before the final status goes out, so a caller holding the
	// answer finds the span exported (or at least handed to its processor).
	span.End()
	return a.finish(c, res, err)
}

func messageMetadata(m *a2a.Message) map[string]any {
	if m == nil {
		return nil
	}
	return m.Metadata
}

// resolve picks the skill for req, or explains why none applies.
func (a *Agent) resolve(req *a2asrv.RequestContext) (*Skill, string) {
	id, named, bad := requestedSkill(req)
	a.mu.RLock()
	defer a.mu.RUnlock()
	if bad != "" {
		return nil, bad
	}
	if named {
		if s, ok := a.byID[id]; ok {
			return s, ""
		}
		return nil, fmt.Sprintf("unknown skill %q; this agent's skills are: %s", truncate(id, 100), a.skillList())
	}
	switch len(a.skills) {
	case 0:
		return nil, "this agent has no skills"
	case 1:
		return a.skills[0], ""
	}
	return nil, fmt.Sprintf("this agent has several skills (%s); name one in message metadata %q", a.skillList(), SkillIDMetadataKey)
}

func (a *Agent) skillList() string {
	ids := make([]string, len(a.skills))
	for i, s := range a.skills {
		ids[i] = s.ID
	}
	return strings.Join(ids, ", ")
}

// requestedSkill finds the skill id a request names: message metadata,
// then request metadata, then the first message of a continued task that
// named one (so a caller answering INPUT_REQUIRED need not repeat it).
func requestedSkill(req *a2asrv.RequestContext) (id string, named bool, bad string) {
	mds := []map[string]any{messageMetadata(req.Message), req.Metadata}
	if req.Task != nil {
		for i := range req.Task.History {
			if req.Task.History[i].Role == a2a.RoleUser {
				mds = append(mds, req.Task.History[i].Metadata)
			}
		}
	}
	for _, md := range mds {
		v, ok := md[SkillIDMetadataKey]
		if !ok || v == nil {
			continue
		}
		s, ok := v.(string)
		if !ok {
			return "", false, fmt.Sprintf("metadata %q must be a string, got %T", SkillIDMetadataKey, v)
		}
		return s, true, ""
	}
	return "", false, ""
}

// call runs the handler, turning a panic into a *PanicError.
func (a *Agent) call(c *Context) (res Result, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Value: r, Stack: debug.Stack()}
		}
	}()
	return c.skill.Handler(c)
}

// finish writes the outcome of a handler call.
func (a *Agent) finish(c *Context, res Result, herr error) error {
	ctx := c.Context
	if herr != nil && errors.Is(herr, context.Canceled) {
		// The skill gave up (or was stopped): the task keeps its last state.
		return herr
	}
	if ctx.Err() != nil {
		// CancelTask, a newer message or shutdown interrupted the
		// execution; whoever did owns the outcome.
		if herr != nil {
			return herr
		}
		return ctx.Err()
	}
	if herr != nil {
		var p *PanicError
		if errors.As(herr, &p) {
			c.Logger().ErrorContext(ctx, "agent: skill panicked", "panic", fmt.Sprint(p.Value), "stack", string(p.Stack))
		} else {
			c.Logger().ErrorContext(ctx, "agent: skill failed", "err", herr)
		}
		res = Result{Status: StatusFailed, Error: describe(herr, c.agent.opts.TypedFailures)}
	}
	up := c.up
	if up.Closed() {
		if !res.isZero() {
			c.Logger().DebugContext(ctx, "agent: skill closed the task itself; its result is not written", "state", up.State().String())
		}
		return nil
	}
	if res.isZero() && up.State().Interrupted() {
		return nil
	}
	state, ok := StatusState(res.Status)
	if !ok {
		c.Logger().ErrorContext(ctx, "agent: skill returned an unknown status", "status", res.Status)
		res = Result{Status: StatusFailed, Error: fmt.Sprintf("skill %q returned unknown status %q; want one of %s, %s, %s, %s, %s",
			c.skill.ID, truncate(res.Status, 100), StatusCompleted, StatusFailed, StatusWaitingUser, StatusRejected, StatusAuthRequired)}
		state = a2a.TaskStateFailed
	}
	msg, art, err := resultContent(res, state)
	if err != nil {
		c.Logger().ErrorContext(ctx, "agent: skill result does not encode", "err", err)
		msg, art, _ = resultContent(Result{Error: err.Error()}, a2a.TaskStateFailed)
		state = a2a.TaskStateFailed
	}
	art = c.withTelemetry(art, msg)
	if events := c.heldEvents(); len(events) > 0 {
		// A non-streaming caller gets the platform events the execution
		// raised in the final message's platform part.
		if msg == nil {
			msg = a2a.NewMessage(a2a.RoleAgent)
		}
		msg.Parts = append(msg.Parts, eventsPart(events))
	}
	if art != nil {
		if err := up.AddArtifact(ctx, *art); err != nil {
			return err
		}
	}
	if msg != nil {
		msg.TaskID, msg.ContextID = up.TaskID(), up.ContextID()
	}
	return up.UpdateStatus(ctx, state, msg)
}

// resultContent builds the final status message and result artifact: the
// output parts and the tagged metadata part go into both, so a caller that
// reads either finds the result, unless the result has a Message of its own
// to say instead; the error goes into the message.
func resultContent(res Result, state a2a.TaskState) (*a2a.Message, *a2a.Artifact, error) {
	parts, err := outputParts(res.Output)
	if err != nil {
		return nil, nil, err
	}
	if res.Metadata != nil {
		p, err := metadataPart(res.Metadata)
		if err != nil {
			return nil, nil, err
		}
		parts = append(parts, p)
	}
	var art *a2a.Artifact
	if len(parts) > 0 {
		art = &a2a.Artifact{ArtifactID: a2a.NewID(), Name: "result", Parts: parts}
	}
	errText := res.Error
	if errText == "" && len(parts) == 0 {
		switch state {
		case a2a.TaskStateFailed:
			errText = "the skill failed without saying why"
		case a2a.TaskStateRejected:
			errText = "the skill rejected the request without saying why"
		}
	}
	msgParts := append([]a2a.Part(nil), parts...)
	if res.Message != "" {
		msgParts = []a2a.Part{a2a.TextPart(res.Message)}
	}
	if errText != "" {
		msgParts = append(msgParts, errorParts(errText)...)
	}
	if len(msgParts) == 0 {
		return nil, art, nil
	}
	return a2a.NewMessage(a2a.RoleAgent, msgParts...), art, nil
}

// describe words a skill failure for the caller: the error's text, or its
// type when the text is empty; typed, "<type>: <text>". A panic is
// "panic: <value>" either way: "panic" is its kind.
func describe(err error, typed bool) string {
	s := err.Error()
	if typed {
		if _, ok := errors.AsType[*PanicError](err); ok {
			return s
		}
		if s == "" {
			return errorType(err)
		}
		return errorType(err) + ": " + s
	}
	if s != "" {
		return s
	}
	return fmt.Sprintf("%T", err)
}

// errorType names err's type: the first error in its chain that is not
// a fmt.Errorf wrapper, which only adds text.
func errorType(err error) string {
	for {
		name := fmt.Sprintf("%T", err)
		if name != "*fmt.wrapError" && name != "*fmt.wrapErrors" {
			return name
		}
		var next error
		switch w := err.(type) {
		case interface{ Unwrap() error }:
			next = w.Unwrap()
		case interface{ Unwrap() []error }:
			if errs := w.Unwrap(); len(errs) > 0 {
				next = errs[0]
			}
		}
		if next == nil {
			return name
		}
		err = next
	}
}
