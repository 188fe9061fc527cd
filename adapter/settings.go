package adapter

import "time"

// Settings are the adapter's limits and timings, one field per
// configuration key (the key is in each field's comment). The platform
// is the authority on its own limits; these are what the adapter does
// on its side. The zero Settings is not useful: start from
// DefaultSettings.
type Settings struct {
	HTTPTimeout            time.Duration // sdk.http_timeout: one HTTP attempt
	RetryMaxAttempts       int           // sdk.retry_max_attempts: tries of a retryable call, rounds of a rebase
	RetryBackoffBase       time.Duration // sdk.retry_backoff_base
	RetryBackoffCap        time.Duration // sdk.retry_backoff_cap
	PollInterval           time.Duration // sdk.poll_interval: wait after an empty page
	InvocationTokenLeeway  time.Duration // adapter.invocation_token_leeway: clock skew allowed on iat and exp
	JWKSRefreshMinInterval time.Duration // adapter.jwks_refresh_min_interval: forced key reloads at most this often
	RunUpdateMinInterval   time.Duration // agent.run_update_min_interval: at most one patch per run this often
	ReconnectBackoffBase   time.Duration // sync.reconnect_backoff_base
	ReconnectBackoffCap    time.Duration // sync.reconnect_backoff_cap
	WSMaxFrameBytes        int64         // sync.ws_max_frame_bytes: longest gateway frame read
	ComponentMaxPerMessage int           // component.max_per_message
	ComponentCustomIDMax   int           // component.custom_id_max_chars
	ComponentFormMaxFields int           // component.form_max_fields
	AutocompleteMaxChoices int           // command.autocomplete_max_choices
	CommandDescriptionMax  int           // command.description_max_chars
}

// DefaultSettings returns the defaults, which match the platform's.
func DefaultSettings() Settings {
	return Settings{
		HTTPTimeout:            30 * time.Second,
		RetryMaxAttempts:       5,
		RetryBackoffBase:       200 * time.Millisecond,
		RetryBackoffCap:        10 * time.Second,
		PollInterval:           2 * time.Second,
		InvocationTokenLeeway:  30 * time.Second,
		JWKSRefreshMinInterval: 30 * time.Second,
		RunUpdateMinInterval:   time.Second,
		ReconnectBackoffBase:   500 * time.Millisecond,
		ReconnectBackoffCap:    30 * time.Second,
		WSMaxFrameBytes:        1 << 20,
		ComponentMaxPerMessage: 25,
		ComponentCustomIDMax:   100,
		ComponentFormMaxFields: 10,
		AutocompleteMaxChoices: 25,
		CommandDescriptionMax:  100,
	}
}
