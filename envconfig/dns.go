package envconfig

import (
	"net"
	"net/url"
	"strconv"
	"strings"
)

// DNSOptions are DNSURL's explicit settings; nil or zero fields are not
// given.
type DNSOptions struct {
	// URL, when set, is the answer (validated): nothing is read.
	URL string
	// Env names a variable read before the platform's standard ones.
	Env string
	// Environment picks the ACP_DNS_URL_<ENV> variable; "" reads it with
	// GetEnvironment.
	Environment Environment
}

// DNSURL returns the Agent DNS (registry) URL, the first of:
//
//  1. o.URL;
//  2. the variable o.Env names;
//  3. AGENT_DNS_URL;
//  4. ACP_DNS_URL;
//  5. http://$DNS_SERVICE_HOST:$DNS_SERVICE_PORT (port 8000 when unset);
//  6. ACP_DNS_URL_<ENV>, for the environment o.Environment or
//     GetEnvironment's.
//
// There is no default host: when none is set, the error (ErrUnset) names
// every variable. The URL found must be an absolute http(s) URL with a
// host (ErrInvalid otherwise). lookup nil means os.LookupEnv; o may be nil.
func DNSURL(lookup func(string) (string, bool), o *DNSOptions) (string, error) {
	r := reader(lookup)
	if o == nil {
		o = &DNSOptions{}
	}
	if u := strings.TrimSpace(o.URL); u != "" {
		return checkDNSURL(u, "DNSOptions.URL")
	}
	names := []string{AgentDNSURLEnv, ACPDNSURLEnv}
	if o.Env != "" {
		names = append([]string{o.Env}, names...)
	}
	if name, v := r.first(names...); v != "" {
		return checkDNSURL(v, name)
	}
	if host := r.get(DNSServiceHostEnv); host != "" {
		port := DefaultDNSServicePort
		if p := r.get(DNSServicePortEnv); p != "" {
			n, err := strconv.Atoi(p)
			if err != nil || n < 1 || n > 65535 {
				return "", &VarError{Names: []string{DNSServicePortEnv}, Err: ErrInvalid, Rule: "want a port number, 1 to 65535"}
			}
			port = n
		}
		return checkDNSURL("http://"+net.JoinHostPort(host, strconv.Itoa(port)), DNSServiceHostEnv)
	}
	env := o.Environment
	if env == "" {
		var err error
		if env, err = r.environment(); err != nil {
			return "", err
		}
	} else if _, err := ParseEnvironment(string(env)); err != nil {
		return "", err
	}
	envName := DNSURLEnvPrefix + strings.ToUpper(string(env))
	if v := r.get(envName); v != "" {
		return checkDNSURL(v, envName)
	}
	return "", &VarError{
		Names: append(names, DNSServiceHostEnv, DNSServicePortEnv, envName),
		Err:   ErrUnset,
		Rule:  "set one to the Agent DNS URL (DNS_SERVICE_HOST with DNS_SERVICE_PORT, default 8000); there is no default host",
	}
}

// checkDNSURL requires an absolute http(s) URL with a host; the error
// names where it came from, not the value.
func checkDNSURL(v, from string) (string, error) {
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Hostname() == "" {
		return "", &VarError{Names: []string{from}, Err: ErrInvalid, Rule: "want an absolute http(s) URL"}
	}
	return v, nil
}
