package memory

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Limits of the NovaOS memory guide and the NovaOS Python SDK's memory
// client. Sizes are in bytes of UTF-8; reason lengths in characters, as
// that client counts them.
const (
	MaxContentBytes  = 32 << 10
	MaxHintBytes     = 8 << 10
	MaxContextBytes  = 8 << 10
	MaxReasonChars   = 500
	MaxTags          = 20
	MaxTagChars      = 64
	MaxTopK          = 100
	DefaultTopK      = 10
	MaxLiveMessages  = 100
	DefaultLiveLimit = 20
	MaxIDBytes       = 256
	MaxQueryBytes    = 32 << 10
	MaxCustomKeys    = 64
	// DefaultForgetReason is the reason Client.Forget sends when the
	// request gives none.
	DefaultForgetReason = "agent-requested"
)

// ErrInvalid is what every *ValidationError is (errors.Is).
var ErrInvalid = errors.New("memory: invalid request")

// ValidationError names the field of a request that breaks a rule, and
// the rule. It never quotes the field's value, which may be a secret.
type ValidationError struct {
	Field string // JSON path of the field, e.g. "metadata.tags[3]"
	Rule  string // what the field must be, e.g. "at most 32768 bytes"
}

func (e *ValidationError) Error() string { return "memory: " + e.Field + ": " + e.Rule }

// Is makes every ValidationError match ErrInvalid.
func (e *ValidationError) Is(target error) bool { return target == ErrInvalid }

func invalid(field, rule string, args ...any) error {
	return &ValidationError{Field: field, Rule: fmt.Sprintf(rule, args...)}
}

// Validate checks a write's arguments. It does not decide who may write
// which scope (that is the service's policy) and does not screen content.
func (r *WriteRequest) Validate() error {
	if err := validScope("scope", r.Scope); err != nil {
		return err
	}
	if err := validText("content", r.Content, MaxContentBytes, true); err != nil {
		return err
	}
	if err := validType("memory_type", r.MemoryType); err != nil {
		return err
	}
	if m := r.Metadata; m != nil {
		if err := validType("metadata.memory_type", m.MemoryType); err != nil {
			return err
		}
		if m.MemoryType != "" && r.MemoryType != "" && m.MemoryType != r.MemoryType {
			return invalid("metadata.memory_type", "must equal memory_type when both are given")
		}
		if err := validTags("metadata.tags", m.Tags); err != nil {
			return err
		}
		if m.Source != nil {
			if err := validText("metadata.source", *m.Source, MaxIDBytes, false); err != nil {
				return err
			}
		}
		if err := validConfidence("metadata.confidence", m.Confidence); err != nil {
			return err
		}
		if len(m.Custom) > MaxCustomKeys {
			return invalid("metadata.custom", "at most %d keys", MaxCustomKeys)
		}
	}
	if r.TTLSeconds != nil && *r.TTLSeconds <= 0 {
		return invalid("ttl_seconds", "must be a positive number of seconds")
	}
	if err := validClassification("classification", r.Classification); err != nil {
		return err
	}
	if err := validID("conversation_id", r.ConversationID, false); err != nil {
		return err
	}
	return validID("idempotency_key", r.IdempotencyKey, false)
}

// Type is the write's memory type, from either of its two places.
func (r *WriteRequest) Type() Type {
	if r.MemoryType != "" {
		return r.MemoryType
	}
	if r.Metadata != nil {
		return r.Metadata.MemoryType
	}
	return ""
}

// Validate checks a query's arguments.
func (r *QueryRequest) Validate() error {
	if err := validScope("scope", r.Scope); err != nil {
		return err
	}
	if err := validText("query", r.Query, MaxQueryBytes, false); err != nil {
		return err
	}
	if r.TopK != nil {
		if err := validRange("top_k", *r.TopK, 1, MaxTopK); err != nil {
			return err
		}
	}
	if b := r.Budget; b != nil && b.TopK != nil {
		if err := validRange("budget.top_k", *b.TopK, 1, MaxTopK); err != nil {
			return err
		}
	}
	if err := validType("memory_type", r.MemoryType); err != nil {
		return err
	}
	if err := validID("conversation_id", r.ConversationID, false); err != nil {
		return err
	}
	if err := validBudgets(r.TokenBudget, r.LatencyBudgetMS); err != nil {
		return err
	}
	if f := r.Filters; f != nil {
		if err := validType("filters.memory_type", f.MemoryType); err != nil {
			return err
		}
		if f.MemoryType != "" && r.MemoryType != "" && f.MemoryType != r.MemoryType {
			return invalid("filters.memory_type", "must equal memory_type when both are given")
		}
		if f.ConversationID != "" && r.ConversationID != "" && f.ConversationID != r.ConversationID {
			return invalid("filters.conversation_id", "must equal conversation_id when both are given")
		}
		if err := validID("filters.conversation_id", f.ConversationID, false); err != nil {
			return err
		}
		if err := validTags("filters.tags", f.Tags); err != nil {
			return err
		}
		if err := validClassification("filters.classification", f.Classification); err != nil {
			return err
		}
		if f.After != nil && f.Before != nil && !f.After.Before(*f.Before) {
			return invalid("filters.after", "must be earlier than filters.before")
		}
	}
	return nil
}

// Limit is the query's top_k: the top-level value, else the budget's,
// else DefaultTopK.
func (r *QueryRequest) Limit() int {
	switch {
	case r.TopK != nil:
		return *r.TopK
	case r.Budget != nil && r.Budget.TopK != nil:
		return *r.Budget.TopK
	}
	return DefaultTopK
}

// Validate checks an update's arguments.
func (r *UpdateRequest) Validate() error {
	if err := validScope("scope", r.Scope); err != nil {
		return err
	}
	if err := validMemoryID("memory_id", r.MemoryID); err != nil {
		return err
	}
	if r.Version < 1 {
		return invalid("version", "must be the memory's version as last read, 1 or more")
	}
	m := r.Metadata
	if r.Content == nil && (m == nil || m.Tags == nil && m.Confidence == nil && m.Custom == nil) {
		return invalid("content", "an update needs content or one of metadata.tags, metadata.confidence, metadata.custom")
	}
	if r.Content != nil {
		if err := validText("content", *r.Content, MaxContentBytes, true); err != nil {
			return err
		}
	}
	if m != nil {
		if err := validTags("metadata.tags", m.Tags); err != nil {
			return err
		}
		if err := validConfidence("metadata.confidence", m.Confidence); err != nil {
			return err
		}
		if len(m.Custom) > MaxCustomKeys {
			return invalid("metadata.custom", "at most %d keys", MaxCustomKeys)
		}
	}
	return nil
}

// Validate checks a forget's arguments.
func (r *ForgetRequest) Validate() error {
	if err := validScope("scope", r.Scope); err != nil {
		return err
	}
	if err := validMemoryID("memory_id", r.MemoryID); err != nil {
		return err
	}
	if err := ValidReason(r.Reason); err != nil {
		return err
	}
	return validID("idempotency_key", r.IdempotencyKey, false)
}

// ValidReason checks a forget reason: 1 to 500 characters of text.
func ValidReason(reason string) error {
	if !utf8.ValidString(reason) || strings.IndexByte(reason, 0) >= 0 {
		return invalid("reason", "must be UTF-8 text without NUL")
	}
	if n := utf8.RuneCountInString(reason); n < 1 || n > MaxReasonChars {
		return invalid("reason", "must be 1 to %d characters", MaxReasonChars)
	}
	if strings.TrimSpace(reason) == "" {
		return invalid("reason", "must not be blank")
	}
	return nil
}

// Validate checks a hint's arguments. ConversationID must be set: a client
// fills it from the context id before sending.
func (r *HintRequest) Validate() error {
	if err := validText("hint", r.Hint, MaxHintBytes, true); err != nil {
		return err
	}
	if err := validID("conversation_id", r.ConversationID, true); err != nil {
		return err
	}
	switch r.Priority {
	case "", PriorityLow, PriorityNormal, PriorityHigh:
	default:
		return invalid("priority", "must be low, normal or high")
	}
	if err := validTags("tags", r.Tags); err != nil {
		return err
	}
	return validText("context", r.Context, MaxContextBytes, false)
}

// Validate checks an assemble's arguments.
func (r *AssembleRequest) Validate() error {
	if err := validText("query", r.Query, MaxQueryBytes, false); err != nil {
		return err
	}
	if r.TopK != nil {
		if err := validRange("top_k", *r.TopK, 1, MaxTopK); err != nil {
			return err
		}
	}
	if r.LiveMessageLimit != nil {
		if err := validRange("live_message_limit", *r.LiveMessageLimit, 1, MaxLiveMessages); err != nil {
			return err
		}
	}
	if err := validType("memory_type", r.MemoryType); err != nil {
		return err
	}
	if err := validID("conversation_id", r.ConversationID, false); err != nil {
		return err
	}
	return validBudgets(r.TokenBudget, r.LatencyBudgetMS)
}

// ParseType reads a memory type, refusing anything but the three types
// (and empty, for untyped).
func ParseType(s string) (Type, error) {
	t := Type(s)
	if err := validType("memory_type", t); err != nil {
		return "", err
	}
	return t, nil
}

func validScope(field string, s Scope) error {
	if !s.Valid() {
		return invalid(field, "must be one of run, task, agent, user, tenant")
	}
	return nil
}

func validType(field string, t Type) error {
	if !t.Valid() {
		return invalid(field, "must be semantic, episodic or procedural")
	}
	return nil
}

func validClassification(field, c string) error {
	switch c {
	case "", ClassInferred, ClassExplicit, ClassSystem, ClassConfidential:
		return nil
	}
	return invalid(field, "must be inferred, explicit, system or confidential")
}

func validText(field, s string, maxBytes int, required bool) error {
	if required && strings.TrimSpace(s) == "" {
		return invalid(field, "is required and must not be blank")
	}
	if len(s) > maxBytes {
		return invalid(field, "must be at most %d bytes", maxBytes)
	}
	if !utf8.ValidString(s) || strings.IndexByte(s, 0) >= 0 {
		return invalid(field, "must be UTF-8 text without NUL")
	}
	return nil
}

// validID checks an identifier: printable, no spaces, at most MaxIDBytes.
func validID(field, s string, required bool) error {
	if s == "" {
		if required {
			return invalid(field, "is required")
		}
		return nil
	}
	if len(s) > MaxIDBytes {
		return invalid(field, "must be at most %d bytes", MaxIDBytes)
	}
	if !utf8.ValidString(s) {
		return invalid(field, "must be UTF-8")
	}
	for _, r := range s {
		if !unicode.IsPrint(r) || unicode.IsSpace(r) {
			return invalid(field, "must be printable characters without spaces")
		}
	}
	return nil
}

func validMemoryID(field, id string) error {
	if err := validID(field, id, true); err != nil {
		return err
	}
	if strings.HasPrefix(id, ProposalPrefix) {
		return invalid(field, "is a proposal id (%s…); pass the committed memory's id from query", ProposalPrefix)
	}
	return nil
}

func validTags(field string, tags []string) error {
	if len(tags) > MaxTags {
		return invalid(field, "at most %d tags", MaxTags)
	}
	for i, t := range tags {
		f := fmt.Sprintf("%s[%d]", field, i)
		if t == "" || utf8.RuneCountInString(t) > MaxTagChars {
			return invalid(f, "must be 1 to %d characters", MaxTagChars)
		}
		if !utf8.ValidString(t) {
			return invalid(f, "must be UTF-8")
		}
		for _, r := range t {
			// TagSep is reserved for the stores' tag lists.
			if !unicode.IsPrint(r) || r == TagSep {
				return invalid(f, "must be printable characters")
			}
		}
	}
	return nil
}

func validConfidence(field string, c *float64) error {
	if c != nil && (math.IsNaN(*c) || *c < 0 || *c > 1) {
		return invalid(field, "must be between 0 and 1")
	}
	return nil
}

func validRange(field string, v, lo, hi int) error {
	if v < lo || v > hi {
		return invalid(field, "must be %d to %d", lo, hi)
	}
	return nil
}

func validBudgets(tokens, latency *int) error {
	if tokens != nil && *tokens < 1 {
		return invalid("token_budget", "must be 1 or more")
	}
	if latency != nil && *latency < 1 {
		return invalid("latency_budget_ms", "must be 1 or more")
	}
	return nil
}
