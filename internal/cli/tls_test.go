package cli

import (
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"novaos.dev/novaos/internal/tlscert/certtest"
)

func TestServeTLSFlagErrors(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name     string
		args     []string
		wantCode int
		want     []string
	}{
		{"certificate without key", []string{"--tls-cert", filepath.Join(dir, "c.pem")}, exitUsage, []string{"--tls-cert and --tls-key go together"}},
		{"key without certificate", []string{"--tls-key", filepath.Join(dir, "k.pem")}, exitUsage, []string{"--tls-cert and --tls-key go together"}},
		{"missing files", []string{"--tls-cert", filepath.Join(dir, "c.pem"), "--tls-key", filepath.Join(dir, "k.pem")}, exitFail, []string{"c.pem"}},
		{"plaintext on every address", []string{"--addr", "0.0.0.0:0"}, exitUsage, []string{"not loopback", "--tls-cert", "--tls-key", "--insecure-listen"}},
		{"plaintext gRPC on every address", []string{"--grpc-addr", "0.0.0.0:0"}, exitUsage, []string{"not loopback", "--insecure-listen"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"serve", "--addr", "127.0.0.1:0", "--data", t.TempDir()}, tt.args...)
			code, _, stderr := runCmd(t, args...)
			if code != tt.wantCode {
				t.Errorf("exit %d, want %d; stderr %q", code, tt.wantCode, stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q does not mention %q", stderr, w)
				}
			}
		})
	}
}

// --insecure-listen serves plaintext on every address, as before.
func TestServeInsecureListen(t *testing.T) {
	base, _, _ := serveFor(t, nil, "--addr", "0.0.0.0:0", "--insecure-listen")
	if !strings.HasPrefix(base, "http://127.0.0.1:") {
		t.Fatalf("URL %q", base)
	}
	if code, out, stderr := runCmd(t, "card", "get", base+"/agents/echo"); code != exitOK || !strings.Contains(out, base+"/agents/echo") {
		t.Errorf("card get: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
}

// serve --tls-cert with send and card get trusting the CA through
// --ca-cert over every binding, and SIGHUP loading a renewal (polling off,
// so only the signal can).
func TestServeTLS(t *testing.T) {
	ca := certtest.NewCA(t)
	dir := t.TempDir()
	cert, key := ca.Issue(t, "127.0.0.1").WritePEM(t, dir)
	caFile := ca.WriteCAFile(t, dir)
	base, out, _ := serveFor(t, nil, "--tls-cert", cert, "--tls-key", key, "--tls-reload-interval", "-1s", "--grpc-addr", "127.0.0.1:0")
	if !strings.HasPrefix(base, "https://127.0.0.1:") {
		t.Fatalf("URL %q, want https://", base)
	}
	echo := base + "/agents/echo"
	for _, transport := range []string{"jsonrpc", "rest", "grpc"} {
		t.Run(transport, func(t *testing.T) {
			code, stdout, stderr := runCmd(t, "send", echo, "hello over "+transport, "--transport", transport, "--ca-cert", caFile)
			if code != exitOK || !strings.Contains(stdout, "hello over "+transport) || !strings.Contains(stdout, "completed") {
				t.Errorf("send: exit %d, stdout %q, stderr %q", code, stdout, stderr)
			}
		})
	}
	code, stdout, stderr := runCmd(t, "card", "get", echo, "--ca-cert", caFile)
	if code != exitOK || !strings.Contains(stdout, `"`+echo+`"`) || !strings.Contains(stdout, `"https://127.0.0.1:`) {
		t.Errorf("card get: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if code, _, stderr := runCmd(t, "send", echo, "untrusted"); code != exitFail || !strings.Contains(stderr, "certificate") {
		t.Errorf("send without the CA: exit %d, stderr %q; want a certificate error", code, stderr)
	}
	if code, _, stderr := runCmd(t, "send", echo, "x", "--ca-cert", cert+".missing"); code != exitFail || !strings.Contains(stderr, "--ca-cert") {
		t.Errorf("send with a missing CA file: exit %d, stderr %q", code, stderr)
	}

	addr := strings.TrimPrefix(base, "https://")
	grpcAddr := grpcLine.FindStringSubmatch(out.String())
	if grpcAddr == nil {
		t.Fatalf("no gRPC address in %q", out)
	}
	next := ca.Issue(t, "127.0.0.1")
	next.WritePEM(t, dir)
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	for _, a := range []string{addr, grpcAddr[1]} {
		certtest.WaitSerial(t, a, ca, next.Cert.SerialNumber)
	}
}

var grpcLine = regexp.MustCompile(`gRPC\s+(\S+) \(A2A gRPC binding`)
