package registry

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"

	"novaos.dev/novaos/netguard"
)

// Policy says which agent URLs are acceptable. The registry applies one to
// every registration and update; the Client applies its own to records it
// sends and to records it connects to, so a misconfigured or compromised
// registry cannot send it elsewhere. Hosts are classified by
// novaos.dev/novaos/netguard, the guard push webhooks share: IPv6 forms
// that carry an IPv4 address (mapped, compatible, NAT64, 6to4, Teredo,
// ISATAP) count as the address they carry.
//
// A nil or zero Policy accepts any public host and refuses loopback,
// private, link-local and other non-public addresses. Cloud metadata
// endpoints, multicast and other reserved addresses are refused whatever
// it says.
type Policy struct {
	// AllowedHostSuffixes, when non-empty, restricts hosts: a suffix with
	// a leading dot (".example.com") matches hosts below it; one without
	// ("example.com") matches that host and hosts below it; an IP
	// address matches only itself (netguard.HostAllowed). It always
	// applies, also to loopback hosts AllowLoopback lets through.
	AllowedHostSuffixes []string
	// AllowLoopback accepts localhost, *.localhost, 127.0.0.0/8, ::1 and
	// the unspecified addresses (0.0.0.0 and :: reach this host).
	AllowLoopback bool
	// AllowPrivate accepts private (10/8, 172.16/12, 192.168/16, fc00::/7,
	// fec0::/10), shared (100.64/10), link-local and other non-routable
	// unicast addresses.
	AllowPrivate bool
}

// Guard is the part of the policy that classes of address decide, for
// checks that see only an address (a connection being dialled).
func (p *Policy) Guard() *netguard.Policy {
	if p == nil {
		return &netguard.Policy{}
	}
	return &netguard.Policy{AllowLoopback: p.AllowLoopback, AllowPrivate: p.AllowPrivate}
}

// Check parses raw and applies the policy. The URL must be an absolute
// http or https URL with a host, no user information and no fragment, at
// most MaxURLLen bytes, and a port, if any, from 1 to 65535. Host names
// must be ASCII (IDNA A-labels for international names), compared without
// case and without a trailing dot; numeric hosts must be standard IP
// literals (not 2130706433, 0177.0.0.1 or 127.1). It returns an error
// wrapping ErrURLNotAllowed when the policy refuses the host, or
// ErrInvalid when the URL itself is unusable.
func (p *Policy) Check(raw string) error {
	var pol Policy
	if p != nil {
		pol = *p
	}
	if len(raw) > MaxURLLen {
		return fmt.Errorf("registry: URL is longer than %d bytes: %w", MaxURLLen, ErrInvalid)
	}
	_, host, err := netguard.ParseURL(raw)
	if err != nil {
		return guardError(err)
	}
	if err := pol.Guard().CheckHost(host); err != nil {
		return guardError(err)
	}
	if len(pol.AllowedHostSuffixes) > 0 && !hostAllowed(host, pol.AllowedHostSuffixes) {
		return fmt.Errorf("registry: host %s is outside the allowed host suffixes: %w", host, ErrURLNotAllowed)
	}
	return nil
}

func hostAllowed(host string, suffixes []string) bool {
	return netguard.HostAllowed(host, suffixes)
}

// guardError restates a netguard error with the registry's sentinels, so
// callers branch on ErrInvalid and ErrURLNotAllowed as before.
func guardError(err error) error {
	var re *netguard.RefusedError
	if errors.As(err, &re) {
		return fmt.Errorf("registry: host %s is a %s address: %w", re.Host, re.Class, ErrURLNotAllowed)
	}
	var me *netguard.MalformedError
	if errors.As(err, &me) {
		return fmt.Errorf("registry: %s: %w", me.Reason, ErrInvalid)
	}
	return fmt.Errorf("registry: %w: %w", ErrInvalid, err)
}

// PolicyAt is p, or by default any public host; either way loopback hosts
// too when the server is reached on loopback (a developer's machine) and
// p is nil or loopbackIfLocal is set.
func PolicyAt(p *Policy, loopbackIfLocal bool, baseURL string) *Policy {
	out := &Policy{}
	if p != nil {
		if !loopbackIfLocal {
			return p
		}
		*out = *p
		out.AllowedHostSuffixes = slices.Clone(p.AllowedHostSuffixes)
	}
	if u, err := url.Parse(baseURL); err == nil {
		host := u.Hostname()
		ip := net.ParseIP(host)
		out.AllowLoopback = out.AllowLoopback || host == "localhost" || (ip != nil && ip.IsLoopback())
	}
	return out
}
