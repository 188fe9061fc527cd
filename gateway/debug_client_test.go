package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/problem"
	"novaos.dev/novaos/resilience"
)

// A debug action is sent once, as the gateway's API has it, and never
// again, whatever became of it: a step applied twice moves the run on
// twice.
func TestSendDebugControl(t *testing.T) {
	ctx := context.Background()
	at := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
	answer := DebugSession{SessionID: "s-1", RunID: "r1", BreakpointState: BreakpointStepping, Action: DebugStep, Steps: 1,
		Actor: "alice", UpdatedAt: at}
	tests := []struct {
		name string
		// h answers the one request the client must send.
		h       func(w http.ResponseWriter, r *http.Request)
		want    *DebugSession
		wantErr func(error) bool
	}{
		{"an answer", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, answer) }, &answer, nil},
		{"a run that ended", func(w http.ResponseWriter, r *http.Request) {
			writeProblem(w, 409, ProblemRunEnded, "Conflict", "the run has ended: COMPLETED")
		}, nil, func(err error) bool { return errors.Is(err, ErrConflict) }},
		{"an outage", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "0")
			writeProblem(w, 503, problem.TypeOverloaded, "Service Unavailable", "later")
		}, nil, func(err error) bool { return IsRetryable(err) }},
		{"a connection lost after the request", func(w http.ResponseWriter, r *http.Request) {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.Close()
			}
		}, nil, func(err error) bool { return err != nil && !errors.Is(err, ErrProtocol) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int32
			// The request as the handler saw it, handed over before the
			// answer (a closed connection orders nothing).
			seen := make(chan string, 1)
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if calls.Add(1) == 1 {
					body, _ := io.ReadAll(r.Body)
					seen <- r.Method + " " + r.URL.Path + " " + r.Header.Get("Content-Type") + " " + string(body)
				}
				tc.h(w, r)
			})
			c := startGateway(t, h, aliceToken, nil) // a policy that would retry reads
			got, err := c.SendDebugControl(ctx, "r1", DebugStep, map[string]any{"note": "one more"})
			if n := calls.Load(); n != 1 {
				t.Fatalf("%d requests, want 1", n)
			}
			if req, want := <-seen, "POST "+RunsPath+`/r1/debug/step application/json {"metadata":{"note":"one more"}}`; req != want {
				t.Errorf("request %q, want %q", req, want)
			}
			if tc.wantErr != nil {
				if got != nil || !tc.wantErr(err) {
					t.Fatalf("SendDebugControl = %+v, %v", got, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("answer (-want +got):\n%s", d)
			}
		})
	}
}

// What the client refuses it refuses without a request, and an open
// breaker refuses a debug action too.
func TestSendDebugControlRefused(t *testing.T) {
	ctx := context.Background()
	var calls atomic.Int32
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		writeProblem(w, 503, problem.TypeOverloaded, "Service Unavailable", "down")
	})
	c := startGateway(t, h, aliceToken, &ClientOptions{Retry: &resilience.Policy{
		Breaker: resilience.NewBreaker(&resilience.BreakerOptions{Threshold: 1, Reset: time.Hour})}})
	for name, call := range map[string]func() error{
		"no run":         func() error { _, err := c.SendDebugControl(ctx, "", DebugPause, nil); return err },
		"unknown action": func() error { _, err := c.SendDebugControl(ctx, "r1", "stop", nil); return err },
		"metadata too big": func() error {
			_, err := c.SendDebugControl(ctx, "r1", DebugPause, map[string]any{"x": strings.Repeat("x", MaxDebugMetadataBytes)})
			return err
		},
		"metadata not JSON": func() error {
			_, err := c.SendDebugControl(ctx, "r1", DebugPause, map[string]any{"x": make(chan int)})
			return err
		},
	} {
		if err := call(); !errors.Is(err, ErrInvalidRequest) {
			t.Errorf("%s: %v, want ErrInvalidRequest", name, err)
		}
	}
	if n := calls.Load(); n != 0 {
		t.Fatalf("%d requests sent for refused calls", n)
	}
	if _, err := c.GetRun(ctx, "r1"); err == nil {
		t.Fatal("GetRun succeeded")
	}
	if _, err := c.SendDebugControl(ctx, "r1", DebugAbort, nil); !errors.Is(err, resilience.ErrOpen) {
		t.Fatalf("a debug action behind an open breaker: %v, want resilience.ErrOpen", err)
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("%d requests, want the GetRun's only", n)
	}
}

// A client made with the default policy shares one breaker between its
// calls.
func TestDefaultPolicyHasABreaker(t *testing.T) {
	c, err := NewClient("http://127.0.0.1:1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.retry.Breaker == nil || c.retry.Attempts != resilience.DefaultAttempts {
		t.Fatalf("default policy %+v", c.retry)
	}
}

// The seed's wire shape of a debug action's answer decodes into a
// DebugSession.
func TestDebugSessionWire(t *testing.T) {
	var d DebugSession
	raw := `{"session_id":"s","run_id":"r","breakpoint_state":"paused","action":"pause","actor":"a","updated_at":"2026-05-01T09:00:00Z"}`
	if err := json.Unmarshal([]byte(raw), &d); err != nil || d.SessionID != "s" || d.BreakpointState != BreakpointPaused || d.Action != DebugPause {
		t.Fatalf("%+v, %v", d, err)
	}
	if !d.Holds() || (&DebugSession{BreakpointState: BreakpointStepping, Steps: 1}).Holds() || (*DebugSession)(nil).Holds() {
		t.Error("Holds: only a paused debugger holds its run")
	}
}
