package a2av03

import "encoding/json"

// ProtocolVersion is the version a 0.3 agent card states.
const ProtocolVersion = "0.3.0"

// The kind discriminators of 0.3 objects.
const (
	KindMessage        = "message"
	KindTask           = "task"
	KindStatusUpdate   = "status-update"
	KindArtifactUpdate = "artifact-update"
	KindText           = "text"
	KindFile           = "file"
	KindData           = "data"
)

// Role says who sent a message: "user" or "agent".
type Role string

const (
	RoleUser  Role = "user"
	RoleAgent Role = "agent"
)

// TaskState is a 0.3 task state, in lowercase kebab case.
type TaskState string

const (
	TaskStateSubmitted     TaskState = "submitted"
	TaskStateWorking       TaskState = "working"
	TaskStateInputRequired TaskState = "input-required"
	TaskStateCompleted     TaskState = "completed"
	TaskStateCanceled      TaskState = "canceled"
	TaskStateFailed        TaskState = "failed"
	TaskStateRejected      TaskState = "rejected"
	TaskStateAuthRequired  TaskState = "auth-required"
	TaskStateUnknown       TaskState = "unknown"
)

// Part is one piece of content: a TextPart (Kind "text", Text), a FilePart
// (Kind "file", File) or a DataPart (Kind "data", Data), each with
// optional metadata. Only the member Kind names is written.
type Part struct {
	Kind     string
	Text     string
	File     *File
	Data     json.RawMessage
	Metadata map[string]any
}

// File is the content of a FilePart: exactly one of Bytes (base64) or URI.
type File struct {
	Bytes    *string `json:"bytes,omitempty"`
	URI      *string `json:"uri,omitempty"`
	MimeType string  `json:"mimeType,omitempty"`
	Name     string  `json:"name,omitempty"`
}

// Message is one turn of a conversation (kind "message").
type Message struct {
	MessageID        string         `json:"messageId"`
	ContextID        string         `json:"contextId,omitempty"`
	TaskID           string         `json:"taskId,omitempty"`
	Role             Role           `json:"role"`
	Parts            []Part         `json:"parts"`
	Metadata         map[string]any `json:"metadata,omitempty"`
	Extensions       []string       `json:"extensions,omitempty"`
	ReferenceTaskIDs []string       `json:"referenceTaskIds,omitempty"`
	// Kind is "message"; it is written whatever it holds.
	Kind string `json:"kind"`
}

// TaskStatus is a task's state. Timestamp is ISO 8601 text, checked when
// the status is converted.
type TaskStatus struct {
	State     TaskState `json:"state"`
	Message   *Message  `json:"message,omitempty"`
	Timestamp string    `json:"timestamp,omitempty"`
}

// Artifact is an output of a task.
type Artifact struct {
	ArtifactID  string         `json:"artifactId"`
	Name        string         `json:"name,omitempty"`
	Description string         `json:"description,omitempty"`
	Parts       []Part         `json:"parts"`
	Metadata    map[string]any `json:"metadata,omitempty"`
	Extensions  []string       `json:"extensions,omitempty"`
}

// Task is a unit of work (kind "task").
type Task struct {
	ID        string         `json:"id"`
	ContextID string         `json:"contextId"`
	Status    TaskStatus     `json:"status"`
	Artifacts []Artifact     `json:"artifacts,omitempty"`
	History   []Message      `json:"history,omitempty"`
	Metadata  map[string]any `json:"metadata,omitempty"`
	Kind      string         `json:"kind"`
}

// TaskStatusUpdateEvent reports a status change in a stream (kind
// "status-update"). Final tells a 0.3 client the stream ends here.
type TaskStatusUpdateEvent struct {
	TaskID    string         `json:"taskId"`
	ContextID string         `json:"contextId"`
	Status    TaskStatus     `json:"status"`
	Final     bool           `json:"final"`
	Metadata  map[string]any `json:"metadata,omitempty"`
	Kind      string         `json:"kind"`
}

// TaskArtifactUpdateEvent carries an artifact or a chunk of one (kind
// "artifact-update").
type TaskArtifactUpdateEvent struct {
	TaskID    string         `json:"taskId"`
	ContextID string         `json:"contextId"`
	Artifact  Artifact       `json:"artifact"`
	Append    bool           `json:"append,omitempty"`
	LastChunk bool           `json:"lastChunk,omitempty"`
	Metadata  map[string]any `json:"metadata,omitempty"`
	Kind      string         `json:"kind"`
}

// Event is one of the kinded objects a 0.3 server answers with: the result
// of message/send (a Task or a Message) and each frame of message/stream
// and tasks/resubscribe (any of the four). Exactly one member is set; the
// JSON is that member's object, told apart by its kind.
type Event struct {
	Task           *Task
	Message        *Message
	StatusUpdate   *TaskStatusUpdateEvent
	ArtifactUpdate *TaskArtifactUpdateEvent
}

// PushNotificationAuthenticationInfo says how a server authenticates to a
// webhook.
type PushNotificationAuthenticationInfo struct {
	Schemes     []string `json:"schemes"`
	Credentials string   `json:"credentials,omitempty"`
}

// PushNotificationConfig is a webhook for a task's updates.
type PushNotificationConfig struct {
	ID             string                              `json:"id,omitempty"`
	URL            string                              `json:"url"`
	Token          string                              `json:"token,omitempty"`
	Authentication *PushNotificationAuthenticationInfo `json:"authentication,omitempty"`
}

// TaskPushNotificationConfig is the params of
// tasks/pushNotificationConfig/set and the result of its get and list.
type TaskPushNotificationConfig struct {
	TaskID                 string                 `json:"taskId"`
	PushNotificationConfig PushNotificationConfig `json:"pushNotificationConfig"`
}

// MessageSendConfiguration tunes message/send and message/stream. A nil
// Blocking means blocking, as in the 0.3 reference servers.
type MessageSendConfiguration struct {
	AcceptedOutputModes    []string                `json:"acceptedOutputModes,omitempty"`
	Blocking               *bool                   `json:"blocking,omitempty"`
	HistoryLength          *int32                  `json:"historyLength,omitempty"`
	PushNotificationConfig *PushNotificationConfig `json:"pushNotificationConfig,omitempty"`
}

// MessageSendParams is the params of message/send and message/stream.
type MessageSendParams struct {
	Message       *Message                  `json:"message"`
	Configuration *MessageSendConfiguration `json:"configuration,omitempty"`
	Metadata      map[string]any            `json:"metadata,omitempty"`
}

// TaskQueryParams is the params of tasks/get.
type TaskQueryParams struct {
	ID            string         `json:"id"`
	HistoryLength *int32         `json:"historyLength,omitempty"`
	Metadata      map[string]any `json:"metadata,omitempty"`
}

// TaskIDParams is the params of tasks/cancel and tasks/resubscribe.
type TaskIDParams struct {
	ID       string         `json:"id"`
	Metadata map[string]any `json:"metadata,omitempty"`
}

// GetTaskPushNotificationConfigParams is the params of
// tasks/pushNotificationConfig/get; without PushNotificationConfigID it is
// 0.3's TaskIdParams form.
type GetTaskPushNotificationConfigParams struct {
	ID                       string         `json:"id"`
	PushNotificationConfigID string         `json:"pushNotificationConfigId,omitempty"`
	Metadata                 map[string]any `json:"metadata,omitempty"`
}

// ListTaskPushNotificationConfigParams is the params of
// tasks/pushNotificationConfig/list.
type ListTaskPushNotificationConfigParams struct {
	ID       string         `json:"id"`
	Metadata map[string]any `json:"metadata,omitempty"`
}

// DeleteTaskPushNotificationConfigParams is the params of
// tasks/pushNotificationConfig/delete.
type DeleteTaskPushNotificationConfigParams struct {
	ID                       string         `json:"id"`
	PushNotificationConfigID string         `json:"pushNotificationConfigId"`
	Metadata                 map[string]any `json:"metadata,omitempty"`
}
