package a2av03

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"time"

	"novaos.dev/novaos/a2a"
)

// Conversions between the 0.3 shapes and package a2a's v1 types. The V1
// methods read what a 0.3 peer sent and fail on content v1 cannot hold
// (bad base64, a timestamp that is not RFC 3339); the FromV1 functions
// cannot fail, except where a value has no 0.3 form at all. Slices and
// metadata maps are shared between the two values, not copied.

// DataPartCompatKey is the metadata key that marks a 0.3 data part whose
// object only wraps a v1 value that is not an object: {"value": v}.
// a2a-go and a2a-js write and read the same marker.
const DataPartCompatKey = "data_part_compat"

var roleToV1 = map[Role]a2a.Role{RoleUser: a2a.RoleUser, RoleAgent: a2a.RoleAgent}

// V1 returns the v1 role; an unknown role is a2a.RoleUnspecified, which a
// server refuses where a role is required.
func (r Role) V1() a2a.Role { return roleToV1[r] }

// RoleFromV1 returns the 0.3 role; RoleUnspecified has none and is "".
func RoleFromV1(r a2a.Role) Role {
	switch r {
	case a2a.RoleUser:
		return RoleUser
	case a2a.RoleAgent:
		return RoleAgent
	}
	return ""
}

var stateToV1 = map[TaskState]a2a.TaskState{
	TaskStateSubmitted:     a2a.TaskStateSubmitted,
	TaskStateWorking:       a2a.TaskStateWorking,
	TaskStateInputRequired: a2a.TaskStateInputRequired,
	TaskStateCompleted:     a2a.TaskStateCompleted,
	TaskStateCanceled:      a2a.TaskStateCanceled,
	TaskStateFailed:        a2a.TaskStateFailed,
	TaskStateRejected:      a2a.TaskStateRejected,
	TaskStateAuthRequired:  a2a.TaskStateAuthRequired,
	TaskStateUnknown:       a2a.TaskStateUnspecified,
}

var stateFromV1 = func() map[a2a.TaskState]TaskState {
	m := make(map[a2a.TaskState]TaskState, len(stateToV1))
	for k, v := range stateToV1 {
		m[v] = k
	}
	return m
}()

// V1 returns the v1 state; "unknown" and any value not in the 0.3 schema
// are TASK_STATE_UNSPECIFIED.
func (s TaskState) V1() a2a.TaskState { return stateToV1[s] }

// TaskStateFromV1 returns the 0.3 state; TASK_STATE_UNSPECIFIED is
// "unknown".
func TaskStateFromV1(s a2a.TaskState) TaskState {
	if v, ok := stateFromV1[s]; ok {
		return v
	}
	return TaskStateUnknown
}

// V1 returns the v1 part: text stays text, a file with bytes becomes raw
// content and a file with a uri a url part (name and mimeType becoming
// filename and mediaType), and data stays data, unwrapped when its
// metadata marks it as a wrapped non-object value.
func (p *Part) V1() (a2a.Part, error) {
	out := a2a.Part{Metadata: p.Metadata}
	switch p.Kind {
	case KindText:
		out.Kind, out.Text = a2a.PartText, p.Text
	case KindFile:
		f := p.File
		if f == nil || (f.Bytes == nil) == (f.URI == nil) {
			return a2a.Part{}, errors.New(`a file must carry exactly one of "bytes" and "uri"`)
		}
		out.Filename, out.MediaType = f.Name, f.MimeType
		if f.URI != nil {
			out.Kind, out.URL = a2a.PartURL, *f.URI
			break
		}
		raw, err := decodeBase64(*f.Bytes)
		if err != nil {
			return a2a.Part{}, fmt.Errorf("file bytes are not base64: %w", err)
		}
		out.Kind, out.Raw = a2a.PartRaw, raw
	case KindData:
		out.Kind, out.Data = a2a.PartData, p.Data
		if wrapped, _ := p.Metadata[DataPartCompatKey].(bool); wrapped {
			var w map[string]json.RawMessage
			if err := json.Unmarshal(p.Data, &w); err == nil && w != nil {
				if v, ok := w["value"]; ok {
					out.Data = v
				}
			}
			out.Metadata = maps.Clone(p.Metadata)
			delete(out.Metadata, DataPartCompatKey)
			if len(out.Metadata) == 0 {
				out.Metadata = nil
			}
		}
	default:
		return a2a.Part{}, ErrPartKind
	}
	return out, nil
}

// PartFromV1 returns the 0.3 part. A text or data part loses its filename
// and mediaType (0.3 has no place for them); a data value that is not an
// object is wrapped as {"value": v} and marked in metadata.
func PartFromV1(p *a2a.Part) Part {
	out := Part{Metadata: p.Metadata}
	switch p.Kind {
	case a2a.PartText:
		out.Kind, out.Text = KindText, p.Text
	case a2a.PartRaw:
		b := base64.StdEncoding.EncodeToString(p.Raw)
		out.Kind, out.File = KindFile, &File{Bytes: &b, Name: p.Filename, MimeType: p.MediaType}
	case a2a.PartURL:
		u := p.URL
		out.Kind, out.File = KindFile, &File{URI: &u, Name: p.Filename, MimeType: p.MediaType}
	case a2a.PartData:
		out.Kind, out.Data = KindData, p.Data
		if d := bytes.TrimSpace(p.Data); len(d) == 0 || d[0] != '{' {
			if len(d) == 0 {
				d = []byte("null")
			}
			out.Data = append(append([]byte(`{"value":`), d...), '}')
			out.Metadata = maps.Clone(p.Metadata)
			if out.Metadata == nil {
				out.Metadata = map[string]any{}
			}
			out.Metadata[DataPartCompatKey] = true
		}
	}
	return out
}

// decodeBase64 reads the standard alphabet that 0.3 peers write, and
// tolerates the URL-safe one and missing padding.
func decodeBase64(s string) ([]byte, error) {
	var first error
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		b, err := enc.DecodeString(s)
		if err == nil {
			if b == nil {
				b = []byte{}
			}
			return b, nil
		}
		if first == nil {
			first = err
		}
	}
	return nil, first
}

func partsToV1(parts []Part) ([]a2a.Part, error) {
	if parts == nil {
		return nil, nil
	}
	out := make([]a2a.Part, len(parts))
	for i := range parts {
		p, err := parts[i].V1()
		if err != nil {
			return nil, at(fmt.Sprintf("parts[%d]", i), err)
		}
		out[i] = p
	}
	return out, nil
}

func partsFromV1(parts []a2a.Part) []Part {
	if parts == nil {
		return nil
	}
	out := make([]Part, len(parts))
	for i := range parts {
		out[i] = PartFromV1(&parts[i])
	}
	return out
}

// V1 returns the v1 message.
func (m *Message) V1() (*a2a.Message, error) {
	if m == nil {
		return nil, nil
	}
	parts, err := partsToV1(m.Parts)
	if err != nil {
		return nil, err
	}
	return &a2a.Message{
		MessageID: m.MessageID, ContextID: m.ContextID, TaskID: m.TaskID,
		Role: m.Role.V1(), Parts: parts, Metadata: m.Metadata,
		Extensions: m.Extensions, ReferenceTaskIDs: m.ReferenceTaskIDs,
	}, nil
}

// MessageFromV1 returns the 0.3 message.
func MessageFromV1(m *a2a.Message) *Message {
	if m == nil {
		return nil
	}
	return &Message{
		Kind: KindMessage, MessageID: m.MessageID, ContextID: m.ContextID, TaskID: m.TaskID,
		Role: RoleFromV1(m.Role), Parts: partsFromV1(m.Parts), Metadata: m.Metadata,
		Extensions: m.Extensions, ReferenceTaskIDs: m.ReferenceTaskIDs,
	}
}

// V1 returns the v1 status; a timestamp must be RFC 3339.
func (s *TaskStatus) V1() (a2a.TaskStatus, error) {
	msg, err := s.Message.V1()
	if err != nil {
		return a2a.TaskStatus{}, at("message", err)
	}
	out := a2a.TaskStatus{State: s.State.V1(), Message: msg}
	if s.Timestamp != "" {
		if out.Timestamp, err = parseTimestamp(s.Timestamp); err != nil {
			return a2a.TaskStatus{}, at("timestamp", errors.New("not an ISO 8601 date and time"))
		}
	}
	return out, nil
}

// parseTimestamp reads RFC 3339, and ISO 8601 without an offset as UTC:
// the 0.3 specification's own examples write "2025-04-02T16:59:25.331844",
// and Python peers that format a naive datetime do the same.
func parseTimestamp(v string) (time.Time, error) {
	t, err := a2a.ParseTimestamp(v)
	if err == nil {
		return t, nil
	}
	naive, nerr := time.ParseInLocation("2006-01-02T15:04:05.999999999", v, time.UTC)
	if nerr != nil {
		return time.Time{}, err
	}
	// Read back through the v1 parser for its year range.
	return a2a.ParseTimestamp(naive.Format(time.RFC3339Nano))
}

// TaskStatusFromV1 returns the 0.3 status, its timestamp written as v1
// writes it (UTC, milliseconds).
func TaskStatusFromV1(s *a2a.TaskStatus) TaskStatus {
	out := TaskStatus{State: TaskStateFromV1(s.State), Message: MessageFromV1(s.Message)}
	if !s.Timestamp.IsZero() {
		out.Timestamp = s.Timestamp.UTC().Format(a2a.TimestampLayout)
	}
	return out
}

// V1 returns the v1 artifact.
func (a *Artifact) V1() (a2a.Artifact, error) {
	parts, err := partsToV1(a.Parts)
	if err != nil {
		return a2a.Artifact{}, err
	}
	return a2a.Artifact{
		ArtifactID: a.ArtifactID, Name: a.Name, Description: a.Description,
		Parts: parts, Metadata: a.Metadata, Extensions: a.Extensions,
	}, nil
}

// ArtifactFromV1 returns the 0.3 artifact.
func ArtifactFromV1(a *a2a.Artifact) Artifact {
	return Artifact{
		ArtifactID: a.ArtifactID, Name: a.Name, Description: a.Description,
		Parts: partsFromV1(a.Parts), Metadata: a.Metadata, Extensions: a.Extensions,
	}
}

// V1 returns the v1 task.
func (t *Task) V1() (*a2a.Task, error) {
	if t == nil {
		return nil, nil
	}
	status, err := t.Status.V1()
	if err != nil {
		return nil, at("status", err)
	}
	out := &a2a.Task{ID: t.ID, ContextID: t.ContextID, Status: status, Metadata: t.Metadata}
	if t.Artifacts != nil {
		out.Artifacts = make([]a2a.Artifact, len(t.Artifacts))
		for i := range t.Artifacts {
			if out.Artifacts[i], err = t.Artifacts[i].V1(); err != nil {
				return nil, at(fmt.Sprintf("artifacts[%d]", i), err)
			}
		}
	}
	if t.History != nil {
		out.History = make([]a2a.Message, len(t.History))
		for i := range t.History {
			m, err := t.History[i].V1()
			if err != nil {
				return nil, at(fmt.Sprintf("history[%d]", i), err)
			}
			out.History[i] = *m
		}
	}
	return out, nil
}

// TaskFromV1 returns the 0.3 task.
func TaskFromV1(t *a2a.Task) *Task {
	if t == nil {
		return nil
	}
	out := &Task{Kind: KindTask, ID: t.ID, ContextID: t.ContextID, Status: TaskStatusFromV1(&t.Status), Metadata: t.Metadata}
	if t.Artifacts != nil {
		out.Artifacts = make([]Artifact, len(t.Artifacts))
		for i := range t.Artifacts {
			out.Artifacts[i] = ArtifactFromV1(&t.Artifacts[i])
		}
	}
	if t.History != nil {
		out.History = make([]Message, len(t.History))
		for i := range t.History {
			out.History[i] = *MessageFromV1(&t.History[i])
		}
	}
	return out
}

// V1 returns the v1 stream frame. Final is dropped: a v1 stream ends by
// closing.
func (e *Event) V1() (*a2a.StreamResponse, error) {
	var out a2a.StreamResponse
	var err error
	switch {
	case e.Task != nil:
		out.Task, err = e.Task.V1()
	case e.Message != nil:
		out.Message, err = e.Message.V1()
	case e.StatusUpdate != nil:
		u := e.StatusUpdate
		var status a2a.TaskStatus
		if status, err = u.Status.V1(); err == nil {
			out.StatusUpdate = &a2a.TaskStatusUpdateEvent{TaskID: u.TaskID, ContextID: u.ContextID, Status: status, Metadata: u.Metadata}
		}
	case e.ArtifactUpdate != nil:
		u := e.ArtifactUpdate
		var art a2a.Artifact
		if art, err = u.Artifact.V1(); err == nil {
			out.ArtifactUpdate = &a2a.TaskArtifactUpdateEvent{
				TaskID: u.TaskID, ContextID: u.ContextID, Artifact: art,
				Append: u.Append, LastChunk: u.LastChunk, Metadata: u.Metadata,
			}
		}
	default:
		return nil, errors.New("a2av03: empty event")
	}
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// SendResponse returns the v1 result of SendMessage: a message/send
// answer is a Task or a Message.
func (e *Event) SendResponse() (*a2a.SendMessageResponse, error) {
	if e.Task == nil && e.Message == nil {
		return nil, errors.New("a2av03: message/send answered with an update event, want a task or a message")
	}
	r, err := e.V1()
	if err != nil {
		return nil, err
	}
	return &a2a.SendMessageResponse{Task: r.Task, Message: r.Message}, nil
}

// EventFromV1 returns the 0.3 form of a v1 stream frame. A status update's
// final is set when the state is terminal or interrupted (input or auth
// required): 0.3 clients close the stream on final, and a v1 stream ends
// at those states too.
func EventFromV1(r *a2a.StreamResponse) (*Event, error) {
	switch {
	case r.Task != nil:
		return &Event{Task: TaskFromV1(r.Task)}, nil
	case r.Message != nil:
		return &Event{Message: MessageFromV1(r.Message)}, nil
	case r.StatusUpdate != nil:
		u := r.StatusUpdate
		return &Event{StatusUpdate: &TaskStatusUpdateEvent{
			Kind: KindStatusUpdate, TaskID: u.TaskID, ContextID: u.ContextID,
			Status: TaskStatusFromV1(&u.Status), Final: u.Status.State.Final(), Metadata: u.Metadata,
		}}, nil
	case r.ArtifactUpdate != nil:
		u := r.ArtifactUpdate
		return &Event{ArtifactUpdate: &TaskArtifactUpdateEvent{
			Kind: KindArtifactUpdate, TaskID: u.TaskID, ContextID: u.ContextID, Artifact: ArtifactFromV1(&u.Artifact),
			Append: u.Append, LastChunk: u.LastChunk, Metadata: u.Metadata,
		}}, nil
	}
	return nil, errors.New("a2av03: empty stream response")
}

// V1 returns the v1 config. Only the first of several authentication
// schemes survives (v1 has one). A config without an id gets the task's
// id, the id 0.3 servers give it, so a later get or delete that names the
// task alone finds it.
func (c *TaskPushNotificationConfig) V1() *a2a.TaskPushNotificationConfig {
	return pushConfigToV1(c.TaskID, &c.PushNotificationConfig)
}

func pushConfigToV1(taskID string, c *PushNotificationConfig) *a2a.TaskPushNotificationConfig {
	out := &a2a.TaskPushNotificationConfig{TaskID: taskID, ID: c.ID, URL: c.URL, Token: c.Token}
	if out.ID == "" {
		out.ID = taskID
	}
	if a := c.Authentication; a != nil {
		out.Authentication = &a2a.AuthenticationInfo{Credentials: a.Credentials}
		if len(a.Schemes) > 0 {
			out.Authentication.Scheme = a.Schemes[0]
		}
	}
	return out
}

// PushConfigFromV1 returns the 0.3 config; the tenant is dropped.
func PushConfigFromV1(c *a2a.TaskPushNotificationConfig) *TaskPushNotificationConfig {
	return &TaskPushNotificationConfig{TaskID: c.TaskID, PushNotificationConfig: pushConfigFromV1(c)}
}

func pushConfigFromV1(c *a2a.TaskPushNotificationConfig) PushNotificationConfig {
	out := PushNotificationConfig{ID: c.ID, URL: c.URL, Token: c.Token}
	if a := c.Authentication; a != nil {
		out.Authentication = &PushNotificationAuthenticationInfo{Schemes: []string{}, Credentials: a.Credentials}
		if a.Scheme != "" {
			out.Authentication.Schemes = []string{a.Scheme}
		}
	}
	return out
}

// V1 returns the v1 SendMessage request. blocking false is
// returnImmediately true; absent blocking is blocking, v1's default. An
// inline push config is registered for the message's task, when it names
// one.
func (p *MessageSendParams) V1() (*a2a.SendMessageRequest, error) {
	if p.Message == nil {
		return nil, errors.New(`"message" is required`)
	}
	msg, err := p.Message.V1()
	if err != nil {
		return nil, at("message", err)
	}
	out := &a2a.SendMessageRequest{Message: msg, Metadata: p.Metadata}
	if c := p.Configuration; c != nil {
		out.Configuration = &a2a.SendMessageConfiguration{
			AcceptedOutputModes: c.AcceptedOutputModes,
			HistoryLength:       c.HistoryLength,
			ReturnImmediately:   c.Blocking != nil && !*c.Blocking,
		}
		if c.PushNotificationConfig != nil {
			out.Configuration.TaskPushNotificationConfig = pushConfigToV1(msg.TaskID, c.PushNotificationConfig)
		}
	}
	return out, nil
}

// SendParamsFromV1 returns the 0.3 params of a v1 SendMessage request;
// the tenant is dropped, and a configuration always states blocking.
func SendParamsFromV1(r *a2a.SendMessageRequest) *MessageSendParams {
	out := &MessageSendParams{Message: MessageFromV1(r.Message), Metadata: r.Metadata}
	if c := r.Configuration; c != nil {
		blocking := !c.ReturnImmediately
		out.Configuration = &MessageSendConfiguration{
			AcceptedOutputModes: c.AcceptedOutputModes,
			HistoryLength:       c.HistoryLength,
			Blocking:            &blocking,
		}
		if c.TaskPushNotificationConfig != nil {
			pc := pushConfigFromV1(c.TaskPushNotificationConfig)
			out.Configuration.PushNotificationConfig = &pc
		}
	}
	return out
}
