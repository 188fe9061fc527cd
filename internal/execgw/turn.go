package execgw

import (
	"encoding/json"
	"strconv"
	"strings"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/hitl"
	"novaos.dev/novaos/gateway"
)

// turn reads one delivery's A2A stream and says what it means for the
// run: the events to record as frames arrive, and how the turn ended.
// It never rewrites what it recorded: a chunk becomes a message.delta of
// its own text, and artifacts are recorded once, when the turn ends.
type turn struct {
	taskID, contextID string
	artifacts         []gateway.Artifact
	byID              map[string]int
	output            strings.Builder
	frames            int // frames received
	// known are the artifacts earlier turns recorded: a task snapshot
	// that continues a task holds them again, and they are not new.
	known map[string]bool
	// size is the bytes of answer and artifacts kept so far, bounded by
	// max: a turn past it ends FAILED.
	size, max int
	// end is set by a frame that ends the turn: a terminal state, or a
	// pause (WaitingUser, with pause set).
	end *turnEnd
}

type turnEnd struct {
	status gateway.Status
	reason string
	pause  *pausePayload
}

// newTurn follows a turn whose answer may be max bytes; known are the
// artifacts earlier turns recorded.
func newTurn(max int, known []gateway.Artifact) *turn {
	t := &turn{byID: map[string]int{}, max: max, known: map[string]bool{}}
	for _, a := range known {
		t.known[a.ArtifactID] = true
	}
	return t
}

// grow counts n more bytes of answer, ending the turn when they pass the
// limit: the gateway keeps a turn's answer whole, so it must bound it.
func (t *turn) grow(n int) bool {
	t.size += n
	if t.size <= t.max {
		return true
	}
	t.end = &turnEnd{status: gateway.StatusFailed,
		reason: "the agent's answer is larger than the gateway's limit of " + strconv.Itoa(t.max) + " bytes"}
	return false
}

// take adds the events of one item of the agent's stream to pending, or
// returns the error that ended the stream.
func (t *turn) take(f streamFrame, pending *[]gateway.Event) error {
	if f.err != nil {
		return f.err
	}
	t.frames++
	*pending = append(*pending, t.frame(f.frame)...)
	return nil
}

// setTask records the agent's task and context ids on the run, once the
// stream has named them: a reply continues that task.
func (t *turn) setTask(r *gateway.Run) {
	if t == nil || r.TaskID != "" || t.taskID == "" {
		return
	}
	r.TaskID, r.ContextID = t.taskID, t.contextID
}

// frame takes one stream frame and returns the events it makes.
func (t *turn) frame(f *a2a.StreamResponse) []gateway.Event {
	if t.end != nil {
		return nil // a frame after the ending changes nothing
	}
	t.learnIDs(f)
	switch {
	case f.Task != nil:
		var out []gateway.Event
		for i := range f.Task.Artifacts {
			if !t.known[f.Task.Artifacts[i].ArtifactID] {
				out = append(out, t.artifact(&f.Task.Artifacts[i], false)...)
			}
		}
		return append(out, t.status(f.Task.Status)...)
	case f.StatusUpdate != nil:
		return t.status(f.StatusUpdate.Status)
	case f.ArtifactUpdate != nil:
		return t.artifact(&f.ArtifactUpdate.Artifact, f.ArtifactUpdate.Append)
	case f.Message != nil:
		text := f.Message.Text()
		var out []gateway.Event
		if !t.grow(len(text)) {
			return nil
		}
		if text != "" {
			t.output.WriteString(text)
			out = append(out, newEvent(gateway.EventMessageDelta, map[string]string{"content": text}))
		}
		t.end = &turnEnd{status: gateway.StatusCompleted, reason: "the agent answered"}
		return out
	}
	return nil
}

// learnIDs takes the task and context ids a frame names, the first
// named: also from frames read after the turn was stopped, so that a
// cancel can name the agent's task.
func (t *turn) learnIDs(f *a2a.StreamResponse) {
	switch {
	case f.Task != nil:
		t.ids(f.Task.ID, f.Task.ContextID)
	case f.StatusUpdate != nil:
		t.ids(f.StatusUpdate.TaskID, f.StatusUpdate.ContextID)
	case f.ArtifactUpdate != nil:
		t.ids(f.ArtifactUpdate.TaskID, f.ArtifactUpdate.ContextID)
	case f.Message != nil:
		t.ids(f.Message.TaskID, f.Message.ContextID)
	}
}

func (t *turn) ids(task, ctx string) {
	if t.taskID == "" {
		t.taskID = task
	}
	if t.contextID == "" {
		t.contextID = ctx
	}
}

// artifact records an artifact or a chunk of one: its text goes out as a
// message.delta; skill metadata is kept apart; the platform's control
// data is never shown.
func (t *turn) artifact(a *a2a.Artifact, appendChunk bool) []gateway.Event {
	i, seen := t.byID[a.ArtifactID]
	if !seen {
		t.byID[a.ArtifactID] = len(t.artifacts)
		i = len(t.artifacts)
		t.artifacts = append(t.artifacts, gateway.Artifact{ArtifactID: a.ArtifactID})
	}
	g := &t.artifacts[i]
	if a.Name != "" {
		g.Name = a.Name
	}
	if a.Description != "" {
		g.Description = a.Description
	}
	if a.Metadata != nil {
		g.Metadata = a.Metadata
	}
	if seen && !appendChunk {
		g.Parts = nil // a resent artifact replaces the one before
	}
	var text strings.Builder
	for _, p := range a.Parts {
		if !t.grow(len(p.Text) + len(p.Raw) + len(p.Data) + len(p.URL)) {
			return nil
		}
		switch {
		case hitl.Tagged(p, hitl.MetadataMediaType):
			continue
		case hitl.Tagged(p, hitl.SkillMetadataMediaType):
			var m map[string]any
			if json.Unmarshal(p.Data, &m) == nil && m != nil {
				if g.SkillMetadata == nil {
					g.SkillMetadata = map[string]any{}
				}
				for k, v := range m {
					g.SkillMetadata[k] = v
				}
			}
			continue
		}
		g.Parts = append(g.Parts, p)
		if p.Kind == a2a.PartText {
			text.WriteString(p.Text)
		}
	}
	if text.Len() == 0 {
		return nil
	}
	t.output.WriteString(text.String())
	return []gateway.Event{newEvent(gateway.EventMessageDelta, map[string]string{"content": text.String()})}
}

// reservedEvents are the gateway's own event types: an agent's platform
// event by one of these names is not passed through, or an agent could
// end a run's stream or fake a pause.
var reservedEvents = map[string]bool{
	gateway.EventStatus: true, gateway.EventDone: true, gateway.EventError: true, gateway.EventHITL: true,
	gateway.EventMessageDelta: true, gateway.EventMessageFinal: true, gateway.EventArtifact: true,
	gateway.EventOAuthRequired: true, gateway.EventWriteConfirmationRequired: true,
}

// maxPlatformEvents bounds the events one message may carry.
const maxPlatformEvents = 64

// platformEvents passes on the platform events an agent reports in a
// message (the agent SDK's PlatformEvent: a platform part holding
// {"events": [{"event": name, …}]}), such as tool.call and tool.result,
// each by its name with its fields as the payload. Names must be short
// and plain, and never one of the gateway's own.
func platformEvents(m *a2a.Message) []gateway.Event {
	if m == nil {
		return nil
	}
	var out []gateway.Event
	for _, p := range m.Parts {
		if p.Kind != a2a.PartData || !hitl.Tagged(p, hitl.MetadataMediaType) {
			continue
		}
		var body struct {
			Events []map[string]json.RawMessage `json:"events"`
		}
		if json.Unmarshal(p.Data, &body) != nil {
			continue
		}
		for _, ev := range body.Events {
			var name string
			if json.Unmarshal(ev["event"], &name) != nil || !validEventName(name) || reservedEvents[name] || gateway.IsDebugEvent(name) {
				continue
			}
			delete(ev, "event")
			payload, err := json.Marshal(ev)
			if err != nil {
				continue
			}
			if out = append(out, gateway.Event{Type: name, Payload: payload}); len(out) == maxPlatformEvents {
				return out
			}
		}
	}
	return out
}

// validEventName reports whether name may name an agent's event: 1 to 64
// of a-z, 0-9, '.', '_' and '-', starting with a letter.
func validEventName(name string) bool {
	if name == "" || len(name) > 64 || name[0] < 'a' || name[0] > 'z' {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// status takes a task status: progress while the task works, the ending
// or the pause otherwise, after the platform events its message carries.
func (t *turn) status(st a2a.TaskStatus) []gateway.Event {
	events := platformEvents(st.Message)
	return append(events, t.statusChange(st)...)
}

func (t *turn) statusChange(st a2a.TaskStatus) []gateway.Event {
	text := st.Message.Text()
	found := hitl.Extract(st.Message)
	switch st.State {
	case a2a.TaskStateCompleted:
		if t.output.Len() == 0 && text != "" && t.grow(len(text)) {
			t.output.WriteString(text)
		}
		t.end = &turnEnd{status: gateway.StatusCompleted, reason: "the agent completed the task"}
	case a2a.TaskStateFailed, a2a.TaskStateRejected:
		reason := text
		if found.Error != nil && found.Error.Message != "" {
			reason = found.Error.Message
		}
		if reason == "" {
			reason = "no reason given"
		}
		verb := "the agent failed: "
		if st.State == a2a.TaskStateRejected {
			verb = "the agent rejected the request: "
		}
		t.end = &turnEnd{status: gateway.StatusFailed, reason: verb + reason}
	case a2a.TaskStateCanceled:
		t.end = &turnEnd{status: gateway.StatusCancelled, reason: "the agent cancelled the task"}
	case a2a.TaskStateInputRequired, a2a.TaskStateAuthRequired:
		t.end = &turnEnd{status: gateway.StatusWaitingUser, pause: pauseOf(st.State, text, found)}
		t.end.reason = "waiting for the user: " + t.end.pause.Type
	default:
		switch {
		case found.Progress != nil:
			return []gateway.Event{newEvent(gateway.EventStatus, map[string]any{"message": found.Progress.Message, "progress": found.Progress})}
		case text != "":
			return []gateway.Event{newEvent(gateway.EventStatus, map[string]string{"message": text})}
		}
	}
	return nil
}

// pauseOf builds the payload a paused run waits on: the agent's HITL
// request, connector OAuth or write confirmation, or, when it sent none,
// its text as an input request.
func pauseOf(state a2a.TaskState, text string, found hitl.Found) *pausePayload {
	p := &pausePayload{}
	var body map[string]any
	switch {
	case found.WriteConfirmation != nil:
		p.Type, p.CallID, p.Session = gateway.EventWriteConfirmationRequired, found.WriteConfirmation.CallID, found.WriteConfirmation.SessionID
		body = map[string]any{hitl.KeyWriteConfirmation: found.WriteConfirmation, "call_id": found.WriteConfirmation.CallID,
			"tool_name": found.WriteConfirmation.ToolName}
	case found.OAuthRequired != nil:
		p.Type, p.Session = gateway.EventOAuthRequired, found.OAuthRequired.SessionID
		body = map[string]any{hitl.KeyOAuthRequired: found.OAuthRequired, "connector": found.OAuthRequired.Connector,
			"auth_url": found.OAuthRequired.AuthURL}
	case found.HITL != nil:
		p.Type, p.Session = gateway.EventHITL, found.HITL.SessionID
		body = map[string]any{hitl.KeyHITL: found.HITL}
	case state == a2a.TaskStateAuthRequired:
		p.Type = gateway.EventOAuthRequired
		body = map[string]any{}
	default:
		p.Type = gateway.EventHITL
		body = map[string]any{hitl.KeyHITL: hitl.InputRequest(text, hitl.InputText, nil, "")}
	}
	body["content"] = text
	p.Payload, _ = json.Marshal(body)
	return p
}

// finish returns the events that close the turn: its artifacts and the
// whole answer, before the status the run takes.
func (t *turn) finish() []gateway.Event {
	var out []gateway.Event
	for _, a := range t.artifacts {
		out = append(out, newEvent(gateway.EventArtifact, a))
	}
	if t.output.Len() > 0 {
		out = append(out, newEvent(gateway.EventMessageFinal, map[string]any{"content": t.output.String(),
			"parts": []a2a.Part{a2a.TextPart(t.output.String())}}))
	}
	return out
}
