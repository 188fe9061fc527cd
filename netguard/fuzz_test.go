package netguard

import (
	"errors"
	"net/netip"
	"testing"
)

func FuzzCheckURL(f *testing.F) {
	for _, s := range []string{
		"https://hooks.example.com/a2a", "http://127.0.0.1:8080/", "http://[::ffff:7f00:1]/",
		"http://[64:ff9b:1:7f00:1::]/", "http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/", "http://0177.0.0.1/",
		"http://127.1/", "http://2130706433/", "http://x:99999/", "http://[fe80::1%25eth0]/", "http://a.localhost./",
	} {
		f.Add(s)
	}
	policies := []*Policy{nil, {AllowLoopback: true}, {AllowPrivate: true}, {AllowLoopback: true, AllowPrivate: true}}
	f.Fuzz(func(t *testing.T, raw string) {
		for _, p := range policies {
			err := p.CheckURL(raw)
			malformed, refused := errors.Is(err, ErrMalformed), errors.Is(err, ErrRefused)
			if err != nil && malformed == refused {
				t.Fatalf("CheckURL(%q) = %v: want exactly one of ErrMalformed, ErrRefused", raw, err)
			}
			if err != nil {
				continue
			}
			_, host, perr := ParseURL(raw)
			if perr != nil {
				t.Fatalf("CheckURL(%q) passed but ParseURL failed: %v", raw, perr)
			}
			if again, err := CanonicalHost(host); err != nil || again != host {
				t.Fatalf("CanonicalHost(%q) = %q, %v: not a fixed point", host, again, err)
			}
			c, _ := ClassifyHost(host)
			if !p.Allows(c) {
				t.Fatalf("CheckURL(%q) passed a %v host under %+v", raw, c, p)
			}
			if a, err := netip.ParseAddr(host); err == nil && !p.Allows(ClassifyAddr(a)) {
				t.Fatalf("CheckURL(%q) passed a refused address under %+v", raw, p)
			}
		}
	})
}
