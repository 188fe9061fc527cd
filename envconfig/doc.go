// Package envconfig reads the SDK's settings from environment variables, in one place.
//
// Libraries in this module never read the environment: a program reads it
// once, at startup, through this package, and passes what it needs to the
// libraries' Options. Every function reads through a lookup function (nil
// means os.LookupEnv), so a test or a program with its own configuration
// source supplies the values. A variable set to the empty string counts as
// unset.
//
//	cfg, err := envconfig.Load(nil)
//	if err != nil {
//		log.Fatal(err) // names the variable, never a secret's value
//	}
//	b, err := tools.From(c, &tools.FromOptions{BindingsOptions: tools.BindingsOptions{Timeout: cfg.ToolTimeout}})
//	a := agent.New("hello", "1.0.0", &agent.Options{ExecutionToken: cfg.ExecutionToken})
//
// The variables:
//
//   - NOVAOS_ALLOWED_HOSTS: a comma-separated list of host names; an
//     outbound URL from configuration (a gateway, a gate, a JWKS URL) must
//     name one of them or a subdomain of one (CheckHost). Unset or empty
//     means no restriction: the list is opt-in.
//   - NOVAOS_TOOL_TIMEOUT_S: a tool call's timeout in whole seconds
//     (default 128, above the tool gateway's own ceilings of 120 s for a
//     built-in tool and 30 s by default for an upstream's, so a caller sees
//     the gateway's timeout error rather than its own).
//   - ENVIRONMENT, else ENV: dev, staging or prod, in any case (default dev).
//   - AGENT_DNS_URL, ACP_DNS_URL, DNS_SERVICE_HOST with DNS_SERVICE_PORT
//     (default 8000), ACP_DNS_URL_<ENV>: the Agent DNS (registry) URL, in
//     that order after an explicit URL and a variable of the caller's
//     choosing (DNSURL). There is no default host.
//   - NOVAOS_EXECUTION_TOKEN: the execution token an agent calls platform
//     services with when a request carries none (outside the platform's
//     auth proxy: local development, a test harness).
//   - ACP_API_KEY: an API key for service-to-service calls (APIKey). Bearer
//     tokens other than the execution token are given by the program at
//     run time, never read from the environment.
//
// Decisions of this package that differ from the NovaOS Python SDK's
// config module:
//
//   - An allowed-hosts entry matches a host equal to it or a subdomain of
//     it ("example.com" allows "api.example.com", not "badexample.com");
//     a bare string suffix would let any name that merely ends in the
//     entry's letters through. An entry with a leading dot
//     (".example.com") covers the subdomains only, as registry.Policy's
//     host suffixes do. Names compare case-insensitively, a trailing dot
//     is ignored, and an IP address matches only itself.
//   - An ENVIRONMENT or ENV value other than dev, staging or prod is an
//     error (ErrInvalid) rather than a guess: a deployment that says
//     "production" must not be configured as dev.
//   - The empty string is "not given" for an explicit DNS URL, as for a
//     variable: Go has no None apart from "".
//   - Errors name the variable and the rule, never a URL's or a secret's
//     value: a URL may carry credentials too.
package envconfig
