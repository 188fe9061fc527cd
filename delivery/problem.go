package delivery

import (
	"encoding/json"
	"strconv"
)

// Problem is the API's RFC 9457 problem: the standard members, Code (a
// stable name to branch on, with Status), Reason (which case of Code),
// Errors (the fields at fault) and Current (the run as it is now, with
// base_version_conflict).
type Problem struct {
	Type          string          `json:"type,omitempty"`
	Title         string          `json:"title"`
	Status        int             `json:"status"`
	Detail        string          `json:"detail,omitempty"`
	Code          string          `json:"code"`
	Reason        string          `json:"reason,omitempty"`
	Errors        []FieldError    `json:"errors,omitempty"`
	Current       json.RawMessage `json:"current,omitempty"`
	CorrelationID string          `json:"correlation_id,omitempty"`
	// RetryAfter is in seconds, as the Retry-After header says it.
	RetryAfter int `json:"retry_after,omitempty"`
}

// FieldError is one field at fault: a code and the JSON pointer of the
// field in the request body.
type FieldError struct {
	Code    string `json:"code"`
	Pointer string `json:"pointer"`
	Detail  string `json:"detail,omitempty"`
}

func (p *Problem) Error() string {
	s := "delivery: " + strconv.Itoa(p.Status) + " " + p.Code
	if p.Reason != "" {
		s += " (" + p.Reason + ")"
	}
	if p.Detail != "" {
		s += ": " + p.Detail
	}
	return s
}

// Problem codes, each with the status it comes with.
const (
	CodeValidationFailed       = "validation_failed"        // 400; Errors names the fields
	CodeUnauthenticated        = "unauthenticated"          // 401; Reason invalid_dpop_proof when only the proof failed
	CodeUseDPoPNonce           = "use_dpop_nonce"           // 401; repeat with the DPoP-Nonce answered
	CodeForbidden              = "forbidden"                // 403
	CodeInvocationTokenInvalid = "invocation_token_invalid" // 403; Reason: expired, superseded, invalid, run_inactive
	CodeAgentInvocationDenied  = "agent_invocation_denied"  // 403; the agent may no longer run for the subject
	CodeNotFound               = "not_found"                // 404; not there, or not visible to the caller
	CodeAlreadyStarted         = "already_started"          // 409
	CodeBillingModeMismatch    = "billing_mode_mismatch"    // 409; the run failed
	CodeToolClassMismatch      = "tool_class_mismatch"      // 409; the run failed
	CodeBaseVersionConflict    = "base_version_conflict"    // 409; Current is the run
	CodeConflict               = "conflict"                 // 409; Reason run_not_active
	CodeVersionConflict        = "version_conflict"         // 409
	CodeRequestInProgress      = "request_in_progress"      // 409; the same Idempotency-Key is being answered
	CodeIdempotencyKeyReused   = "idempotency_key_reused"   // 422; the key came with another request
	CodeGone                   = "gone"                     // 410
	CodePreconditionFailed     = "precondition_failed"      // 412
	CodePayloadTooLarge        = "payload_too_large"        // 413
	CodeRateLimited            = "rate_limited"             // 429; with Retry-After
	CodeInternal               = "internal"                 // 500
	CodeSetupRequired          = "setup_required"           // 503; never retried
	CodeUnavailable            = "unavailable"              // 503; retried
)

// Reasons of invocation_token_invalid and conflict.
const (
	TokenExpired    = "expired"      // renew once, then start once more
	TokenSuperseded = "superseded"   // a newer token was delivered; start nothing with this one
	TokenInvalid    = "invalid"      // forged, of another run or agent, or not a token
	TokenConsumed   = "consumed"     // a resume token already used
	RunInactive     = "run_inactive" // the run has ended
	RunNotActive    = "run_not_active"
)

// InvalidDPoPProof is the Reason of an unauthenticated answer whose token
// is good but whose DPoP proof is not (stale, for another request, or
// used before): a new proof may pass.
const InvalidDPoPProof = "invalid_dpop_proof"
