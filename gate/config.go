package gate

import (
	"fmt"
	"net/url"

	"novaos.dev/novaos/envconfig"
	"novaos.dev/novaos/secret"
)

// The environment variables Config reads. Our own names come first; the
// Python gate SDK's names (SeedURLEnv, SeedSDKKeyEnv) are read when ours
// are unset, so a deployment configured for that SDK works unchanged.
const (
	URLEnv        = "NOVAOS_GATE_URL"
	TokenEnv      = "NOVAOS_TOKEN"
	SeedURLEnv    = "NOVARCH_SERVER_URL"
	SeedSDKKeyEnv = "NOVARCH_SDK_KEY"
)

// Config is where the gate is and what to call it with.
type Config struct {
	// URL is the gate server's base URL (http or https).
	URL string
	// Token is a platform token with gate scopes (the Python gate SDK's
	// NOVARCH_SDK_KEY).
	Token secret.Value
	// AllowedHosts, when not empty, is the outbound-host allow-list URL
	// must be covered by (envconfig.CheckHost: the host or a subdomain of
	// an entry); ConfigFromEnv sets it from NOVAOS_ALLOWED_HOSTS.
	AllowedHosts []string
}

// ConfigFromEnv reads the configuration from the environment through
// lookup (nil means os.LookupEnv): NOVAOS_GATE_URL, else
// NOVARCH_SERVER_URL; NOVAOS_TOKEN, else NOVARCH_SDK_KEY; and
// NOVAOS_ALLOWED_HOSTS (package envconfig). A variable that is set but
// empty counts as unset. The result is validated; errors name variables,
// never their values (a URL can carry credentials too).
func ConfigFromEnv(lookup func(string) (string, bool)) (Config, error) {
	_, u := envconfig.First(lookup, URLEnv, SeedURLEnv)
	_, tok := envconfig.First(lookup, TokenEnv, SeedSDKKeyEnv)
	c := Config{URL: u, Token: secret.New(tok), AllowedHosts: envconfig.AllowedHosts(lookup)}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// Validate requires an absolute http(s) URL without user information,
// covered by AllowedHosts when that is set, and a token. It is a fail_closed_config refusal like the session checks: a
// gate that cannot be reached must not let writes through.
func (c Config) Validate() error {
	if c.URL == "" {
		return configError("", "", fmt.Sprintf("no gate URL: set %s (or %s)", URLEnv, SeedURLEnv))
	}
	u, err := url.Parse(c.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return configError("", "", "the gate URL must be an absolute http(s) URL")
	}
	if u.User != nil {
		return configError("", "", "the gate URL must not carry credentials; send the token instead")
	}
	if err := envconfig.CheckHost(c.URL, c.AllowedHosts); err != nil {
		// CheckHost names the host, never the whole URL.
		k := configError("", "", "the gate URL's host is not allowed")
		k.Err = err
		return k
	}
	if c.Token.IsZero() {
		return configError("", "", fmt.Sprintf("no gate token: set %s (or %s)", TokenEnv, SeedSDKKeyEnv))
	}
	return nil
}
