package gate

import (
	"errors"
	"fmt"
	"time"
)

// HoldState is where a held action stands.
type HoldState string

const (
	HoldPending  HoldState = "pending"  // waiting for an operator
	HoldApproved HoldState = "approved" // an operator approved; the write may be claimed
	HoldDenied   HoldState = "denied"   // an operator denied; the write never runs
	HoldExpired  HoldState = "expired"  // the window elapsed; fails closed
)

// Valid reports whether s is one of the four states.
func (s HoldState) Valid() bool {
	switch s {
	case HoldPending, HoldApproved, HoldDenied, HoldExpired:
		return true
	}
	return false
}

// HoldStatus is what the gate reports about a hold: its state and the
// window the server granted, the smaller of the deployment's window and the
// session's declared max_hold_s.
type HoldStatus struct {
	ActionID string    `json:"action_id"`
	State    HoldState `json:"state"`
	// WindowS is the granted window in seconds; 0 with Indefinite set means
	// the hold waits until a person decides.
	WindowS    float64 `json:"window_s"`
	Indefinite bool    `json:"indefinite,omitempty"`
	// ExpiresAt is absent for an indefinite window.
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	// DecidedBy names the operator once the hold is decided (not a secret:
	// the operator's identity is part of the audit record).
	DecidedBy string     `json:"decided_by,omitempty"`
	DecidedAt *time.Time `json:"decided_at,omitempty"`
}

// Validate checks a hold status read from the gate.
func (h *HoldStatus) Validate() error {
	var errs []error
	if h.ActionID == "" {
		errs = append(errs, errors.New("action_id: required"))
	}
	if !h.State.Valid() {
		errs = append(errs, fmt.Errorf("state: %q is not pending, approved, denied or expired", h.State))
	}
	if h.WindowS < 0 {
		errs = append(errs, errors.New("window_s: must not be negative"))
	}
	if h.Indefinite && (h.WindowS != 0 || h.ExpiresAt != nil) {
		errs = append(errs, errors.New("indefinite: a window that never expires has no window_s or expires_at"))
	}
	if !h.Indefinite && h.WindowS == 0 {
		errs = append(errs, errors.New("window_s: required unless indefinite"))
	}
	return errors.Join(errs...)
}

// DecodeHoldStatus decodes a hold status strictly (see DecodeVerdict).
func DecodeHoldStatus(data []byte) (HoldStatus, error) {
	var h HoldStatus
	if err := decodeStrict(data, &h); err != nil {
		return HoldStatus{}, fmt.Errorf("gate: decode hold status: %w", err)
	}
	if err := h.Validate(); err != nil {
		return HoldStatus{}, fmt.Errorf("gate: decode hold status: %w", err)
	}
	return h, nil
}

// ClaimRequest asks for the right to execute an approved or passed action.
// A claim is a compare-and-set on the server: exactly one caller gets it.
type ClaimRequest struct {
	SessionID string `json:"session_id"`
	ActionID  string `json:"action_id"`
}

// ClaimStatus is the gate's answer to a claim.
type ClaimStatus string

const (
	// ClaimGranted: this caller holds the right to execute, fenced by
	// FencingToken.
	ClaimGranted ClaimStatus = "granted"
	// ClaimAlreadyExecuted: another run executed and acknowledged the
	// write at AcknowledgedAt.
	ClaimAlreadyExecuted ClaimStatus = "already_executed"
	// ClaimExecutionUnconfirmed: another claim was taken and never
	// acknowledged; an operator must settle it.
	ClaimExecutionUnconfirmed ClaimStatus = "execution_unconfirmed"
)

// Claim is the answer to a ClaimRequest. A granted claim is the right to
// execute: its fencing token must be presented with the acknowledgement,
// so a stale claimant cannot acknowledge over a newer one. A claim is a
// compare-and-set on the server: exactly one caller is granted it.
type Claim struct {
	SessionID    string      `json:"session_id"`
	ActionID     string      `json:"action_id"`
	Status       ClaimStatus `json:"status"`
	FencingToken uint64      `json:"fencing_token,omitempty"`
	ClaimedAt    *time.Time  `json:"claimed_at,omitempty"`
	// AcknowledgedAt is set with already_executed.
	AcknowledgedAt *time.Time `json:"acknowledged_at,omitempty"`
}

// Validate checks a claim read from the gate: a granted claim has a
// fencing token and a time, an already-executed one its acknowledgement
// time, and nothing else is mixed in.
func (c *Claim) Validate() error {
	var errs []error
	if c.SessionID == "" {
		errs = append(errs, errors.New("session_id: required"))
	}
	if c.ActionID == "" {
		errs = append(errs, errors.New("action_id: required"))
	}
	granted := c.Status == ClaimGranted
	switch c.Status {
	case ClaimGranted, ClaimAlreadyExecuted, ClaimExecutionUnconfirmed:
	default:
		errs = append(errs, fmt.Errorf("status: %q is not granted, already_executed or execution_unconfirmed", c.Status))
	}
	if granted != (c.FencingToken != 0) {
		errs = append(errs, errors.New("fencing_token: required with granted and only then"))
	}
	if granted != (c.ClaimedAt != nil) {
		errs = append(errs, errors.New("claimed_at: required with granted and only then"))
	}
	if (c.Status == ClaimAlreadyExecuted) != (c.AcknowledgedAt != nil) {
		errs = append(errs, errors.New("acknowledged_at: required with already_executed and only then"))
	}
	return errors.Join(errs...)
}

// DecodeClaim decodes a claim strictly (see DecodeVerdict).
func DecodeClaim(data []byte) (Claim, error) {
	var c Claim
	if err := decodeStrict(data, &c); err != nil {
		return Claim{}, fmt.Errorf("gate: decode claim: %w", err)
	}
	if err := c.Validate(); err != nil {
		return Claim{}, fmt.Errorf("gate: decode claim: %w", err)
	}
	return c, nil
}

// AckRequest acknowledges that the claimed write ran.
type AckRequest struct {
	SessionID    string    `json:"session_id"`
	ActionID     string    `json:"action_id"`
	FencingToken uint64    `json:"fencing_token"`
	ExecutedAt   time.Time `json:"executed_at"`
}

// Ack is the gate's record of an executed write. Its AcknowledgedAt is
// what AlreadyExecutedError reports to a later run.
type Ack struct {
	SessionID      string    `json:"session_id"`
	ActionID       string    `json:"action_id"`
	AcknowledgedAt time.Time `json:"acknowledged_at"`
}

// Validate checks an acknowledgement read from the gate.
func (a *Ack) Validate() error {
	var errs []error
	if a.SessionID == "" {
		errs = append(errs, errors.New("session_id: required"))
	}
	if a.ActionID == "" {
		errs = append(errs, errors.New("action_id: required"))
	}
	if a.AcknowledgedAt.IsZero() {
		errs = append(errs, errors.New("acknowledged_at: required"))
	}
	return errors.Join(errs...)
}

// DecodeAck decodes an acknowledgement strictly (see DecodeVerdict).
func DecodeAck(data []byte) (Ack, error) {
	var a Ack
	if err := decodeStrict(data, &a); err != nil {
		return Ack{}, fmt.Errorf("gate: decode ack: %w", err)
	}
	if err := a.Validate(); err != nil {
		return Ack{}, fmt.Errorf("gate: decode ack: %w", err)
	}
	return a, nil
}
