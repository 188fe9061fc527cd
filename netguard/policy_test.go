package netguard

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestCheckURL(t *testing.T) {
	loop := &Policy{AllowLoopback: true}
	priv := &Policy{AllowPrivate: true}
	both := &Policy{AllowLoopback: true, AllowPrivate: true}
	tests := []struct {
		name   string
		policy *Policy
		url    string
		want   error // nil, ErrRefused or ErrMalformed
	}{
		{"public name", nil, "https://hooks.example.com/a2a", nil},
		{"public name, port, query", nil, "http://hooks.example.com:8443/a2a?x=1", nil},
		{"upper case and trailing dot", nil, "https://Hooks.Example.COM./", nil},
		{"public IPv4", nil, "http://93.184.215.14/", nil},
		{"public IPv6", nil, "http://[2606:4700::1111]:80/", nil},
		{"NAT64 of a public address", nil, "http://[64:ff9b::808:808]/", nil},
		{"port 1", nil, "http://hooks.example.com:1/", nil},
		{"port 65535", nil, "http://hooks.example.com:65535/", nil},

		// Ports.
		{"port 0", nil, "http://hooks.example.com:0/", ErrMalformed},
		{"port 65536", nil, "http://hooks.example.com:65536/", ErrMalformed},
		{"port 99999", nil, "http://hooks.example.com:99999/", ErrMalformed},
		{"port 0 on loopback opted in", loop, "http://127.0.0.1:0/", ErrMalformed},
		{"empty port", nil, "http://hooks.example.com:/", ErrMalformed},
		{"huge port", nil, "http://hooks.example.com:184467440737095516150/", ErrMalformed},

		// Malformed.
		{"empty", nil, "", ErrMalformed},
		{"relative", nil, "/hook", ErrMalformed},
		{"no scheme", nil, "hooks.example.com:443", ErrMalformed},
		{"ftp", nil, "ftp://hooks.example.com/", ErrMalformed},
		{"file", nil, "file:///etc/passwd", ErrMalformed},
		{"gopher", nil, "gopher://127.0.0.1:6379/_FLUSHALL", ErrMalformed},
		{"no host", nil, "http:///x", ErrMalformed},
		{"user info", nil, "https://user:pw@hooks.example.com/", ErrMalformed},
		{"user info hiding the host", nil, "https://hooks.example.com@127.0.0.1/", ErrMalformed},
		{"fragment", nil, "https://hooks.example.com/#x", ErrMalformed},
		{"unicode host", nil, "https://höoks.example.com/", ErrMalformed},
		{"fullwidth digits", nil, "http://１２７.０.０.１/", ErrMalformed},
		{"zone", nil, "http://[fe80::1%25eth0]/", ErrMalformed},
		{"IPv4 in brackets", nil, "http://[127.0.0.1]/", ErrMalformed},
		{"unclosed bracket", nil, "http://[::1/", ErrMalformed},
		{"control character", nil, "http://127.0.0.1\t/", ErrMalformed},
		{"bad label", nil, "http://-bad-.example.com/", ErrMalformed},
		{"empty label", nil, "http://a..example.com/", ErrMalformed},
		{"long label", nil, "http://" + strings.Repeat("a", 64) + ".example.com/", ErrMalformed},
		{"long host", nil, "http://" + strings.Repeat("a.", 127) + "com/", ErrMalformed},

		// Odd IPv4 spellings: refused outright, whatever the policy.
		{"decimal", both, "http://2130706433/", ErrMalformed},
		{"hex", both, "http://0x7f000001/", ErrMalformed},
		{"hex dotted", both, "http://0x7f.0x0.0x0.0x1/", ErrMalformed},
		{"octal", both, "http://0177.0.0.1/", ErrMalformed},
		{"octal metadata", both, "http://0251.0376.0251.0376/", ErrMalformed},
		{"short form", both, "http://127.1/", ErrMalformed},
		{"short form 3", both, "http://10.1.1/", ErrMalformed},
		{"leading zero", both, "http://127.0.0.01/", ErrMalformed},
		{"numeric last label", nil, "http://example.123/", ErrMalformed},

		// Loopback.
		{"127.0.0.1", nil, "http://127.0.0.1:8080/", ErrRefused},
		{"127/8", nil, "http://127.9.9.9/", ErrRefused},
		{"::1", nil, "http://[::1]:8080/", ErrRefused},
		{"::1 long form", nil, "http://[0:0:0:0:0:0:0:1]/", ErrRefused},
		{"0.0.0.0", nil, "http://0.0.0.0:8080/", ErrRefused},
		{"::", nil, "http://[::]/", ErrRefused},
		{"localhost", nil, "http://localhost/", ErrRefused},
		{"LOCALHOST.", nil, "http://LOCALHOST./", ErrRefused},
		{"sub.localhost", nil, "http://a.b.localhost/", ErrRefused},
		{"ip6-localhost", nil, "http://ip6-localhost/", ErrRefused},
		{"mapped", nil, "http://[::ffff:127.0.0.1]/", ErrRefused},
		{"mapped hex", nil, "http://[::ffff:7f00:1]/", ErrRefused},
		{"compatible", nil, "http://[::127.0.0.1]/", ErrRefused},
		{"compatible hex", nil, "http://[::7f00:1]/", ErrRefused},
		{"translated", nil, "http://[::ffff:0:7f00:1]/", ErrRefused},
		{"NAT64", nil, "http://[64:ff9b::7f00:1]/", ErrRefused},
		{"NAT64 local", nil, "http://[64:ff9b:1::7f00:1]/", ErrRefused},
		{"6to4", nil, "http://[2002:7f00:1::1]/", ErrRefused},
		{"Teredo", nil, "http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/", ErrRefused},
		{"ISATAP", nil, "http://[2606:4700::5efe:7f00:1]/", ErrRefused},
		{"loopback opted in", loop, "http://127.0.0.1:8080/", nil},
		{"localhost opted in", loop, "http://localhost:8080/", nil},
		{"6to4 loopback opted in", loop, "http://[2002:7f00:1::1]/", nil},
		{"loopback is not private", priv, "http://[::1]/", ErrRefused},

		// Private.
		{"10/8", nil, "http://10.1.2.3/", ErrRefused},
		{"172.16/12", nil, "http://172.16.0.1/", ErrRefused},
		{"192.168/16", nil, "http://192.168.0.10/", ErrRefused},
		{"100.64/10", nil, "http://100.64.0.1/", ErrRefused},
		{"link-local", nil, "http://169.254.1.1/", ErrRefused},
		{"ULA", nil, "http://[fd00::1]/", ErrRefused},
		{"site-local", nil, "http://[fec0::1]/", ErrRefused},
		{"link-local v6", nil, "http://[fe80::1]/", ErrRefused},
		{"compatible private", nil, "http://[::10.0.0.1]/", ErrRefused},
		{"NAT64 private", nil, "http://[64:ff9b::a00:1]/", ErrRefused},
		{"6to4 private", nil, "http://[2002:c0a8:101::1]/", ErrRefused},
		{"Teredo private", nil, "http://[2001:0:4136:e378:8000:63bf:f5ff:fffe]/", ErrRefused},
		{"private opted in", priv, "http://10.1.2.3/", nil},
		{"ULA opted in", priv, "http://[fd00::1]/", nil},
		{"private is not loopback", loop, "http://10.1.2.3/", ErrRefused},

		// Metadata and reserved: never.
		{"metadata", both, "http://169.254.169.254/latest/meta-data/", ErrRefused},
		{"metadata v6", both, "http://[fd00:ec2::254]/", ErrRefused},
		{"metadata mapped", both, "http://[::ffff:169.254.169.254]/", ErrRefused},
		{"metadata compatible", both, "http://[::a9fe:a9fe]/", ErrRefused},
		{"metadata NAT64", both, "http://[64:ff9b::a9fe:a9fe]/", ErrRefused},
		{"metadata 6to4", both, "http://[2002:a9fe:a9fe::]/", ErrRefused},
		{"metadata Teredo", both, "http://[2001:0:4136:e378:8000:63bf:5601:5601]/", ErrRefused},
		{"metadata name", both, "http://metadata.google.internal/computeMetadata/v1/", ErrRefused},
		{"alibaba metadata", both, "http://100.100.100.200/", ErrRefused},
		{"multicast", both, "http://224.0.0.1/", ErrRefused},
		{"multicast v6", both, "http://[ff02::1]/", ErrRefused},
		{"broadcast", both, "http://255.255.255.255/", ErrRefused},
		{"class E", both, "http://240.0.0.1/", ErrRefused},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.policy.CheckURL(tc.url)
			switch {
			case tc.want == nil && err != nil:
				t.Fatalf("CheckURL(%q) = %v, want nil", tc.url, err)
			case tc.want != nil && !errors.Is(err, tc.want):
				t.Fatalf("CheckURL(%q) = %v, want %v", tc.url, err, tc.want)
			case tc.want == ErrMalformed && errors.Is(err, ErrRefused), tc.want == ErrRefused && errors.Is(err, ErrMalformed):
				t.Fatalf("CheckURL(%q) = %v: malformed and refused are distinct", tc.url, err)
			}
		})
	}
}

func TestErrorsDoNotRepeatTheURL(t *testing.T) {
	for _, raw := range []string{"http://hooks.example.com/%zz?token=hunter2", "ftp://x/?token=hunter2", "http://127.0.0.1/?token=hunter2"} {
		if err := (*Policy)(nil).CheckURL(raw); err == nil || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("CheckURL(%q) = %v: want an error without the query", raw, err)
		}
	}
}

func TestRefusedError(t *testing.T) {
	err := (*Policy)(nil).CheckURL("http://[::ffff:169.254.169.254]/")
	var re *RefusedError
	if !errors.As(err, &re) || re.Class != Metadata || re.Host != "::ffff:169.254.169.254" {
		t.Fatalf("CheckURL = %v (%#v), want a *RefusedError for the metadata host", err, re)
	}
}

func TestControl(t *testing.T) {
	tests := []struct {
		policy  *Policy
		network string
		address string
		want    error
	}{
		{nil, "tcp", "93.184.215.14:443", nil},
		{nil, "tcp6", "[2606:4700::1111]:443", nil},
		{nil, "tcp4", "127.0.0.1:80", ErrRefused},
		{nil, "tcp", "[::ffff:127.0.0.1]:80", ErrRefused},
		{nil, "tcp", "[64:ff9b::7f00:1]:80", ErrRefused},
		{nil, "tcp", "[fe80::1%eth0]:80", ErrRefused},
		{nil, "tcp", "10.0.0.1:80", ErrRefused},
		{&Policy{AllowLoopback: true, AllowPrivate: true}, "tcp", "169.254.169.254:80", ErrRefused},
		{&Policy{AllowLoopback: true}, "tcp", "127.0.0.1:80", nil},
		{&Policy{AllowLoopback: true}, "tcp", "127.0.0.1:0", ErrMalformed},
		{nil, "unix", "/run/docker.sock", ErrRefused},
		{nil, "tcp", "localhost:80", ErrRefused}, // not resolved: fail closed
	}
	for _, tc := range tests {
		err := tc.policy.Control(tc.network, tc.address, nil)
		if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("Control(%s, %s) with %+v = %v, want %v", tc.network, tc.address, tc.policy, err, tc.want)
		}
	}
}

// A name that resolves to loopback passes the URL check (names are not
// resolved there) and is refused when dialled: the resolver is a tiny DNS
// server on 127.0.0.1 answering every A question with 127.0.0.1.
func TestDialerRefusesWhatANameResolvesTo(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("reached")) }))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	resolver := fakeResolver(t, [4]byte{127, 0, 0, 1})

	url := "http://rebind.example.com:" + port + "/"
	var p Policy
	if err := p.CheckURL(url); err != nil {
		t.Fatalf("CheckURL(%q) = %v: a public name must pass until it is resolved", url, err)
	}
	get := func(p *Policy) (string, error) {
		tr := &http.Transport{DialContext: p.Dialer(&net.Dialer{Resolver: resolver, Timeout: 5 * time.Second}).DialContext}
		defer tr.CloseIdleConnections()
		resp, err := (&http.Client{Transport: tr}).Get(url)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		var b [16]byte
		n, _ := resp.Body.Read(b[:])
		return string(b[:n]), nil
	}
	if body, err := get(&p); !errors.Is(err, ErrRefused) {
		t.Fatalf("GET %s with the zero policy = %q, %v; want ErrRefused", url, body, err)
	}
	var re *RefusedError
	if _, err := get(&p); !errors.As(err, &re) || re.Host != "127.0.0.1" || re.Class != Loopback {
		t.Fatalf("refusal = %v, want a RefusedError naming 127.0.0.1 as loopback", err)
	}
	// The same dial with loopback allowed reaches the server: the
	// refusal above is the policy's, not a broken resolver.
	if body, err := get(&Policy{AllowLoopback: true}); err != nil || body != "reached" {
		t.Fatalf("GET %s with loopback allowed = %q, %v", url, body, err)
	}
}

func TestDialerKeepsTheCallersControl(t *testing.T) {
	var calls int
	for _, base := range []*net.Dialer{
		{Control: func(string, string, syscall.RawConn) error { calls++; return nil }},
		{ControlContext: func(context.Context, string, string, syscall.RawConn) error { calls++; return nil }},
	} {
		p := &Policy{AllowLoopback: true}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		c, err := p.Dialer(base).Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		if err := p.CheckConn(c); err != nil {
			t.Errorf("CheckConn on an allowed loopback connection: %v", err)
		}
		if err := (*Policy)(nil).CheckConn(c); !errors.Is(err, ErrRefused) {
			t.Errorf("CheckConn with the zero policy on a loopback connection = %v, want ErrRefused", err)
		}
		c.Close()
		ln.Close()
		if _, err := (*Policy)(nil).Dialer(base).Dial("tcp", ln.Addr().String()); !errors.Is(err, ErrRefused) {
			t.Errorf("zero policy dial of loopback = %v, want ErrRefused", err)
		}
	}
	if calls != 2 {
		t.Errorf("the caller's Control ran %d times, want 2 (once per allowed dial)", calls)
	}
}

// fakeResolver returns a resolver whose DNS server, on 127.0.0.1, answers
// every A question with addr and every other question with no answer.
func fakeResolver(t *testing.T, addr [4]byte) *net.Resolver {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 512)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if reply := answer(buf[:n], addr); reply != nil {
				pc.WriteTo(reply, from)
			}
		}
	}()
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", pc.LocalAddr().String())
	}}
}

// answer builds the reply to a one-question DNS query (RFC 1035 §4.1).
func answer(q []byte, addr [4]byte) []byte {
	if len(q) < 12 {
		return nil
	}
	end := 12
	for end < len(q) && q[end] != 0 {
		end += int(q[end]) + 1
	}
	end += 5 // root label, QTYPE, QCLASS
	if end > len(q) {
		return nil
	}
	qtype := binary.BigEndian.Uint16(q[end-4:])
	r := append([]byte(nil), q[:end]...)
	r[2] = 0x81 // QR, RD
	r[3] = 0x80 // RA, NOERROR
	binary.BigEndian.PutUint16(r[4:], 1)
	binary.BigEndian.PutUint16(r[8:], 0)
	binary.BigEndian.PutUint16(r[10:], 0)
	if qtype != 1 {
		binary.BigEndian.PutUint16(r[6:], 0)
		return r
	}
	binary.BigEndian.PutUint16(r[6:], 1)
	r = append(r, 0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4)
	return append(r, addr[:]...)
}
