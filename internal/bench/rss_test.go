package bench

import (
	"errors"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseStatus(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    Memory
		wantErr bool
	}{
		{
			name: "linux status",
			in:   "Name:\tbench\nVmPeak:\t  900 kB\nVmHWM:\t    2048 kB\nVmRSS:\t    1024 kB\nThreads:\t5\n",
			want: Memory{RSS: 1024 << 10, HWM: 2048 << 10},
		},
		{name: "missing lines", in: "Name:\tbench\nVmRSS:\t1 kB\n", wantErr: true},
		{name: "not a number", in: "VmRSS:\tx kB\nVmHWM:\t1 kB\n", wantErr: true},
		{name: "wrong unit", in: "VmRSS:\t1 MB\nVmHWM:\t1 kB\n", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseStatus([]byte(tc.in))
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

func TestReadMemory(t *testing.T) {
	m, err := ReadMemory()
	if _, statErr := os.Stat("/proc/self/status"); statErr != nil {
		if !errors.Is(err, ErrNoMemoryStats) {
			t.Fatalf("without /proc: err = %v, want ErrNoMemoryStats", err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if m.RSS == 0 || m.HWM < m.RSS {
		t.Fatalf("implausible reading %+v", m)
	}
}
