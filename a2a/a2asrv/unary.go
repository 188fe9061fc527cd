package a2asrv

import (
	"context"
	"time"

	"novaos.dev/novaos/a2a"
)

func invalid(format string, args ...any) *a2a.Error {
	return a2a.NewError(a2a.CodeInvalidParams, format, args...)
}

const (
	defaultPageSize = 50
	maxPageSize     = 100
)

// pageSize reads an optional page size: unset or 0 is the default, 1..100
// is taken as is, anything else is invalid.
func pageSize(n *int32) (int, *a2a.Error) {
	if n == nil || *n == 0 {
		return defaultPageSize, nil
	}
	if *n < 0 || *n > maxPageSize {
		return 0, invalid("pageSize must be between 1 and %d", maxPageSize)
	}
	return int(*n), nil
}

func (tm *taskMethods) getTask(ctx context.Context, c *Call, req *a2a.GetTaskRequest) (*a2a.Task, *a2a.Error) {
	switch {
	case req.ID == "":
		return nil, invalid("id is required")
	case badHistoryLength(req.HistoryLength):
		return nil, invalid("historyLength must not be negative")
	}
	t, _, err := tm.store.Get(ctx, c.Scope, req.ID)
	if err != nil {
		return nil, storeError(ctx, tm.log, "get", err)
	}
	return tm.trimHistory(t, req.HistoryLength), nil
}

func (tm *taskMethods) listTasks(ctx context.Context, c *Call, req *a2a.ListTasksRequest) (*a2a.ListTasksResponse, *a2a.Error) {
	q := ListQuery{ContextID: req.ContextID, State: req.Status, PageToken: req.PageToken}
	var e *a2a.Error
	if q.PageSize, e = pageSize(req.PageSize); e != nil {
		return nil, e
	}
	if badHistoryLength(req.HistoryLength) {
		return nil, invalid("historyLength must not be negative")
	}
	if req.StatusTimestampAfter != "" {
		ts, err := time.Parse(time.RFC3339Nano, req.StatusTimestampAfter)
		if err != nil {
			return nil, invalid("statusTimestampAfter must be an RFC 3339 timestamp")
		}
		q.StatusAfter = ts.UTC()
	}
	res, err := tm.store.List(ctx, c.Scope, q)
	if err != nil {
		return nil, storeError(ctx, tm.log, "list", err)
	}
	out := a2a.ListTasksResponse{Tasks: make([]a2a.Task, 0, len(res.Tasks)), NextPageToken: res.NextPageToken, PageSize: int32(q.PageSize), TotalSize: int32(res.TotalSize)}
	for _, t := range res.Tasks {
		t = tm.trimHistory(t, req.HistoryLength)
		if !req.IncludeArtifacts && t.Artifacts != nil {
			cp := *t
			cp.Artifacts = nil
			t = &cp
		}
		out.Tasks = append(out.Tasks, *t)
	}
	return &out, nil
}

func (tm *taskMethods) cancelTask(ctx context.Context, c *Call, req *a2a.CancelTaskRequest) (*a2a.Task, *a2a.Error) {
	if req.ID == "" {
		return nil, invalid("id is required")
	}
	ctx = context.WithoutCancel(ctx)
	if _, _, err := tm.store.Get(ctx, c.Scope, req.ID); err != nil {
		return nil, storeError(ctx, tm.log, "get", err)
	}
	hb := tm.execs.hubs.acquire(req.ID)
	defer tm.execs.hubs.release(hb)
	hb.mu.Lock()
	defer hb.mu.Unlock()
	hb.scope = c.Scope
	// CANCELED is written first; only then is the execution preempted, so
	// whatever it does on its way out cannot overwrite the decision.
	t, err := hb.applyLocked(ctx, func(t *a2a.Task) (*a2a.StreamResponse, error) {
		if t.Status.State.Terminal() {
			return nil, a2a.NewError(a2a.CodeTaskNotCancelable, "task %s is in terminal state %s", t.ID, t.Status.State)
		}
		t.Status = a2a.TaskStatus{State: a2a.TaskStateCanceled, Timestamp: tm.clock.now()}
		if len(req.Metadata) > 0 {
			md := make(map[string]any, len(t.Metadata)+len(req.Metadata))
			for k, v := range t.Metadata {
				md[k] = v
			}
			for k, v := range req.Metadata {
				md[k] = v
			}
			t.Metadata = md
		}
		return &a2a.StreamResponse{StatusUpdate: &a2a.TaskStatusUpdateEvent{TaskID: t.ID, ContextID: t.ContextID, Status: t.Status}}, nil
	})
	if err != nil {
		return nil, storeError(ctx, tm.log, "update", err)
	}
	if ex := hb.exec; ex != nil {
		ex.upd.revoked = true
		ex.cancel(ErrCanceled)
	}
	return t, nil
}
