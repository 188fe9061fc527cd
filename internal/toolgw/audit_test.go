package toolgw

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"novaos.dev/novaos/gate"
)

// batchGate records each write of audit entries.
type batchGate struct {
	scriptedGate
	mu      sync.Mutex
	batches [][]gate.AuditEntry
}

func (g *batchGate) Audit(_ context.Context, entries ...gate.AuditEntry) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.batches = append(g.batches, entries)
	return nil
}

// Calls' entries gather for the delay and are written in one commit; the
// ones gathering when the gateway stops are written then.
func TestAuditEntriesGather(t *testing.T) {
	g := &batchGate{}
	a := newAuditor(g, slog.New(slog.DiscardHandler), time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { a.run(ctx); close(done) }()
	c := &Caller{Tenant: "acme", Agent: "bot", Subject: "bot"}
	for _, id := range []string{"call-1", "call-2", "call-3"} {
		a.add(auditCall, c, id, map[string]any{"tool": "novaos.demo.echo"})
	}
	cancel()
	<-done
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.batches) != 1 || len(g.batches[0]) != 3 {
		t.Fatalf("batches %v, want the three entries in one", g.batches)
	}
	for i, e := range g.batches[0] {
		if want := []string{"call-1", "call-2", "call-3"}[i]; e.ActionID != want || e.Kind != auditCall || e.SessionID != "tools-agent-bot" {
			t.Errorf("entry %d: %+v", i, e)
		}
	}
}
