package gate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"
)

// DefaultMaxHold is what a session declares it can wait for a hold when it
// declares nothing: the Python gate SDK's poll_timeout_s default of 5
// minutes.
const DefaultMaxHold = 5 * time.Minute

// AdoptDeploymentWindow, as Session.MaxHold, declares that the session
// waits as long as the deployment says a hold may wait (the Python gate
// SDK's augur.ADOPT_DEPLOYMENT_WINDOW). It is opt-in because a process that
// dies mid-wait turns a hold a person was asked to judge into a fail-closed
// stop.
const AdoptDeploymentWindow time.Duration = -1

// Session is one governed trajectory: every read, the reasoning and the
// writes of one agent run. Put it in a context with WithSession.
type Session struct {
	TenantID string
	TeamID   string
	AgentID  string
	// ID is the caller's own session id ("nightly-2026-09-03"); empty lets
	// the gate mint one. A session that may be resumed needs its own, so a
	// later run can present it again.
	ID string
	// Resumable declares the session can park: a hold raises PausedError
	// instead of blocking.
	Resumable bool
	// Attach re-enters an existing session with ID instead of opening one.
	Attach bool
	// Resume asks, for each write, for the standing verdict of its action
	// id. It requires Attach, and every write must supply its action id.
	Resume bool
	// MaxHold is the longest this session can wait for a hold: 0 declares
	// DefaultMaxHold, AdoptDeploymentWindow adopts the deployment's window.
	// The gate grants the smaller of this and the deployment's window.
	MaxHold time.Duration
}

// Validate reports the configuration errors the Python gate SDK refuses
// before any request, as a *KillError with reason fail_closed_config.
func (s Session) Validate() error {
	var problems []string
	if s.TenantID == "" {
		problems = append(problems, "tenant_id is required")
	}
	if s.TeamID == "" {
		problems = append(problems, "team_id is required")
	}
	if s.AgentID == "" {
		problems = append(problems, "agent_id is required")
	}
	if s.Resume && !s.Attach {
		problems = append(problems, "resume requires attach")
	}
	if s.Attach && s.ID == "" {
		problems = append(problems, "attach requires a session id")
	}
	if (s.MaxHold < 0 && s.MaxHold != AdoptDeploymentWindow) || s.MaxHold.Seconds() > math.MaxInt32 {
		problems = append(problems, "max_hold must be positive (at most 2^31-1 s), 0 for the default, or AdoptDeploymentWindow")
	}
	if len(problems) == 0 {
		return nil
	}
	return configError(s.ID, "", joinProblems(problems))
}

// ValidateWrite is what a gated write checks before it sends anything:
// there is a valid session in ctx, and a write in a resumed session brings
// its own action id (a minted one could never match the standing verdict).
func ValidateWrite(ctx context.Context, actionID string) error {
	s, ok := SessionFrom(ctx)
	if !ok {
		return configError("", actionID, "a gated write needs a session in its context (gate.WithSession)")
	}
	if err := s.Validate(); err != nil {
		return err
	}
	if s.Resume && actionID == "" {
		return configError(s.ID, "", "a write in a resumed session must supply its own action id")
	}
	return nil
}

func joinProblems(p []string) string {
	out := p[0]
	for _, s := range p[1:] {
		out += "; " + s
	}
	return out
}

// Request returns the wire form of the session's declaration.
func (s Session) Request() SessionRequest {
	r := SessionRequest{
		TenantID: s.TenantID, TeamID: s.TeamID, AgentID: s.AgentID, SessionID: s.ID,
		Resumable: s.Resumable, Attach: s.Attach, Resume: s.Resume,
	}
	switch {
	case s.MaxHold == AdoptDeploymentWindow:
		r.AdoptDeploymentWindow = true
	case s.MaxHold == 0:
		r.MaxHoldS = DefaultMaxHold.Seconds()
	default:
		r.MaxHoldS = s.MaxHold.Seconds()
	}
	return r
}

// SessionRequest opens or attaches to a session.
type SessionRequest struct {
	TenantID  string `json:"tenant_id"`
	TeamID    string `json:"team_id"`
	AgentID   string `json:"agent_id"`
	SessionID string `json:"session_id,omitempty"`
	Resumable bool   `json:"resumable,omitempty"`
	Attach    bool   `json:"attach,omitempty"`
	Resume    bool   `json:"resume,omitempty"`
	// MaxHoldS is the declared ceiling in seconds (fractions allowed, as
	// in the Python gate SDK); it is absent when AdoptDeploymentWindow is set.
	MaxHoldS              float64 `json:"max_hold_s,omitempty"`
	AdoptDeploymentWindow bool    `json:"adopt_deployment_window,omitempty"`
}

// Validate checks a session request as the service receives it.
func (r *SessionRequest) Validate() error {
	s := Session{
		TenantID: r.TenantID, TeamID: r.TeamID, AgentID: r.AgentID, ID: r.SessionID,
		Resumable: r.Resumable, Attach: r.Attach, Resume: r.Resume,
	}
	if err := s.Validate(); err != nil {
		return err
	}
	switch {
	case r.AdoptDeploymentWindow && r.MaxHoldS != 0:
		return configError(r.SessionID, "", "max_hold_s and adopt_deployment_window are exclusive")
	case !r.AdoptDeploymentWindow && !(r.MaxHoldS > 0 && r.MaxHoldS <= math.MaxInt32):
		return configError(r.SessionID, "", "max_hold_s must be a positive number of seconds")
	}
	return nil
}

// DecodeSessionRequestUnvalidated decodes a session request as strictly
// as DecodeSessionRequest and leaves Validate to the caller: the gate
// fills an omitted agent_id with its token's before it validates.
func DecodeSessionRequestUnvalidated(data []byte) (SessionRequest, error) {
	var r SessionRequest
	if err := decodeStrict(data, &r); err != nil {
		return SessionRequest{}, fmt.Errorf("gate: decode session request: %w", err)
	}
	return r, nil
}

// DecodeSessionRequest decodes a session request strictly.
func DecodeSessionRequest(data []byte) (SessionRequest, error) {
	var r SessionRequest
	if err := decodeStrict(data, &r); err != nil {
		return SessionRequest{}, fmt.Errorf("gate: decode session request: %w", err)
	}
	if err := r.Validate(); err != nil {
		return SessionRequest{}, err
	}
	return r, nil
}

// SessionInfo is the gate's answer to a SessionRequest.
type SessionInfo struct {
	SessionID string `json:"session_id"`
	// HoldWindowS is the granted hold window in seconds: the smaller of the
	// deployment's window and the declared max_hold_s. 0 with
	// HoldIndefinite set means holds wait until a person decides.
	HoldWindowS    float64 `json:"hold_window_s"`
	HoldIndefinite bool    `json:"hold_indefinite,omitempty"`
	// Attached is true when an existing session was re-entered.
	Attached bool `json:"attached,omitempty"`
}

// DecodeSessionInfo decodes a session answer strictly.
func DecodeSessionInfo(data []byte) (SessionInfo, error) {
	var s SessionInfo
	if err := decodeStrict(data, &s); err != nil {
		return SessionInfo{}, fmt.Errorf("gate: decode session: %w", err)
	}
	var errs []error
	if s.SessionID == "" {
		errs = append(errs, errors.New("session_id: required"))
	}
	if s.HoldWindowS < 0 || (s.HoldIndefinite && s.HoldWindowS != 0) || (!s.HoldIndefinite && s.HoldWindowS == 0) {
		errs = append(errs, errors.New("hold_window_s: a positive window, or 0 with hold_indefinite"))
	}
	if err := errors.Join(errs...); err != nil {
		return SessionInfo{}, fmt.Errorf("gate: decode session: %w", err)
	}
	return s, nil
}

// SessionEndState is how a session ends.
type SessionEndState string

const (
	// SessionCompleted closes the session; it cannot be attached again.
	SessionCompleted SessionEndState = "completed"
	// SessionSuspended parks it for a later run to attach and resume.
	SessionSuspended SessionEndState = "suspended"
)

// SessionEnd closes or parks a session when its run returns.
type SessionEnd struct {
	SessionID string          `json:"session_id"`
	State     SessionEndState `json:"state"`
}

type sessionKey struct{}

// sessionState is a session in a context: its declaration and what the run
// changes while it goes (the reasoning text, the suspend request).
type sessionState struct {
	cfg       Session
	mu        sync.Mutex
	reasoning string
	suspended bool

	// Set by Client.Begin: the gate's answer, and the evidence bounds of
	// the client that opened the session.
	opened bool
	info   SessionInfo
	limits EvidenceLimits
	// park ends the session suspended although Suspend was not called: a
	// resume met resume_no_standing_verdict (as in the Python gate SDK, the
	// session parks on the way out so the retry can attach).
	park bool
	// calls counts the session's tool calls (reads and writes) for
	// Provenance.Sequence; evidence is the buffer of reads and evBytes
	// its size.
	calls    int
	evidence []Evidence
	evBytes  int
}

// WithSession returns a context carrying s. Everything run under it is
// one governed trajectory. s is validated when a write checks it
// (ValidateWrite), so a misconfigured session fails closed at its first
// write rather than here.
func WithSession(ctx context.Context, s Session) context.Context {
	return context.WithValue(ctx, sessionKey{}, &sessionState{cfg: s})
}

// SessionFrom returns the session ctx carries.
func SessionFrom(ctx context.Context) (Session, bool) {
	st, ok := ctx.Value(sessionKey{}).(*sessionState)
	if !ok {
		return Session{}, false
	}
	return st.cfg, true
}

func stateFrom(ctx context.Context, op string) (*sessionState, error) {
	st, ok := ctx.Value(sessionKey{}).(*sessionState)
	if !ok {
		return nil, configError("", "", op+" needs a session in its context (gate.WithSession)")
	}
	return st, nil
}

// SetReasoning records the agent's stated reasoning for the session's next
// gated write (the Python gate SDK's augur.set_reasoning); a later call
// replaces it.
func SetReasoning(ctx context.Context, text string) error {
	st, err := stateFrom(ctx, "SetReasoning")
	if err != nil {
		return err
	}
	st.mu.Lock()
	st.reasoning = text
	st.mu.Unlock()
	return nil
}

// Reasoning returns the text SetReasoning recorded in ctx's session.
func Reasoning(ctx context.Context) string {
	st, err := stateFrom(ctx, "Reasoning")
	if err != nil {
		return ""
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.reasoning
}

// Suspend asks that ctx's session park when its run ends instead of
// completing (the Python gate SDK's augur.suspend), so a later run can attach
// and resume it. Only a resumable session can park.
func Suspend(ctx context.Context) error {
	st, err := stateFrom(ctx, "Suspend")
	if err != nil {
		return err
	}
	if !st.cfg.Resumable {
		return configError(st.cfg.ID, "", "only a resumable session can be suspended")
	}
	st.mu.Lock()
	st.suspended = true
	st.mu.Unlock()
	return nil
}

// EndState returns how ctx's session should end: suspended after Suspend
// or after a resume met resume_no_standing_verdict, completed otherwise.
func EndState(ctx context.Context) SessionEndState {
	st, err := stateFrom(ctx, "EndState")
	if err != nil {
		return SessionCompleted
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.suspended || st.park {
		return SessionSuspended
	}
	return SessionCompleted
}
