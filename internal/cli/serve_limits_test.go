package cli

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"novaos.dev/novaos/a2a"
)

func TestParseSize(t *testing.T) {
	tests := []struct {
		in       string
		negative bool
		want     int64
		wantErr  bool
	}{
		{in: "4096", want: 4096},
		{in: "64KiB", want: 64 << 10},
		{in: "64kib", want: 64 << 10},
		{in: "256 MiB", want: 256 << 20},
		{in: "1GiB", want: 1 << 30},
		{in: "10MB", want: 10e6},
		{in: "3KB", want: 3000},
		{in: "12B", want: 12},
		{in: "0", want: 0},
		{in: "-1", negative: true, want: -1},
		{in: "-5MiB", negative: true, want: -1},
		{in: "-1", wantErr: true},
		{in: "", wantErr: true},
		{in: "MiB", wantErr: true},
		{in: "1.5MiB", wantErr: true},
		{in: "10 furlongs", wantErr: true},
		{in: "9999999999GiB", wantErr: true},
		{in: "0x10", wantErr: true},
	}
	for _, tt := range tests {
		got, err := parseSize(tt.in, tt.negative)
		if (err != nil) != tt.wantErr || (!tt.wantErr && got != tt.want) {
			t.Errorf("parseSize(%q, %v) = %d, %v; want %d, error %v", tt.in, tt.negative, got, err, tt.want, tt.wantErr)
		}
	}
	for _, n := range []int64{1, 4096, 64 << 10, 10 << 20, 3 << 30, 1000} {
		b := byteSize{n: n}
		if got, err := parseSize(b.String(), false); err != nil || got != n {
			t.Errorf("%d prints as %q, which reads back as %d, %v", n, b.String(), got, err)
		}
	}
}

// The limit and cross-site flags reach the server.
func TestServeLimitFlags(t *testing.T) {
	base, _, _ := serveFor(t, nil, "--max-header-bytes", "4KiB", "--allow-host", "proxy.test",
		"--cors-origin", "https://app.example.com", "--max-conns", "64", "--max-inflight-bytes", "16MiB", "--max-body-bytes", "1MiB")
	do := func(method, path, host, origin, body string, hdr map[string]string) *http.Response {
		t.Helper()
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if host != "" {
			req.Host = host
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	agent := `{"name":"x","url":"https://x.agents.example.com/a2a"}`
	json := map[string]string{"Content-Type": "application/json", "A2A-Version": "1.0"}
	tests := []struct {
		name string
		resp *http.Response
		want int
	}{
		{"header limit", do("GET", "/healthz", "", "", "", map[string]string{"X-Big": strings.Repeat("a", 8<<10)}), http.StatusRequestHeaderFieldsTooLarge},
		{"foreign Host write", do("POST", "/api/v1/agents", "evil.attacker.test", "", agent, json), http.StatusMisdirectedRequest},
		{"allowed Host write", do("POST", "/api/v1/agents", "proxy.test", "", agent, json), http.StatusCreated},
		{"foreign Origin write", do("POST", "/agents/echo", "", "https://evil.attacker.test", "{}", json), http.StatusForbidden},
		{"body limit", do("POST", "/agents/echo", "", "", strings.Repeat(" ", 2<<20), json), http.StatusRequestEntityTooLarge},
	}
	for _, tt := range tests {
		if tt.resp.StatusCode != tt.want {
			t.Errorf("%s: status %d, want %d", tt.name, tt.resp.StatusCode, tt.want)
		}
	}
	resp := do("GET", "/agents/echo/.well-known/agent-card.json", "", "https://app.example.com", "", nil)
	if got := resp.Header.Get("Access-Control-Allow-Origin"); got != "https://app.example.com" {
		t.Errorf("listed origin: Access-Control-Allow-Origin %q", got)
	}
}

func TestServeLimitFlagErrors(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantErr  string
	}{
		{"budget below a body", []string{"--max-inflight-bytes", "1MiB", "--max-body-bytes", "2MiB"}, exitUsage, "--max-inflight-bytes"},
		// A request holds five times its body of the budget.
		{"budget below five bodies", []string{"--max-inflight-bytes", "8MiB", "--max-body-bytes", "2MiB"}, exitUsage, "5 times --max-body-bytes"},
		{"bad size", []string{"--max-body-bytes", "lots"}, exitUsage, "want a size"},
		{"zero body", []string{"--max-body-bytes", "0"}, exitUsage, "--max-body-bytes"},
		{"negative body", []string{"--max-body-bytes", "-1"}, exitUsage, "at least 0"},
		{"wildcard origin", []string{"--cors-origin", "*"}, exitFail, "wildcards"},
		{"allowed host URL", []string{"--allow-host", "http://proxy.test"}, exitFail, "allowed host"},
		{"unknown binding", []string{"--bindings", "jsonrpc,soap"}, exitUsage, `unknown binding "soap"`},
		{"binding twice", []string{"--bindings", "rest,http+json"}, exitUsage, "HTTP+JSON is listed twice"},
		{"grpc without its address", []string{"--bindings", "grpc,jsonrpc"}, exitUsage, "give --grpc-addr"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"serve", "--addr", "127.0.0.1:0", "--data", t.TempDir()}, tt.args...)
			code, _, stderr := runCmd(t, args...)
			if code != tt.wantCode || !strings.Contains(stderr, tt.wantErr) {
				t.Errorf("exit %d, want %d; stderr %q, want it to mention %q", code, tt.wantCode, stderr, tt.wantErr)
			}
		})
	}
}

func TestParseBindings(t *testing.T) {
	got, err := parseBindings(" REST, jsonrpc")
	if err != nil || !slices.Equal(got, []string{a2a.BindingHTTPJSON, a2a.BindingJSONRPC}) {
		t.Fatalf("parseBindings = %q, %v", got, err)
	}
}
