package heartbeat

import (
	"math"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// BasePath is where the agent-ops API is served under a server's base URL.
const BasePath = "/api/v1/agent-ops"

// ConfigsPath is the path of an instance's heartbeat configs (list,
// create); + "/" + config id [+ "/pause" | "/resume"] for one of them.
func ConfigsPath(agentID, instanceID string) string {
	return BasePath + "/agents/" + pathEscape(agentID) + "/instances/" + pathEscape(instanceID) + "/heartbeat-configs"
}

func pathEscape(s string) string { return url.PathEscape(s) }

// Problem type URIs of the API (RFC 9457 "type"); clients may branch on
// them.
const (
	ProblemInvalidRequest   = "https://novaos.dev/problems/invalid-request"     // 400, a field breaks a rule (errors names it)
	ProblemConfigExists     = "https://novaos.dev/problems/heartbeat-exists"    // 409, the instance has a config already
	ProblemConfigNotFound   = "https://novaos.dev/problems/heartbeat-not-found" // 404
	ProblemInstanceNotFound = "https://novaos.dev/problems/instance-not-found"  // 404, no such instance of that agent in the tenant
)

// Status is whether a config's schedule fires.
type Status string

const (
	StatusActive Status = "active"
	StatusPaused Status = "paused"
)

// Valid reports whether s is active or paused.
func (s Status) Valid() bool { return s == StatusActive || s == StatusPaused }

// Limits of a config, which the service and every Store refuse to exceed.
const (
	// MaxTaskContentChars is the longest task content, in characters: the
	// longest input a run takes.
	MaxTaskContentChars = 100_000
	// MaxDailyRuns is the largest max_daily_runs: a schedule fires at most
	// once a minute.
	MaxDailyRuns = 24 * 60
	// MaxDailyTokens and MaxDailyCostUSD bound the other two caps.
	MaxDailyTokens  = 1_000_000_000_000
	MaxDailyCostUSD = 1_000_000_000
	MaxCronBytes    = 256
	MaxTimezoneLen  = 64
	MaxImageBytes   = 1024
	MaxIDBytes      = 128
	// MaxReasonBytes bounds the reason a fire's record keeps.
	MaxReasonBytes = 1024
)

// DefaultTimezone is the zone of a config that names none.
const DefaultTimezone = "UTC"

// Budget caps what a config's scheduled runs may use in one day (midnight
// to midnight in the config's time zone). MaxDailyRuns is required; a zero
// MaxDailyTokens or MaxDailyCostUSD sets no cap of its own.
type Budget struct {
	MaxDailyRuns    int     `json:"max_daily_runs"`
	MaxDailyTokens  int64   `json:"max_daily_tokens"`
	MaxDailyCostUSD float64 `json:"max_daily_cost_usd"`
}

// CreateRequest is the body of a create (POST ConfigsPath).
type CreateRequest struct {
	// CronExpression is a five-field cron expression (package
	// heartbeat/cron), read in Timezone.
	CronExpression string `json:"cron_expression"`
	// AgentImage and AgentImageTag name the OCI image the caller builds
	// the agent from. They are kept and shown; the platform runs the
	// instance as it is installed, not an image.
	AgentImage    string `json:"agent_image"`
	AgentImageTag string `json:"agent_image_tag"`
	// TaskContent is the input of every scheduled run.
	TaskContent string `json:"task_content"`
	// Budget is required: there is no unlimited default.
	Budget *Budget `json:"budget"`
	// Timezone is an IANA zone name (default DefaultTimezone).
	Timezone string `json:"timezone,omitempty"`
	// AgentID and InstanceID may repeat the path's; different ones are
	// refused.
	AgentID    string `json:"agent_id,omitempty"`
	InstanceID string `json:"instance_id,omitempty"`
}

// ConfigCreated is the answer to a create (201).
type ConfigCreated struct {
	ConfigID   string `json:"config_id"`
	InstanceID string `json:"instance_id"`
	Status     Status `json:"status"`
	// TemporalScheduleID is the id of the config's schedule (the field's
	// name is the NovaOS Python SDK's; no Temporal is involved).
	TemporalScheduleID string `json:"temporal_schedule_id"`
}

// ConfigStatus is the answer to a pause or a resume.
type ConfigStatus struct {
	ConfigID   string `json:"config_id"`
	InstanceID string `json:"instance_id"`
	Status     Status `json:"status"`
}

// ConfigList is the answer to a listing: an instance has 0 or 1 config.
type ConfigList struct {
	Configs []Config `json:"configs"`
}

// Config is a heartbeat config as the API shows it.
type Config struct {
	ConfigID   string    `json:"config_id"`
	InstanceID string    `json:"instance_id"`
	AgentID    string    `json:"agent_id"`
	Status     Status    `json:"status"`
	Triggers   []Trigger `json:"triggers"`
	Budget     *Budget   `json:"budget"`
	// Schedules are the config's schedules: one, its cron trigger's.
	Schedules []Schedule `json:"schedules"`
	CreatedAt time.Time  `json:"created_at"`
	UpdatedAt time.Time  `json:"updated_at"`
}

// Trigger is what fires a config: a cron expression, and the run each
// fire starts.
type Trigger struct {
	Type           string `json:"type"` // "cron"
	CronExpression string `json:"cron_expression"`
	Timezone       string `json:"timezone"`
	TaskContent    string `json:"task_content"`
	AgentImage     string `json:"agent_image"`
	AgentImageTag  string `json:"agent_image_tag"`
}

// TriggerCron is the type of a cron trigger.
const TriggerCron = "cron"

// Schedule is the schedule of a config's cron trigger.
type Schedule struct {
	ScheduleID string `json:"schedule_id"`
	// TemporalScheduleID repeats ScheduleID under the NovaOS Python SDK's
	// name.
	TemporalScheduleID string `json:"temporal_schedule_id"`
	Status             Status `json:"status"`
	CronExpression     string `json:"cron_expression"`
	Timezone           string `json:"timezone"`
	// NextRunAt is the next tick (null while paused); LastRunAt the last
	// tick that started a run (null before the first).
	NextRunAt *time.Time `json:"next_run_at"`
	LastRunAt *time.Time `json:"last_run_at"`
	// LastFire is what became of the latest tick handled; absent before
	// the first.
	LastFire *FireInfo `json:"last_fire,omitempty"`
	// Missed reports ticks that passed while no server was running: they
	// are not run late. Absent when none was missed.
	Missed *Missed `json:"missed,omitempty"`
}

// FireInfo is one tick of a schedule and what became of it.
type FireInfo struct {
	ScheduledAt time.Time `json:"scheduled_at"`
	Outcome     Outcome   `json:"outcome"`
	RunID       string    `json:"run_id,omitempty"`
	Reason      string    `json:"reason,omitempty"`
}

// Missed counts the ticks of a schedule that were due while no server ran
// it: Total since the config was created, and the latest gap's Count,
// first and last tick, and when it was found.
type Missed struct {
	Total      int64     `json:"total"`
	Count      int64     `json:"count"`
	From       time.Time `json:"from"`
	To         time.Time `json:"to"`
	DetectedAt time.Time `json:"detected_at"`
}

// ScheduleID is the id of the schedule of the config id.
func ScheduleID(configID string) string { return "heartbeat-" + configID }

// FieldError is a request's field that breaks a rule.
type FieldError struct {
	Field   string
	Message string
}

var imageTagRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)

// Problems returns the rules r breaks that need no server to tell: a
// required field missing, a value out of bounds. The cron expression and
// the time zone are the server's to judge. Nil when none.
func (r *CreateRequest) Problems() []FieldError {
	var out []FieldError
	bad := func(field, msg string) { out = append(out, FieldError{field, msg}) }
	switch {
	case strings.TrimSpace(r.CronExpression) == "":
		bad("cron_expression", "required")
	case len(r.CronExpression) > MaxCronBytes:
		bad("cron_expression", "longer than "+strconv.Itoa(MaxCronBytes)+" bytes")
	case !Text(r.CronExpression):
		bad("cron_expression", "holds a control character or invalid UTF-8")
	}
	switch {
	case r.AgentImage == "":
		bad("agent_image", "required")
	case len(r.AgentImage) > MaxImageBytes || !Text(r.AgentImage) || strings.ContainsFunc(r.AgentImage, unicode.IsSpace):
		bad("agent_image", "not an image reference: at most "+strconv.Itoa(MaxImageBytes)+" bytes, no space or control character")
	}
	switch {
	case r.AgentImageTag == "":
		bad("agent_image_tag", "required")
	case !imageTagRE.MatchString(r.AgentImageTag):
		bad("agent_image_tag", "not an image tag: 1 to 128 of A-Z a-z 0-9 _ . -, not starting with . or -")
	}
	switch n := utf8.RuneCountInString(r.TaskContent); {
	case strings.TrimSpace(r.TaskContent) == "":
		bad("task_content", "required")
	case !utf8.ValidString(r.TaskContent) || strings.ContainsRune(r.TaskContent, 0):
		bad("task_content", "holds NUL or invalid UTF-8")
	case n > MaxTaskContentChars:
		bad("task_content", "longer than "+strconv.Itoa(MaxTaskContentChars)+" characters ("+strconv.Itoa(n)+")")
	}
	if len(r.Timezone) > MaxTimezoneLen || !Text(r.Timezone) {
		bad("timezone", "not a time zone name: at most "+strconv.Itoa(MaxTimezoneLen)+" printable characters")
	}
	if r.Budget == nil {
		bad("budget", "required: {max_daily_runs, max_daily_tokens, max_daily_cost_usd}; there is no unlimited default")
	} else {
		out = append(out, r.Budget.Problems("budget.")...)
	}
	return out
}

// Problems returns the rules b breaks, each field named after prefix.
func (b *Budget) Problems(prefix string) []FieldError {
	var out []FieldError
	if b.MaxDailyRuns < 1 || b.MaxDailyRuns > MaxDailyRuns {
		out = append(out, FieldError{prefix + "max_daily_runs", "required: from 1 to " + strconv.Itoa(MaxDailyRuns) + " (a schedule fires at most once a minute)"})
	}
	if b.MaxDailyTokens < 0 || b.MaxDailyTokens > MaxDailyTokens {
		out = append(out, FieldError{prefix + "max_daily_tokens", "from 0 (no cap of its own) to " + strconv.FormatInt(MaxDailyTokens, 10)})
	}
	if c := b.MaxDailyCostUSD; math.IsNaN(c) || c < 0 || c > MaxDailyCostUSD {
		out = append(out, FieldError{prefix + "max_daily_cost_usd", "from 0 (no cap of its own) to " + strconv.Itoa(MaxDailyCostUSD)})
	}
	return out
}

// Text reports whether s is valid UTF-8 without control characters.
func Text(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsFunc(s, unicode.IsControl)
}

// ValidID reports whether s is an id the API takes in a path: 1 to
// MaxIDBytes printable bytes without space or "/".
func ValidID(s string) bool {
	return s != "" && len(s) <= MaxIDBytes && Text(s) && !strings.ContainsFunc(s, unicode.IsSpace) &&
		!strings.ContainsAny(s, "/?#%")
}
