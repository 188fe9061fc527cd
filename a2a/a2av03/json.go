package a2av03

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
)

// The kinded types write their kind whatever the field holds, and the
// lists the 0.3 schema requires (parts) as [] when empty.

// MarshalJSON writes the message with kind "message".
func (m Message) MarshalJSON() ([]byte, error) {
	type plain Message
	p := plain(m)
	p.Kind, p.Parts = KindMessage, nonNil(p.Parts)
	return json.Marshal(p)
}

// MarshalJSON writes the task with kind "task".
func (t Task) MarshalJSON() ([]byte, error) {
	type plain Task
	p := plain(t)
	p.Kind = KindTask
	return json.Marshal(p)
}

// MarshalJSON writes the artifact with parts as [] when empty.
func (a Artifact) MarshalJSON() ([]byte, error) {
	type plain Artifact
	p := plain(a)
	p.Parts = nonNil(p.Parts)
	return json.Marshal(p)
}

// MarshalJSON writes the event with kind "status-update".
func (e TaskStatusUpdateEvent) MarshalJSON() ([]byte, error) {
	type plain TaskStatusUpdateEvent
	p := plain(e)
	p.Kind = KindStatusUpdate
	return json.Marshal(p)
}

// MarshalJSON writes the event with kind "artifact-update".
func (e TaskArtifactUpdateEvent) MarshalJSON() ([]byte, error) {
	type plain TaskArtifactUpdateEvent
	p := plain(e)
	p.Kind = KindArtifactUpdate
	return json.Marshal(p)
}

// MarshalJSON writes the schemes as [] when empty: the member is required.
func (a PushNotificationAuthenticationInfo) MarshalJSON() ([]byte, error) {
	type plain PushNotificationAuthenticationInfo
	p := plain(a)
	p.Schemes = nonNil(p.Schemes)
	return json.Marshal(p)
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// partWire is Part as it is on the wire.
type partWire struct {
	Kind     string          `json:"kind"`
	Text     *string         `json:"text,omitempty"`
	File     *File           `json:"file,omitempty"`
	Data     json.RawMessage `json:"data,omitempty"`
	Metadata map[string]any  `json:"metadata,omitempty"`
}

// ErrPartKind is returned for a part whose kind is not text, file or data.
var ErrPartKind = errors.New(`a2av03: part kind must be "text", "file" or "data"`)

// MarshalJSON writes the kind and the member it names.
func (p Part) MarshalJSON() ([]byte, error) {
	w := partWire{Kind: p.Kind, Metadata: p.Metadata}
	switch p.Kind {
	case KindText:
		w.Text = &p.Text
	case KindFile:
		if p.File == nil {
			return nil, errors.New("a2av03: file part without a file")
		}
		w.File = p.File
	case KindData:
		w.Data = p.Data
		if len(w.Data) == 0 {
			w.Data = json.RawMessage("{}")
		}
	default:
		return nil, ErrPartKind
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads a part. The kind is required and its member must be
// present: text a string, file an object with exactly one of bytes and
// uri, data any JSON value (the schema says an object; a2a-go and a2a-js
// send other values wrapped, see the package doc). Members of other kinds
// are ignored, as unknown members are.
func (p *Part) UnmarshalJSON(b []byte) error {
	var w partWire
	if err := decodeStruct(b, reflect.ValueOf(&w).Elem()); err != nil {
		return err
	}
	*p = Part{Kind: w.Kind, Metadata: w.Metadata}
	switch w.Kind {
	case KindText:
		if w.Text == nil {
			return errors.New(`text part without "text"`)
		}
		p.Text = *w.Text
	case KindFile:
		if w.File == nil {
			return errors.New(`file part without "file"`)
		}
		if (w.File.Bytes == nil) == (w.File.URI == nil) {
			return errors.New(`a file must carry exactly one of "bytes" and "uri"`)
		}
		p.File = w.File
	case KindData:
		if w.Data == nil {
			return errors.New(`data part without "data"`)
		}
		p.Data = w.Data
	default:
		return fmt.Errorf("%w, got %q", ErrPartKind, truncate(w.Kind))
	}
	return nil
}

// ErrEventKind is returned for an event whose kind is not one of message,
// task, status-update and artifact-update.
var ErrEventKind = errors.New(`a2av03: kind must be "message", "task", "status-update" or "artifact-update"`)

// MarshalJSON writes the member that is set.
func (e Event) MarshalJSON() ([]byte, error) {
	switch {
	case e.Task != nil:
		return json.Marshal(e.Task)
	case e.Message != nil:
		return json.Marshal(e.Message)
	case e.StatusUpdate != nil:
		return json.Marshal(e.StatusUpdate)
	case e.ArtifactUpdate != nil:
		return json.Marshal(e.ArtifactUpdate)
	}
	return nil, errors.New("a2av03: empty event")
}

// UnmarshalJSON reads the object its kind names; the kind is required.
func (e *Event) UnmarshalJSON(b []byte) error {
	var k struct {
		Kind string `json:"kind"`
	}
	if err := decodeStruct(b, reflect.ValueOf(&k).Elem()); err != nil {
		return err
	}
	*e = Event{}
	var target any
	switch k.Kind {
	case KindTask:
		e.Task = new(Task)
		target = e.Task
	case KindMessage:
		e.Message = new(Message)
		target = e.Message
	case KindStatusUpdate:
		e.StatusUpdate = new(TaskStatusUpdateEvent)
		target = e.StatusUpdate
	case KindArtifactUpdate:
		e.ArtifactUpdate = new(TaskArtifactUpdateEvent)
		target = e.ArtifactUpdate
	default:
		return fmt.Errorf("%w, got %q", ErrEventKind, truncate(k.Kind))
	}
	return decodeValue(b, reflect.ValueOf(target).Elem())
}
