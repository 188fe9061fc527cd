package cli

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

func TestHeadersFlag(t *testing.T) {
	tests := []struct {
		in   string
		want map[string]string
		ok   bool
	}{
		{"x-api-key=k1", map[string]string{"X-Api-Key": "k1"}, true},
		{"Authorization=Bearer abc=,x-tenant=acme ", map[string]string{"Authorization": "Bearer abc=", "X-Tenant": "acme"}, true},
		{"", map[string]string{}, true},
		{"novalue", nil, false},
		{"=k1", nil, false},
		{"bad name=k1", nil, false},
	}
	for _, tc := range tests {
		var f headersFlag
		err := f.Set(tc.in)
		if (err == nil) != tc.ok {
			t.Errorf("Set(%q) = %v, want ok %v", tc.in, err, tc.ok)
			continue
		}
		if err != nil {
			if strings.Contains(err.Error(), "k1") {
				t.Errorf("Set(%q): the error shows the value: %v", tc.in, err)
			}
			continue
		}
		got := map[string]string{}
		for k, v := range f.h {
			got[k] = v.Reveal()
		}
		if len(got) != len(tc.want) {
			t.Errorf("Set(%q) = %v, want %v", tc.in, got, tc.want)
		}
		for k, v := range tc.want {
			if got[k] != v {
				t.Errorf("Set(%q): %s = %q, want %q", tc.in, k, got[k], v)
			}
		}
		if s := f.String(); strings.Contains(s, "k1") || strings.Contains(s, "abc") || strings.Contains(s, "acme") {
			t.Errorf("String() = %q shows a value", s)
		}
	}
}

func TestServeTelemetryFlagErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		vars map[string]string
		want string
	}{
		{"ratio above one", []string{"--trace-sample-ratio", "1.5"}, nil, "--trace-sample-ratio: want a number from 0 to 1"},
		{"negative ratio", []string{"--trace-sample-ratio", "-0.1"}, nil, "--trace-sample-ratio"},
		{"headers without endpoint", []string{"--otlp-headers", "x-api-key=k-secret"}, nil, "--otlp-headers needs --otlp-endpoint"},
		{"headers from the environment without endpoint", nil, map[string]string{EnvOTLPHeaders: "x-api-key=k-secret"}, "--otlp-headers needs --otlp-endpoint"},
		{"bad headers in the environment", nil, map[string]string{EnvOTLPHeaders: "k-secret"}, "$" + EnvOTLPHeaders + ": want name=value pairs"},
		{"endpoint without scheme", []string{"--otlp-endpoint", "collector:4318"}, nil, "--otlp-endpoint: want an http:// or https:// URL"},
		{"endpoint with credentials", []string{"--otlp-endpoint", "https://u:k-secret@collector:4318"}, nil, "--otlp-endpoint: want a URL without credentials"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, out, errOut := testEnv(tc.vars)
			args := append([]string{"serve", "--addr", "127.0.0.1:0", "--data", t.TempDir()}, tc.args...)
			if code := run(t.Context(), args, e); code != exitUsage {
				t.Errorf("exit code %d, want %d", code, exitUsage)
			}
			if !strings.Contains(errOut.String(), tc.want) {
				t.Errorf("stderr %q, want it to contain %q", errOut, tc.want)
			}
			if strings.Contains(errOut.String()+out.String(), "k-secret") {
				t.Error("the output shows a header value")
			}
		})
	}
}

// The telemetry flags reach the server: /metrics on a listener of its
// own, the access log on stderr with the inbound trace, and the header
// values nowhere in the output.
func TestServeTelemetryFlags(t *testing.T) {
	base, out, errOut := serveFor(t, map[string]string{EnvOTLPHeaders: "x-api-key=k-secret"},
		"--metrics-addr", "127.0.0.1:0", "--otlp-endpoint", "http://127.0.0.1:1", "--trace-sample-ratio", "0")
	var metricsURL string
	for _, line := range strings.Split(out.String(), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "metrics"); ok {
			metricsURL, _, _ = strings.Cut(strings.TrimSpace(rest), " ")
		}
	}
	if !strings.HasPrefix(metricsURL, "http://127.0.0.1:") || strings.HasPrefix(metricsURL, base) {
		t.Fatalf("serve printed metrics at %q (server %s)", metricsURL, base)
	}
	resp, err := http.Get(metricsURL)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), "novaos_db_connections") {
		t.Errorf("GET %s: %d", metricsURL, resp.StatusCode)
	}
	req, _ := http.NewRequest("GET", base+"/healthz", nil)
	req.Header.Set("Traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	// The access log line is written before the answer is sent.
	var found bool
	for _, line := range strings.Split(errOut.String(), "\n") {
		if strings.Contains(line, `"msg":"http request"`) && strings.Contains(line, `"route":"/healthz"`) &&
			strings.Contains(line, `"trace_id":"4bf92f3577b34da6a3ce929d0e0e4736"`) {
			found = true
		}
	}
	if !found {
		t.Errorf("no access log line with the inbound trace on stderr")
	}
	if !strings.Contains(errOut.String(), `"otlpHeaders":["X-Api-Key"]`) {
		t.Errorf("the startup log does not name the OTLP header")
	}
	if strings.Contains(errOut.String()+out.String(), "k-secret") {
		t.Error("the output shows a header value")
	}
}
