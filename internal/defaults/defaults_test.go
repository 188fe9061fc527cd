package defaults_test

import (
	"fmt"
	"testing"
	"time"

	"novaos.dev/novaos/internal/defaults"
)

func TestPositive(t *testing.T) {
	tests := []struct {
		name      string
		set, want time.Duration
	}{
		{"unset", 0, time.Minute},
		{"negative", -time.Second, time.Minute},
		{"set", time.Second, time.Second},
		{"smallest", 1, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := tc.set
			defaults.Positive(&v, time.Minute)
			if v != tc.want {
				t.Errorf("Positive(%v) = %v, want %v", tc.set, v, tc.want)
			}
		})
	}
	n, f := -1, 0.0
	defaults.Positive(&n, 16)
	defaults.Positive(&f, 0.25)
	if n != 16 || f != 0.25 {
		t.Errorf("int %d, float %v", n, f)
	}
}

func ExamplePositive() {
	type Options struct {
		MaxBodyBytes int64
		Lease        time.Duration
	}
	v := Options{Lease: 10 * time.Second}
	defaults.Positive(&v.MaxBodyBytes, 1<<20)
	defaults.Positive(&v.Lease, time.Minute)
	fmt.Println(v.MaxBodyBytes, v.Lease)
	// Output: 1048576 10s
}
