package a2asrv

import (
	"fmt"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2astore"
)

// ApplyEvent changes t the way one appended write does: a status update
// replaces the status, an artifact update adds, replaces or extends an
// artifact. It is the one definition of what an event in TaskStore.Append
// means, shared by the server, which applies events as they happen, and by
// the stores, which apply the events they kept when a task is read.
//
// A status update moves the status message it replaces into the history, so
// the current status message is stored once (in status.message) and the
// history still reads as the whole conversation once the task moves on.
//
// Appends reuse t's slices: the cost of applying an event is the event's
// size, never the task's. t must therefore not be shared with a reader
// while it is applied to.
func ApplyEvent(t *a2a.Task, ev *a2a.StreamResponse) error {
	switch {
	case ev == nil:
		return fmt.Errorf("a2asrv: apply event: nil event")
	case ev.StatusUpdate != nil:
		setStatus(t, ev.StatusUpdate.Status)
	case ev.ArtifactUpdate != nil:
		mergeArtifact(t, ev.ArtifactUpdate.Artifact, ev.ArtifactUpdate.Append)
	default:
		return fmt.Errorf("a2asrv: apply event: only status and artifact updates can be appended")
	}
	return nil
}

// setStatus replaces t's status, keeping the message it replaces in the
// history.
func setStatus(t *a2a.Task, s a2a.TaskStatus) {
	retireStatusMessage(t)
	t.Status = s
}

// retireStatusMessage moves the current status message into the history,
// where the conversation continues from it.
func retireStatusMessage(t *a2a.Task) {
	if m := t.Status.Message; m != nil {
		t.History = append(t.History, *m)
		t.Status.Message = nil
	}
}

// mergeArtifact adds art to t, or with appendChunk appends its parts to the
// artifact of the same id (a chunk for an unknown id starts the artifact).
func mergeArtifact(t *a2a.Task, art a2a.Artifact, appendChunk bool) {
	for i := range t.Artifacts {
		if t.Artifacts[i].ArtifactID != art.ArtifactID {
			continue
		}
		if appendChunk {
			t.Artifacts[i].Parts = append(t.Artifacts[i].Parts, art.Parts...)
		} else {
			art.Parts = append([]a2a.Part(nil), art.Parts...)
			t.Artifacts[i] = art
		}
		return
	}
	art.Parts = append([]a2a.Part(nil), art.Parts...)
	t.Artifacts = append(t.Artifacts, art)
}

// eventState is the status an event sets, if any.
func eventState(ev *a2a.StreamResponse) (a2a.TaskStatus, bool) {
	if ev.StatusUpdate != nil {
		return ev.StatusUpdate.Status, true
	}
	return a2a.TaskStatus{}, false
}

// LastStatus returns the status the last status update among events sets;
// ok is false when none does. Stores use it to keep the state and timestamp
// columns they filter on in step with appended events.
func LastStatus(events []*a2a.StreamResponse) (status a2a.TaskStatus, ok bool) {
	for i := len(events) - 1; i >= 0; i-- {
		if s, ok := eventState(events[i]); ok {
			return s, true
		}
	}
	return a2a.TaskStatus{}, false
}

// ApplyEncodedEvents applies events a store kept (a2astore.EncodeEvent's
// bytes), in order, to the task they were appended to.
func ApplyEncodedEvents(t *a2a.Task, bodies [][]byte) error {
	for _, b := range bodies {
		ev, err := a2astore.DecodeEvent(b)
		if err != nil {
			return err
		}
		if err := ApplyEvent(t, ev); err != nil {
			return err
		}
	}
	return nil
}
