package a2asrv

import (
	"context"
	"errors"

	"novaos.dev/novaos/a2a"
)

// maxProposedTaskID bounds an id Options.NewTaskID proposes; run ids are
// UUID-sized, so this leaves room without letting a caller store a large
// key.
const maxProposedTaskID = 128

// newTaskID is the id of a task req creates: Options.NewTaskID's proposal
// when it is usable and free (proposed is then true), a fresh id otherwise. A proposed id comes
// from the caller's metadata, so it must never let one caller reach
// another's task: a free id is reserved (its hub held) until ctx, the
// request's context, ends, by which time the execution holds the hub or
// the task is stored.
func (x *executions) newTaskID(ctx context.Context, scope Scope, req *a2a.SendMessageRequest) (id string, proposed bool) {
	if x.proposeID == nil {
		return x.clock.newID(), false
	}
	id = x.proposeID(req)
	if !proposableTaskID(id) {
		return x.clock.newID(), false
	}
	hb, ok := x.hubs.reserve(id)
	if !ok {
		return x.clock.newID(), false
	}
	if _, _, err := x.store.Get(ctx, scope, id); !errors.Is(err, ErrNotFound) {
		// The caller's own task (a platform retry of the same run gets a
		// new task), or a store that could not say: not this id.
		x.hubs.release(hb)
		return x.clock.newID(), false
	}
	context.AfterFunc(ctx, func() { x.hubs.release(hb) })
	return id, true
}

func proposableTaskID(id string) bool {
	if id == "" || len(id) > maxProposedTaskID {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.' || c == ':') {
			return false
		}
	}
	return true
}

// reserve acquires the hub of id only when nobody holds it: a task live
// in this process, in any scope, keeps its id.
func (hs *hubs) reserve(id string) (*hub, bool) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if hs.m[id] != nil {
		return nil, false
	}
	if hs.m == nil {
		hs.m = make(map[string]*hub)
	}
	h := &hub{id: id, hs: hs, refs: 1}
	hs.m[id] = h
	h.watchLocked()
	return h, true
}

// taskIDTaken answers a create that found its id in use: only an id
// proposed for a run (Options.NewTaskID) can be, by a task of another
// scope, which the proposer must not learn more of.
func taskIDTaken() *a2a.Error {
	return a2a.NewError(a2a.CodeInvalidParams, "the task id proposed for this run is taken")
}
