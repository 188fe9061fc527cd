package a2aclient

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"novaos.dev/novaos/netguard"
)

// ErrNoAllowList is returned by Resolver.Connect when it is given no host
// suffix to allow.
var ErrNoAllowList = errors.New("a2aclient: connect needs a host allow-list")

// ErrHostNotAllowed is wrapped by Resolver.Connect's error when the
// interface URL the card advertises is outside the allow-list.
var ErrHostNotAllowed = errors.New("a2aclient: host not in the allow-list")

// Connect fetches the card of the agent at baseURL (through the Resolver:
// its cache, ConnectGuard and Verify apply) and returns New's client for
// it, for a card that may come from a third party. The interface URL a
// card advertises is where the client sends its requests and credentials,
// so a card must not be able to point it at a host the caller never named:
// allowedHosts is required (ErrNoAllowList when it names no suffix) and
// the selected interface's host must match one of its suffixes
// (netguard.HostAllowed: ".partner.example" matches the hosts below it,
// "partner.example" that host too), or the error wraps ErrHostNotAllowed.
//
// The client's connections are guarded too: opts.ConnectGuard, or when it
// is nil the zero netguard.Policy (public addresses only), is checked on
// the interface URL now and on every address dialled later. Set it to
// &netguard.Policy{AllowLoopback: true, AllowPrivate: true} for an agent
// on a private network; the allow-list still applies.
func (r *Resolver) Connect(ctx context.Context, baseURL string, allowedHosts []string, opts *Options) (*Client, error) {
	if !anySuffix(allowedHosts) {
		return nil, ErrNoAllowList
	}
	card, err := r.Resolve(ctx, baseURL)
	if err != nil {
		return nil, err
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.ConnectGuard == nil {
		o.ConnectGuard = &netguard.Policy{}
	}
	// The allow-list is checked before New, so a refused card costs no
	// transport.
	iface, err := o.selectInterface(card)
	if err != nil {
		return nil, err
	}
	host, err := interfaceHost(iface.URL)
	if err != nil {
		return nil, fmt.Errorf("a2aclient: connect: the card's interface URL: %w", err)
	}
	if host == "" || !netguard.HostAllowed(host, allowedHosts) {
		return nil, fmt.Errorf("a2aclient: connect: the card's interface host %s: %w", host, ErrHostNotAllowed)
	}
	return New(card, &o)
}

// anySuffix reports whether suffixes holds one that can match.
func anySuffix(suffixes []string) bool {
	for _, s := range suffixes {
		if s = strings.Trim(strings.TrimSpace(s), "."); s != "" {
			return true
		}
	}
	return false
}
