package netguard

import (
	"net/netip"
	"strings"
	"testing"
)

func TestClassifyAddr(t *testing.T) {
	tests := []struct {
		addr string
		want Class
	}{
		// IPv4.
		{"93.184.215.14", Public},
		{"8.8.8.8", Public},
		{"127.0.0.1", Loopback},
		{"127.255.255.254", Loopback},
		{"0.0.0.0", Loopback},
		{"0.1.2.3", Reserved},
		{"10.1.2.3", Private},
		{"172.16.0.1", Private},
		{"172.31.255.255", Private},
		{"172.32.0.1", Public},
		{"192.168.1.1", Private},
		{"100.64.0.1", Private},
		{"100.127.255.255", Private},
		{"100.128.0.1", Public},
		{"169.254.1.1", Private},
		{"169.254.169.254", Metadata},
		{"169.254.170.2", Metadata},
		{"100.100.100.200", Metadata},
		{"192.0.0.8", Private},
		{"192.0.2.1", Private},
		{"198.18.0.1", Private},
		{"198.51.100.1", Private},
		{"203.0.113.1", Private},
		{"224.0.0.1", Reserved},
		{"239.255.255.250", Reserved},
		{"240.0.0.1", Reserved},
		{"255.255.255.255", Reserved},

		// Plain IPv6.
		{"2606:4700::1111", Public},
		{"::1", Loopback},
		{"::", Loopback},
		{"fe80::1", Private},
		{"fe80::1%eth0", Private},
		{"fc00::1", Private},
		{"fd12:3456::1", Private},
		{"fec0::1", Private},
		{"feff::1", Private},
		{"ff02::1", Reserved},
		{"ff05::2", Reserved},
		{"2001:db8::1", Private},
		{"3fff::1", Private},
		{"100::1", Private},
		{"fd00:ec2::254", Metadata},
		{"fd00:ec2::23", Metadata},

		// IPv4-mapped.
		{"::ffff:127.0.0.1", Loopback},
		{"::ffff:7f00:1", Loopback},
		{"::ffff:169.254.169.254", Metadata},
		{"::ffff:10.0.0.1", Private},
		{"::ffff:0.0.0.0", Loopback},
		{"::ffff:8.8.8.8", Public},
		// IPv4-compatible: never routed, and what it carries counts.
		{"::127.0.0.1", Loopback},
		{"::7f00:1", Loopback},
		{"::169.254.169.254", Metadata},
		{"::10.0.0.1", Private},
		{"::8.8.8.8", Private},
		// IPv4-translated.
		{"::ffff:0:127.0.0.1", Loopback},
		{"::ffff:0:8.8.8.8", Private},
		// NAT64 well-known prefix: routable for public IPv4 only.
		{"64:ff9b::8.8.8.8", Public},
		{"64:ff9b::127.0.0.1", Loopback},
		{"64:ff9b::7f00:1", Loopback},
		{"64:ff9b::169.254.169.254", Metadata},
		{"64:ff9b::192.168.0.1", Private},
		// NAT64 local-use prefix, at each RFC 6052 position.
		{"64:ff9b:1::8.8.8.8", Private},
		{"64:ff9b:1::127.0.0.1", Loopback},                 // /96
		{"64:ff9b:1:0:7f:0:1::", Loopback},                 // /64: bytes 9-12
		{"64:ff9b:1:7f:0:1::", Loopback},                   // /56: byte 7, then 9-11
		{"64:ff9b:1:7f00:1::", Loopback},                   // /48: bytes 6-7, then 9-10: 127.0.1.0
		{"64:ff9b:1:a9fe:a9:fe00::", Metadata},             // /48: 169.254.169.254
		{"64:ff9b:1:0:a9:fea9:fe00:0", Metadata},           // /64: 169.254.169.254
		{"64:ff9b:1:ffff:ff00:ffff::", Private},            // /48: 255.255.255.255 is no destination
		{"64:ff9b:1:1234:5678:9abc:def0:1234", Private},    // nothing special inside
		{"64:ff9b:1::", Private},                           // zeros are not read as 0.0.0.0
		{"64:ff9b:1:ff00::", Private},                      // nor prefix bits as 255.0.0.0
		{"64:ff9b:2::127.0.0.1", Public},                   // outside both prefixes
		{"2002:7f00:1::", Loopback},                        // 6to4 of 127.0.0.1
		{"2002:a9fe:a9fe::1", Metadata},                    // 6to4 of 169.254.169.254
		{"2002:c0a8:0101::1", Private},                     // 6to4 of 192.168.1.1
		{"2002:0:0::1", Loopback},                          // 6to4 of 0.0.0.0
		{"2002:808:808::1", Public},                        // 6to4 of 8.8.8.8
		{"2001:0:4136:e378:8000:63bf:80ff:fffe", Loopback}, // Teredo, client 127.0.0.1
		{"2001:0:4136:e378:8000:63bf:5601:5601", Metadata}, // Teredo, client 169.254.169.254
		{"2001:0:4136:e378:8000:63bf:f5ff:fffe", Private},  // Teredo, client 10.0.0.1
		{"2001:0:7f00:1:8000:63bf:f7f7:f7f7", Loopback},    // Teredo, server 127.0.0.1
		{"2001:0:4136:e378:8000:63bf:f7f7:f7f7", Public},   // Teredo, client 8.8.8.8
		{"2001:4860:4860::8888", Public},                   // not Teredo: 2001:4860
		{"2606:4700::5efe:7f00:1", Loopback},               // ISATAP of 127.0.0.1
		{"2606:4700::200:5efe:a9fe:a9fe", Metadata},        // ISATAP (u bit) of 169.254.169.254
		{"2606:4700::5efe:808:808", Public},                // ISATAP of 8.8.8.8
		{"fe80::5efe:c0a8:101", Private},                   // link-local ISATAP
		{"2606:4700::100:5efe:7f00:1", Public},             // not an ISATAP identifier
	}
	for _, tc := range tests {
		t.Run(tc.addr, func(t *testing.T) {
			a, err := netip.ParseAddr(tc.addr)
			if err != nil {
				t.Fatal(err)
			}
			if got := ClassifyAddr(a); got != tc.want {
				t.Errorf("ClassifyAddr(%s) = %v, want %v", tc.addr, got, tc.want)
			}
		})
	}
	if got := ClassifyAddr(netip.Addr{}); got != Reserved {
		t.Errorf("ClassifyAddr(invalid) = %v, want reserved", got)
	}
}

// Every IPv4 address of a forbidden class stays forbidden in every IPv6
// form that carries it.
func TestEmbeddedFormsNeverLaunderAClass(t *testing.T) {
	v4s := []string{"127.0.0.1", "127.1.2.3", "10.0.0.1", "172.16.5.4", "192.168.0.1", "100.64.0.1",
		"169.254.169.254", "169.254.0.1", "0.0.0.0", "224.0.0.1"}
	forms := map[string]func(b [4]byte) netip.Addr{
		"mapped": func(b [4]byte) netip.Addr {
			return netip.AddrFrom16([16]byte{10: 0xff, 11: 0xff, 12: b[0], 13: b[1], 14: b[2], 15: b[3]})
		},
		"compatible": func(b [4]byte) netip.Addr {
			return netip.AddrFrom16([16]byte{12: b[0], 13: b[1], 14: b[2], 15: b[3]})
		},
		"translated": func(b [4]byte) netip.Addr {
			return netip.AddrFrom16([16]byte{8: 0xff, 9: 0xff, 12: b[0], 13: b[1], 14: b[2], 15: b[3]})
		},
		"nat64": func(b [4]byte) netip.Addr {
			return netip.AddrFrom16([16]byte{1: 0x64, 2: 0xff, 3: 0x9b, 12: b[0], 13: b[1], 14: b[2], 15: b[3]})
		},
		"nat64 local /48": func(b [4]byte) netip.Addr {
			return netip.AddrFrom16([16]byte{1: 0x64, 2: 0xff, 3: 0x9b, 5: 1, 6: b[0], 7: b[1], 9: b[2], 10: b[3]})
		},
		"nat64 local /56": func(b [4]byte) netip.Addr {
			return netip.AddrFrom16([16]byte{1: 0x64, 2: 0xff, 3: 0x9b, 5: 1, 7: b[0], 9: b[1], 10: b[2], 11: b[3]})
		},
		"nat64 local /64": func(b [4]byte) netip.Addr {
			return netip.AddrFrom16([16]byte{1: 0x64, 2: 0xff, 3: 0x9b, 5: 1, 9: b[0], 10: b[1], 11: b[2], 12: b[3]})
		},
		"6to4": func(b [4]byte) netip.Addr {
			return netip.AddrFrom16([16]byte{0: 0x20, 1: 0x02, 2: b[0], 3: b[1], 4: b[2], 5: b[3], 15: 1})
		},
		"teredo client": func(b [4]byte) netip.Addr {
			return netip.AddrFrom16([16]byte{0: 0x20, 1: 0x01, 4: 0x41, 5: 0x36, 6: 0xe3, 7: 0x78,
				12: ^b[0], 13: ^b[1], 14: ^b[2], 15: ^b[3]})
		},
		"teredo server": func(b [4]byte) netip.Addr {
			return netip.AddrFrom16([16]byte{0: 0x20, 1: 0x01, 4: b[0], 5: b[1], 6: b[2], 7: b[3], 12: 0xf7, 13: 0xf7, 14: 0xf7, 15: 0xf7})
		},
		"isatap": func(b [4]byte) netip.Addr {
			return netip.AddrFrom16([16]byte{0: 0x26, 1: 0x06, 2: 0x47, 10: 0x5e, 11: 0xfe, 12: b[0], 13: b[1], 14: b[2], 15: b[3]})
		},
	}
	for _, s := range v4s {
		v4 := netip.MustParseAddr(s)
		want := ClassifyAddr(v4)
		if want == Public {
			t.Fatalf("%s is public: not a useful case", s)
		}
		for name, form := range forms {
			a := form(v4.As4())
			want := want
			if strings.HasPrefix(name, "nat64 local") && (want == Reserved || v4.IsUnspecified()) {
				// Read at guessed positions, only loopback and metadata
				// raise the class; the prefix alone makes it Private.
				want = Private
			}
			if got := ClassifyAddr(a); got < want {
				t.Errorf("%s form %s of %s: class %v, want at least %v", name, a, s, got, want)
			}
		}
	}
}
