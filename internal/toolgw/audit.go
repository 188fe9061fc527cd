package toolgw

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	"novaos.dev/novaos/gate"
)

// Audit entry kinds the gateway writes to the gate's chain.
const (
	auditCall    = "tool_call"
	auditRefused = "tool_call_refused"
)

// auditor writes calls to the gate's hash-chained audit log. A write-class
// call's gate decision and acknowledgement are in the chain before it
// answers; the entry of its result, and of every read-class call, is
// queued and written in batches (one commit each) off the call's path, so
// an audited read costs no store write while the caller waits. A batch
// gathers for the delay after its first entry: a commit per call would
// cost the store more than the call. A batch the gate cannot take is kept
// and tried again every auditRetry. Entries still queued when the process
// dies are lost; the run's events and the meter have them too.
type auditor struct {
	gate Gate
	log  *slog.Logger

	mu      sync.Mutex
	queue   []gate.AuditEntry
	wake    chan struct{}
	dropped int64
	delay   time.Duration
}

// maxAuditQueue bounds the entries waiting to be written; past it new
// ones are counted and dropped, and the count is logged. maxAuditBatch
// bounds one write.
const (
	maxAuditQueue = 100_000
	maxAuditBatch = 500
	auditRetry    = time.Second
)

func newAuditor(g Gate, log *slog.Logger, delay time.Duration) *auditor {
	return &auditor{gate: g, log: log, wake: make(chan struct{}, 1), delay: delay}
}

func (a *auditor) add(kind string, c *Caller, callID string, body map[string]any) {
	if a.gate == nil {
		return
	}
	b, err := json.Marshal(body)
	if err != nil {
		return
	}
	e := gate.AuditEntry{Kind: kind, TenantID: c.Tenant, SessionID: sessionOf(c), ActionID: callID, Actor: c.Subject, Body: b}
	a.mu.Lock()
	if len(a.queue) >= maxAuditQueue {
		a.dropped++
		a.mu.Unlock()
		return
	}
	a.queue = append(a.queue, e)
	a.mu.Unlock()
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// run writes queued entries until ctx ends, then what is left.
func (a *auditor) run(ctx context.Context) {
	var retry <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			flush, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			a.flush(flush)
			cancel()
			return
		case <-a.wake:
			if a.delay > 0 {
				gather := time.NewTimer(a.delay)
				select {
				case <-gather.C:
				case <-ctx.Done():
					gather.Stop()
					continue // to the final flush
				}
			}
		case <-retry:
		}
		retry = nil
		if !a.flush(ctx) {
			retry = time.After(auditRetry)
		}
	}
}

// flush writes what is queued, in order, in batches; false when the gate
// refused one, which stays queued, first.
func (a *auditor) flush(ctx context.Context) bool {
	for {
		a.mu.Lock()
		n := min(len(a.queue), maxAuditBatch)
		batch, dropped := a.queue[:n:n], a.dropped
		a.queue, a.dropped = a.queue[n:], 0
		a.mu.Unlock()
		if dropped > 0 {
			a.log.Error("toolgw: audit queue full; entries dropped", "dropped", dropped)
		}
		if len(batch) == 0 {
			return true
		}
		if err := a.gate.Audit(ctx, batch...); err != nil {
			a.log.Error("toolgw: write audit entries; kept to try again", "entries", len(batch), "err", err)
			a.mu.Lock()
			a.queue = append(batch, a.queue...)
			a.mu.Unlock()
			return false
		}
	}
}

// sessionOf is the gate session a caller's writes are judged in: one per
// run, else one per agent.
func sessionOf(c *Caller) string {
	if c.Run != "" {
		return "tools-run-" + c.Run
	}
	return "tools-agent-" + c.Agent
}
