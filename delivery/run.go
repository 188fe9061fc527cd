package delivery

import "time"

// RunState is where a run is, as an agent sees it.
type RunState string

const (
	RunQueued      RunState = "queued"
	RunRunning     RunState = "running"
	RunWaiting     RunState = "waiting"
	RunCompleted   RunState = "completed"
	RunFailed      RunState = "failed"
	RunCancelled   RunState = "cancelled"
	RunInterrupted RunState = "interrupted" // its adapter restarted while it ran; never retried
	RunStale       RunState = "stale"       // its adapter stopped answering; never retried
)

// Ended reports whether s is an ending.
func (s RunState) Ended() bool {
	switch s {
	case RunCompleted, RunFailed, RunCancelled, RunInterrupted, RunStale:
		return true
	}
	return false
}

// Reasons a run ends with, as an agent reports them in RunFinish.
const (
	ReasonInvalidToken        = "invalid_invocation_token"
	ReasonBillingModeMismatch = "billing_mode_mismatch"
	ReasonToolClassMismatch   = "tool_class_mismatch"
	ReasonRuntimeError        = "runtime_error"
	ReasonAdapterError        = "adapter_error"
	ReasonCancelled           = "cancelled"
	// ReasonInterrupted fails a run its adapter started and did not end
	// before it stopped (a crash, a kill): the next one ends it, never
	// retries it.
	ReasonInterrupted = "interrupted"
	// ReasonStale is the platform's reason for a run it failed because
	// its agent stopped reporting it: started, and then for the
	// platform's stale window neither listed in a heartbeat's
	// active_runs nor written by a call of it (its adapter died and did
	// not come back). Like an interrupted run, it is never retried.
	ReasonStale = "stale"
)

// Run is a pulled run as the agent sees it: its state, its version
// (every change adds one; patches name the version they build on) and
// the progress the agent reported.
type Run struct {
	ID          string   `json:"id"`
	AgentID     string   `json:"agent_id"`
	ThreadID    string   `json:"thread_id"`
	State       RunState `json:"state"`
	StateReason string   `json:"state_reason,omitempty"`
	Version     int64    `json:"version"`
	// Starts counts accepted startRun calls: never more than one.
	Starts int `json:"starts"`
	Progress
	CreatedAt time.Time `json:"created_at"`
	StartedAt time.Time `json:"started_at,omitzero"`
	EndedAt   time.Time `json:"ended_at,omitzero"`
}

// Progress is what an agent reports while a run works, changed by
// RunPatch operations on the paths of PatchPaths.
type Progress struct {
	StatusLine      string                   `json:"status_line,omitempty"`
	LastTextExcerpt string                   `json:"last_text_excerpt,omitempty"`
	Model           string                   `json:"model,omitempty"`
	Metrics         map[string]float64       `json:"metrics,omitempty"`
	LastAPIRetry    *APIRetry                `json:"last_api_retry,omitempty"`
	Cost            *Money                   `json:"cost,omitempty"`
	Plan            *Plan                    `json:"plan,omitempty"`
	Steps           []Step                   `json:"steps,omitempty"`
	Followups       map[string]FollowupState `json:"followups,omitempty"`
}

// APIRetry is the model API retry a run waits on.
type APIRetry struct {
	Attempt int       `json:"attempt"`
	Reason  string    `json:"reason,omitempty"`
	RetryAt time.Time `json:"retry_at,omitzero"`
}

// Money is an amount in millionths of a currency unit. An agent's report
// is an estimate.
type Money struct {
	AmountMicros int64  `json:"amount_micros"`
	Currency     string `json:"currency"`
	IsEstimate   bool   `json:"is_estimate"`
}

// Plan is the agent's plan, as lines.
type Plan struct {
	Items []PlanItem `json:"items"`
}

// PlanItem is one line of a plan.
type PlanItem struct {
	Title string `json:"title"`
	Done  bool   `json:"done,omitempty"`
}

// StepStatus is where a step is.
type StepStatus string

const (
	StepRunning   StepStatus = "running"
	StepSucceeded StepStatus = "succeeded"
	StepFailed    StepStatus = "failed"
	StepSkipped   StepStatus = "skipped"
)

// Step is one thing a run did (a model call, a tool call). The agent
// chooses ID (a UUIDv7); the platform numbers steps (Ordinal) as they
// are added.
type Step struct {
	ID           string     `json:"id"`
	Ordinal      int        `json:"ordinal"`
	Kind         string     `json:"kind"`
	Name         string     `json:"name,omitempty"`
	Title        string     `json:"title,omitempty"`
	Status       StepStatus `json:"status"`
	ParentStepID string     `json:"parent_step_id,omitempty"`
	Detail       string     `json:"detail,omitempty"`
	FinishedAt   time.Time  `json:"finished_at,omitzero"`
}

// FollowupState is how far a follow-up message reached a running run; it
// only moves forward.
type FollowupState string

const (
	FollowupDelivered FollowupState = "delivered" // handed to the runtime
	FollowupAbsorbed  FollowupState = "absorbed"  // taken into the run's work
)

// RunStart starts a queued run (startRun) with the newest invocation
// token in the InvocationTokenHeader. The agent reports the billing mode
// and tool class it will really use; a mismatch with the token fails
// the run.
type RunStart struct {
	BillingModeUsed    BillingMode      `json:"billing_mode_used"`
	ToolClassUsed      ToolClass        `json:"tool_class_used"`
	Model              string           `json:"model,omitempty"`
	ExternalSessionRef string           `json:"external_session_ref,omitempty"`
	BillingEvidence    *BillingEvidence `json:"billing_evidence,omitempty"`
}

// BillingEvidence backs an agent-paid billing mode: which account pays.
type BillingEvidence struct {
	Provider  string `json:"provider"`
	AccountID string `json:"account_id,omitempty"`
}

// RunResume resumes a waiting run (resumeRun) with the token of the
// event that answered it (a follow-up or an interaction).
type RunResume struct {
	BillingModeUsed BillingMode `json:"billing_mode_used"`
	ToolClassUsed   ToolClass   `json:"tool_class_used"`
}

// RunAwaitInput moves a running run to waiting (awaitRunInput).
type RunAwaitInput struct {
	StatusLine string `json:"status_line,omitempty"`
}

// RunFinish ends a run (finishRun): completed, failed or cancelled, with
// a reason for the latter two.
type RunFinish struct {
	State   RunState           `json:"state"`
	Reason  string             `json:"reason,omitempty"`
	Summary string             `json:"summary,omitempty"`
	Metrics map[string]float64 `json:"metrics,omitempty"`
	Costs   *CostReport        `json:"costs,omitempty"`
}

// CostReport is what a run cost, by the agent's estimate.
type CostReport struct {
	Total Money      `json:"total"`
	Items []CostItem `json:"items,omitempty"`
}

// CostItem is one line of a CostReport.
type CostItem struct {
	Name   string `json:"name"`
	Amount Money  `json:"amount"`
}

// RunPatch changes a run's progress: JSON Patch (RFC 6902) operations
// on the paths of PatchPaths, applied to the run at BaseVersion or
// refused with base_version_conflict (and the current run).
type RunPatch struct {
	BaseVersion int64     `json:"base_version"`
	Ops         []PatchOp `json:"ops"`
}

// PatchOp is one JSON Patch operation: add, replace or remove.
type PatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// RunPatchResult is the run's version after a patch.
type RunPatchResult struct {
	Version int64 `json:"version"`
}

// MessageCreate sends a message to a thread (createMessage). ClientMsgID
// (a UUIDv7 the agent chooses before the first try) makes a repeat a
// no-op: the platform answers the message it stored the first time.
type MessageCreate struct {
	ThreadID         string      `json:"thread_id"`
	ContentMD        string      `json:"content_md"`
	RunID            string      `json:"run_id,omitempty"`
	ReplyToMessageID string      `json:"reply_to_message_id,omitempty"`
	Kind             string      `json:"kind,omitempty"` // "text" (default) or "card"
	Components       []Component `json:"components,omitempty"`
	ClientMsgID      string      `json:"client_msg_id"`
}

// Message kinds.
const (
	MessageText = "text"
	MessageCard = "card"
)

// Message is a stored message.
type Message struct {
	ID          string    `json:"id"`
	ThreadID    string    `json:"thread_id"`
	RunID       string    `json:"run_id,omitempty"`
	ClientMsgID string    `json:"client_msg_id"`
	CreatedAt   time.Time `json:"created_at"`
}

// Component is an interactive element of a card message.
type Component struct {
	Type               string         `json:"type"` // "button", "select" or "form"
	CustomID           string         `json:"custom_id"`
	Label              string         `json:"label,omitempty"`
	Style              string         `json:"style,omitempty"`
	Options            []SelectOption `json:"options,omitempty"`
	Fields             []FormField    `json:"fields,omitempty"`
	RequiredCapability string         `json:"required_capability,omitempty"`
	RestrictedTo       string         `json:"restricted_to,omitempty"`
}

// SelectOption is one choice of a select.
type SelectOption struct {
	Label string `json:"label"`
	Value string `json:"value"`
}

// FormField is one field of a form: text, textarea, number, boolean or
// choice.
type FormField struct {
	Name     string         `json:"name"`
	Label    string         `json:"label"`
	Type     string         `json:"type"`
	Required bool           `json:"required,omitempty"`
	Choices  []SelectOption `json:"choices,omitempty"`
}
