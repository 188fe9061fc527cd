package agent

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/hitl"
	"novaos.dev/novaos/ext/confidence"
	"novaos.dev/novaos/ext/cost"
	"novaos.dev/novaos/ext/extmeta"
	"novaos.dev/novaos/ext/toolcall"
	"novaos.dev/novaos/ext/worldstate"
)

// ErrNotDeclared is returned by the Report methods and StartToolCall when
// the agent does not declare the extension (Options.Extensions): a card
// must declare every extension whose data the agent emits, so nothing is
// emitted.
var ErrNotDeclared = errors.New("agent: extension not declared by this agent")

// telemetry is what a skill reported for the result artifact.
type telemetry struct {
	mu         sync.Mutex
	cost       *cost.Payload
	confidence *confidence.Payload
	deltas     []worldstate.Delta
}

// emits reports whether this request's data for the extension uri is
// emitted: the agent must declare it and, with
// Options.RequireExtensionActivation, the caller must have activated it.
func (c *Context) emits(uri string) (bool, error) {
	if !slices.ContainsFunc(c.agent.opts.Extensions, func(e a2a.AgentExtension) bool { return e.URI == uri }) {
		return false, fmt.Errorf("%w: %s", ErrNotDeclared, uri)
	}
	if c.agent.opts.RequireExtensionActivation && !slices.Contains(c.req.Extensions, uri) {
		return false, nil
	}
	return true, nil
}

// ReportCost records the run's cost (cost-v1). The agent writes it into
// the metadata of the result artifact when the handler returns; a later
// report replaces an earlier one. It fails with an error matching
// extmeta.ErrInvalid for a payload out of range, and with ErrNotDeclared
// when the agent does not declare cost-v1. With
// Options.RequireExtensionActivation, a request that did not activate the
// extension records nothing and gets nil.
func (c *Context) ReportCost(p cost.Payload) error {
	if err := p.Validate(); err != nil {
		return err
	}
	ok, err := c.emits(cost.URI)
	if !ok {
		return err
	}
	c.st.tel.mu.Lock()
	defer c.st.tel.mu.Unlock()
	c.st.tel.cost = &p
	return nil
}

// ReportConfidence records the agent's confidence in its answer
// (confidence-v1), written like ReportCost; a later report replaces an
// earlier one.
func (c *Context) ReportConfidence(p confidence.Payload) error {
	if err := p.Validate(); err != nil {
		return err
	}
	ok, err := c.emits(confidence.URI)
	if !ok {
		return err
	}
	c.st.tel.mu.Lock()
	defer c.st.tel.mu.Unlock()
	c.st.tel.confidence = &p
	return nil
}

// ReportWorldstate records changes the run made to shared state
// (worldstate-delta-v1), written like ReportCost. Deltas accumulate across
// calls, in order.
func (c *Context) ReportWorldstate(deltas ...worldstate.Delta) error {
	if err := (worldstate.Payload{Deltas: deltas}).Validate(); err != nil {
		return err
	}
	ok, err := c.emits(worldstate.URI)
	if !ok {
		return err
	}
	c.st.tel.mu.Lock()
	defer c.st.tel.mu.Unlock()
	c.st.tel.deltas = append(c.st.tel.deltas, deltas...)
	return nil
}

// ExtensionMetadata returns the metadata fragments of what the skill
// reported so far (cost-v1, confidence-v1, worldstate-delta-v1), merged;
// nil when nothing was. The agent attaches them to the result artifact
// itself; a skill that ends the task through the Updater, so that the
// agent writes no result, puts them on its own last artifact.
func (c *Context) ExtensionMetadata() map[string]any {
	c.st.tel.mu.Lock()
	defer c.st.tel.mu.Unlock()
	var frags [3]map[string]any
	if c.st.tel.cost != nil {
		frags[0] = cost.Metadata(*c.st.tel.cost)
	}
	if c.st.tel.confidence != nil {
		frags[1] = confidence.Metadata(*c.st.tel.confidence)
	}
	if c.st.tel.deltas != nil {
		frags[2] = worldstate.Metadata(worldstate.Payload{Deltas: c.st.tel.deltas})
	}
	return extmeta.Merge(frags[:]...)
}

// withTelemetry puts the reported extension data on the result artifact.
// A result with no content of its own gets an artifact anyway, holding the
// final message's parts (the error, for a failure) or, when there are none,
// an empty platform-tagged data part: the data must ride on an artifact.
func (c *Context) withTelemetry(art *a2a.Artifact, msg *a2a.Message) *a2a.Artifact {
	md := c.ExtensionMetadata()
	if md == nil {
		return art
	}
	if art == nil {
		var parts []a2a.Part
		if msg != nil {
			parts = slices.Clone(msg.Parts)
		}
		if len(parts) == 0 {
			parts = []a2a.Part{hitl.Tag(a2a.Part{Kind: a2a.PartData, Data: []byte("{}")}, PlatformMediaType)}
		}
		art = &a2a.Artifact{ArtifactID: a2a.NewID(), Name: "result", Parts: parts}
	}
	art.Metadata = extmeta.Merge(art.Metadata, md)
	return art
}

// ReportToolCall emits one tool-call-v1 event as it happens: a WORKING
// status update whose message carries the payload in its metadata (and a
// one-line text part, since a message needs content). A streaming caller
// sees it live; every caller finds it in the task history. Most skills use
// StartToolCall instead. The event writes the task, so a MayReply skill can
// no longer Reply afterwards.
func (c *Context) ReportToolCall(p toolcall.Payload) error {
	if err := p.Validate(); err != nil {
		return err
	}
	ok, err := c.emits(toolcall.URI)
	if !ok {
		return err
	}
	text := "tool " + p.Name + " " + string(p.Phase)
	if p.Error != "" {
		text += ": " + p.Error
	}
	msg := c.up.NewMessage(a2a.TextPart(text))
	msg.Metadata = toolcall.Metadata(p)
	return c.up.StartWork(c, msg)
}

// ToolCall is one tool call in progress, reported as tool-call-v1 events.
type ToolCall struct {
	c    *Context
	id   string
	name string
	off  bool // nothing is emitted for this call

	mu   sync.Mutex
	done bool
}

// StartToolCall reports that the skill is calling the tool name with args
// (any JSON value, nil for none) and returns the call, to be ended with
// Complete or Fail. id identifies the call across its events; "" generates
// one. When the agent does not declare tool-call-v1 the error matches
// ErrNotDeclared; the returned call is usable either way and then emits
// nothing, so a skill may ignore the error.
func (c *Context) StartToolCall(id, name string, args any) (*ToolCall, error) {
	if id == "" {
		id = a2a.NewID()
	}
	tc := &ToolCall{c: c, id: id, name: name}
	err := c.ReportToolCall(toolcall.Payload{ToolCallID: id, Name: name, Phase: toolcall.PhaseStarted, Args: args})
	if errors.Is(err, ErrNotDeclared) {
		tc.off = true
	}
	return tc, err
}

// BeginToolCall is StartToolCall with plain types, for packages that
// report a skill's tool calls without importing this one (gate.AgentRead
// and its kin): it returns the call's id and end, which completes the call
// with result when err is nil and fails it with err otherwise. An agent
// that does not declare tool-call-v1 reports nothing and that is no error;
// any other failure to report is returned, and the call is usable either
// way.
func (c *Context) BeginToolCall(id, name string, args any) (callID string, end func(result any, err error) error, err error) {
	tc, err := c.StartToolCall(id, name, args)
	if errors.Is(err, ErrNotDeclared) {
		err = nil
	}
	return tc.id, func(result any, err error) error {
		if err != nil {
			return tc.Fail(err)
		}
		return tc.Complete(result)
	}, err
}

// ID returns the call's toolCallId.
func (tc *ToolCall) ID() string { return tc.id }

// Complete reports that the call returned result (any JSON value, nil for
// none).
func (tc *ToolCall) Complete(result any) error {
	return tc.end(toolcall.Payload{Phase: toolcall.PhaseCompleted, Result: result})
}

// Fail reports that the call failed with err.
func (tc *ToolCall) Fail(err error) error {
	msg := "the tool failed without saying why"
	if err != nil {
		msg = describe(err, false)
	}
	return tc.end(toolcall.Payload{Phase: toolcall.PhaseFailed, Error: msg})
}

// ErrToolCallEnded is returned by Complete or Fail on a call already ended.
var ErrToolCallEnded = errors.New("agent: tool call already ended")

func (tc *ToolCall) end(p toolcall.Payload) error {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	if tc.done {
		return ErrToolCallEnded
	}
	tc.done = true
	if tc.off {
		return nil
	}
	p.ToolCallID, p.Name = tc.id, tc.name
	return tc.c.ReportToolCall(p)
}
