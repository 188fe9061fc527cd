// Package netguard decides whether a server may connect to a URL a client
// gave it.
//
// It is the one SSRF guard shared by every outbound URL NovaOS stores or
// dials (agent URLs in the registry, push-notification webhooks, the A2A
// client's connect guard).
//
// It classifies a destination as Public, Loopback, Private, Metadata or
// Reserved, and a Policy says which classes are allowed: Public always,
// Loopback and Private when opted in, Metadata (cloud instance-metadata
// endpoints) and Reserved (multicast, broadcast, 240/4, …) never.
//
//	var p netguard.Policy // the zero Policy: public destinations only
//	if err := p.CheckURL(webhook); err != nil {
//		return err // errors.Is(err, netguard.ErrRefused) or netguard.ErrMalformed
//	}
//	tr := http.DefaultTransport.(*http.Transport).Clone()
//	tr.DialContext = p.Dialer(nil).DialContext // refuses what names resolve to
//
// # Two checks
//
// A URL is checked when it is stored (CheckURL) and the address a
// connection goes to is checked again when it is dialled (Policy.Control,
// Policy.Dialer). The first gives the client a clear error at once; the
// second is the one that cannot be talked round: a public-looking name may
// resolve to 127.0.0.1 today or after the URL was stored (DNS rebinding),
// and only the resolved address says where a connection really goes.
// Names are never resolved by CheckURL.
//
// For an HTTP client, GuardTransport, GuardRoundTripper and GuardClient
// put the dial-time check (and, for GuardClient, a URL check of every
// redirect) on a transport; HostAllowed matches a host against an
// allow-list of suffixes.
//
// # What is looked through
//
// Every IPv6 form that carries an IPv4 address is classified by the IPv4
// address too, and the more restricted class wins: IPv4-mapped
// (::ffff:a.b.c.d), IPv4-compatible (::a.b.c.d), IPv4-translated
// (::ffff:0:a.b.c.d), NAT64 (64:ff9b::/96, and every RFC 6052 position in
// the local-use 64:ff9b:1::/48), 6to4 (2002::/16), Teredo (2001::/32: the
// server address and the client address, stored inverted) and ISATAP
// interface identifiers (…:5efe:a.b.c.d). Forms that are not globally
// routable (IPv4-compatible, translated, local-use NAT64, site-local
// fec0::/10, unique-local fc00::/7, documentation and benchmarking ranges)
// are Private even when the address they carry is public. In the
// local-use NAT64 prefix the IPv4 address sits where the operator's prefix
// length puts it, so it is read at every RFC 6052 position, and only a
// loopback or metadata address found there raises the class: zeros and
// prefix bits read as 0.0.0.0 or 240/4 at a position that holds no address
// would otherwise refuse every such address.
//
// The unspecified addresses 0.0.0.0 and :: are Loopback: connecting to
// them reaches the local host on Linux and macOS.
//
// # Host spellings
//
// A host is an IP literal in its standard form (dotted-quad IPv4 with no
// leading zeros, bracketed IPv6 without a zone) or an ASCII host name.
// Resolvers and browsers also read 2130706433, 0x7f.1, 0177.0.0.1 and
// 127.1 as 127.0.0.1; such hosts, and any name whose last label starts
// with a digit, are refused as malformed rather than guessed at. Names
// that always mean this host (localhost, *.localhost, ip6-localhost, …)
// are Loopback, and the metadata services' names
// (metadata.google.internal, …) are Metadata; any other name is judged by
// the address it resolves to, at dial time.
//
// A port, when given, must be 1 to 65535.
//
// # Proxies
//
// The dial-time check sees the address actually dialled. Through an HTTP
// proxy that is the proxy's address, and the proxy resolves the target:
// callers that let requests go through a proxy exempt the proxy's own
// address and rely on the URL check (and the proxy's rules) for the rest.
package netguard
