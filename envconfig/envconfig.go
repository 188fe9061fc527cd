package envconfig

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"novaos.dev/novaos/netguard"
	"novaos.dev/novaos/secret"
)

// The variables this package reads.
const (
	AllowedHostsEnv   = "NOVAOS_ALLOWED_HOSTS"
	ToolTimeoutEnv    = "NOVAOS_TOOL_TIMEOUT_S"
	EnvironmentEnv    = "ENVIRONMENT"
	EnvEnv            = "ENV" // read when ENVIRONMENT is unset
	ExecutionTokenEnv = "NOVAOS_EXECUTION_TOKEN"
	APIKeyEnv         = "ACP_API_KEY"
	AgentDNSURLEnv    = "AGENT_DNS_URL"
	ACPDNSURLEnv      = "ACP_DNS_URL"
	DNSServiceHostEnv = "DNS_SERVICE_HOST"
	DNSServicePortEnv = "DNS_SERVICE_PORT"
	// DNSURLEnvPrefix is followed by the environment in upper case:
	// ACP_DNS_URL_DEV, ACP_DNS_URL_STAGING, ACP_DNS_URL_PROD.
	DNSURLEnvPrefix = "ACP_DNS_URL_"
)

// DefaultToolTimeout is a tool call's timeout when NOVAOS_TOOL_TIMEOUT_S
// is unset: above the tool gateway's own ceilings (120 s for a built-in
// tool, 30 s by default for an upstream's) with a margin, so a caller
// sees the gateway's timeout error rather than a premature one of its own.
const DefaultToolTimeout = 128 * time.Second

// DefaultDNSServicePort is the port DNS_SERVICE_HOST is paired with when
// DNS_SERVICE_PORT is unset.
const DefaultDNSServicePort = 8000

// maxToolTimeout bounds NOVAOS_TOOL_TIMEOUT_S so that the seconds never
// overflow a time.Duration.
const maxToolTimeout = 365 * 24 * time.Hour

// Errors a VarError wraps: callers branch with errors.Is.
var (
	// ErrUnset: a required variable is unset or empty.
	ErrUnset = errors.New("not set")
	// ErrInvalid: a variable (or a value given in its place) is set but
	// malformed.
	ErrInvalid = errors.New("invalid value")
	// ErrHostNotAllowed is CheckHost's error.
	ErrHostNotAllowed = errors.New("envconfig: host not in the allowed hosts")
)

// VarError is an error about configuration variables. It names them and
// the rule broken, never their values.
type VarError struct {
	// Names are the variables concerned, in the order they are read.
	Names []string
	// Rule says what was wanted.
	Rule string
	// Err is ErrUnset or ErrInvalid.
	Err error
}

func (e *VarError) Error() string {
	return fmt.Sprintf("envconfig: %s: %v: %s", strings.Join(e.Names, ", "), e.Err, e.Rule)
}

func (e *VarError) Unwrap() error { return e.Err }

// Environment is a deployment environment.
type Environment string

// The environments.
const (
	Dev     Environment = "dev"
	Staging Environment = "staging"
	Prod    Environment = "prod"
)

// Config is what Load reads: the settings every program may want at
// startup. The DNS URL and the API key are read on demand (DNSURL,
// APIKey), since only some programs need them and they are errors when
// unset. Printing a Config never shows the execution token.
type Config struct {
	// AllowedHosts is NOVAOS_ALLOWED_HOSTS, nil when it is unset: no
	// restriction (see CheckHost).
	AllowedHosts []string
	// ToolTimeout is NOVAOS_TOOL_TIMEOUT_S, else DefaultToolTimeout.
	ToolTimeout time.Duration
	// Environment is ENVIRONMENT (or ENV), else Dev.
	Environment Environment
	// ExecutionToken is NOVAOS_EXECUTION_TOKEN, zero when it is unset:
	// the token an agent uses when a request carries none.
	ExecutionToken secret.Value
}

// Load reads Config's variables through lookup (nil: os.LookupEnv). The
// first malformed variable is the error.
func Load(lookup func(string) (string, bool)) (Config, error) {
	env := reader(lookup)
	c := Config{AllowedHosts: AllowedHosts(lookup), ExecutionToken: ExecutionToken(lookup)}
	var err error
	if c.ToolTimeout, err = ToolTimeout(lookup); err != nil {
		return Config{}, err
	}
	if c.Environment, err = env.environment(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// reader is a lookup that treats a variable set to "" as unset and trims
// surrounding blanks.
type reader func(string) (string, bool)

func (r reader) get(name string) string {
	if r == nil {
		r = os.LookupEnv
	}
	v, _ := r(name)
	return strings.TrimSpace(v)
}

// first returns the first of names that is set, and its value.
func (r reader) first(names ...string) (name, value string) {
	for _, n := range names {
		if v := r.get(n); v != "" {
			return n, v
		}
	}
	return "", ""
}

// First returns the value of the first of names that is set (not empty)
// through lookup (nil: os.LookupEnv), and its name; "", "" when none is.
// It is the rule of every variable with an older or a foreign alias.
func First(lookup func(string) (string, bool), names ...string) (name, value string) {
	return reader(lookup).first(names...)
}

// AllowedHosts reads NOVAOS_ALLOWED_HOSTS through lookup (nil:
// os.LookupEnv): its comma-separated entries, blanks and a trailing dot
// trimmed, lower-cased, empty ones dropped. Nil, when it is unset or holds no entry, means no
// restriction.
func AllowedHosts(lookup func(string) (string, bool)) []string {
	return ParseHosts(reader(lookup).get(AllowedHostsEnv))
}

// ParseHosts parses a comma-separated host list as AllowedHosts does.
func ParseHosts(s string) []string {
	var out []string
	for h := range strings.SplitSeq(s, ",") {
		if h = normHost(h); h != "" {
			out = append(out, h)
		}
	}
	return out
}

// normHost lower-cases a host name and drops blanks and a trailing dot
// ("example.com." is "example.com"); a leading dot stays, as it means
// "below this name only".
func normHost(h string) string {
	return strings.TrimSuffix(strings.ToLower(strings.TrimSpace(h)), ".")
}

// HostAllowed reports whether rawURL's host is covered by hosts: always
// when hosts is empty (the list is opt-in), else as netguard.HostAllowed
// matches it: the host equals an entry or is a subdomain of one; an entry
// with a leading dot (".example.com") covers its subdomains only, as
// registry.Policy's host suffixes do; an IP address, as host or entry,
// matches only itself. A URL without a host never matches a non-empty
// list.
func HostAllowed(rawURL string, hosts []string) bool {
	if len(hosts) == 0 {
		return true
	}
	u, err := url.Parse(strings.TrimSpace(rawURL))
	if err != nil {
		return false
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	return host != "" && netguard.HostAllowed(host, hosts)
}

// CheckHost is HostAllowed as an error: nil when rawURL may be called,
// else an error wrapping ErrHostNotAllowed that names the host (never the
// whole URL, which may carry credentials).
func CheckHost(rawURL string, hosts []string) error {
	if HostAllowed(rawURL, hosts) {
		return nil
	}
	host := "(none)"
	if u, err := url.Parse(strings.TrimSpace(rawURL)); err == nil && u.Hostname() != "" {
		host = u.Hostname()
	}
	return fmt.Errorf("%w: %q is not covered by %s (%s)", ErrHostNotAllowed, host, AllowedHostsEnv, strings.Join(hosts, ","))
}

// ToolTimeout reads NOVAOS_TOOL_TIMEOUT_S through lookup (nil:
// os.LookupEnv): a positive whole number of seconds, DefaultToolTimeout
// when unset. A value that is set but malformed is an error, never a
// silent default.
func ToolTimeout(lookup func(string) (string, bool)) (time.Duration, error) {
	v := reader(lookup).get(ToolTimeoutEnv)
	if v == "" {
		return DefaultToolTimeout, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 || n > int64(maxToolTimeout/time.Second) {
		return 0, &VarError{Names: []string{ToolTimeoutEnv}, Err: ErrInvalid, Rule: "want a positive whole number of seconds"}
	}
	return time.Duration(n) * time.Second, nil
}

// GetEnvironment reads ENVIRONMENT, else ENV, through lookup (nil:
// os.LookupEnv), in any case: Dev, Staging or Prod; Dev when both are
// unset. Any other value is an ErrInvalid error.
func GetEnvironment(lookup func(string) (string, bool)) (Environment, error) {
	return reader(lookup).environment()
}

func (r reader) environment() (Environment, error) {
	name, v := r.first(EnvironmentEnv, EnvEnv)
	if v == "" {
		return Dev, nil
	}
	e, err := ParseEnvironment(v)
	if err != nil {
		return "", &VarError{Names: []string{name}, Err: ErrInvalid, Rule: "want dev, staging or prod"}
	}
	return e, nil
}

// ParseEnvironment reads dev, staging or prod in any case.
func ParseEnvironment(s string) (Environment, error) {
	switch e := Environment(strings.ToLower(strings.TrimSpace(s))); e {
	case Dev, Staging, Prod:
		return e, nil
	}
	return "", fmt.Errorf("envconfig: %w: an environment is dev, staging or prod", ErrInvalid)
}

// ExecutionToken reads NOVAOS_EXECUTION_TOKEN through lookup (nil:
// os.LookupEnv); zero when it is unset. A program passes it to the agent
// (agent.Options.ExecutionToken) as the token of a request that carries
// none.
func ExecutionToken(lookup func(string) (string, bool)) secret.Value {
	return secret.New(reader(lookup).get(ExecutionTokenEnv))
}

// APIKey reads the API key in the variable name (APIKeyEnv, ACP_API_KEY,
// when name is "") through lookup (nil: os.LookupEnv). Unset or empty is
// an ErrUnset error. It is for API keys only: a bearer token is given by
// the program at run time.
func APIKey(lookup func(string) (string, bool), name string) (secret.Value, error) {
	if name == "" {
		name = APIKeyEnv
	}
	v := reader(lookup).get(name)
	if v == "" {
		return secret.Value{}, &VarError{Names: []string{name}, Err: ErrUnset, Rule: "want the API key"}
	}
	return secret.New(v), nil
}
