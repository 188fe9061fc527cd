package gate

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var base = Session{TenantID: "hallway", TeamID: "field-ops", AgentID: "po-agent"}

func with(f func(*Session)) Session { s := base; f(&s); return s }

func TestSessionValidate(t *testing.T) {
	tests := []struct {
		name string
		s    Session
		want string // "" for valid
	}{
		{"minimal", base, ""},
		{"park and resume", with(func(s *Session) {
			s.ID, s.Attach, s.Resume, s.Resumable, s.MaxHold = "n1", true, true, true, AdoptDeploymentWindow
		}), ""},
		{"own ceiling", with(func(s *Session) { s.MaxHold = 90 * time.Second }), ""},
		{"resume without attach", with(func(s *Session) { s.ID, s.Resume = "n1", true }), "resume requires attach"},
		{"attach without id", with(func(s *Session) { s.Attach = true }), "attach requires a session id"},
		{"no tenant", with(func(s *Session) { s.TenantID = "" }), "tenant_id is required"},
		{"no team and agent", with(func(s *Session) { s.TeamID, s.AgentID = "", "" }), "team_id is required; agent_id is required"},
		{"negative hold", with(func(s *Session) { s.MaxHold = -2 * time.Second }), "max_hold must be positive"},
		{"hold beyond the wire's range", with(func(s *Session) { s.MaxHold = 1 << 62 }), "max_hold must be positive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.s.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatalf("unexpected %v", err)
				}
				return
			}
			var k *KillError
			if !errors.As(err, &k) || k.Reason != ReasonConfig || k.Verdict != Kill {
				t.Fatalf("err = %#v, want a fail_closed_config KillError", err)
			}
			if !strings.HasPrefix(err.Error(), "[fail_closed_config] ") || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %q, want the prefix and %q", err, tt.want)
			}
		})
	}
}

func TestValidateWrite(t *testing.T) {
	resumed := with(func(s *Session) { s.ID, s.Attach, s.Resume = "n1", true, true })
	tests := []struct {
		name     string
		ctx      context.Context
		actionID string
		want     string
	}{
		{"fresh session mints ids", WithSession(context.Background(), base), "", ""},
		{"resumed with id", WithSession(context.Background(), resumed), "po-1", ""},
		{"resumed without id", WithSession(context.Background(), resumed), "", "must supply its own action id"},
		{"no session", context.Background(), "po-1", "needs a session"},
		{"bad session", WithSession(context.Background(), with(func(s *Session) { s.Resume = true })), "po-1", "resume requires attach"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateWrite(tt.ctx, tt.actionID)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("unexpected %v", err)
				}
				return
			}
			var k *KillError
			if !errors.As(err, &k) || k.Reason != ReasonConfig || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want fail_closed_config containing %q", err, tt.want)
			}
		})
	}
}

func TestSessionRequestWire(t *testing.T) {
	tests := []struct {
		name string
		s    Session
		want string
	}{
		{"default window declared explicitly", base,
			`{"tenant_id":"hallway","team_id":"field-ops","agent_id":"po-agent","max_hold_s":300}`},
		{"own ceiling", with(func(s *Session) { s.MaxHold = 1500 * time.Millisecond }),
			`{"tenant_id":"hallway","team_id":"field-ops","agent_id":"po-agent","max_hold_s":1.5}`},
		{"adopt the deployment window, resumed", with(func(s *Session) {
			s.ID, s.Attach, s.Resume, s.Resumable, s.MaxHold = "nightly-2026-09-03", true, true, true, AdoptDeploymentWindow
		}), `{"tenant_id":"hallway","team_id":"field-ops","agent_id":"po-agent","session_id":"nightly-2026-09-03","resumable":true,"attach":true,"resume":true,"adopt_deployment_window":true}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.s.Request())
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tt.want {
				t.Fatalf("got  %s\nwant %s", b, tt.want)
			}
			got, err := DecodeSessionRequest(b)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.s.Request(), got); d != "" {
				t.Fatalf("(-want +got):\n%s", d)
			}
		})
	}
	refused := []struct{ name, doc, want string }{
		{"both window forms", `{"tenant_id":"t","team_id":"t","agent_id":"a","max_hold_s":5,"adopt_deployment_window":true}`, "exclusive"},
		{"no window", `{"tenant_id":"t","team_id":"t","agent_id":"a"}`, "max_hold_s must be a positive"},
		{"resume without attach", `{"tenant_id":"t","team_id":"t","agent_id":"a","session_id":"s","resume":true,"max_hold_s":5}`, "resume requires attach"},
		{"unknown field", `{"tenant_id":"t","team_id":"t","agent_id":"a","max_hold_s":5,"poll_timeout_s":5}`, "unknown field"},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := DecodeSessionRequest([]byte(tt.doc)); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestDecodeSessionInfo(t *testing.T) {
	tests := []struct {
		name, doc string
		want      SessionInfo
		wantErr   string
	}{
		{name: "granted window", doc: `{"session_id":"s","hold_window_s":300}`, want: SessionInfo{SessionID: "s", HoldWindowS: 300}},
		{name: "indefinite attached", doc: `{"session_id":"s","hold_window_s":0,"hold_indefinite":true,"attached":true}`,
			want: SessionInfo{SessionID: "s", HoldIndefinite: true, Attached: true}},
		{name: "no window", doc: `{"session_id":"s","hold_window_s":0}`, wantErr: "hold_window_s"},
		{name: "no id", doc: `{"hold_window_s":1}`, wantErr: "session_id: required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			decoded(t, DecodeSessionInfo, tt.doc, tt.want, tt.wantErr)
		})
	}
}

func TestSessionInContext(t *testing.T) {
	if _, ok := SessionFrom(context.Background()); ok {
		t.Fatal("a session in an empty context")
	}
	if err := SetReasoning(context.Background(), "x"); err == nil {
		t.Fatal("SetReasoning without a session succeeded")
	}
	if err := Suspend(context.Background()); err == nil {
		t.Fatal("Suspend without a session succeeded")
	}

	ctx := WithSession(context.Background(), base)
	if got, ok := SessionFrom(ctx); !ok || got != base {
		t.Fatalf("SessionFrom = %+v, %v", got, ok)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() { _ = SetReasoning(ctx, "verified in CRM") })
	}
	wg.Wait()
	if got := Reasoning(ctx); got != "verified in CRM" {
		t.Fatalf("Reasoning = %q", got)
	}
	var k *KillError
	if err := Suspend(ctx); !errors.As(err, &k) || k.Reason != ReasonConfig {
		t.Fatalf("Suspend of a non-resumable session: %v", err)
	}
	if EndState(ctx) != SessionCompleted {
		t.Fatal("an unsuspended session does not complete")
	}

	parked := WithSession(ctx, with(func(s *Session) { s.ID, s.Resumable = "n1", true }))
	if err := Suspend(parked); err != nil {
		t.Fatal(err)
	}
	if EndState(parked) != SessionSuspended || EndState(ctx) != SessionCompleted {
		t.Fatal("Suspend did not park exactly the inner session")
	}
	if Reasoning(parked) != "" {
		t.Fatal("a new session inherited the outer session's reasoning")
	}
	b, _ := json.Marshal(SessionEnd{SessionID: "n1", State: EndState(parked)})
	if string(b) != `{"session_id":"n1","state":"suspended"}` {
		t.Fatalf("session end %s", b)
	}
}
