package cli

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestFailure(t *testing.T) {
	tests := []struct {
		name, what, first string
		n                 uint64
		want              []string
	}{
		{"direct (1 clients)", "streams", "boom", 3, []string{"direct (1 clients): 3 streams failed; first: boom"}},
		{"gateway-run", "", "boom", 1, []string{"gateway-run: 1 failed; first: boom"}},
		{"resume", "", "", 0, nil},
	}
	for _, tc := range tests {
		if got := failure(nil, tc.name, tc.n, tc.what, tc.first); !slices.Equal(got, tc.want) {
			t.Errorf("failure(%q, %d, %q) = %q, want %q", tc.name, tc.n, tc.what, got, tc.want)
		}
	}
}

// --cpuprofile-sides writes a profile of each measured round, named as
// each bench's -h says.
func TestTurnsBenchProfilesRounds(t *testing.T) {
	tests := []struct {
		bench string
		args  []string
		want  []string
	}{
		{"tools", []string{"--c", "1", "--d", "20ms", "--round", "20ms"},
			[]string{"latency-direct-0.prof", "latency-gateway-read-0.prof", "latency-gateway-write-0.prof", "load-direct-0.prof"}},
		{"runs", []string{"--c", "1", "--d", "20ms", "--round", "20ms", "--streams", "2"}, []string{"gateway-run-0.prof", "direct-stream-0.prof"}},
		{"ops", []string{"--c", "1", "--d", "20ms", "--round", "20ms", "--part", "overhead", "--store", "memory"},
			[]string{"telemetry-off-0.prof", "telemetry-on-0.prof"}},
	}
	for _, tc := range tests {
		t.Run(tc.bench, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "profiles")
			e, _, errOut := testEnv(nil)
			args := append([]string{"bench", tc.bench, "--warmup", "0", "--json", "--cpuprofile-sides", dir}, tc.args...)
			if code := run(t.Context(), args, e); code != exitOK {
				t.Fatalf("exit code %d; stderr %s", code, errOut)
			}
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, en := range entries {
				got = append(got, en.Name())
			}
			for _, w := range tc.want {
				if !slices.Contains(got, w) {
					t.Errorf("no %s among %s", w, strings.Join(got, ", "))
				}
			}
		})
	}
}
