package tools_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"novaos.dev/novaos/tools"
)

func TestValidServerName(t *testing.T) {
	for _, c := range []struct {
		name string
		want bool
	}{
		{"github", true},
		{"a", true},
		{"my-server_2", true},
		{strings.Repeat("a", 32), true},
		{strings.Repeat("a", 33), false},
		{"", false},
		{"2fa", false},
		{"_x", false},
		{"GitHub", false},
		{"a.b", false},
		{"a b", false},
		{"ü", false},
		{"memory", false},
		{"connector", false},
		{"files", false},
	} {
		if got := tools.ValidServerName(c.name); got != c.want {
			t.Errorf("ValidServerName(%q) = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestCallTimeout(t *testing.T) {
	for _, c := range []struct{ set, want time.Duration }{
		{0, tools.DefaultServerTimeout},
		{-time.Second, tools.DefaultServerTimeout},
		{time.Second, time.Second},
		{tools.MaxServerTimeout, tools.MaxServerTimeout},
		{time.Hour, tools.MaxServerTimeout},
	} {
		s := tools.UpstreamServer{Timeout: c.set}
		if got := s.CallTimeout(); got != c.want {
			t.Errorf("timeout %v: CallTimeout %v, want %v", c.set, got, c.want)
		}
	}
}

func TestCheck(t *testing.T) {
	http := func(f func(*tools.UpstreamServer)) tools.UpstreamServer {
		s := tools.UpstreamServer{TenantID: "acme", Name: "gh", Transport: tools.TransportHTTP, URL: "https://x.example/mcp",
			Headers: []string{"Authorization"}}
		f(&s)
		return s
	}
	stdio := func(f func(*tools.UpstreamServer)) tools.UpstreamServer {
		s := tools.UpstreamServer{TenantID: "acme", Name: "fs", Transport: tools.TransportStdio, Command: "/usr/bin/mcp-fs",
			Args: []string{"--ro"}, Env: []string{"TOKEN"}}
		f(&s)
		return s
	}
	for _, c := range []struct {
		name string
		s    tools.UpstreamServer
		want string // "" for valid
	}{
		{"http", http(func(*tools.UpstreamServer) {}), ""},
		{"stdio", stdio(func(*tools.UpstreamServer) {}), ""},
		{"http with env", http(func(s *tools.UpstreamServer) { s.Env = []string{"X"} }), "no command, args or env"},
		{"stdio with headers", stdio(func(s *tools.UpstreamServer) { s.Headers = []string{"X-Key"} }), "no url or headers"},
		{"a long url", http(func(s *tools.UpstreamServer) {
			s.URL = "https://x.example/" + strings.Repeat("a", tools.MaxServerURLBytes)
		}), "url longer"},
		{"a NUL in an argument", stdio(func(s *tools.UpstreamServer) { s.Args = []string{"a\x00b"} }), "args[0]"},
		{"too many args", stdio(func(s *tools.UpstreamServer) { s.Args = make([]string, tools.MaxServerArgs+1) }), "more than"},
		{"an env name with a dash", stdio(func(s *tools.UpstreamServer) { s.Env = []string{"A-B"} }), "env[0]"},
		{"an env name twice", stdio(func(s *tools.UpstreamServer) { s.Env = []string{"A", "A"} }), "twice"},
		{"an Mcp- header", http(func(s *tools.UpstreamServer) { s.Headers = []string{"Mcp-Anything"} }), "writes itself"},
		{"Host", http(func(s *tools.UpstreamServer) { s.Headers = []string{"Host"} }), "writes itself"},
		{"an unknown transport", http(func(s *tools.UpstreamServer) { s.Transport = "sse" }), "neither"},
	} {
		err := c.s.Check()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (!errors.Is(err, tools.ErrInvalidServer) || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v; want ErrInvalidServer saying %q", c.name, err, c.want)
		}
	}
}

func TestInfo(t *testing.T) {
	s := tools.UpstreamServer{TenantID: "acme", Name: "gh", Transport: tools.TransportHTTP, URL: "https://x.example/mcp",
		Headers: []string{"Authorization"}, SealedCredentials: []byte("sealed"), Version: 3}
	info := s.Info()
	if info.TimeoutMS != 30000 || info.Version != 3 || info.Headers[0] != "Authorization" || info.URL != s.URL {
		t.Errorf("Info = %+v", info)
	}
	info.Headers[0] = "changed"
	if s.Headers[0] != "Authorization" {
		t.Error("Info shares the registration's lists")
	}
}
