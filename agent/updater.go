package agent

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/pii"
)

// ErrTaskClosed is returned by an Updater write after this execution closed
// the task: it wrote a terminal state or replied with a message.
var ErrTaskClosed = errors.New("agent: task already closed by this execution")

// Updater is how a skill reports progress before it returns: one method per
// lifecycle transition, as in other A2A SDKs. Every write is persisted and
// streamed by the server before the method returns. Writes are serialised,
// so an Updater may be shared by the skill's goroutines.
//
// Returning a Result is the ordinary way to end a task. A skill that closes
// the task itself (Complete, Fail, Reject, Reply) wins: the Result it still
// returns is then not written.
type Updater struct {
	u    a2asrv.Updater
	mask bool

	mu        sync.Mutex
	state     a2a.TaskState // last state written here, Unspecified if none
	closed    bool
	replied   bool
	artifacts map[string]bool // ids written through this updater
}

func newUpdater(u a2asrv.Updater, mask bool) *Updater {
	return &Updater{u: u, mask: mask}
}

// TaskID returns the id of the task this execution writes.
func (u *Updater) TaskID() string { return u.u.TaskID() }

// ContextID returns the task's context id.
func (u *Updater) ContextID() string { return u.u.ContextID() }

// Task returns a snapshot of the task as stored, nil before its first write.
func (u *Updater) Task() *a2a.Task { return u.u.Task() }

// State returns the last state written through this updater, or
// TaskStateUnspecified when none was.
func (u *Updater) State() a2a.TaskState {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.state
}

// Closed reports whether this execution already closed the task: a terminal
// state was written or a reply sent.
func (u *Updater) Closed() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.closed
}

// NewMessage returns an agent message for this task with a fresh id.
func (u *Updater) NewMessage(parts ...a2a.Part) *a2a.Message {
	m := a2a.NewMessage(a2a.RoleAgent, parts...)
	m.TaskID, m.ContextID = u.u.TaskID(), u.u.ContextID()
	return m
}

// StartWork marks the task WORKING.
func (u *Updater) StartWork(ctx context.Context, msg *a2a.Message) error {
	return u.UpdateStatus(ctx, a2a.TaskStateWorking, msg)
}

// RequiresInput pauses the task until the caller answers
// (INPUT_REQUIRED). Not terminal: the caller continues the task with a
// message naming its id.
func (u *Updater) RequiresInput(ctx context.Context, msg *a2a.Message) error {
	return u.UpdateStatus(ctx, a2a.TaskStateInputRequired, msg)
}

// RequiresAuth pauses the task until the caller completes an out-of-band
// authorization (AUTH_REQUIRED). Not terminal.
func (u *Updater) RequiresAuth(ctx context.Context, msg *a2a.Message) error {
	return u.UpdateStatus(ctx, a2a.TaskStateAuthRequired, msg)
}

// Complete ends the task COMPLETED.
func (u *Updater) Complete(ctx context.Context, msg *a2a.Message) error {
	return u.UpdateStatus(ctx, a2a.TaskStateCompleted, msg)
}

// Fail ends the task FAILED: the agent tried and could not do it.
func (u *Updater) Fail(ctx context.Context, msg *a2a.Message) error {
	return u.UpdateStatus(ctx, a2a.TaskStateFailed, msg)
}

// Reject ends the task REJECTED: the request could never have succeeded,
// so retrying it unchanged is pointless.
func (u *Updater) Reject(ctx context.Context, msg *a2a.Message) error {
	return u.UpdateStatus(ctx, a2a.TaskStateRejected, msg)
}

// UpdateStatus moves the task to state with an optional message (appended to
// the task's history as well).
func (u *Updater) UpdateStatus(ctx context.Context, state a2a.TaskState, msg *a2a.Message) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.closed {
		return ErrTaskClosed
	}
	if err := u.u.UpdateStatus(ctx, state, u.maskMessage(msg), nil); err != nil {
		return fmt.Errorf("agent: update status %s: %w", state, err)
	}
	u.state = state
	u.closed = state.Terminal()
	return nil
}

// AddArtifact adds a whole artifact, generating its id when empty. An
// artifact with the id of an existing one replaces it.
func (u *Updater) AddArtifact(ctx context.Context, art a2a.Artifact) error {
	if art.ArtifactID == "" {
		art.ArtifactID = a2a.NewID()
	}
	return u.writeArtifact(ctx, art, false, false)
}

// AppendArtifact streams an artifact in chunks: the first call with an id
// creates the artifact, later calls with the same id append their parts,
// and last marks the artifact complete. The id is required.
func (u *Updater) AppendArtifact(ctx context.Context, art a2a.Artifact, last bool) error {
	if art.ArtifactID == "" {
		return errors.New("agent: append artifact: artifact id is required")
	}
	u.mu.Lock()
	seen := u.artifacts[art.ArtifactID]
	u.mu.Unlock()
	if !seen {
		// A chunk may continue an artifact an earlier execution started.
		if t := u.u.Task(); t != nil {
			for i := range t.Artifacts {
				seen = seen || t.Artifacts[i].ArtifactID == art.ArtifactID
			}
		}
	}
	return u.writeArtifact(ctx, art, seen, last)
}

func (u *Updater) writeArtifact(ctx context.Context, art a2a.Artifact, appendChunk, last bool) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.closed {
		return ErrTaskClosed
	}
	if u.mask {
		art = maskArtifact(art)
	}
	if err := u.u.AddArtifact(ctx, art, appendChunk, last, nil); err != nil {
		return fmt.Errorf("agent: add artifact %s: %w", art.ArtifactID, err)
	}
	if u.artifacts == nil {
		u.artifacts = map[string]bool{}
	}
	u.artifacts[art.ArtifactID] = true
	return nil
}

// Reply answers with a message instead of a task. It is allowed only before
// anything else was written, so the skill must be registered with
// MayReply; afterwards the execution is closed.
func (u *Updater) Reply(ctx context.Context, msg *a2a.Message) error {
	if msg == nil {
		return errors.New("agent: reply: message is nil")
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.closed {
		return ErrTaskClosed
	}
	if err := u.u.Reply(ctx, u.maskMessage(msg)); err != nil {
		return fmt.Errorf("agent: reply: %w", err)
	}
	u.closed, u.replied = true, true
	return nil
}

func (u *Updater) maskMessage(m *a2a.Message) *a2a.Message {
	if m == nil || !u.mask {
		return m
	}
	c := *m
	c.Parts = maskParts(m.Parts)
	c.Metadata = pii.MaskMap(m.Metadata)
	return &c
}

func maskArtifact(a a2a.Artifact) a2a.Artifact {
	a.Name = pii.Mask(a.Name)
	a.Description = pii.Mask(a.Description)
	a.Parts = maskParts(a.Parts)
	a.Metadata = pii.MaskMap(a.Metadata)
	return a
}

// maskParts masks text and data parts; raw bytes and URLs are content the
// skill chose to attach and are passed through.
func maskParts(parts []a2a.Part) []a2a.Part {
	if parts == nil {
		return nil
	}
	out := make([]a2a.Part, len(parts))
	for i, p := range parts {
		switch p.Kind {
		case a2a.PartText:
			p.Text = pii.Mask(p.Text)
		case a2a.PartData:
			p.Data = pii.MaskJSON(p.Data)
		}
		p.Metadata = pii.MaskMap(p.Metadata)
		out[i] = p
	}
	return out
}
