package netguard

import (
	"context"
	"net"
	"net/http"
	"syscall"
	"testing"
)

// The refusing dialer is http.DefaultTransport's, keep-alive included: a
// connection it makes probes after 30 s idle, not net's default 15 s.
func TestGuardTransportKeepsTheDefaultKeepAlive(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	tr := (&Policy{AllowLoopback: true}).GuardTransport(&http.Transport{}, nil)
	c, err := tr.DialContext(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	raw, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var idle int
	var serr error
	if err := raw.Control(func(fd uintptr) {
		idle, serr = syscall.GetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_KEEPIDLE)
	}); err != nil || serr != nil {
		t.Fatal(err, serr)
	}
	if idle != 30 {
		t.Errorf("TCP_KEEPIDLE = %d s, want 30 (http.DefaultTransport's KeepAlive)", idle)
	}
}
