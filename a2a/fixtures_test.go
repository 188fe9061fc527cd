package a2a

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"
)

// This file holds the reference encoding the hand-written encoders are
// checked against: mirror types that carry only struct tags, so
// encoding/json produces the wire shape without touching any code in
// encode.go.

type refPart struct {
	Text      *string          `json:"text,omitempty"`
	Raw       *string          `json:"raw,omitempty"`
	URL       *string          `json:"url,omitempty"`
	Data      *json.RawMessage `json:"data,omitempty"`
	Filename  string           `json:"filename,omitempty"`
	MediaType string           `json:"mediaType,omitempty"`
	Metadata  map[string]any   `json:"metadata,omitempty"`
}

type refMessage struct {
	MessageID        string         `json:"messageId"`
	ContextID        string         `json:"contextId,omitempty"`
	TaskID           string         `json:"taskId,omitempty"`
	Role             string         `json:"role"`
	Parts            []refPart      `json:"parts,omitempty"`
	Metadata         map[string]any `json:"metadata,omitempty"`
	Extensions       []string       `json:"extensions,omitempty"`
	ReferenceTaskIDs []string       `json:"referenceTaskIds,omitempty"`
}

type refStatus struct {
	State     string      `json:"state"`
	Message   *refMessage `json:"message,omitempty"`
	Timestamp string      `json:"timestamp,omitempty"`
}

type refArtifact struct {
	ArtifactID  string         `json:"artifactId"`
	Name        string         `json:"name,omitempty"`
	Description string         `json:"description,omitempty"`
	Parts       []refPart      `json:"parts,omitempty"`
	Metadata    map[string]any `json:"metadata,omitempty"`
	Extensions  []string       `json:"extensions,omitempty"`
}

type refTask struct {
	ID        string         `json:"id"`
	ContextID string         `json:"contextId,omitempty"`
	Status    refStatus      `json:"status"`
	Artifacts []refArtifact  `json:"artifacts,omitempty"`
	History   []refMessage   `json:"history,omitempty"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

type refStatusUpdate struct {
	TaskID    string         `json:"taskId"`
	ContextID string         `json:"contextId"`
	Status    refStatus      `json:"status"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

type refArtifactUpdate struct {
	TaskID    string         `json:"taskId"`
	ContextID string         `json:"contextId"`
	Artifact  refArtifact    `json:"artifact"`
	Append    bool           `json:"append,omitempty"`
	LastChunk bool           `json:"lastChunk,omitempty"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

type refStream struct {
	Task           *refTask           `json:"task,omitempty"`
	Message        *refMessage        `json:"message,omitempty"`
	StatusUpdate   *refStatusUpdate   `json:"statusUpdate,omitempty"`
	ArtifactUpdate *refArtifactUpdate `json:"artifactUpdate,omitempty"`
}

func toRefPart(p Part) refPart {
	r := refPart{Filename: p.Filename, MediaType: p.MediaType, Metadata: p.Metadata}
	switch p.Kind {
	case PartRaw:
		s := base64.StdEncoding.EncodeToString(p.Raw)
		r.Raw = &s
	case PartURL:
		r.URL = &p.URL
	case PartData:
		d := p.Data
		if len(d) == 0 {
			d = json.RawMessage("null")
		}
		r.Data = &d
	default:
		r.Text = &p.Text
	}
	return r
}

func toRefParts(ps []Part) []refPart {
	if ps == nil {
		return nil
	}
	out := make([]refPart, len(ps))
	for i, p := range ps {
		out[i] = toRefPart(p)
	}
	return out
}

func toRefMessage(m *Message) *refMessage {
	if m == nil {
		return nil
	}
	return &refMessage{
		MessageID: m.MessageID, ContextID: m.ContextID, TaskID: m.TaskID, Role: m.Role.String(),
		Parts: toRefParts(m.Parts), Metadata: m.Metadata, Extensions: m.Extensions, ReferenceTaskIDs: m.ReferenceTaskIDs,
	}
}

func toRefStatus(s TaskStatus) refStatus {
	r := refStatus{State: s.State.String(), Message: toRefMessage(s.Message)}
	if ts := s.Timestamp.UTC().Truncate(time.Millisecond); !ts.IsZero() {
		r.Timestamp = ts.Format("2006-01-02T15:04:05.000Z07:00")
	}
	return r
}

func toRefArtifact(a Artifact) refArtifact {
	return refArtifact{ArtifactID: a.ArtifactID, Name: a.Name, Description: a.Description,
		Parts: toRefParts(a.Parts), Metadata: a.Metadata, Extensions: a.Extensions}
}

func toRefTask(t *Task) *refTask {
	if t == nil {
		return nil
	}
	r := &refTask{ID: t.ID, ContextID: t.ContextID, Status: toRefStatus(t.Status), Metadata: t.Metadata}
	for _, a := range t.Artifacts {
		r.Artifacts = append(r.Artifacts, toRefArtifact(a))
	}
	for i := range t.History {
		r.History = append(r.History, *toRefMessage(&t.History[i]))
	}
	return r
}

func toRefStream(s *StreamResponse) *refStream {
	r := &refStream{Task: toRefTask(s.Task), Message: toRefMessage(s.Message)}
	if u := s.StatusUpdate; u != nil {
		r.StatusUpdate = &refStatusUpdate{TaskID: u.TaskID, ContextID: u.ContextID, Status: toRefStatus(u.Status), Metadata: u.Metadata}
	}
	if u := s.ArtifactUpdate; u != nil {
		r.ArtifactUpdate = &refArtifactUpdate{TaskID: u.TaskID, ContextID: u.ContextID, Artifact: toRefArtifact(u.Artifact),
			Append: u.Append, LastChunk: u.LastChunk, Metadata: u.Metadata}
	}
	return r
}

// Fixtures shared by the encoder tests, the schema checks and the
// benchmarks.

var fixtureTime = time.Date(2026, 3, 4, 5, 6, 7, 891234567, time.UTC)

func smallTask() *Task {
	return &Task{
		ID:        "0f6b1f4e-8a0b-4b5e-9a57-6d1c2f8e9a10",
		ContextID: "c9e3b1a2-7d4f-4c1e-8b9a-2f3e4d5c6b7a",
		Status: TaskStatus{
			State:     TaskStateWorking,
			Timestamp: fixtureTime,
			Message:   &Message{MessageID: "m-status", Role: RoleAgent, Parts: []Part{TextPart("Looking that up…")}},
		},
	}
}

// bigTask is a task with a 20-message history and three artifacts of mixed
// part kinds, the size of a real multi-turn conversation.
func bigTask() *Task {
	t := smallTask()
	t.Status.State = TaskStateCompleted
	t.Metadata = map[string]any{"tenant": "acme", "cost": map[string]any{"tokens": 1234.0, "usd": 0.0123}, "tags": []any{"a", "b"}}
	for i := range 20 {
		role := RoleUser
		if i%2 == 1 {
			role = RoleAgent
		}
		t.History = append(t.History, Message{
			MessageID: fmt.Sprintf("m-%02d", i), ContextID: t.ContextID, TaskID: t.ID, Role: role,
			Parts:    []Part{TextPart(fmt.Sprintf("Turn %d: could you <summarise> the \"quarterly\" numbers & list the top three risks?", i))},
			Metadata: map[string]any{"turn": float64(i), "lang": "en"},
		})
	}
	data, _ := DataPart(map[string]any{"rows": []any{map[string]any{"q": "Q1", "rev": 1.5e6}, map[string]any{"q": "Q2", "rev": 1.75e6}}})
	t.Artifacts = []Artifact{
		{ArtifactID: "a-summary", Name: "summary.md", Parts: []Part{TextPart("# Summary\n\nRevenue grew 17%.\n")}},
		{ArtifactID: "a-table", Name: "table", Parts: []Part{data}},
		{ArtifactID: "a-chart", Name: "chart.png", Parts: []Part{RawPart(make([]byte, 512), "chart.png", "image/png"), URLPart("https://example.com/chart.png", "chart.png", "image/png")}},
	}
	return t
}

func statusUpdateFrame() *StreamResponse {
	return &StreamResponse{StatusUpdate: &TaskStatusUpdateEvent{
		TaskID: "0f6b1f4e-8a0b-4b5e-9a57-6d1c2f8e9a10", ContextID: "c9e3b1a2-7d4f-4c1e-8b9a-2f3e4d5c6b7a",
		Status: TaskStatus{State: TaskStateWorking, Timestamp: fixtureTime,
			Message: &Message{MessageID: "m-1", Role: RoleAgent, Parts: []Part{TextPart("Working on it")}}},
	}}
}

func artifactChunkFrame() *StreamResponse {
	return &StreamResponse{ArtifactUpdate: &TaskArtifactUpdateEvent{
		TaskID: "0f6b1f4e-8a0b-4b5e-9a57-6d1c2f8e9a10", ContextID: "c9e3b1a2-7d4f-4c1e-8b9a-2f3e4d5c6b7a",
		Artifact: Artifact{ArtifactID: "a-1", Parts: []Part{TextPart("The next few tokens of a long streamed answer, ")}},
		Append:   true,
	}}
}
