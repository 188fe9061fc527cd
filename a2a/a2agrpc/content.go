package a2agrpc

import (
	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2apb"
)

// This file converts the content types every method carries: parts,
// messages, artifacts, tasks and stream events.

func partToPB(p *a2a.Part) (*a2apb.Part, error) {
	out := &a2apb.Part{Filename: validString(p.Filename), MediaType: validString(p.MediaType)}
	switch p.Kind {
	case a2a.PartRaw:
		raw := p.Raw
		if raw == nil {
			raw = []byte{}
		}
		out.Content = &a2apb.Part_Raw{Raw: raw}
	case a2a.PartURL:
		out.Content = &a2apb.Part_Url{Url: validString(p.URL)}
	case a2a.PartData:
		v, err := jsonToPB(p.Data, 0)
		if err != nil {
			return nil, at("data", err)
		}
		out.Content = &a2apb.Part_Data{Data: v}
	default: // as the JSON encoder writes a kind it does not know
		out.Content = &a2apb.Part_Text{Text: validString(p.Text)}
	}
	md, err := structToPB(p.Metadata)
	if err != nil {
		return nil, at("metadata", err)
	}
	out.Metadata = md
	return out, nil
}

// partFromPB refuses a part without content, as a2a.Part's JSON reader
// does.
func partFromPB(p *a2apb.Part) (a2a.Part, error) {
	out := a2a.Part{Filename: p.GetFilename(), MediaType: p.GetMediaType()}
	switch c := p.GetContent().(type) {
	case *a2apb.Part_Text:
		out.Kind, out.Text = a2a.PartText, c.Text
	case *a2apb.Part_Raw:
		out.Kind, out.Raw = a2a.PartRaw, c.Raw
		if out.Raw == nil {
			out.Raw = []byte{}
		}
	case *a2apb.Part_Url:
		out.Kind, out.URL = a2a.PartURL, c.Url
	case *a2apb.Part_Data:
		if c.Data == nil {
			return a2a.Part{}, at("data", ErrNoValue)
		}
		d, err := jsonFromPB(c.Data)
		if err != nil {
			return a2a.Part{}, at("data", err)
		}
		out.Kind, out.Data = a2a.PartData, d
	default:
		return a2a.Part{}, a2a.ErrPartContent
	}
	md, err := structFromPB(p.GetMetadata())
	if err != nil {
		return a2a.Part{}, at("metadata", err)
	}
	out.Metadata = md
	return out, nil
}

func partsToPB(ps []a2a.Part) ([]*a2apb.Part, error) {
	if len(ps) == 0 {
		return nil, nil
	}
	out := make([]*a2apb.Part, len(ps))
	for i := range ps {
		p, err := partToPB(&ps[i])
		if err != nil {
			return nil, atIndex("parts", i, err)
		}
		out[i] = p
	}
	return out, nil
}

func partsFromPB(ps []*a2apb.Part) ([]a2a.Part, error) {
	if len(ps) == 0 {
		return nil, nil
	}
	out := make([]a2a.Part, len(ps))
	for i, p := range ps {
		var err error
		if out[i], err = partFromPB(p); err != nil {
			return nil, atIndex("parts", i, err)
		}
	}
	return out, nil
}

func messageToPB(m *a2a.Message) (*a2apb.Message, error) {
	if m == nil {
		return nil, nil
	}
	parts, err := partsToPB(m.Parts)
	if err != nil {
		return nil, err
	}
	md, err := structToPB(m.Metadata)
	if err != nil {
		return nil, at("metadata", err)
	}
	return &a2apb.Message{
		MessageId:        validString(m.MessageID),
		ContextId:        validString(m.ContextID),
		TaskId:           validString(m.TaskID),
		Role:             roleToPB(m.Role),
		Parts:            parts,
		Metadata:         md,
		Extensions:       validStrings(m.Extensions),
		ReferenceTaskIds: validStrings(m.ReferenceTaskIDs),
	}, nil
}

func messageFromPB(m *a2apb.Message) (*a2a.Message, error) {
	if m == nil {
		return nil, nil
	}
	role, err := roleFromPB(m.GetRole())
	if err != nil {
		return nil, at("role", err)
	}
	parts, err := partsFromPB(m.GetParts())
	if err != nil {
		return nil, err
	}
	md, err := structFromPB(m.GetMetadata())
	if err != nil {
		return nil, at("metadata", err)
	}
	return &a2a.Message{
		MessageID:        m.GetMessageId(),
		ContextID:        m.GetContextId(),
		TaskID:           m.GetTaskId(),
		Role:             role,
		Parts:            parts,
		Metadata:         md,
		Extensions:       emptyToNil(m.GetExtensions()),
		ReferenceTaskIDs: emptyToNil(m.GetReferenceTaskIds()),
	}, nil
}

func artifactToPB(a *a2a.Artifact) (*a2apb.Artifact, error) {
	parts, err := partsToPB(a.Parts)
	if err != nil {
		return nil, err
	}
	md, err := structToPB(a.Metadata)
	if err != nil {
		return nil, at("metadata", err)
	}
	return &a2apb.Artifact{
		ArtifactId:  validString(a.ArtifactID),
		Name:        validString(a.Name),
		Description: validString(a.Description),
		Parts:       parts,
		Metadata:    md,
		Extensions:  validStrings(a.Extensions),
	}, nil
}

// artifactFromPB reads a missing artifact as an empty one, as the JSON
// reader leaves a missing member at its zero value.
func artifactFromPB(a *a2apb.Artifact) (a2a.Artifact, error) {
	parts, err := partsFromPB(a.GetParts())
	if err != nil {
		return a2a.Artifact{}, err
	}
	md, err := structFromPB(a.GetMetadata())
	if err != nil {
		return a2a.Artifact{}, at("metadata", err)
	}
	return a2a.Artifact{
		ArtifactID:  a.GetArtifactId(),
		Name:        a.GetName(),
		Description: a.GetDescription(),
		Parts:       parts,
		Metadata:    md,
		Extensions:  emptyToNil(a.GetExtensions()),
	}, nil
}

// statusToPB always returns a status: the JSON encoders always write one.
func statusToPB(s *a2a.TaskStatus) (*a2apb.TaskStatus, error) {
	msg, err := messageToPB(s.Message)
	if err != nil {
		return nil, at("message", err)
	}
	ts, err := timeToPB(s.Timestamp)
	if err != nil {
		return nil, at("timestamp", err)
	}
	return &a2apb.TaskStatus{State: stateToPB(s.State), Message: msg, Timestamp: ts}, nil
}

func statusFromPB(s *a2apb.TaskStatus) (a2a.TaskStatus, error) {
	state, err := stateFromPB(s.GetState())
	if err != nil {
		return a2a.TaskStatus{}, at("state", err)
	}
	msg, err := messageFromPB(s.GetMessage())
	if err != nil {
		return a2a.TaskStatus{}, at("message", err)
	}
	ts, err := timeFromPB(s.GetTimestamp())
	if err != nil {
		return a2a.TaskStatus{}, at("timestamp", err)
	}
	return a2a.TaskStatus{State: state, Message: msg, Timestamp: ts}, nil
}

func taskToPB(t *a2a.Task) (*a2apb.Task, error) {
	if t == nil {
		return nil, nil
	}
	status, err := statusToPB(&t.Status)
	if err != nil {
		return nil, at("status", err)
	}
	out := &a2apb.Task{Id: validString(t.ID), ContextId: validString(t.ContextID), Status: status}
	if len(t.Artifacts) > 0 {
		out.Artifacts = make([]*a2apb.Artifact, len(t.Artifacts))
		for i := range t.Artifacts {
			if out.Artifacts[i], err = artifactToPB(&t.Artifacts[i]); err != nil {
				return nil, atIndex("artifacts", i, err)
			}
		}
	}
	if len(t.History) > 0 {
		out.History = make([]*a2apb.Message, len(t.History))
		for i := range t.History {
			if out.History[i], err = messageToPB(&t.History[i]); err != nil {
				return nil, atIndex("history", i, err)
			}
		}
	}
	if out.Metadata, err = structToPB(t.Metadata); err != nil {
		return nil, at("metadata", err)
	}
	return out, nil
}

func taskFromPB(t *a2apb.Task) (*a2a.Task, error) {
	if t == nil {
		return nil, nil
	}
	status, err := statusFromPB(t.GetStatus())
	if err != nil {
		return nil, at("status", err)
	}
	out := &a2a.Task{ID: t.GetId(), ContextID: t.GetContextId(), Status: status}
	if n := len(t.GetArtifacts()); n > 0 {
		out.Artifacts = make([]a2a.Artifact, n)
		for i, a := range t.GetArtifacts() {
			if out.Artifacts[i], err = artifactFromPB(a); err != nil {
				return nil, atIndex("artifacts", i, err)
			}
		}
	}
	if n := len(t.GetHistory()); n > 0 {
		out.History = make([]a2a.Message, n)
		for i, m := range t.GetHistory() {
			msg, err := messageFromPB(m)
			if err != nil {
				return nil, atIndex("history", i, err)
			}
			if msg != nil {
				out.History[i] = *msg
			}
		}
	}
	if out.Metadata, err = structFromPB(t.GetMetadata()); err != nil {
		return nil, at("metadata", err)
	}
	return out, nil
}

func statusUpdateToPB(e *a2a.TaskStatusUpdateEvent) (*a2apb.TaskStatusUpdateEvent, error) {
	status, err := statusToPB(&e.Status)
	if err != nil {
		return nil, at("status", err)
	}
	md, err := structToPB(e.Metadata)
	if err != nil {
		return nil, at("metadata", err)
	}
	return &a2apb.TaskStatusUpdateEvent{TaskId: validString(e.TaskID), ContextId: validString(e.ContextID), Status: status, Metadata: md}, nil
}

func statusUpdateFromPB(e *a2apb.TaskStatusUpdateEvent) (*a2a.TaskStatusUpdateEvent, error) {
	status, err := statusFromPB(e.GetStatus())
	if err != nil {
		return nil, at("status", err)
	}
	md, err := structFromPB(e.GetMetadata())
	if err != nil {
		return nil, at("metadata", err)
	}
	return &a2a.TaskStatusUpdateEvent{TaskID: e.GetTaskId(), ContextID: e.GetContextId(), Status: status, Metadata: md}, nil
}

func artifactUpdateToPB(e *a2a.TaskArtifactUpdateEvent) (*a2apb.TaskArtifactUpdateEvent, error) {
	art, err := artifactToPB(&e.Artifact)
	if err != nil {
		return nil, at("artifact", err)
	}
	md, err := structToPB(e.Metadata)
	if err != nil {
		return nil, at("metadata", err)
	}
	return &a2apb.TaskArtifactUpdateEvent{
		TaskId: validString(e.TaskID), ContextId: validString(e.ContextID), Artifact: art,
		Append: e.Append, LastChunk: e.LastChunk, Metadata: md,
	}, nil
}

func artifactUpdateFromPB(e *a2apb.TaskArtifactUpdateEvent) (*a2a.TaskArtifactUpdateEvent, error) {
	art, err := artifactFromPB(e.GetArtifact())
	if err != nil {
		return nil, at("artifact", err)
	}
	md, err := structFromPB(e.GetMetadata())
	if err != nil {
		return nil, at("metadata", err)
	}
	return &a2a.TaskArtifactUpdateEvent{
		TaskID: e.GetTaskId(), ContextID: e.GetContextId(), Artifact: art,
		Append: e.GetAppend(), LastChunk: e.GetLastChunk(), Metadata: md,
	}, nil
}
