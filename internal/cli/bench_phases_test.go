package cli

import (
	"strings"
	"testing"
)

// The phases benches refuse the same bad flags alike.
func TestPhasesBenchUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no clients", []string{"--c", "0"}, "--c must be from 1 to 4096"},
		{"too many clients", []string{"--c", "4097"}, "--c must be from 1 to 4096"},
		{"zero duration", []string{"--d", "0s"}, "--d and --round positive"},
		{"zero round", []string{"--round", "0s"}, "--d and --round positive"},
		{"negative warm-up", []string{"--warmup", "-1s"}, "--warmup not negative"},
		{"not postgres", []string{"--db", "mysql://x"}, "postgres:// or postgresql://"},
		{"no pool", []string{"--db-max-conns", "0"}, "--db-max-conns"},
		{"two CPU profiles", []string{"--cpuprofile", "a", "--cpuprofile-sides", "b"}, "exclude each other"},
	}
	for _, target := range []string{"tools", "llm"} {
		for _, tc := range tests {
			t.Run(target+"/"+tc.name, func(t *testing.T) {
				e, _, errOut := testEnv(nil)
				if code := run(t.Context(), append([]string{"bench", target}, tc.args...), e); code != exitUsage {
					t.Errorf("exit code %d, want %d", code, exitUsage)
				}
				if !strings.Contains(errOut.String(), tc.want) {
					t.Errorf("stderr %q, want %q", errOut, tc.want)
				}
			})
		}
	}
}
