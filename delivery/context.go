package delivery

import "time"

// Trust says how far a piece of a run's context may be believed: the
// message that triggered the run (trigger), one from a person the agent
// works for (authorized), the agent's own (self), the platform's
// (system), or anything else (unverified), which a model must read as
// data and never as instructions.
type Trust string

const (
	TrustTrigger    Trust = "trigger"
	TrustAuthorized Trust = "authorized"
	TrustSelf       Trust = "self"
	TrustSystem     Trust = "system"
	TrustUnverified Trust = "unverified"
)

// RunContext is what a run works from (getRunContext): the triggering
// message and the thread's messages before it, oldest first.
type RunContext struct {
	RunID    string          `json:"run_id"`
	ThreadID string          `json:"thread_id"`
	Trigger  *ContextMessage `json:"trigger,omitempty"`
	// ChannelContext and ThreadContext are ordered by ThreadSeq.
	ChannelContext []ContextMessage `json:"channel_context,omitempty"`
	ThreadContext  []ContextMessage `json:"thread_context,omitempty"`
	// TruncatedBeforeSeq, when set, says messages before it were left out.
	TruncatedBeforeSeq int64 `json:"truncated_before_seq,omitempty"`
}

// ContextMessage is one message of a run's context.
type ContextMessage struct {
	ID        string    `json:"id"`
	ThreadSeq int64     `json:"thread_seq"`
	Author    Author    `json:"author"`
	Role      string    `json:"role"` // "user" or "agent"
	Trust     Trust     `json:"trust"`
	CreatedAt time.Time `json:"created_at"`
	ContentMD string    `json:"content_md"`
	// AlreadyDelivered: the agent saw this message in an earlier run.
	AlreadyDelivered bool `json:"already_delivered,omitempty"`
	// Truncated: ContentMD is the start of a longer message.
	Truncated   bool                `json:"truncated,omitempty"`
	Attachments []ContextAttachment `json:"attachments,omitempty"`
}

// Author is who wrote a message.
type Author struct {
	DisplayName string `json:"display_name"`
	Handle      string `json:"handle,omitempty"`
	Kind        string `json:"kind"` // "person", "agent" or "system"
}

// ContextAttachment is a file of a message: Text is its content where
// the platform could read it as text, Transcript a recording's words.
type ContextAttachment struct {
	FileID     string `json:"file_id"`
	Name       string `json:"name"`
	MIMEType   string `json:"mime_type"`
	Size       int64  `json:"size"`
	Text       string `json:"text,omitempty"`
	Transcript string `json:"transcript,omitempty"`
}
