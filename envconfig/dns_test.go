package envconfig

import (
	"errors"
	"strings"
	"testing"
)

// seed 000, novaos_client_sdk.config.get_dns_url_from_env: "Priority
// order: 1. Explicit custom_url parameter (highest priority) 2. Custom
// env_var parameter 3. AGENT_DNS_URL … 4. ACP_DNS_URL … 5. DNS_SERVICE_HOST
// + DNS_SERVICE_PORT … 6. Environment-specific variable (e.g.,
// ACP_DNS_URL_DEV) 7. Raises if none of the above is set — there is no
// environment default", with DNS_SERVICE_PORT "default: 8000", and
// "ValueError If a URL is provided but is invalid (empty or not a valid
// URL format)". get_dns_url_for_environment: the error "names
// AGENT_DNS_URL, ACP_DNS_URL, DNS_SERVICE_HOST (+ DNS_SERVICE_PORT), and
// the environment-specific ACP_DNS_URL_<ENV> variable".
func TestDNSURL(t *testing.T) {
	all := map[string]string{
		"MY_DNS":          "http://mine:1",
		AgentDNSURLEnv:    "http://agent-dns:2",
		ACPDNSURLEnv:      "http://acp-dns:3",
		DNSServiceHostEnv: "registrar",
		DNSServicePortEnv: "4",
		"ACP_DNS_URL_DEV": "http://dev-dns:5",
	}
	without := func(keys ...string) map[string]string {
		m := map[string]string{}
		for k, v := range all {
			m[k] = v
		}
		for _, k := range keys {
			delete(m, k)
		}
		return m
	}
	for _, tt := range []struct {
		name    string
		vars    map[string]string
		o       *DNSOptions
		want    string
		wantErr error
		names   []string // the error names these
	}{
		{"explicit URL first", all, &DNSOptions{URL: "https://custom:8000", Env: "MY_DNS"}, "https://custom:8000", nil, nil},
		{"custom variable second", all, &DNSOptions{Env: "MY_DNS"}, "http://mine:1", nil, nil},
		{"custom variable unset falls through", without("MY_DNS"), &DNSOptions{Env: "MY_DNS"}, "http://agent-dns:2", nil, nil},
		{"AGENT_DNS_URL", all, nil, "http://agent-dns:2", nil, nil},
		{"ACP_DNS_URL", without(AgentDNSURLEnv), nil, "http://acp-dns:3", nil, nil},
		{"host and port", without(AgentDNSURLEnv, ACPDNSURLEnv), nil, "http://registrar:4", nil, nil},
		{"the lowest port", map[string]string{DNSServiceHostEnv: "registrar", DNSServicePortEnv: "1"}, nil, "http://registrar:1", nil, nil},
		{"the highest port", map[string]string{DNSServiceHostEnv: "registrar", DNSServicePortEnv: "65535"}, nil, "http://registrar:65535", nil, nil},
		{"host, default port", without(AgentDNSURLEnv, ACPDNSURLEnv, DNSServicePortEnv), nil, "http://registrar:8000", nil, nil},
		{"IPv6 host", map[string]string{DNSServiceHostEnv: "::1"}, nil, "http://[::1]:8000", nil, nil},
		{"port alone is not enough", without(AgentDNSURLEnv, ACPDNSURLEnv, DNSServiceHostEnv), nil, "http://dev-dns:5", nil, nil},
		{"per environment, dev by default", map[string]string{"ACP_DNS_URL_DEV": "http://dev-dns:5"}, nil, "http://dev-dns:5", nil, nil},
		{"per environment from ENV", map[string]string{EnvEnv: "PROD", "ACP_DNS_URL_PROD": "http://prod-dns", "ACP_DNS_URL_DEV": "http://dev-dns:5"}, nil, "http://prod-dns", nil, nil},
		{"per environment given", map[string]string{"ACP_DNS_URL_STAGING": "http://st-dns"}, &DNSOptions{Environment: Staging}, "http://st-dns", nil, nil},
		{"none set", nil, nil, "", ErrUnset, []string{AgentDNSURLEnv, ACPDNSURLEnv, DNSServiceHostEnv, DNSServicePortEnv, "ACP_DNS_URL_DEV"}},
		{"none set, custom variable named", nil, &DNSOptions{Env: "MY_DNS"}, "", ErrUnset, []string{"MY_DNS", AgentDNSURLEnv, "ACP_DNS_URL_DEV"}},
		{"none set in prod", map[string]string{EnvironmentEnv: "prod"}, nil, "", ErrUnset, []string{"ACP_DNS_URL_PROD"}},
		{"empty values are unset", map[string]string{AgentDNSURLEnv: "", ACPDNSURLEnv: " "}, nil, "", ErrUnset, nil},
		{"invalid explicit URL", all, &DNSOptions{URL: "custom:8000"}, "", ErrInvalid, nil},
		{"invalid AGENT_DNS_URL", map[string]string{AgentDNSURLEnv: "agent-dns"}, nil, "", ErrInvalid, []string{AgentDNSURLEnv}},
		{"not http", map[string]string{ACPDNSURLEnv: "ftp://dns"}, nil, "", ErrInvalid, []string{ACPDNSURLEnv}},
		{"bad port", map[string]string{DNSServiceHostEnv: "r", DNSServicePortEnv: "http"}, nil, "", ErrInvalid, []string{DNSServicePortEnv}},
		{"port out of range", map[string]string{DNSServiceHostEnv: "r", DNSServicePortEnv: "70000"}, nil, "", ErrInvalid, []string{DNSServicePortEnv}},
		{"port 0", map[string]string{DNSServiceHostEnv: "r", DNSServicePortEnv: "0"}, nil, "", ErrInvalid, []string{DNSServicePortEnv}},
		{"port 65536", map[string]string{DNSServiceHostEnv: "r", DNSServicePortEnv: "65536"}, nil, "", ErrInvalid, []string{DNSServicePortEnv}},
		{"unknown environment", map[string]string{EnvironmentEnv: "qa"}, nil, "", ErrInvalid, []string{EnvironmentEnv}},
		{"unknown given environment", nil, &DNSOptions{Environment: "qa"}, "", ErrInvalid, nil},
		{"unknown environment unread when a URL is set", map[string]string{EnvironmentEnv: "qa", ACPDNSURLEnv: "http://acp-dns:3"}, nil, "http://acp-dns:3", nil, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DNSURL(env(tt.vars), tt.o)
			if got != tt.want || !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Fatalf("got %q, %v; want %q, %v", got, err, tt.want, tt.wantErr)
			}
			for _, n := range tt.names {
				if !strings.Contains(err.Error(), n) {
					t.Errorf("error %q does not name %s", err, n)
				}
			}
		})
	}
	// An invalid URL's value stays out of the error: it may carry
	// credentials.
	_, err := DNSURL(env(map[string]string{AgentDNSURLEnv: "user:hunter2@dns"}), nil)
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("error shows the value or is nil: %v", err == nil)
	}
}
