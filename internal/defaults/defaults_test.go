package defaults_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"novaos.dev/novaos/internal/defaults"
)

type options struct {
	Logger       *slog.Logger
	Now          func() time.Time
	MaxBodyBytes int64
	Lease        time.Duration
}

func (o *options) withDefaults() options {
	v := defaults.Copy(o)
	defaults.Logger(&v.Logger)
	defaults.Clock(&v.Now)
	defaults.Positive(&v.MaxBodyBytes, 1<<20)
	defaults.Positive(&v.Lease, time.Minute)
	return v
}

func TestWithDefaults(t *testing.T) {
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	fixed := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	set := &options{Logger: logger, Now: func() time.Time { return fixed }, MaxBodyBytes: 10, Lease: time.Second}

	// Nil is every default.
	v := (*options)(nil).withDefaults()
	if v.Logger == nil || v.Now == nil || v.MaxBodyBytes != 1<<20 || v.Lease != time.Minute {
		t.Fatalf("defaults of nil: %+v", v)
	}
	v.Logger.Info("dropped") // a discarding logger, not a nil one

	// What the caller set is kept; the caller's value is not changed.
	v = set.withDefaults()
	if v.Logger != logger || !v.Now().Equal(fixed) || v.MaxBodyBytes != 10 || v.Lease != time.Second {
		t.Errorf("set options changed: %+v", v)
	}
	partial := &options{}
	_ = partial.withDefaults()
	if partial.Logger != nil || partial.MaxBodyBytes != 0 {
		t.Errorf("withDefaults changed the caller's options: %+v", partial)
	}
}

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
	v := defaults.Copy(&options{Lease: 10 * time.Second})
	defaults.Positive(&v.MaxBodyBytes, 1<<20)
	defaults.Positive(&v.Lease, time.Minute)
	fmt.Println(v.MaxBodyBytes, v.Lease)
	// Output: 1048576 10s
}
