package gateway

import (
	"encoding/json"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/delivery"
)

// Paths of the gateway's REST API.
const (
	ExecutePath         = "/api/v1/execute"
	EventsPath          = "/api/v1/events/" // + run id
	StreamingHealthPath = "/api/v1/streaming/health"
	ServiceRunsPath     = "/api/v1/service/runs/" // + run id [+ "/events"]
	RunsPath            = "/api/v1/runs"          // list; + "/" + id [+ "/events" | "/cancel" | "/reply" | "/debug/" + action]
	InstancesPath       = "/api/v1/instances"     // list, install; + "/" + id
)

// Limits of an execute request.
const (
	// MaxInputChars is the longest input text, in characters (runes).
	MaxInputChars = 100_000
	// MaxAttachments is the most attachments one run takes.
	MaxAttachments = 16
	// MaxAttachmentNameLen is the longest attachment file name, in bytes.
	MaxAttachmentNameLen = 255
)

// Status is where a run is in its life.
type Status string

// The run lifecycle. A run starts QUEUED, is RUNNING while its agent
// works, WAITING_USER while it waits for a person's answer, and ends in
// COMPLETED, FAILED or CANCELLED.
const (
	StatusQueued      Status = "QUEUED"
	StatusRunning     Status = "RUNNING"
	StatusWaitingUser Status = "WAITING_USER"
	StatusCompleted   Status = "COMPLETED"
	StatusFailed      Status = "FAILED"
	StatusCancelled   Status = "CANCELLED"
)

// Terminal reports whether s is an ending: COMPLETED, FAILED or CANCELLED.
func (s Status) Terminal() bool {
	switch s {
	case StatusCompleted, StatusFailed, StatusCancelled:
		return true
	}
	return false
}

// Failure reports whether s is an ending other than success.
func (s Status) Failure() bool { return s == StatusFailed || s == StatusCancelled }

// Valid reports whether s is one of the six statuses.
func (s Status) Valid() bool {
	switch s {
	case StatusQueued, StatusRunning, StatusWaitingUser, StatusCompleted, StatusFailed, StatusCancelled:
		return true
	}
	return false
}

// Attachment is a file sent with a run: exactly one of URL (an absolute
// http or https URL) and Data (the bytes; base64 on the wire).
type Attachment struct {
	// Type is the file's media type or a logical type.
	Type string `json:"type"`
	URL  string `json:"url,omitempty"`
	Data []byte `json:"data,omitempty"`
	// Name is a plain file name: no path separator, no "..", no control
	// character.
	Name string `json:"name,omitempty"`
}

// ExecuteRequest is the body of POST /api/v1/execute.
type ExecuteRequest struct {
	InstanceID     string       `json:"instance_id"`
	Input          string       `json:"input"`
	ThreadID       string       `json:"thread_id,omitempty"`
	ConversationID string       `json:"conversation_id,omitempty"`
	Attachments    []Attachment `json:"attachments,omitempty"`
	// CustomHeaders are delivered to the agent as request headers; only a
	// service account may send them, and only names the instance allows
	// and that are safe (never Authorization, X-NovaOS-*, traceparent, …)
	// are kept. Values may be credentials: they are never logged.
	CustomHeaders map[string]string `json:"custom_headers,omitempty"`
	// OutputSchema is a JSON Schema the agent's structured output should
	// satisfy; it reaches the agent in the platform context.
	OutputSchema map[string]any `json:"output_schema,omitempty"`
}

// ExecuteResult is the answer to POST /api/v1/execute.
type ExecuteResult struct {
	RunID    string `json:"run_id"`
	Status   Status `json:"status"`
	ThreadID string `json:"thread_id,omitempty"`
	// EventsURL is the run's event stream, relative to the gateway.
	EventsURL string `json:"events_url,omitempty"`
}

// Caller says who started a run: the identity the gateway verified.
type Caller struct {
	// Subject is the token's subject (or "admin").
	Subject string `json:"subject,omitempty"`
	UserID  string `json:"user_id,omitempty"`
	// Service is set for a service account's run.
	Service bool `json:"service,omitempty"`
}

// Run is one execution of an instance: what was asked, where it is, and
// what it produced.
type Run struct {
	ID             string `json:"run_id"`
	TenantID       string `json:"tenant_id"`
	InstanceID     string `json:"instance_id"`
	AgentID        string `json:"agent_id,omitempty"`
	ThreadID       string `json:"thread_id,omitempty"`
	ConversationID string `json:"conversation_id,omitempty"`
	Caller         Caller `json:"caller"`

	Status Status `json:"status"`
	// Reason explains the status: why a run failed or was cancelled, what
	// it waits for. Every terminal status carries one.
	Reason string `json:"reason,omitempty"`
	// Pause is the payload a WAITING_USER run waits on, as its event
	// carried it: {"type": "hitl" | "connector.oauth_required" |
	// "tool.write_confirmation_required", …}.
	Pause json.RawMessage `json:"pause,omitempty"`

	// Input is the run's input text, and Attachments its files; a reply
	// to a paused run is recorded in Replies.
	Input        string         `json:"input"`
	Attachments  []Attachment   `json:"attachments,omitempty"`
	OutputSchema map[string]any `json:"output_schema,omitempty"`
	// Output is the text of the agent's final answer, when it gave one.
	Output    string     `json:"output,omitempty"`
	Artifacts []Artifact `json:"artifacts,omitempty"`

	// TaskID is the A2A task the agent works the run in (the run id for
	// a new task); ContextID is its A2A context.
	TaskID    string `json:"task_id,omitempty"`
	ContextID string `json:"context_id,omitempty"`
	// IdempotencyKey is the key of the current delivery: the same on
	// every retry of one turn, new for each reply.
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	// Turn counts deliveries that started a turn: 1 for the first, one
	// more for each reply. Attempt counts tries of the current turn.
	Turn    int `json:"turn"`
	Attempt int `json:"attempt"`
	// LastSequence is the sequence of the run's latest event.
	LastSequence int64 `json:"last_sequence"`

	// PendingInput is the reply the next delivery sends (a paused run that
	// was answered); empty otherwise.
	PendingInput json.RawMessage `json:"pending_input,omitempty"`
	// Debug is the run's debugger, once an action was applied to it.
	Debug *DebugSession `json:"debug,omitempty"`
	// LLMLimit is the run's own limit on its model use through the LLM
	// gateway, besides the gateway's budgets: the platform sets it on a
	// run a schedule starts (what the schedule's daily budget had left).
	// Its execution tokens carry it.
	LLMLimit LLMLimit `json:"llm_limit,omitzero"`

	// Pull is set on a run of a pull instance: how its agent works it.
	Pull *PullState `json:"pull,omitempty"`

	// CustomHeaders are sealed: the store keeps the bytes it is given and
	// the gateway never shows them.
	CustomHeaders []byte `json:"-"`

	// Lease: the dispatcher (Owner, a process id) that delivers the run,
	// until LeaseUntil. A QUEUED or RUNNING run whose lease lapsed is
	// claimed by another dispatcher. A pulled run is leased to its agent
	// (PullLeaseOwner) instead, once offered.
	LeaseOwner string    `json:"-"`
	LeaseUntil time.Time `json:"-"`
	// NotBefore delays the next claim (a retry's backoff).
	NotBefore time.Time `json:"-"`

	Version   int64     `json:"version"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	StartedAt time.Time `json:"started_at,omitzero"`
	EndedAt   time.Time `json:"ended_at,omitzero"`
}

// PullLeaseOwner holds the lease of a pulled run while its agent has
// it: until far ahead while the run waits to be pulled, and, once the
// agent started it, until its last sign of life plus the platform's
// stale window, so that a run whose agent went away is claimed again
// (and ended stale) when that lapses.
const PullLeaseOwner = "pull"

// PullState is a pulled run's side of delivery: the turn whose event
// was stored for the agent, how often the agent started the run (never
// more than once), the turn it last resumed the run at (each follow-up
// resumes it once), and the progress it reports.
type PullState struct {
	OfferedTurn int               `json:"offered_turn"`
	Starts      int               `json:"starts"`
	ResumedTurn int               `json:"resumed_turn,omitempty"`
	Progress    delivery.Progress `json:"progress,omitzero"`
}

// LLMLimit caps a run's model use in all of its calls: tokens, and cost
// in US dollars. Zero caps nothing.
type LLMLimit struct {
	MaxTokens  int64   `json:"max_tokens,omitempty"`
	MaxCostUSD float64 `json:"max_cost_usd,omitempty"`
}

// Artifact is an output of a run: the agent's A2A artifact, with the
// skill metadata the agent attached shown apart. Control data the agent
// sent for the platform never appears here.
type Artifact struct {
	ArtifactID  string         `json:"artifact_id"`
	Name        string         `json:"name,omitempty"`
	Description string         `json:"description,omitempty"`
	Parts       []a2a.Part     `json:"parts,omitempty"`
	Metadata    map[string]any `json:"metadata,omitempty"`
	// SkillMetadata is what the skill attached as metadata.
	SkillMetadata map[string]any `json:"skill_metadata,omitempty"`
}
