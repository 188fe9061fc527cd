package delivery

import (
	"encoding/json"
	"strconv"
)

// ProtocolVersion is the gateway protocol this package speaks.
const ProtocolVersion = "1"

// Frame is one WebSocket text message of the gateway: an operation and
// its data, one of the Gateway* types by Op.
type Frame struct {
	Op string          `json:"op"`
	D  json.RawMessage `json:"d,omitempty"`
}

// Operations. The platform sends hello, ready, resumed, event,
// heartbeat_ack, cursor, catchup_complete, resync_required and error;
// the agent sends identify, resume, heartbeat, ack, run.update and
// command.autocomplete_result.
const (
	OpHello              = "hello"
	OpIdentify           = "identify"
	OpReady              = "ready"
	OpResume             = "resume"
	OpResumed            = "resumed"
	OpEvent              = "event"
	OpHeartbeat          = "heartbeat"
	OpHeartbeatAck       = "heartbeat_ack"
	OpAck                = "ack"
	OpRunUpdate          = "run.update"
	OpAutocompleteResult = "command.autocomplete_result"
	OpCursor             = "cursor"
	OpCatchupComplete    = "catchup_complete"
	OpResyncRequired     = "resync_required"
	OpError              = "error"
)

// GatewayHello is the platform's first frame. DPoPNonce goes in the
// proof of identify or resume.
type GatewayHello struct {
	HeartbeatIntervalMS int64    `json:"heartbeat_interval_ms"`
	ResumeWindowMS      int64    `json:"resume_window_ms"`
	DPoPNonce           string   `json:"dpop_nonce,omitempty"`
	ProtocolVersions    []string `json:"protocol_versions"`
}

// GatewayIdentify opens a session for a consumer, which starts where the
// consumer's cursor is (at the agent's newest event, for a new one).
type GatewayIdentify struct {
	APIToken        string `json:"api_token"`
	DPoP            string `json:"dpop,omitempty"`
	Consumer        string `json:"consumer"`
	ProtocolVersion string `json:"protocol_version"`
}

// String leaves the token and proof out.
func (f GatewayIdentify) String() string { return "GatewayIdentify{consumer=" + f.Consumer + "}" }

// GoString leaves the token and proof out.
func (f GatewayIdentify) GoString() string { return f.String() }

// Principal is who a session acts for.
type Principal struct {
	ID   string `json:"id"`
	Kind string `json:"kind"`
}

// GatewayReady answers identify: the session and where its consumer is.
type GatewayReady struct {
	GatewaySessionID    string    `json:"gateway_session_id"`
	Principal           Principal `json:"principal"`
	Consumer            string    `json:"consumer"`
	AckedSeq            int64     `json:"acked_seq"`
	HeadSeq             int64     `json:"head_seq"`
	HeartbeatIntervalMS int64     `json:"heartbeat_interval_ms"`
	ResumeWindowMS      int64     `json:"resume_window_ms"`
}

// GatewayResume takes a session up again within its resume window:
// events after Cursor are sent again, each with a fresh token.
type GatewayResume struct {
	GatewaySessionID string `json:"gateway_session_id"`
	APIToken         string `json:"api_token"`
	DPoP             string `json:"dpop,omitempty"`
	Cursor           int64  `json:"cursor"`
}

// String leaves the token and proof out.
func (f GatewayResume) String() string {
	return "GatewayResume{session=" + f.GatewaySessionID + " cursor=" + strconv.FormatInt(f.Cursor, 10) + "}"
}

// GoString leaves the token and proof out.
func (f GatewayResume) GoString() string { return f.String() }

// GatewayResumed answers resume.
type GatewayResumed struct {
	GatewaySessionID string `json:"gateway_session_id"`
	Cursor           int64  `json:"cursor"`
	HeadSeq          int64  `json:"head_seq"`
}

// GatewayHeartbeat keeps a session alive; Agent is the agent's state.
type GatewayHeartbeat struct {
	LastSeq int64      `json:"last_seq"`
	Agent   *Heartbeat `json:"agent,omitempty"`
}

// GatewayHeartbeatAck answers a heartbeat.
type GatewayHeartbeatAck struct {
	IntervalMS int64 `json:"interval_ms"`
}

// GatewayAck acknowledges every event up to and including Seq.
type GatewayAck struct {
	Seq int64 `json:"seq"`
}

// GatewayRunUpdate is a RunPatch sent over the gateway, with the run's
// newest invocation token. Success has no answer (the run's version is
// then BaseVersion+1); a refusal is an error frame with Ref.
type GatewayRunUpdate struct {
	Ref             string    `json:"ref"`
	RunID           string    `json:"run_id"`
	InvocationToken string    `json:"invocation_token"`
	BaseVersion     int64     `json:"base_version"`
	Ops             []PatchOp `json:"ops"`
}

// String leaves the token out.
func (f GatewayRunUpdate) String() string {
	return "GatewayRunUpdate{ref=" + f.Ref + " run=" + f.RunID + " base=" + strconv.FormatInt(f.BaseVersion, 10) + "}"
}

// GoString leaves the token out.
func (f GatewayRunUpdate) GoString() string { return f.String() }

// GatewayAutocompleteResult answers a command.autocomplete_requested
// event by its Ref.
type GatewayAutocompleteResult struct {
	Ref     string         `json:"ref"`
	Choices []SelectOption `json:"choices"`
}

// GatewayCursor settles every sequence up to Seq that the session sends
// no event for (events of other kinds, ephemeral ones).
type GatewayCursor struct {
	Seq int64 `json:"seq"`
}

// GatewayCatchupComplete says every stored event up to HeadSeq was sent.
type GatewayCatchupComplete struct {
	HeadSeq int64 `json:"head_seq"`
}

// GatewayResyncRequired says the session's cursor cannot be served:
// identify again, without a cursor.
type GatewayResyncRequired struct {
	Reason string `json:"reason"`
}

// GatewayError refuses an operation: Op and Ref name it, Code and Status
// are a Problem's, Current is the run with base_version_conflict.
type GatewayError struct {
	Op      string          `json:"op"`
	Ref     string          `json:"ref,omitempty"`
	Code    string          `json:"code"`
	Status  int             `json:"status"`
	Detail  string          `json:"detail,omitempty"`
	Current json.RawMessage `json:"current,omitempty"`
}

// Reaction is what an agent does when the gateway closes its connection.
type Reaction int

const (
	// Reconnect: log it and connect again (resume when still in the window).
	Reconnect Reaction = iota
	// Stop: do not connect again; the owner must act.
	Stop
	// Resume: connect again after a backoff and resume the session.
	Resume
	// ResumeJittered: as Resume, the first try after a random part of the
	// base backoff (the platform restarts; spread the reconnects).
	ResumeJittered
	// Identify: connect again with a new session.
	Identify
	// Wait: connect again after the wait the close reason names.
	Wait
)

// CloseCode is one row of the gateway's close-code table.
type CloseCode struct {
	Code     int
	Reason   string
	Reaction Reaction
}

// Close codes the gateway ends a connection with. A reason carries the
// row's Reason, and for 4008 "rate_limited retry_after_ms=<n>".
const (
	CloseNormal            = 1000
	CloseGoingAway         = 1001
	CloseUnknownError      = 4000
	CloseUnknownOp         = 4001
	CloseDecodeError       = 4002
	CloseNotAuthenticated  = 4003
	CloseAuthFailed        = 4004
	CloseAlreadyIdentified = 4005
	CloseInvalidSession    = 4006
	CloseInvalidSeq        = 4007
	CloseRateLimited       = 4008
	CloseSessionTimeout    = 4009
	CloseInvalidConsumer   = 4011
	CloseBadVersion        = 4012
	CloseServerRestart     = 4013
	CloseBackpressure      = 4014
	CloseTakenOver         = 4015
	CloseAgentDisabled     = 4016
	CloseTokenRevoked      = 4017
	CloseTokenExpired      = 4018
)

// CloseCodes is the table, by code. A code not in it is Reconnect.
var CloseCodes = map[int]CloseCode{
	CloseNormal:            {CloseNormal, "normal", Stop},
	CloseGoingAway:         {CloseGoingAway, "going_away", Resume},
	CloseUnknownError:      {CloseUnknownError, "unknown_error", Resume},
	CloseUnknownOp:         {CloseUnknownOp, "unknown_op", Reconnect},
	CloseDecodeError:       {CloseDecodeError, "decode_error", Reconnect},
	CloseNotAuthenticated:  {CloseNotAuthenticated, "not_authenticated", Reconnect},
	CloseAuthFailed:        {CloseAuthFailed, "authentication_failed", Stop},
	CloseAlreadyIdentified: {CloseAlreadyIdentified, "already_identified", Reconnect},
	CloseInvalidSession:    {CloseInvalidSession, "invalid_session", Identify},
	CloseInvalidSeq:        {CloseInvalidSeq, "invalid_seq", Stop},
	CloseRateLimited:       {CloseRateLimited, "rate_limited", Wait},
	CloseSessionTimeout:    {CloseSessionTimeout, "session_timeout", Resume},
	CloseInvalidConsumer:   {CloseInvalidConsumer, "invalid_consumer", Stop},
	CloseBadVersion:        {CloseBadVersion, "protocol_version_unsupported", Stop},
	CloseServerRestart:     {CloseServerRestart, "server_restart", ResumeJittered},
	CloseBackpressure:      {CloseBackpressure, "backpressure", Resume},
	CloseTakenOver:         {CloseTakenOver, "consumer_taken_over", Stop},
	CloseAgentDisabled:     {CloseAgentDisabled, "agent_disabled", Stop},
	CloseTokenRevoked:      {CloseTokenRevoked, "token_revoked", Stop},
	CloseTokenExpired:      {CloseTokenExpired, "token_expired", Stop},
}

// ReactionTo looks a close code up: Reconnect for one not in the table.
func ReactionTo(code int) Reaction {
	if c, ok := CloseCodes[code]; ok {
		return c.Reaction
	}
	return Reconnect
}
