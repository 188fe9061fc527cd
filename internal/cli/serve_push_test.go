package cli

import (
	"strings"
	"testing"
)

func TestServePushFlagErrors(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"zero timeout", []string{"--push-timeout", "0s"}, "--push-timeout"},
		{"zero attempts", []string{"--push-max-attempts", "0"}, "--push-max-attempts"},
		{"zero concurrency", []string{"--push-concurrency", "0"}, "--push-concurrency"},
		{"zero response", []string{"--push-max-response-bytes", "0"}, "--push-max-response-bytes"},
		{"backoff base over max", []string{"--push-backoff-base", "10m", "--push-backoff-max", "1m"}, "--push-backoff-base"},
		{"lease shorter than an attempt", []string{"--push-lease", "5s"}, "--push-lease"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"serve", "--addr", "127.0.0.1:0", "--data", t.TempDir()}, tt.args...)
			code, _, stderr := runCmd(t, args...)
			if code != exitUsage || !strings.Contains(stderr, tt.wantErr) {
				t.Errorf("exit %d, want %d; stderr %q, want it to mention %q", code, exitUsage, stderr, tt.wantErr)
			}
		})
	}
}
