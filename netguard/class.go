package netguard

import (
	"net/netip"
)

// Class is the kind of network a destination belongs to. The classes are
// ordered: when an address carries another (an IPv6 form embedding an IPv4
// address), it gets the greater of the two.
type Class uint8

const (
	// Public is a globally routable unicast address, or a host name that
	// is not one of the special names below.
	Public Class = iota
	// Private is an address that is not globally routable: RFC 1918,
	// shared (100.64/10), link-local, unique-local (fc00::/7),
	// site-local (fec0::/10), documentation, benchmarking and other
	// IETF-reserved unicast ranges, and IPv6 transition forms that are not
	// routable (IPv4-compatible, translated, local-use NAT64).
	Private
	// Loopback is this host: 127/8, ::1, the unspecified addresses, and
	// localhost names.
	Loopback
	// Reserved is where no TCP server lives: multicast, broadcast,
	// 240/4 and the rest of 0/8. No Policy allows it.
	Reserved
	// Metadata is a cloud instance-metadata endpoint (169.254.169.254,
	// fd00:ec2::254, metadata.google.internal, …), the classic SSRF
	// target: it hands out the host's own credentials. No Policy allows it.
	Metadata
)

func (c Class) String() string {
	switch c {
	case Public:
		return "public"
	case Private:
		return "private"
	case Loopback:
		return "loopback"
	case Reserved:
		return "reserved"
	case Metadata:
		return "metadata"
	}
	return "unknown"
}

var metadataAddrs = []netip.Addr{
	netip.MustParseAddr("169.254.169.254"), // AWS, Azure, GCP, OCI, DigitalOcean, …
	netip.MustParseAddr("169.254.170.2"),   // AWS ECS task credentials
	netip.MustParseAddr("169.254.170.23"),  // AWS EKS pod identity
	netip.MustParseAddr("100.100.100.200"), // Alibaba Cloud
	netip.MustParseAddr("fd00:ec2::254"),   // AWS IMDS over IPv6
	netip.MustParseAddr("fd00:ec2::23"),    // AWS EKS pod identity over IPv6
}

var (
	privateV4 = prefixes(
		"10.0.0.0/8", "100.64.0.0/10", "169.254.0.0/16", "172.16.0.0/12",
		"192.0.0.0/24", "192.0.2.0/24", "192.88.99.0/24", "192.168.0.0/16",
		"198.18.0.0/15", "198.51.100.0/24", "203.0.113.0/24",
	)
	reservedV4 = prefixes("0.0.0.0/8", "224.0.0.0/4", "240.0.0.0/4")
	privateV6  = prefixes(
		"fc00::/7", "fec0::/10", "fe80::/10",
		"100::/64",      // discard-only
		"2001:2::/48",   // benchmarking
		"2001:10::/28",  // ORCHID
		"2001:20::/28",  // ORCHIDv2
		"2001:db8::/32", // documentation
		"3fff::/20",     // documentation (RFC 9637)
		"5f00::/16",     // SRv6 SIDs
		"::/96",         // IPv4-compatible, deprecated and not routed
		"::ffff:0:0:0/96",
		"64:ff9b:1::/48",
	)

	nat64       = netip.MustParsePrefix("64:ff9b::/96")
	nat64Local  = netip.MustParsePrefix("64:ff9b:1::/48")
	compatible  = netip.MustParsePrefix("::/96")
	translated  = netip.MustParsePrefix("::ffff:0:0:0/96")
	sixToFour   = netip.MustParsePrefix("2002::/16")
	teredo      = netip.MustParsePrefix("2001::/32")
	multicastV6 = netip.MustParsePrefix("ff00::/8")
)

func prefixes(ss ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParsePrefix(s)
	}
	return out
}

func inAny(a netip.Addr, ps []netip.Prefix) bool {
	for _, p := range ps {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// ClassifyAddr returns the class of a, looking through every IPv6 form
// that embeds an IPv4 address (see the package doc). A zone is ignored;
// the invalid Addr is Reserved.
func ClassifyAddr(a netip.Addr) Class {
	if !a.IsValid() {
		return Reserved
	}
	a = a.WithZone("")
	if a.Is4In6() {
		return classify4(a.Unmap())
	}
	if a.Is4() {
		return classify4(a)
	}
	return classify6(a)
}

func classify4(a netip.Addr) Class {
	for _, m := range metadataAddrs {
		if a == m {
			return Metadata
		}
	}
	switch {
	case a.IsLoopback() || a.IsUnspecified():
		return Loopback
	case a == netip.AddrFrom4([4]byte{255, 255, 255, 255}) || inAny(a, reservedV4):
		return Reserved
	case inAny(a, privateV4):
		return Private
	}
	return Public
}

func classify6(a netip.Addr) Class {
	for _, m := range metadataAddrs {
		if a == m {
			return Metadata
		}
	}
	switch {
	case a.IsLoopback() || a.IsUnspecified():
		return Loopback
	case multicastV6.Contains(a):
		return Reserved
	}
	c := Public
	if inAny(a, privateV6) {
		c = Private
	}
	addrs, guessed := embedded(a)
	for _, v4 := range addrs {
		k := classify4(v4)
		if guessed && (k == Reserved || v4.IsUnspecified()) {
			// A position that may not hold an address at all reads
			// zeros and prefix bits as one; only a real loopback or
			// metadata address there raises the class.
			continue
		}
		c = max(c, k)
	}
	return c
}

// embedded returns the IPv4 addresses a carries in any IPv6 transition
// form it belongs to; guessed is true when some of them are read at
// positions that may not hold an address.
func embedded(a netip.Addr) (_ []netip.Addr, guessed bool) {
	b := a.As16()
	v4 := func(i int) netip.Addr { return netip.AddrFrom4([4]byte{b[i], b[i+1], b[i+2], b[i+3]}) }
	var out []netip.Addr
	switch {
	case compatible.Contains(a), translated.Contains(a), nat64.Contains(a):
		out = append(out, v4(12))
	case nat64Local.Contains(a):
		// The local-use prefix may be any RFC 6052 length within the /48;
		// the address is read at every position it could be at. Bits 64-71
		// (byte 8) are the reserved "u" octet, skipped by the /48 and /56
		// layouts.
		out = append(out,
			netip.AddrFrom4([4]byte{b[6], b[7], b[9], b[10]}),  // /48
			netip.AddrFrom4([4]byte{b[7], b[9], b[10], b[11]}), // /56
			v4(9),  // /64
			v4(12), // /96
		)
		guessed = true
	case sixToFour.Contains(a):
		out = append(out, v4(2))
	case teredo.Contains(a):
		client := v4(12).As4()
		for i := range client {
			client[i] ^= 0xff
		}
		out = append(out, v4(4), netip.AddrFrom4(client))
	}
	// ISATAP: the interface identifier is 0000:5efe:a.b.c.d or
	// 0200:5efe:a.b.c.d (the universal/local bit set) under any prefix.
	if (b[8]|0x02) == 0x02 && b[9] == 0 && b[10] == 0x5e && b[11] == 0xfe {
		out = append(out, v4(12))
	}
	return out, guessed
}
