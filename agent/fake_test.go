package agent

import (
	"context"
	"errors"
	"sync"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2asrv"
)

// call is one write a fakeUpdater received.
type call struct {
	Op        string // "status", "artifact" or "reply"
	State     a2a.TaskState
	Msg       *a2a.Message
	Art       a2a.Artifact
	Append    bool
	LastChunk bool
}

// fakeUpdater records writes and keeps a task like the server would: it
// refuses writes after a terminal state and replies after other writes.
type fakeUpdater struct {
	mu    sync.Mutex
	calls []call
	task  *a2a.Task
	fail  error // returned by every write when set
}

var _ a2asrv.Updater = (*fakeUpdater)(nil)

func (f *fakeUpdater) TaskID() string    { return "task-1" }
func (f *fakeUpdater) ContextID() string { return "ctx-1" }

func (f *fakeUpdater) Task() *a2a.Task {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.task.Clone()
}

func (f *fakeUpdater) ensure() error {
	if f.fail != nil {
		return f.fail
	}
	if f.task == nil {
		f.task = &a2a.Task{ID: "task-1", ContextID: "ctx-1", Status: a2a.TaskStatus{State: a2a.TaskStateSubmitted}}
	}
	if f.task.Status.State.Terminal() {
		return a2asrv.ErrRevoked
	}
	return nil
}

func (f *fakeUpdater) UpdateStatus(_ context.Context, state a2a.TaskState, msg *a2a.Message, _ map[string]any) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.ensure(); err != nil {
		return err
	}
	f.task.Status = a2a.TaskStatus{State: state, Message: msg}
	f.calls = append(f.calls, call{Op: "status", State: state, Msg: msg})
	return nil
}

func (f *fakeUpdater) AddArtifact(_ context.Context, art a2a.Artifact, appendChunk, lastChunk bool, _ map[string]any) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.ensure(); err != nil {
		return err
	}
	found := false
	for i := range f.task.Artifacts {
		if f.task.Artifacts[i].ArtifactID == art.ArtifactID {
			found = true
			if appendChunk {
				f.task.Artifacts[i].Parts = append(f.task.Artifacts[i].Parts, art.Parts...)
			} else {
				f.task.Artifacts[i] = art
			}
		}
	}
	if !found {
		f.task.Artifacts = append(f.task.Artifacts, art)
	}
	f.calls = append(f.calls, call{Op: "artifact", Art: art, Append: appendChunk, LastChunk: lastChunk})
	return nil
}

func (f *fakeUpdater) Reply(_ context.Context, msg *a2a.Message) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return f.fail
	}
	if f.task != nil {
		return errors.New("fake: reply after task writes")
	}
	f.calls = append(f.calls, call{Op: "reply", Msg: msg})
	return nil
}

func (f *fakeUpdater) recorded() []call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]call(nil), f.calls...)
}

// final returns the last status call, or a zero call.
func (f *fakeUpdater) final() call {
	calls := f.recorded()
	for i := len(calls) - 1; i >= 0; i-- {
		if calls[i].Op == "status" {
			return calls[i]
		}
	}
	return call{}
}

// ops summarises the calls as "status:WORKING", "artifact", "reply".
func (f *fakeUpdater) ops() []string {
	var out []string
	for _, c := range f.recorded() {
		switch c.Op {
		case "status":
			out = append(out, "status:"+c.State.String())
		default:
			out = append(out, c.Op)
		}
	}
	return out
}
