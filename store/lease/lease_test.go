package lease

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

func TestResolve(t *testing.T) {
	tests := []struct {
		name    string
		in      *Options
		want    Options
		wantErr bool
	}{
		{name: "nil", in: nil, want: Options{Heartbeat: DefaultHeartbeat, Expiry: DefaultExpiry}},
		{name: "heartbeat only", in: &Options{Heartbeat: time.Second}, want: Options{Heartbeat: time.Second, Expiry: DefaultExpiry}},
		{name: "long heartbeat raises the default expiry", in: &Options{Heartbeat: time.Minute}, want: Options{Heartbeat: time.Minute, Expiry: 2 * time.Minute}},
		{name: "both", in: &Options{Heartbeat: 100 * time.Millisecond, Expiry: 250 * time.Millisecond}, want: Options{Heartbeat: 100 * time.Millisecond, Expiry: 250 * time.Millisecond}},
		{name: "expiry too short", in: &Options{Heartbeat: time.Second, Expiry: 1500 * time.Millisecond}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.in.Resolve()
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("Resolve = %+v, %v; want %+v (error %v)", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestNewIDIsRandom(t *testing.T) {
	a, b := NewID(), NewID()
	if len(a) != 32 || a == b {
		t.Errorf("NewID gave %q and %q", a, b)
	}
}

func TestKeeperRenewsUntilStopped(t *testing.T) {
	var n atomic.Int32
	boom := errors.New("database down")
	var failures atomic.Int32
	k := Start(Options{Heartbeat: 5 * time.Millisecond}, func(ctx context.Context) error {
		if _, ok := ctx.Deadline(); !ok {
			t.Error("renewal without a deadline")
		}
		if n.Add(1)%2 == 0 {
			return boom
		}
		return nil
	}, func(err error) {
		if errors.Is(err, boom) {
			failures.Add(1)
		}
	})
	deadline := time.Now().Add(5 * time.Second)
	for n.Load() < 4 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	k.Stop()
	k.Stop() // idempotent
	stopped := n.Load()
	if stopped < 4 || failures.Load() < 1 {
		t.Fatalf("%d renewals, %d failures reported", stopped, failures.Load())
	}
	time.Sleep(20 * time.Millisecond)
	if n.Load() != stopped {
		t.Errorf("renewed after Stop: %d then %d", stopped, n.Load())
	}
}

func TestNotedOnce(t *testing.T) {
	var n Noted
	tests := []struct {
		id   string
		want bool
	}{{"a", true}, {"b", true}, {"a", false}, {"b", false}}
	for _, tt := range tests {
		if got := n.First(tt.id); got != tt.want {
			t.Errorf("First(%q) = %v, want %v", tt.id, got, tt.want)
		}
	}
	for i := range maxNoted {
		n.First(string(rune(i + 'c')))
	}
	if n.First("past the bound") {
		t.Error("Noted remembers more ids than its bound")
	}
}
