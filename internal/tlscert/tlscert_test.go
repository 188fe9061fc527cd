package tlscert

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"novaos.dev/novaos/internal/tlscert/certtest"
)

// serve serves cfg on loopback until the test ends and returns the
// address; every connection completes its handshake and is closed.
func serve(t *testing.T, cfg *tls.Config) string {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.(*tls.Conn).Handshake()
			c.Close()
		}
	}()
	return ln.Addr().String()
}

func TestLoadServesThePair(t *testing.T) {
	ca := certtest.NewCA(t)
	leaf := ca.Issue(t, "127.0.0.1")
	cert, key := leaf.WritePEM(t, t.TempDir())
	p, err := Load(cert, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, p.Config())
	if got := certtest.ServedSerial(t, addr, ca); got.Cmp(leaf.Cert.SerialNumber) != 0 {
		t.Errorf("served serial %x, want %x", got, leaf.Cert.SerialNumber)
	}
	// TLS 1.1 and older are refused.
	old := ca.ClientConfig()
	old.MinVersion, old.MaxVersion = tls.VersionTLS10, tls.VersionTLS11
	if c, err := tls.Dial("tcp", addr, old); err == nil {
		c.Close()
		t.Error("a TLS 1.1 client completed a handshake")
	}
	if got := p.Config().MinVersion; got != tls.VersionTLS12 {
		t.Errorf("MinVersion %x, want TLS 1.2", got)
	}
}

func TestLoadRefuses(t *testing.T) {
	ca := certtest.NewCA(t)
	dir := t.TempDir()
	good := ca.Issue(t, "127.0.0.1")
	cert, key := good.WritePEM(t, dir)
	otherCert, _ := ca.Issue(t, "127.0.0.1").PEM(t)
	expiredCert, expiredKey := ca.IssueValid(t, time.Now().Add(-3*time.Hour), time.Now().Add(-2*time.Hour), "127.0.0.1").PEM(t)
	futureCert, futureKey := ca.IssueValid(t, time.Now().Add(2*time.Hour), time.Now().Add(3*time.Hour), "127.0.0.1").PEM(t)
	write := func(name string, b []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	tests := []struct {
		name      string
		cert, key string
		want      string
		wantErr   error
	}{
		{"no cert file", filepath.Join(dir, "missing.crt"), key, "missing.crt", os.ErrNotExist},
		{"no key file", cert, filepath.Join(dir, "missing.key"), "missing.key", os.ErrNotExist},
		{"key of another certificate", write("other.crt", otherCert), key, "does not match", nil},
		{"key file holds a certificate", cert, write("cert-as-key.key", otherCert), "certificate rather than a key", nil},
		{"empty cert", write("empty.crt", nil), key, "empty.crt", nil},
		{"expired", write("expired.crt", expiredCert), write("expired.key", expiredKey), "expired", ErrNotValid},
		{"not yet valid", write("future.crt", futureCert), write("future.key", futureKey), "valid from", ErrNotValid},
		{"too large", write("huge.crt", bytes.Repeat([]byte("A"), maxFileBytes+1)), key, "larger than", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(tt.cert, tt.key, nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Load: %v, want an error mentioning %q", err, tt.want)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("Load: %v, want errors.Is %v", err, tt.wantErr)
			}
			if strings.Contains(err.Error(), "PRIVATE KEY") {
				t.Error("the error shows key material")
			}
		})
	}
}

// logCount counts error records.
type logCount struct {
	slog.Handler
	errors chan string
}

func (l *logCount) Enabled(context.Context, slog.Level) bool { return true }

func (l *logCount) Handle(_ context.Context, r slog.Record) error {
	if r.Level >= slog.LevelError {
		l.errors <- r.Message
	}
	return nil
}

func newLogCount() (*slog.Logger, chan string) {
	c := &logCount{Handler: slog.DiscardHandler, errors: make(chan string, 16)}
	return slog.New(c), c.errors
}

func TestReloadKeepsThePairInUseOnABadOne(t *testing.T) {
	ca := certtest.NewCA(t)
	dir := t.TempDir()
	first := ca.Issue(t, "127.0.0.1")
	cert, key := first.WritePEM(t, dir)
	log, errs := newLogCount()
	p, err := Load(cert, key, &Options{Interval: -1, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, p.Config())

	// A renewal caught halfway: the new certificate, the old key.
	second := ca.Issue(t, "127.0.0.1")
	secondCert, secondKey := second.PEM(t)
	certtest.WriteFile(t, cert, secondCert)
	if err := p.Reload(); err == nil || !strings.Contains(err.Error(), "does not match") {
		t.Fatalf("Reload with a mismatched key: %v", err)
	}
	if len(errs) != 1 {
		t.Errorf("%d errors logged, want 1", len(errs))
	}
	if got := certtest.ServedSerial(t, addr, ca); got.Cmp(first.Cert.SerialNumber) != 0 {
		t.Fatalf("after a refused reload the server presents %x, want the first certificate %x", got, first.Cert.SerialNumber)
	}
	// The check a poll makes does not try (or log) the same bad pair again.
	if changed, err := p.load(false); changed || err != nil {
		t.Errorf("load(unchanged bad pair) = %v, %v; want no attempt", changed, err)
	}
	if len(errs) != 1 {
		t.Errorf("%d errors logged after a second look at the same files, want 1", len(errs))
	}

	certtest.WriteFile(t, key, secondKey)
	if changed, err := p.load(false); !changed || err != nil {
		t.Fatalf("load(completed renewal) = %v, %v", changed, err)
	}
	if got := certtest.ServedSerial(t, addr, ca); got.Cmp(second.Cert.SerialNumber) != 0 {
		t.Errorf("after the renewal the server presents %x, want %x", got, second.Cert.SerialNumber)
	}
	// Nothing changed: a poll does nothing, Reload reads them anyway.
	if changed, err := p.load(false); changed || err != nil {
		t.Errorf("load(unchanged) = %v, %v", changed, err)
	}
	if err := p.Reload(); err != nil {
		t.Errorf("Reload(unchanged good pair): %v", err)
	}
}

// Run sees a file change and loads it; the test waits on what the server
// presents, the deadline bounding only a failure.
func TestRunLoadsChangedFiles(t *testing.T) {
	ca := certtest.NewCA(t)
	dir := t.TempDir()
	cert, key := ca.Issue(t, "127.0.0.1").WritePEM(t, dir)
	p, err := Load(cert, key, &Options{Interval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { p.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	addr := serve(t, p.Config())

	next := ca.Issue(t, "127.0.0.1")
	next.WritePEM(t, dir)
	certtest.WaitSerial(t, addr, ca, next.Cert.SerialNumber)
}

func TestRunWithoutInterval(t *testing.T) {
	ca := certtest.NewCA(t)
	cert, key := ca.Issue(t, "127.0.0.1").WritePEM(t, t.TempDir())
	p, err := Load(cert, key, &Options{Interval: -1})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { p.Run(t.Context()); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("Run with a negative interval did not return")
	}
}

func TestDefaults(t *testing.T) {
	ca := certtest.NewCA(t)
	cert, key := ca.Issue(t, "127.0.0.1").WritePEM(t, t.TempDir())
	p, err := Load(cert, key, &Options{})
	if err != nil {
		t.Fatal(err)
	}
	if p.interval != DefaultInterval {
		t.Errorf("interval %v, want %v", p.interval, DefaultInterval)
	}
}

func TestReadFileLimit(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		size    int
		wantErr bool
	}{{0, false}, {maxFileBytes, false}, {maxFileBytes + 1, true}} {
		path := filepath.Join(dir, "f")
		if err := os.WriteFile(path, bytes.Repeat([]byte("A"), tt.size), 0o600); err != nil {
			t.Fatal(err)
		}
		b, err := readFile(path)
		if (err != nil) != tt.wantErr || (err == nil && len(b) != tt.size) {
			t.Errorf("readFile(%d bytes) = %d bytes, %v; want an error %v", tt.size, len(b), err, tt.wantErr)
		}
	}
}
