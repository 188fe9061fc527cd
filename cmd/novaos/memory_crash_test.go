package main_test

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"novaos.dev/novaos/memory"
	"novaos.dev/novaos/resilience"
	"novaos.dev/novaos/secret"
)

// Every memory write the service acknowledged (run memories, agent
// proposals, hints) survives the process being killed outright, and a
// proposal still pending at the kill is decided after the restart.
func TestAcknowledgedMemoryWritesSurviveKill(t *testing.T) {
	bin := buildBinary(t)
	data := t.TempDir()
	ctx := context.Background()

	url, stop := serve(t, bin, data)
	client := memoryClient(t, bin, data, strings.TrimSuffix(url, "/agents/echo"))
	var (
		mu        sync.Mutex
		runIDs    = map[string]string{}
		proposals []string
		hints     []string
		wg        sync.WaitGroup
	)
	for w := range 8 { // concurrent writers, so acknowledged writes share commits
		wg.Go(func() {
			for i := range 10 {
				text := fmt.Sprintf("note %d from writer %d about the quarterly rollout", i, w)
				r, err := client.Write(ctx, &memory.WriteRequest{Scope: memory.ScopeRun, Content: text})
				if err != nil {
					t.Error(err)
					return
				}
				p, err := client.Write(ctx, &memory.WriteRequest{Scope: memory.ScopeAgent, Content: "agent " + text})
				if err != nil {
					t.Error(err)
					return
				}
				h, err := client.Hint(ctx, &memory.HintRequest{Hint: "The user cares about " + text + ".", ConversationID: "conv-1"})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				runIDs[r.MemoryID] = text
				proposals = append(proposals, p.MemoryID)
				hints = append(hints, h.HintID)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	stop(syscall.SIGKILL)

	url, stop = serve(t, bin, data)
	defer stop(syscall.SIGTERM)
	client = memoryClient(t, bin, data, strings.TrimSuffix(url, "/agents/echo"))
	q, err := client.Query(ctx, &memory.QueryRequest{Scope: memory.ScopeRun, Query: "rollout", TopK: ptr(100)})
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, it := range q.Items {
		if runIDs[it.MemoryID] == it.Content {
			found[it.MemoryID] = true
		}
	}
	if len(found) != len(runIDs) {
		t.Errorf("%d of %d acknowledged run memories survived the kill", len(found), len(runIDs))
	}
	deadline, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for _, id := range proposals {
		st, err := client.PollProposal(deadline, id, 50*time.Millisecond)
		if err != nil || st.Status != memory.ProposalCommitted {
			t.Fatalf("proposal %s after the kill: %+v, %v", id, st, err)
		}
	}
	for _, id := range hints {
		st, err := client.HintStatus(ctx, id)
		// Consolidation runs at start, so a hint may be done already.
		if err != nil || st.Status != memory.HintPending && st.Status != memory.HintConsolidated {
			t.Fatalf("hint %s after the kill: %+v, %v", id, st, err)
		}
	}
}

// memoryClient mints a token with the binary, as a user would, for the
// server at base.
func memoryClient(t *testing.T, bin, data, base string) *memory.Client {
	t.Helper()
	out, err := exec.Command(bin, "token", "mint", "--data", data, "--issuer", base, "--tenant", "acme", "--agent", "support",
		"--user", "user-1", "--run", "run-1", "--scopes", "memory:read:*,memory:write:run,memory:write:agent").Output()
	if err != nil {
		t.Fatalf("token mint: %v", err)
	}
	c, err := memory.NewClient(base, secret.New(strings.TrimSpace(string(out))), &memory.ClientOptions{Retry: &resilience.Policy{}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func ptr[T any](v T) *T { return &v }
