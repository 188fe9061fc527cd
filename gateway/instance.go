package gateway

import "time"

// Instance is an agent installed for a tenant: what it runs, with which
// configuration, secrets and permissions.
type Instance struct {
	ID       string `json:"instance_id"`
	TenantID string `json:"tenant_id"`
	// Name is how people find it in lists; unique within the tenant.
	Name string `json:"name"`
	// Hosted names an agent the platform hosts in process (such as
	// "echo"); else URL is an A2A agent's base URL, registered in the
	// agent registry as AgentID.
	Hosted  string `json:"hosted,omitempty"`
	URL     string `json:"url,omitempty"`
	AgentID string `json:"agent_id,omitempty"`

	// Delivery is how the instance's runs reach its agent: DeliveryPush
	// (the platform calls it: Hosted, or URL) or DeliveryPull (the agent
	// connects out and pulls its invocations, as package delivery says;
	// it then has neither Hosted nor URL, and its id is the agent id
	// its tokens name).
	Delivery string `json:"delivery,omitempty"`
	// BillingMode and ToolClass are what a pull instance's invocation
	// tokens grant (package delivery's values; platform and chat when
	// empty).
	BillingMode string `json:"billing_mode,omitempty"`
	ToolClass   string `json:"tool_class,omitempty"`

	// Config reaches every run in the platform context.
	Config map[string]any `json:"config,omitempty"`
	// SecretNames are the names of the instance's secrets; the values are
	// sealed at rest (SealedSecrets) and sent only to the agent, sealed to
	// its recipient key.
	SecretNames   []string `json:"secret_names,omitempty"`
	SealedSecrets []byte   `json:"-"`
	// Memory is set when the agent uses memory; MemoryBudget is the
	// pre-fetch budget its runs carry.
	Memory       bool          `json:"memory"`
	MemoryBudget *MemoryBudget `json:"memory_budget,omitempty"`
	// Scopes are granted to every run's execution token.
	Scopes []string `json:"scopes,omitempty"`
	// CustomHeaders lists the header names a service account's run may
	// pass to the agent ("*": every safe name); none when empty.
	CustomHeaders []string `json:"custom_headers,omitempty"`
	// Published serves the agent's public card at the gateway.
	Published bool `json:"published"`

	Version   int64     `json:"version"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// How an instance's runs are delivered.
const (
	DeliveryPush = "push"
	DeliveryPull = "pull"
)

// Pulls reports whether the instance's agent pulls its runs.
func (in Instance) Pulls() bool { return in.Delivery == DeliveryPull }

// MemoryBudget bounds the memory pre-fetch of a run.
type MemoryBudget struct {
	TokenBudget     int `json:"token_budget"`
	LatencyBudgetMS int `json:"latency_budget_ms"`
}
