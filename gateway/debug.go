package gateway

import (
	"strings"
	"time"
)

// DebugAction is what POST /api/v1/runs/{id}/debug/{action} asks of a
// run's debugger.
type DebugAction string

// The debugger's actions.
const (
	// DebugPause holds the run at its next event boundary: the gateway
	// records none of the agent's further events (it stops reading the
	// agent's stream, which pushes back on the agent; nothing is lost)
	// and starts no further turn.
	DebugPause DebugAction = "pause"
	// DebugStep lets one more of the agent's events through a paused
	// run, then holds it again; each step lets one more through.
	DebugStep DebugAction = "step"
	// DebugResume lets the run go on.
	DebugResume DebugAction = "resume"
	// DebugAbort cancels the run.
	DebugAbort DebugAction = "abort"
)

// Valid reports whether a is one of the four actions.
func (a DebugAction) Valid() bool {
	switch a {
	case DebugPause, DebugStep, DebugResume, DebugAbort:
		return true
	}
	return false
}

// BreakpointState is where a run's debugger holds it.
type BreakpointState string

// The debugger's states.
const (
	BreakpointRunning  BreakpointState = "running"  // not held
	BreakpointPaused   BreakpointState = "paused"   // held at an event boundary
	BreakpointStepping BreakpointState = "stepping" // held once Steps more events are through
	BreakpointAborted  BreakpointState = "aborted"  // the run was cancelled by the debugger
)

// EventDebugPrefix starts the type of the event that records a debugger
// action: "debug.pause", "debug.step", "debug.resume", "debug.abort",
// with a DebugPayload. No agent may report an event by such a name.
const EventDebugPrefix = "debug."

// IsDebugEvent reports whether an event type is the debugger's.
func IsDebugEvent(typ string) bool { return strings.HasPrefix(typ, EventDebugPrefix) }

// DebugSession is a run's debugger: made by the first action on the run
// and kept with it. It is also the answer to a debug action, whose
// session_id, run_id, breakpoint_state and action are the Python SDK's
// DebugControlResult.
type DebugSession struct {
	SessionID string `json:"session_id"`
	RunID     string `json:"run_id"`
	// BreakpointState is the state after the latest action, or after the
	// last step's event went through.
	BreakpointState BreakpointState `json:"breakpoint_state"`
	// Action is the latest action applied.
	Action DebugAction `json:"action"`
	// Steps is how many more events the steps asked for let through
	// before the run is held again (while stepping).
	Steps int `json:"steps,omitempty"`
	// Actor is who applied the latest action (a token's subject, or
	// "admin").
	Actor     string    `json:"actor,omitempty"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Holds reports whether the debugger holds the run: it is paused. (A
// stepping run has a step left; its last step's event pauses it.)
func (d *DebugSession) Holds() bool { return d != nil && d.BreakpointState == BreakpointPaused }

// DebugRequest is the body of a debug action; it may be empty.
type DebugRequest struct {
	// Metadata is kept with the action's event (a note, a ticket).
	Metadata map[string]any `json:"metadata,omitempty"`
}

// DebugPayload is the payload of a debug.<action> event.
type DebugPayload struct {
	SessionID       string          `json:"session_id"`
	Action          DebugAction     `json:"action"`
	BreakpointState BreakpointState `json:"breakpoint_state"`
	Actor           string          `json:"actor,omitempty"`
	Metadata        map[string]any  `json:"metadata,omitempty"`
}

// MaxDebugMetadataBytes bounds a debug action's metadata, as JSON.
const MaxDebugMetadataBytes = 16 << 10
