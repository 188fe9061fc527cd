package gate

import (
	"fmt"
	"net/url"
	"os"

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
}

// ConfigFromEnv reads the configuration from the environment through
// lookup (nil means os.LookupEnv): NOVAOS_GATE_URL, else
// NOVARCH_SERVER_URL; NOVAOS_TOKEN, else NOVARCH_SDK_KEY. A variable that
// is set but empty counts as unset. The result is validated; errors name
// variables, never their values (a URL can carry credentials too).
func ConfigFromEnv(lookup func(string) (string, bool)) (Config, error) {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	first := func(names ...string) string {
		for _, n := range names {
			if v, ok := lookup(n); ok && v != "" {
				return v
			}
		}
		return ""
	}
	c := Config{URL: first(URLEnv, SeedURLEnv), Token: secret.New(first(TokenEnv, SeedSDKKeyEnv))}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// Validate requires an absolute http(s) URL without user information and
// a token. It is a fail_closed_config refusal like the session checks: a
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
	if c.Token.IsZero() {
		return configError("", "", fmt.Sprintf("no gate token: set %s (or %s)", TokenEnv, SeedSDKKeyEnv))
	}
	return nil
}
