package gate_test

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"testing"

	"novaos.dev/novaos/gate"
)

var uuidV7 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestRunSessionLifecycle(t *testing.T) {
	fnErr := errors.New("the agent failed")
	tests := []struct {
		name     string
		session  gate.Session
		routes   map[string]handler
		fn       func(ctx context.Context) error
		wantEnd  gate.SessionEndState // "" : End not called
		wantErr  error                // errors.Is target
		reason   gate.Reason          // a KillError reason in the error
		attempts int                  // session opens
	}{
		{"completed", fresh, nil, func(context.Context) error { return nil }, gate.SessionCompleted, nil, "", 1},
		{"suspended by the run", with(fresh, func(s *gate.Session) { s.Resumable = true }), nil,
			func(ctx context.Context) error { return gate.Suspend(ctx) }, gate.SessionSuspended, nil, "", 1},
		{"fn's error is returned and the session still ends", fresh, nil,
			func(context.Context) error { return fnErr }, gate.SessionCompleted, fnErr, "", 1},
		{"a retried open presents the same session id", fresh, map[string]handler{"POST /sessions": seq(problem(503, ""), sessionOK(300, false))},
			func(context.Context) error { return nil }, gate.SessionCompleted, nil, "", 2},
		{"an open that keeps failing fails closed", fresh, map[string]handler{"POST /sessions": problem(503, "")},
			func(context.Context) error { t.Error("fn ran"); return nil }, "", nil, gate.ReasonServerUnavailable, 3},
		{"an open answered for another session", fresh, map[string]handler{"POST /sessions": raw(201, `{"session_id":"other","hold_window_s":300}`)},
			func(context.Context) error { t.Error("fn ran"); return nil }, "", nil, gate.ReasonProtocol, 1},
		{"an open with a malformed answer", fresh, map[string]handler{"POST /sessions": raw(201, `{"session_id":"x","hold_window_s":0}`)},
			func(context.Context) error { t.Error("fn ran"); return nil }, "", nil, gate.ReasonProtocol, 1},
		{"an end that fails is reported", fresh, map[string]handler{"POST /sessions/end": problem(500, "")},
			func(context.Context) error { return nil }, gate.SessionCompleted, nil, gate.ReasonServerUnavailable, 1},
		{"attach presents the caller's id", with(resumed, func(s *gate.Session) { s.Resume = false }), nil,
			func(context.Context) error { return nil }, gate.SessionCompleted, nil, "", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, tt.routes)
			c, _ := f.client(nil)
			err := c.Run(context.Background(), tt.session, tt.fn)
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			var k *gate.KillError
			if tt.reason != "" && (!errors.As(err, &k) || k.Reason != tt.reason) {
				t.Fatalf("err = %v, want reason %s", err, tt.reason)
			}
			if tt.wantErr == nil && tt.reason == "" && err != nil {
				t.Fatal(err)
			}
			if n := f.count("POST /sessions"); n != tt.attempts {
				t.Fatalf("%d opens, want %d", n, tt.attempts)
			}
			ids := map[string]bool{}
			for _, cl := range f.all() {
				if cl.path == "/sessions" {
					var req gate.SessionRequest
					json.Unmarshal(cl.body, &req)
					ids[req.SessionID] = true
					if tt.session.ID == "" && !uuidV7.MatchString(req.SessionID) {
						t.Fatalf("generated session id %q is not a UUIDv7", req.SessionID)
					}
					if tt.session.ID != "" && req.SessionID != tt.session.ID {
						t.Fatalf("session id %q, want the caller's %q", req.SessionID, tt.session.ID)
					}
				}
			}
			if len(ids) != 1 {
				t.Fatalf("opens presented %d session ids", len(ids))
			}
			var end gate.SessionEnd
			body := f.last("POST /sessions/end")
			if tt.wantEnd == "" {
				if body != nil {
					t.Fatal("a session never opened was ended")
				}
				return
			}
			json.Unmarshal(body, &end)
			if end.State != tt.wantEnd || !ids[end.SessionID] {
				t.Fatalf("ended %+v, want %s", end, tt.wantEnd)
			}
		})
	}
}
