package gate

import (
	"context"
	"errors"
	"net/http"
	"time"

	"novaos.dev/novaos/a2a"
)

// Run is the Go form of the Python gate SDK's @augur.session: it opens (or,
// with Attach, re-enters) the session s on the gate, runs fn with the session
// in its context, and ends the session when fn returns: suspended when fn
// called Suspend or a resume met resume_no_standing_verdict, completed
// otherwise. s is validated before any request ([fail_closed_config]). A
// session without an ID gets a generated one (a UUIDv7, as the module's other
// ids), so a retried open presents the same session.
//
// The error is fn's; a failure to end the session is joined to it. A
// write fn made has run or not as its own error said, whatever the end.
func (c *Client) Run(ctx context.Context, s Session, fn func(ctx context.Context) error) error {
	ctx, _, err := c.Begin(ctx, s)
	if err != nil {
		return err
	}
	ferr := fn(ctx)
	return errors.Join(ferr, c.End(ctx))
}

// Begin opens or attaches to s and returns a context carrying it, with
// the gate's answer. End ends it. Most callers use Run.
func (c *Client) Begin(ctx context.Context, s Session) (context.Context, SessionInfo, error) {
	if err := s.Validate(); err != nil {
		return ctx, SessionInfo{}, err
	}
	if s.ID == "" {
		s.ID = a2a.NewID()
	}
	data, err := c.call(ctx, request{
		method: http.MethodPost, path: "/sessions", body: s.Request(), idempotent: true,
		ok: []int{http.StatusOK, http.StatusCreated},
	})
	if err != nil {
		return ctx, SessionInfo{}, failClosed(err, "", s.ID)
	}
	info, err := DecodeSessionInfo(data)
	if err != nil {
		return ctx, SessionInfo{}, failClosed(&protocolError{err}, "", s.ID)
	}
	if info.SessionID != s.ID {
		return ctx, SessionInfo{}, failClosed(protocolf("the gate answered for session %q", info.SessionID), "", s.ID)
	}
	st := &sessionState{cfg: s, opened: true, info: info, limits: c.evidence}
	return context.WithValue(ctx, sessionKey{}, st), info, nil
}

// End ends the session ctx carries as EndState says. It runs even when
// ctx is cancelled (a run that was stopped still ends its session), under
// its own DefaultTimeout.
func (c *Client) End(ctx context.Context) error {
	st, err := stateFrom(ctx, "End")
	if err != nil {
		return err
	}
	if !st.opened {
		return configError(st.cfg.ID, "", "End needs a session opened with Begin or Run")
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), DefaultTimeout)
	defer cancel()
	_, err = c.call(ctx, request{
		method: http.MethodPost, path: "/sessions/end", idempotent: true,
		body: SessionEnd{SessionID: st.info.SessionID, State: EndState(ctx)},
		ok:   []int{http.StatusNoContent, http.StatusOK},
	})
	if err != nil {
		return failClosed(err, "", st.info.SessionID)
	}
	return nil
}

// openedState returns the state of a session Begin opened.
func openedState(ctx context.Context) (*sessionState, error) {
	st, err := stateFrom(ctx, "a gated write")
	if err != nil {
		return nil, err
	}
	if !st.opened {
		return nil, configError(st.cfg.ID, "", "a gated write needs a session opened on the gate (Client.Run or Client.Begin), not only gate.WithSession")
	}
	return st, nil
}

// holdWindow is the granted window of a hold: the verdict's, else the
// session's; ok is false for an indefinite one.
func holdWindow(h *HoldStatus, info SessionInfo) (time.Duration, bool) {
	if h != nil {
		if h.Indefinite {
			return 0, false
		}
		return time.Duration(h.WindowS * float64(time.Second)), true
	}
	if info.HoldIndefinite {
		return 0, false
	}
	return time.Duration(info.HoldWindowS * float64(time.Second)), true
}
