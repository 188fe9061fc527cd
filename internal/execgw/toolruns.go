package execgw

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"time"

	"novaos.dev/novaos/gateway"
)

// The tool gateway's view of runs: calls made with a run's token are shown
// in the run, its earlier calls are a write's evidence, and a held write
// the gate decided answers the run's pause. Every method keeps to the
// tenant named, as the caller's verified token named it.

// AppendEvents adds events to the tenant's run; a run that ended takes
// none. A write confirmation raised here (the tool gateway holding a
// call) is the run's: when the agent then pauses on the same call, the
// pause is not announced again (raised).
func (s *Service) AppendEvents(ctx context.Context, tenant, runID string, events ...gateway.Event) error {
	run, err := s.store.GetRun(ctx, tenant, runID)
	if err != nil {
		return err
	}
	_, _, err = s.mutate(ctx, &run, runID, func(r *gateway.Run) ([]gateway.Event, error) {
		if r.Status.Terminal() {
			return nil, errStop
		}
		return events, nil
	})
	if errors.Is(err, errStop) {
		return nil
	}
	if err == nil {
		for _, e := range events {
			if e.Type == gateway.EventWriteConfirmationRequired {
				var p struct {
					CallID string `json:"call_id"`
				}
				if json.Unmarshal(e.Payload, &p) == nil && p.CallID != "" {
					s.raised.add(runID, p.CallID)
				}
			}
		}
	}
	return err
}

// raisedPauses remembers the write confirmations raised in runs by the
// tool gateway in this process, until the run pauses on them. A pause
// raised on another replica is announced twice; nothing else differs.
type raisedPauses struct {
	mu sync.Mutex
	m  map[[2]string]time.Time
}

const maxRaisedPauses = 10_000

func (r *raisedPauses) add(run, call string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil || len(r.m) >= maxRaisedPauses {
		r.m = map[[2]string]time.Time{}
	}
	r.m[[2]string{run, call}] = time.Now()
}

// take reports whether the pause on call was raised in run, forgetting it.
func (r *raisedPauses) take(run, call string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := [2]string{run, call}
	_, ok := r.m[k]
	delete(r.m, k)
	return ok
}

// RecentEvents returns the tenant's run's latest events, at most limit,
// in order.
func (s *Service) RecentEvents(ctx context.Context, tenant, runID string, limit int) ([]gateway.Event, error) {
	run, err := s.store.GetRun(ctx, tenant, runID)
	if err != nil {
		return nil, err
	}
	return s.store.Events(ctx, runID, max(run.LastSequence-int64(limit), 0), limit)
}

// AnswerWrite answers the tenant's run's pause for the write callID, as a
// reply approving or rejecting it would: approved, the run is queued
// again with a token bound to callID. A run that no longer waits for that
// answer is left as it is.
func (s *Service) AnswerWrite(ctx context.Context, tenant, runID, callID string, approved bool, actor string) error {
	run, err := s.store.GetRun(ctx, tenant, runID)
	if err != nil {
		return err
	}
	_, _, err = s.mutate(ctx, &run, runID, func(x *gateway.Run) ([]gateway.Event, error) {
		var pause pausePayload
		_ = json.Unmarshal(x.Pause, &pause)
		if x.Status != gateway.StatusWaitingUser || pause.Type != gateway.EventWriteConfirmationRequired || pause.CallID != callID {
			return nil, errStop
		}
		pi, err := replyMessage(x, &pause, &Reply{CallID: callID, Approved: &approved})
		if err != nil {
			return nil, err
		}
		b, err := json.Marshal(pi)
		if err != nil {
			return nil, err
		}
		x.Status, x.Reason, x.Pause, x.PendingInput = gateway.StatusQueued, decision(approved)+"d by "+actor+" at the gate", nil, b
		x.Turn++
		x.Attempt = 0
		x.IdempotencyKey = newIdempotencyKey()
		x.LeaseOwner, x.LeaseUntil, x.NotBefore = "", time.Time{}, time.Time{}
		return []gateway.Event{statusEvent(gateway.StatusQueued, x.Reason)}, nil
	})
	if errors.Is(err, errStop) {
		return nil
	}
	if err != nil {
		return err
	}
	s.tel.queued(ctx, runID)
	s.dispatch.kick()
	return nil
}

// WaitingWrite is a run paused for a decision on a write.
type WaitingWrite struct {
	Tenant, RunID, CallID string
}

// WaitingWrites lists the runs of every tenant paused for a write
// confirmation, newest first, after the cursor of a previous page.
func (s *Service) WaitingWrites(ctx context.Context, after string, limit int) ([]WaitingWrite, string, error) {
	f := gateway.RunFilter{Statuses: []gateway.Status{gateway.StatusWaitingUser}, Limit: limit}
	if after != "" {
		var ok bool
		if f.AfterCreated, f.AfterID, ok = splitRunCursor(after); !ok {
			return nil, "", errors.New("execgw: bad cursor")
		}
	}
	runs, err := s.store.ListRuns(ctx, f)
	if err != nil {
		return nil, "", err
	}
	var out []WaitingWrite
	for _, r := range runs {
		var pause pausePayload
		if json.Unmarshal(r.Pause, &pause) == nil && pause.Type == gateway.EventWriteConfirmationRequired && pause.CallID != "" {
			out = append(out, WaitingWrite{Tenant: r.TenantID, RunID: r.ID, CallID: pause.CallID})
		}
	}
	next := ""
	if len(runs) > 0 && len(runs) == limit {
		last := runs[len(runs)-1]
		next = strconv.FormatInt(last.CreatedAt.UnixMicro(), 10) + "/" + last.ID
	}
	return out, next, nil
}
