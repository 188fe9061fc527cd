package a2a

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ProtocolVersion is the A2A protocol version this package speaks, as sent in
// the A2A-Version header and AgentInterface.protocolVersion.
const ProtocolVersion = "1.0"

// Role says who produced a message.
type Role int

const (
	RoleUnspecified Role = iota
	RoleUser
	RoleAgent
)

var roleNames = [...]string{"ROLE_UNSPECIFIED", "ROLE_USER", "ROLE_AGENT"}

func (r Role) String() string {
	if r < 0 || int(r) >= len(roleNames) {
		return roleNames[0]
	}
	return roleNames[r]
}

// MarshalJSON writes the proto enum value name.
func (r Role) MarshalJSON() ([]byte, error) { return []byte(`"` + r.String() + `"`), nil }

// UnmarshalJSON accepts the value name, the enum number and v0.3's bare
// "user"/"agent"; anything else reads as RoleUnspecified.
func (r *Role) UnmarshalJSON(b []byte) error {
	if name, ok := plainString(b); ok {
		switch string(name) { // no allocation: the compiler compares in place
		case "ROLE_USER":
			*r = RoleUser
			return nil
		case "ROLE_AGENT":
			*r = RoleAgent
			return nil
		}
	}
	v, err := enumToken(b)
	if err != nil {
		return fmt.Errorf("a2a: role: %w", err)
	}
	switch v {
	case "ROLE_USER", "USER", "1":
		*r = RoleUser
	case "ROLE_AGENT", "AGENT", "2":
		*r = RoleAgent
	default:
		*r = RoleUnspecified
	}
	return nil
}

// TaskState is the lifecycle state of a task.
type TaskState int

const (
	TaskStateUnspecified TaskState = iota
	TaskStateSubmitted
	TaskStateWorking
	TaskStateCompleted
	TaskStateFailed
	TaskStateCanceled
	TaskStateInputRequired
	TaskStateRejected
	TaskStateAuthRequired
)

var taskStateNames = [...]string{
	"TASK_STATE_UNSPECIFIED", "TASK_STATE_SUBMITTED", "TASK_STATE_WORKING",
	"TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED",
	"TASK_STATE_INPUT_REQUIRED", "TASK_STATE_REJECTED", "TASK_STATE_AUTH_REQUIRED",
}

func (s TaskState) String() string {
	if s < 0 || int(s) >= len(taskStateNames) {
		return taskStateNames[0]
	}
	return taskStateNames[s]
}

// Terminal reports whether no further change can happen to a task in state s.
func (s TaskState) Terminal() bool {
	switch s {
	case TaskStateCompleted, TaskStateFailed, TaskStateCanceled, TaskStateRejected:
		return true
	}
	return false
}

// Interrupted reports whether the task waits for the caller (input or auth).
func (s TaskState) Interrupted() bool {
	return s == TaskStateInputRequired || s == TaskStateAuthRequired
}

// Final reports whether a stream about a task in state s ends here: the state
// is terminal or interrupted.
func (s TaskState) Final() bool { return s.Terminal() || s.Interrupted() }

// ParseTaskState reads a state name, number or v0.3 spelling; ok is false
// when nothing matched.
func ParseTaskState(v string) (s TaskState, ok bool) {
	v = strings.ToUpper(strings.ReplaceAll(v, "-", "_"))
	if n, err := strconv.Atoi(v); err == nil {
		if n >= 0 && n < len(taskStateNames) {
			return TaskState(n), true
		}
		return TaskStateUnspecified, false
	}
	v = strings.TrimPrefix(v, "TASK_STATE_")
	switch v {
	case "SUBMITTED":
		return TaskStateSubmitted, true
	case "WORKING":
		return TaskStateWorking, true
	case "COMPLETED":
		return TaskStateCompleted, true
	case "FAILED":
		return TaskStateFailed, true
	case "CANCELED", "CANCELLED":
		return TaskStateCanceled, true
	case "INPUT_REQUIRED":
		return TaskStateInputRequired, true
	case "REJECTED":
		return TaskStateRejected, true
	case "AUTH_REQUIRED":
		return TaskStateAuthRequired, true
	case "UNSPECIFIED":
		return TaskStateUnspecified, true
	}
	return TaskStateUnspecified, false
}

// MarshalJSON writes the proto enum value name.
func (s TaskState) MarshalJSON() ([]byte, error) { return []byte(`"` + s.String() + `"`), nil }

// UnmarshalJSON is tolerant: unknown values read as TaskStateUnspecified.
func (s *TaskState) UnmarshalJSON(b []byte) error {
	if name, ok := plainString(b); ok {
		if v, ok := taskStateByName[string(name)]; ok { // no allocation for a map index
			*s = v
			return nil
		}
	}
	v, err := enumToken(b)
	if err != nil {
		return fmt.Errorf("a2a: task state: %w", err)
	}
	*s, _ = ParseTaskState(v)
	return nil
}

// taskStateByName maps the canonical names, the spelling every conforming
// peer sends, for the decoder's fast path.
var taskStateByName = func() map[string]TaskState {
	m := make(map[string]TaskState, len(taskStateNames))
	for i, n := range taskStateNames {
		m[n] = TaskState(i)
	}
	return m
}()

// plainString returns the content of a JSON string without escapes; ok is
// false for anything else, which takes the slow path.
func plainString(b []byte) ([]byte, bool) {
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' || bytes.IndexByte(b[1:len(b)-1], '\\') >= 0 {
		return nil, false
	}
	return b[1 : len(b)-1], true
}

// enumToken returns a JSON string's content or a JSON number's text.
func enumToken(b []byte) (string, error) {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return "", err
		}
		return strings.ToUpper(s), nil
	}
	if string(b) == "null" {
		return "", nil
	}
	if _, err := strconv.ParseFloat(string(b), 64); err != nil {
		return "", fmt.Errorf("want a string or number, got %.20s", b)
	}
	return string(b), nil
}

// PartKind says which content member of the Part oneof is set.
type PartKind int

const (
	PartText PartKind = iota
	PartRaw
	PartURL
	PartData
)

func (k PartKind) String() string {
	switch k {
	case PartRaw:
		return "raw"
	case PartURL:
		return "url"
	case PartData:
		return "data"
	}
	return "text"
}

// Part is one piece of message or artifact content: exactly one of text, raw
// bytes, a URL or a JSON data value, with an optional filename, media type and
// metadata. Use [TextPart], [RawPart], [URLPart] or [DataPart] to build one.
type Part struct {
	Kind      PartKind
	Text      string
	Raw       []byte
	URL       string
	Data      json.RawMessage
	Filename  string
	MediaType string
	Metadata  map[string]any
}

// TextPart returns a text part.
func TextPart(text string) Part { return Part{Kind: PartText, Text: text} }

// RawPart returns an inline-bytes part.
func RawPart(b []byte, filename, mediaType string) Part {
	if b == nil {
		b = []byte{}
	}
	return Part{Kind: PartRaw, Raw: b, Filename: filename, MediaType: mediaType}
}

// URLPart returns a part that refers to content by URL.
func URLPart(url, filename, mediaType string) Part {
	return Part{Kind: PartURL, URL: url, Filename: filename, MediaType: mediaType}
}

// DataPart returns a structured-data part holding the JSON encoding of v.
func DataPart(v any) (Part, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return Part{}, fmt.Errorf("a2a: data part: %w", err)
	}
	return Part{Kind: PartData, Data: b, MediaType: "application/json"}, nil
}

type partWire struct {
	Text      *string         `json:"text,omitempty"`
	Raw       *string         `json:"raw,omitempty"`
	URL       *string         `json:"url,omitempty"`
	Data      json.RawMessage `json:"data,omitempty"`
	Filename  string          `json:"filename,omitempty"`
	MediaType string          `json:"mediaType,omitempty"`
	Metadata  map[string]any  `json:"metadata,omitempty"`
}

// MarshalJSON writes the member named by Kind and the shared fields.
func (p Part) MarshalJSON() ([]byte, error) {
	return appendPart(nil, &p)
}

// ErrPartContent is returned when a part carries none or several of text, raw,
// url and data.
var ErrPartContent = errors.New("a part must carry exactly one of text, raw, url or data")

// UnmarshalJSON reads a part; it fails unless exactly one content member is
// present.
func (p *Part) UnmarshalJSON(b []byte) error {
	var w partWire
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	n := 0
	*p = Part{Filename: w.Filename, MediaType: w.MediaType, Metadata: w.Metadata}
	if w.Text != nil {
		n++
		p.Kind, p.Text = PartText, *w.Text
	}
	if w.Raw != nil {
		n++
		raw, err := decodeBase64(*w.Raw)
		if err != nil {
			return fmt.Errorf("a2a: part raw is not base64: %w", err)
		}
		p.Kind, p.Raw = PartRaw, raw
	}
	if w.URL != nil {
		n++
		p.Kind, p.URL = PartURL, *w.URL
	}
	if w.Data != nil {
		n++
		p.Kind, p.Data = PartData, w.Data
	}
	if n != 1 {
		return ErrPartContent
	}
	return nil
}

// decodeBase64 accepts what ProtoJSON readers accept for bytes: the standard
// or URL-safe alphabet, with or without padding.
func decodeBase64(s string) ([]byte, error) {
	enc := base64.StdEncoding
	if strings.ContainsAny(s, "-_") {
		enc = base64.URLEncoding
	}
	if !strings.HasSuffix(s, "=") {
		enc = enc.WithPadding(base64.NoPadding)
	}
	raw, err := enc.DecodeString(s)
	if err != nil {
		return nil, err
	}
	if raw == nil {
		raw = []byte{}
	}
	return raw, nil
}

// Message is one turn of communication between a client and an agent.
type Message struct {
	MessageID        string         `json:"messageId"`
	ContextID        string         `json:"contextId,omitempty"`
	TaskID           string         `json:"taskId,omitempty"`
	Role             Role           `json:"role"`
	Parts            []Part         `json:"parts,omitempty"`
	Metadata         map[string]any `json:"metadata,omitempty"`
	Extensions       []string       `json:"extensions,omitempty"`
	ReferenceTaskIDs []string       `json:"referenceTaskIds,omitempty"`
}

// NewMessage returns a message with a fresh random id.
func NewMessage(role Role, parts ...Part) *Message {
	return &Message{MessageID: NewID(), Role: role, Parts: parts}
}

// Text joins the text of every text part.
func (m *Message) Text() string {
	if m == nil {
		return ""
	}
	return PartsText(m.Parts)
}

// PartsText joins the text of every text part in parts with newlines.
func PartsText(parts []Part) string {
	switch n := countText(parts); n {
	case 0:
		return ""
	case 1:
		for i := range parts {
			if parts[i].Kind == PartText {
				return parts[i].Text
			}
		}
	}
	var sb strings.Builder
	for i := range parts {
		if parts[i].Kind != PartText {
			continue
		}
		if sb.Len() > 0 {
			sb.WriteByte('\n')
		}
		sb.WriteString(parts[i].Text)
	}
	return sb.String()
}

func countText(parts []Part) int {
	n := 0
	for i := range parts {
		if parts[i].Kind == PartText {
			n++
		}
	}
	return n
}

// Artifact is an output of a task.
type Artifact struct {
	ArtifactID  string         `json:"artifactId"`
	Name        string         `json:"name,omitempty"`
	Description string         `json:"description,omitempty"`
	Parts       []Part         `json:"parts,omitempty"`
	Metadata    map[string]any `json:"metadata,omitempty"`
	Extensions  []string       `json:"extensions,omitempty"`
}

// TaskStatus is a task's state with the message that explains it.
type TaskStatus struct {
	State     TaskState
	Message   *Message
	Timestamp time.Time
}

// TimestampLayout is how A2A timestamps are written: UTC with milliseconds.
const TimestampLayout = "2006-01-02T15:04:05.000Z"

type taskStatusWire struct {
	State     TaskState `json:"state"`
	Message   *Message  `json:"message,omitempty"`
	Timestamp string    `json:"timestamp,omitempty"`
}

// MarshalJSON writes the timestamp as RFC 3339 UTC with milliseconds.
func (s TaskStatus) MarshalJSON() ([]byte, error) { return appendTaskStatus(nil, &s) }

// UnmarshalJSON accepts any RFC 3339 timestamp.
func (s *TaskStatus) UnmarshalJSON(b []byte) error {
	var w taskStatusWire
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*s = TaskStatus{State: w.State, Message: w.Message}
	if w.Timestamp != "" {
		t, err := ParseTimestamp(w.Timestamp)
		if err != nil {
			return fmt.Errorf("a2a: status timestamp: %w", err)
		}
		s.Timestamp = t
	}
	return nil
}

var (
	minTimestamp = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	maxTimestamp = time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)
)

// ParseTimestamp reads an RFC 3339 timestamp (any offset, any fraction) and
// returns it in UTC. Like google.protobuf.Timestamp it only admits years 1
// to 9999 once converted to UTC, so every value read can be written back.
func ParseTimestamp(v string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, err
	}
	t = t.UTC()
	if t.Before(minTimestamp) || t.After(maxTimestamp) {
		return time.Time{}, fmt.Errorf("timestamp %q outside 0001-01-01T00:00:00Z..9999-12-31T23:59:59Z", v)
	}
	return t, nil
}

// Task is the unit of work an agent performs for a caller.
type Task struct {
	ID        string         `json:"id"`
	ContextID string         `json:"contextId,omitempty"`
	Status    TaskStatus     `json:"status"`
	Artifacts []Artifact     `json:"artifacts,omitempty"`
	History   []Message      `json:"history,omitempty"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

// Clone returns a deep copy of the task's slices so the copy can be changed
// without touching t. Metadata maps and part payloads are shared: they are
// treated as immutable once written.
func (t *Task) Clone() *Task {
	if t == nil {
		return nil
	}
	c := *t
	if t.Artifacts != nil {
		c.Artifacts = make([]Artifact, len(t.Artifacts))
		for i, a := range t.Artifacts {
			a.Parts = append([]Part(nil), a.Parts...)
			c.Artifacts[i] = a
		}
	}
	if t.History != nil {
		c.History = append([]Message(nil), t.History...)
	}
	return &c
}

// TaskStatusUpdateEvent reports a change of a task's status in a stream.
type TaskStatusUpdateEvent struct {
	TaskID    string         `json:"taskId"`
	ContextID string         `json:"contextId"`
	Status    TaskStatus     `json:"status"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

// TaskArtifactUpdateEvent carries a new artifact or a chunk of one.
type TaskArtifactUpdateEvent struct {
	TaskID    string         `json:"taskId"`
	ContextID string         `json:"contextId"`
	Artifact  Artifact       `json:"artifact"`
	Append    bool           `json:"append,omitempty"`
	LastChunk bool           `json:"lastChunk,omitempty"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

// StreamResponse is one frame of a stream and the body of a push
// notification: exactly one member is set.
type StreamResponse struct {
	Task           *Task                    `json:"task,omitempty"`
	Message        *Message                 `json:"message,omitempty"`
	StatusUpdate   *TaskStatusUpdateEvent   `json:"statusUpdate,omitempty"`
	ArtifactUpdate *TaskArtifactUpdateEvent `json:"artifactUpdate,omitempty"`
}

// TaskID returns the id of the task the frame is about, or "" for a message
// that belongs to no task.
func (r *StreamResponse) TaskID() string {
	switch {
	case r.Task != nil:
		return r.Task.ID
	case r.StatusUpdate != nil:
		return r.StatusUpdate.TaskID
	case r.ArtifactUpdate != nil:
		return r.ArtifactUpdate.TaskID
	case r.Message != nil:
		return r.Message.TaskID
	}
	return ""
}

// Final reports whether a stream ends after this frame: a message, or a task
// or status in a terminal or interrupted state.
func (r *StreamResponse) Final() bool {
	switch {
	case r.Message != nil:
		return true
	case r.Task != nil:
		return r.Task.Status.State.Final()
	case r.StatusUpdate != nil:
		return r.StatusUpdate.Status.State.Final()
	}
	return false
}

// AuthenticationInfo is how a push-notification receiver is authenticated.
type AuthenticationInfo struct {
	Scheme      string `json:"scheme"`
	Credentials string `json:"credentials,omitempty"`
}

// TaskPushNotificationConfig registers a webhook for a task's updates.
type TaskPushNotificationConfig struct {
	Tenant         string              `json:"tenant,omitempty"`
	ID             string              `json:"id,omitempty"`
	TaskID         string              `json:"taskId,omitempty"`
	URL            string              `json:"url"`
	Token          string              `json:"token,omitempty"`
	Authentication *AuthenticationInfo `json:"authentication,omitempty"`
	// Delivery is how a NovaOS server's delivery to this config stands,
	// in its answers to the push-config methods when it delivers. It is
	// not part of A2A (member novaosDelivery; ProtoJSON readers ignore
	// it) and is never read from a request.
	Delivery *PushDeliveryState `json:"novaosDelivery,omitempty"`
}

// Delivery states of a push config's stream of notifications.
const (
	PushStateActive = "active" // notifications are being delivered
	PushStateDead   = "dead"   // delivery gave up; storing the config again restarts it
)

// PushDeliveryState is how delivery to one push config stands.
type PushDeliveryState struct {
	State     string `json:"state"`    // PushStateActive or PushStateDead
	Pending   int    `json:"pending"`  // notifications queued, not yet delivered
	Attempts  int    `json:"attempts"` // failed attempts at the oldest pending one
	LastError string `json:"lastError,omitempty"`
	// LastAttempt and LastDelivered are zero when there was none.
	LastAttempt   time.Time `json:"lastAttemptTime,omitzero"`
	LastDelivered time.Time `json:"lastDeliveredTime,omitzero"`
}

// SendMessageConfiguration tunes a SendMessage call.
type SendMessageConfiguration struct {
	AcceptedOutputModes        []string                    `json:"acceptedOutputModes,omitempty"`
	TaskPushNotificationConfig *TaskPushNotificationConfig `json:"taskPushNotificationConfig,omitempty"`
	HistoryLength              *int32                      `json:"historyLength,omitempty"`
	ReturnImmediately          bool                        `json:"returnImmediately,omitempty"`
}

// SendMessageRequest is the params of SendMessage and SendStreamingMessage.
type SendMessageRequest struct {
	Tenant        string                    `json:"tenant,omitempty"`
	Message       *Message                  `json:"message"`
	Configuration *SendMessageConfiguration `json:"configuration,omitempty"`
	Metadata      map[string]any            `json:"metadata,omitempty"`
}

// SendMessageResponse is the result of SendMessage: exactly one of Task or
// Message.
type SendMessageResponse struct {
	Task    *Task    `json:"task,omitempty"`
	Message *Message `json:"message,omitempty"`
}

// GetTaskRequest is the params of GetTask.
type GetTaskRequest struct {
	Tenant        string `json:"tenant,omitempty"`
	ID            string `json:"id"`
	HistoryLength *int32 `json:"historyLength,omitempty"`
}

// ListTasksRequest is the params of ListTasks.
type ListTasksRequest struct {
	Tenant               string    `json:"tenant,omitempty"`
	ContextID            string    `json:"contextId,omitempty"`
	Status               TaskState `json:"status,omitempty"`
	PageSize             *int32    `json:"pageSize,omitempty"`
	PageToken            string    `json:"pageToken,omitempty"`
	HistoryLength        *int32    `json:"historyLength,omitempty"`
	StatusTimestampAfter string    `json:"statusTimestampAfter,omitempty"`
	IncludeArtifacts     bool      `json:"includeArtifacts,omitempty"`
}

// ListTasksResponse is the result of ListTasks. NextPageToken is "" on the
// last page and always present.
type ListTasksResponse struct {
	Tasks         []Task `json:"tasks"`
	NextPageToken string `json:"nextPageToken"`
	PageSize      int32  `json:"pageSize"`
	TotalSize     int32  `json:"totalSize"`
}

// CancelTaskRequest is the params of CancelTask.
type CancelTaskRequest struct {
	Tenant   string         `json:"tenant,omitempty"`
	ID       string         `json:"id"`
	Metadata map[string]any `json:"metadata,omitempty"`
}

// SubscribeToTaskRequest is the params of SubscribeToTask.
type SubscribeToTaskRequest struct {
	Tenant string `json:"tenant,omitempty"`
	ID     string `json:"id"`
}

// GetTaskPushNotificationConfigRequest is the params of
// GetTaskPushNotificationConfig; Delete uses the same shape.
type GetTaskPushNotificationConfigRequest struct {
	Tenant string `json:"tenant,omitempty"`
	TaskID string `json:"taskId"`
	ID     string `json:"id"`
}

// DeleteTaskPushNotificationConfigRequest is the params of
// DeleteTaskPushNotificationConfig.
type DeleteTaskPushNotificationConfigRequest = GetTaskPushNotificationConfigRequest

// ListTaskPushNotificationConfigsRequest is the params of
// ListTaskPushNotificationConfigs.
type ListTaskPushNotificationConfigsRequest struct {
	Tenant    string `json:"tenant,omitempty"`
	TaskID    string `json:"taskId"`
	PageSize  *int32 `json:"pageSize,omitempty"`
	PageToken string `json:"pageToken,omitempty"`
}

// ListTaskPushNotificationConfigsResponse is the result of
// ListTaskPushNotificationConfigs.
type ListTaskPushNotificationConfigsResponse struct {
	Configs       []TaskPushNotificationConfig `json:"configs"`
	NextPageToken string                       `json:"nextPageToken"`
}

// GetExtendedAgentCardRequest is the params of GetExtendedAgentCard.
type GetExtendedAgentCardRequest struct {
	Tenant string `json:"tenant,omitempty"`
}
