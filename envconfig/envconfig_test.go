package envconfig

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// env is a lookup over a map, as a program's own configuration source
// would be.
func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// seed 000, novaos_client_sdk.config.get_allowed_hosts_from_env: "A list
// of hostname suffixes (e.g. ["novaos.example.com", "localhost"]), or None
// if the env var is unset or empty — meaning no restriction."
func TestAllowedHosts(t *testing.T) {
	for _, tt := range []struct {
		name string
		vars map[string]string
		want []string
	}{
		{"unset", nil, nil},
		{"empty", map[string]string{AllowedHostsEnv: ""}, nil},
		{"only separators", map[string]string{AllowedHostsEnv: " , ,"}, nil},
		{"the documented example", map[string]string{AllowedHostsEnv: "novaos.example.com,localhost"}, []string{"novaos.example.com", "localhost"}},
		{"blanks, case and dots", map[string]string{AllowedHostsEnv: " NovaOS.Example.com. , .internal ,"}, []string{"novaos.example.com", ".internal"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, AllowedHosts(env(tt.vars))); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

// seed 000, novaos_client_sdk.config.validate_host_allowed: "No-ops when
// no allowlist is configured … Raises ValueError if an allowlist is
// configured and url's hostname doesn't end with any entry in it." Our
// rule ends on a label boundary (the package doc says why): the seed's
// bare suffix would let "badexample.com" through "example.com".
func TestHostAllowed(t *testing.T) {
	hosts := []string{"novaos.example.com", "localhost", "10.0.0.1"}
	for _, tt := range []struct {
		url   string
		hosts []string
		want  bool
	}{
		{"https://evil.test/", nil, true}, // no list: no restriction
		{"https://evil.test/", []string{}, true},
		{"https://novaos.example.com/x", hosts, true},
		{"https://gw.novaos.example.com:8443/x", hosts, true},
		{"https://GW.NovaOS.Example.COM./x", hosts, true},
		{"http://localhost:8080", hosts, true},
		{"http://10.0.0.1:8081", hosts, true},
		{"https://badnovaos.example.com/", hosts, false}, // a suffix of letters, not of labels
		{"https://example.com/", hosts, false},
		{"https://novaos.example.com.evil.test/", hosts, false},
		{"http://110.0.0.1/", hosts, false},
		{"http://1.10.0.0.1/", hosts, false},
		{"https://user:pw@evil.test/", hosts, false},
		{"not a url", hosts, false},
		{"/relative/path", hosts, false},
		{"https://gw.internal/", []string{".internal"}, true},
		{"https://internal/", []string{".internal"}, false}, // a leading dot: below the name only
		{"https://evilinternal/", []string{".internal"}, false},
		{"https://x.example/", []string{"", "."}, false},
	} {
		t.Run(tt.url, func(t *testing.T) {
			if got := HostAllowed(tt.url, tt.hosts); got != tt.want {
				t.Errorf("HostAllowed(%q, %q) = %v, want %v", tt.url, tt.hosts, got, tt.want)
			}
			err := CheckHost(tt.url, tt.hosts)
			if (err == nil) != tt.want || err != nil && !errors.Is(err, ErrHostNotAllowed) {
				t.Errorf("CheckHost: %v", err)
			}
		})
	}
	// The error names the host, never the URL's credentials.
	err := CheckHost("https://user:hunter2@evil.test/p?k=v", hosts)
	if err == nil || strings.Contains(err.Error(), "hunter2") || !strings.Contains(err.Error(), "evil.test") {
		t.Errorf("CheckHost error does not name just the host: %v", err != nil)
	}
}

// seed 000, novaos_client_sdk.config.get_default_tool_timeout_s: "Checks
// the NOVAOS_TOOL_TIMEOUT_S environment variable; defaults to 128s …
// Raises ValueError if NOVAOS_TOOL_TIMEOUT_S is set but not a positive
// integer."
func TestToolTimeout(t *testing.T) {
	for _, tt := range []struct {
		v    *string
		want time.Duration
		ok   bool
	}{
		{nil, 128 * time.Second, true},
		{ptr(""), 128 * time.Second, true},
		{ptr("180"), 180 * time.Second, true},
		{ptr(" 30 "), 30 * time.Second, true},
		{ptr("1"), time.Second, true},
		{ptr("0"), 0, false},
		{ptr("-5"), 0, false},
		{ptr("1.5"), 0, false},
		{ptr("ten"), 0, false},
		{ptr("30s"), 0, false},
		{ptr("99999999999999999999"), 0, false},
		{ptr("31536000"), 365 * 24 * time.Hour, true}, // a year, the most
		{ptr("31536001"), 0, false},                   // over a year: the seconds would near a Duration's range
	} {
		name := "unset"
		vars := map[string]string{}
		if tt.v != nil {
			name, vars[ToolTimeoutEnv] = fmt.Sprintf("%q", *tt.v), *tt.v
		}
		t.Run(name, func(t *testing.T) {
			got, err := ToolTimeout(env(vars))
			if (err == nil) != tt.ok || got != tt.want {
				t.Fatalf("got %v, %v; want %v (ok %v)", got, err, tt.want, tt.ok)
			}
			if err != nil && (!errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), ToolTimeoutEnv)) {
				t.Errorf("error %v: want ErrInvalid naming %s", err, ToolTimeoutEnv)
			}
		})
	}
}

// seed 000, novaos_client_sdk.config.get_environment: "Checks ENVIRONMENT
// or ENV environment variables (case-insensitive). Defaults to "dev" if
// not set." The section is silent on other values; ours refuse them
// (ErrInvalid), as the package doc says.
func TestGetEnvironment(t *testing.T) {
	for _, tt := range []struct {
		name string
		vars map[string]string
		want Environment
		ok   bool
	}{
		{"unset", nil, Dev, true},
		{"empty", map[string]string{EnvironmentEnv: "", EnvEnv: ""}, Dev, true},
		{"ENVIRONMENT", map[string]string{EnvironmentEnv: "staging"}, Staging, true},
		{"ENV", map[string]string{EnvEnv: "prod"}, Prod, true},
		{"case-insensitive", map[string]string{EnvironmentEnv: " PROD "}, Prod, true},
		{"ENVIRONMENT before ENV", map[string]string{EnvironmentEnv: "staging", EnvEnv: "prod"}, Staging, true},
		{"empty ENVIRONMENT reads ENV", map[string]string{EnvironmentEnv: "", EnvEnv: "Staging"}, Staging, true},
		{"unknown", map[string]string{EnvironmentEnv: "production"}, "", false},
		{"unknown ENV", map[string]string{EnvEnv: "test"}, "", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := GetEnvironment(env(tt.vars))
			if (err == nil) != tt.ok || got != tt.want {
				t.Fatalf("got %q, %v; want %q (ok %v)", got, err, tt.want, tt.ok)
			}
			if err != nil && !errors.Is(err, ErrInvalid) {
				t.Errorf("error %v: want ErrInvalid", err)
			}
		})
	}
}

// seed 000, novaos_client_sdk.execution_context.ExecutionContext.from_headers:
// "If X-NovaOS-Execution-Token is absent from the headers … the method
// falls back to the NOVAOS_EXECUTION_TOKEN environment variable before
// returning None." Here it is read once; the agent takes it through
// agent.Options.ExecutionToken.
func TestExecutionToken(t *testing.T) {
	for _, tt := range []struct {
		name string
		vars map[string]string
		want string
	}{
		{"unset", nil, ""},
		{"empty", map[string]string{ExecutionTokenEnv: ""}, ""},
		{"set", map[string]string{ExecutionTokenEnv: " tok-123\n"}, "tok-123"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := ExecutionToken(env(tt.vars))
			if got.Reveal() != tt.want { // compared, never printed
				t.Errorf("token differs (zero %v, want zero %v)", got.IsZero(), tt.want == "")
			}
			if s := fmt.Sprintf("%v %s %+v", got, got, Config{ExecutionToken: got}); strings.Contains(s, "tok-123") {
				t.Error("the token shows in fmt output")
			}
		})
	}
}

// seed 000, novaos_client_sdk.auth.get_api_key_from_env: "env_var: Name
// of the environment variable containing the API key (default:
// "ACP_API_KEY") … Raises ValueError if the environment variable is not
// set or is empty."
func TestAPIKey(t *testing.T) {
	for _, tt := range []struct {
		name string
		vars map[string]string
		env  string
		want string
		ok   bool
	}{
		{"default variable", map[string]string{APIKeyEnv: "k-1"}, "", "k-1", true},
		{"named variable", map[string]string{"MY_KEY": "k-2", APIKeyEnv: "k-1"}, "MY_KEY", "k-2", true},
		{"unset", nil, "", "", false},
		{"empty", map[string]string{APIKeyEnv: "  "}, "", "", false},
		{"named variable unset, default set", map[string]string{APIKeyEnv: "k-1"}, "MY_KEY", "", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := APIKey(env(tt.vars), tt.env)
			if (err == nil) != tt.ok || got.Reveal() != tt.want {
				t.Fatalf("key differs or err %v (ok %v)", err, tt.ok)
			}
			if err != nil {
				want := tt.env
				if want == "" {
					want = APIKeyEnv
				}
				var ve *VarError
				if !errors.As(err, &ve) || !errors.Is(err, ErrUnset) || !strings.Contains(err.Error(), want) {
					t.Errorf("error %v: want an ErrUnset VarError naming %s", err, want)
				}
			}
		})
	}
	k, _ := APIKey(env(map[string]string{APIKeyEnv: "k-secret"}), "")
	if s := fmt.Sprintf("%v %s %#v", k, k, k); strings.Contains(s, "k-secret") {
		t.Error("the key shows in fmt output")
	}
}

func TestLoad(t *testing.T) {
	c, err := Load(env(map[string]string{
		AllowedHostsEnv: "a.example", ToolTimeoutEnv: "60", EnvEnv: "staging", ExecutionTokenEnv: "t",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a.example"}, c.AllowedHosts); diff != "" || c.ToolTimeout != time.Minute || c.Environment != Staging || c.ExecutionToken.Reveal() != "t" {
		t.Errorf("Load: hosts %v, timeout %v, environment %q, token set %v", c.AllowedHosts, c.ToolTimeout, c.Environment, !c.ExecutionToken.IsZero())
	}
	if c, err := Load(env(nil)); err != nil || c.AllowedHosts != nil || c.ToolTimeout != DefaultToolTimeout || c.Environment != Dev || !c.ExecutionToken.IsZero() {
		t.Errorf("Load of nothing: %+v, %v", c, err)
	}
	for _, bad := range []map[string]string{{ToolTimeoutEnv: "x"}, {EnvironmentEnv: "qa"}} {
		if _, err := Load(env(bad)); !errors.Is(err, ErrInvalid) {
			t.Errorf("Load(%v): %v, want ErrInvalid", bad, err)
		}
	}
}

// A nil lookup reads the process environment.
func TestNilLookupReadsTheEnvironment(t *testing.T) {
	t.Setenv(ToolTimeoutEnv, "45")
	t.Setenv(AllowedHostsEnv, "x.example")
	if d, err := ToolTimeout(nil); err != nil || d != 45*time.Second {
		t.Errorf("ToolTimeout(nil) = %v, %v", d, err)
	}
	if h := AllowedHosts(nil); len(h) != 1 || h[0] != "x.example" {
		t.Errorf("AllowedHosts(nil) = %v", h)
	}
}

func TestFirst(t *testing.T) {
	lookup := env(map[string]string{"A": "", "B": " b ", "C": "c"})
	if n, v := First(lookup, "A", "B", "C"); n != "B" || v != "b" {
		t.Errorf("First = %q, %q", n, v)
	}
	if n, v := First(lookup, "A", "Z"); n != "" || v != "" {
		t.Errorf("First of unset = %q, %q", n, v)
	}
}

func ptr(s string) *string { return &s }
