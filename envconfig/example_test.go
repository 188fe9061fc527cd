package envconfig_test

import (
	"fmt"

	"novaos.dev/novaos/envconfig"
)

// A program reads its configuration once, at startup, and passes it on.
// The lookup here is a map; nil reads the process environment.
func ExampleLoad() {
	vars := map[string]string{
		"NOVAOS_ALLOWED_HOSTS":   "novaos.example.com,localhost",
		"NOVAOS_TOOL_TIMEOUT_S":  "180",
		"ENVIRONMENT":            "Staging",
		"NOVAOS_EXECUTION_TOKEN": "eyJ-local-dev-token",
	}
	lookup := func(k string) (string, bool) { v, ok := vars[k]; return v, ok }

	cfg, err := envconfig.Load(lookup)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(cfg.AllowedHosts, cfg.ToolTimeout, cfg.Environment, cfg.ExecutionToken)
	fmt.Println(envconfig.CheckHost("https://gw.novaos.example.com/api", cfg.AllowedHosts))
	fmt.Println(envconfig.CheckHost("https://badnovaos.example.com/api", cfg.AllowedHosts))

	_, err = envconfig.DNSURL(lookup, nil)
	fmt.Println(err)
	// Output:
	// [novaos.example.com localhost] 3m0s staging [REDACTED]
	// <nil>
	// envconfig: host not in the allowed hosts: "badnovaos.example.com" is not covered by NOVAOS_ALLOWED_HOSTS (novaos.example.com,localhost)
	// envconfig: AGENT_DNS_URL, ACP_DNS_URL, DNS_SERVICE_HOST, DNS_SERVICE_PORT, ACP_DNS_URL_STAGING: not set: set one to the Agent DNS URL (DNS_SERVICE_HOST with DNS_SERVICE_PORT, default 8000); there is no default host
}

// DNSURL follows the platform's order of variables.
func ExampleDNSURL() {
	vars := map[string]string{"DNS_SERVICE_HOST": "agent-dns.example.internal"}
	lookup := func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
	u, err := envconfig.DNSURL(lookup, nil)
	fmt.Println(u, err)
	// Output: http://agent-dns.example.internal:8000 <nil>
}
