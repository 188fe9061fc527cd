package app

import (
	"errors"
	"net"
	"testing"

	"novaos.dev/novaos/internal/tlscert"
)

// The Start-time check sees the address a host name was bound to; the
// New-time check only what the address itself says.
func TestPlaintextChecks(t *testing.T) {
	tests := []struct {
		addr     string
		bound    net.IP
		insecure bool
		refused  bool // by either check
		early    bool // refused by New already
	}{
		{"127.0.0.1:0", net.IPv4(127, 0, 0, 1), false, false, false},
		{"[::1]:0", net.IPv6loopback, false, false, false},
		{"localhost:0", net.IPv4(127, 0, 0, 1), false, false, false},
		{"0.0.0.0:0", net.IPv4zero, false, true, true},
		{"[::]:0", net.IPv6unspecified, false, true, true},
		{":0", net.IPv6unspecified, false, true, true},
		{"10.0.0.5:0", net.IPv4(10, 0, 0, 5), false, true, true},
		{"myhost.example:0", net.IPv4(192, 0, 2, 7), false, true, false},
		{"0.0.0.0:0", net.IPv4zero, true, false, false},
	}
	for _, tt := range tests {
		s := &Server{opts: Options{HTTP: HTTPOptions{InsecureListen: tt.insecure}}}
		err := s.checkPlaintext(&net.TCPAddr{IP: tt.bound})
		if got := err != nil; got != tt.refused || (err != nil && !errors.Is(err, ErrPlaintextListen)) {
			t.Errorf("%s bound to %s, insecure %v: checkPlaintext %v, want refused %v", tt.addr, tt.bound, tt.insecure, err, tt.refused)
		}
		if tt.insecure {
			continue
		}
		err = plaintextAddr(tt.addr)
		if got := err != nil; got != tt.early || (err != nil && !errors.Is(err, ErrPlaintextListen)) {
			t.Errorf("plaintextAddr(%s) = %v, want refused %v", tt.addr, err, tt.early)
		}
	}
	// With TLS nothing is refused.
	s := &Server{tls: new(tlscert.Pair)}
	if err := s.checkPlaintext(&net.TCPAddr{IP: net.IPv4zero}); err != nil {
		t.Errorf("with TLS: %v", err)
	}
	if err := plaintextAddr(""); err != nil {
		t.Errorf("no gRPC address: %v", err)
	}
}
