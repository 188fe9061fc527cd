package delivery

// Heartbeat is an agent's state, sent as sendHeartbeat's body or as the
// agent member of a gateway heartbeat. Details is a closed set of keys,
// none of which may carry a secret, content or a path: a platform
// refuses an unknown key.
type Heartbeat struct {
	// Status is "ok" or "degraded" (then DegradedReasons says why).
	Status  string           `json:"status"`
	Details HeartbeatDetails `json:"details"`
}

// Heartbeat statuses.
const (
	HeartbeatOK       = "ok"
	HeartbeatDegraded = "degraded"
)

// HeartbeatDetails is what an agent tells of itself.
type HeartbeatDetails struct {
	Capabilities    *Capabilities `json:"capabilities,omitempty"`
	ActiveRuns      []string      `json:"active_runs,omitempty"`
	DegradedReasons []string      `json:"degraded_reasons,omitempty"`
	Adapter         *NameVersion  `json:"adapter,omitempty"`
	Runtime         *NameVersion  `json:"runtime,omitempty"`
	ProtocolVersion string        `json:"protocol_version,omitempty"`
}

// Capabilities are what an agent can do beyond plain runs. Followups is
// how it takes a follow-up while running: "steer" (into the running
// work) or "queue" (after it), empty when it cannot.
type Capabilities struct {
	Followups  string `json:"followups,omitempty"`
	Components bool   `json:"components,omitempty"`
	VoiceInput bool   `json:"voice_input,omitempty"`
	Title      bool   `json:"title,omitempty"`
	FilesOut   bool   `json:"files_out,omitempty"`
}

// NameVersion names a piece of software.
type NameVersion struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
}

// HeartbeatAck answers a heartbeat: send the next within IntervalMS.
type HeartbeatAck struct {
	IntervalMS int64 `json:"interval_ms"`
}
