package bridge

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestMain runs the test binary as an agent program when a test starts
// it so (os.Args[1] is helperArg), and the tests otherwise.
func TestMain(m *testing.M) {
	if len(os.Args) > 2 && os.Args[1] == helperArg {
		helperProgram(os.Args[2])
		return
	}
	os.Exit(m.Run())
}

const helperArg = "bridge-helper-program"

// burstReplies is how many lines the "burst" program writes: no more
// than a run's reply buffer holds, so none waits for a reader.
const burstReplies = 16

// helperProgram is an agent program that reads its input to the end and
// then exits ("eof"), or never exits on its own ("stubborn"), or writes
// replies for run "run" and exits at once, its input unread ("burst").
func helperProgram(mode string) {
	if mode == "burst" {
		for i := range burstReplies {
			fmt.Printf(`{"run_id":"run","type":"status","text":"step %d"}`+"\n", i)
		}
		os.Exit(0)
	}
	_, _ = io.Copy(io.Discard, os.Stdin)
	if mode == "stubborn" {
		// Blocked, not sleeping as a wait: select{} alone would end the
		// program as deadlocked.
		time.Sleep(time.Hour)
	}
	os.Exit(0)
}

// lockedBuffer is a log destination the program's goroutines write to.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestProcessClose(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		mode   string // "" starts no program
		grace  time.Duration
		killed bool
	}{
		// The grace of a program that exits at the end of its input is a
		// failure bound only: Close returns when the program exited.
		{"never started", "", time.Minute, false},
		{"exits when its input closes", "eof", 10 * time.Minute, false},
		{"killed after the grace", "stubborn", time.Millisecond, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var logs lockedBuffer
			p, err := NewProcess([]string{exe, helperArg, tc.mode}, &ProcessOptions{StopGrace: tc.grace,
				Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			if err != nil {
				t.Fatal(err)
			}
			var exited <-chan struct{}
			if tc.mode != "" {
				s := newSink()
				if exited, err = p.attach(context.Background(), "run", s); err != nil {
					t.Fatal(err)
				}
				p.detach("run", s)
			}
			if err := p.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			if exited != nil {
				select {
				case <-exited:
				default:
					t.Fatal("Close returned before the program exited")
				}
			}
			if got := strings.Contains(logs.String(), "it is killed"); got != tc.killed {
				t.Errorf("killed = %v, want %v; logs:\n%s", got, tc.killed, logs.String())
			}
			// A closed bridge starts no program again.
			if _, err := p.attach(context.Background(), "run", newSink()); err == nil {
				t.Error("a closed bridge started its program again")
			}
			if err := p.Close(); err != nil {
				t.Errorf("a second Close: %v", err)
			}
		})
	}
}

// stepClock is a clock that moves only when a test moves it or a sleep
// ends: each Sleep tells its duration on sleeps and then waits for a
// wake (the clock moves on by the duration) or the end of its context.
type stepClock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps chan time.Duration
	wake   chan struct{}
}

func newStepClock() *stepClock {
	return &stepClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), sleeps: make(chan time.Duration, 16),
		wake: make(chan struct{})}
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *stepClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func (c *stepClock) Sleep(ctx context.Context, d time.Duration) error {
	c.sleeps <- d
	select {
	case <-c.wake:
		c.advance(d)
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// newTestProcess is a bridge to the helper program in mode, on clock c,
// closed at the end of the test.
func newTestProcess(t *testing.T, mode string, c *stepClock) *Process {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewProcess([]string{exe, helperArg, mode}, &ProcessOptions{RestartBackoff: time.Second, Clock: c,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// startProgram attaches a run, ending each backoff wait it meets at
// once, and returns the waits.
func startProgram(ctx context.Context, t *testing.T, p *Process, c *stepClock) []time.Duration {
	t.Helper()
	done := make(chan error, 1)
	sk := newSink()
	go func() {
		_, err := p.attach(ctx, "run", sk)
		done <- err
	}()
	var waits []time.Duration
	for {
		select {
		case d := <-c.sleeps:
			waits = append(waits, d)
			select {
			case c.wake <- struct{}{}:
			case <-ctx.Done():
				t.Fatal("the wait did not end")
			}
		case err := <-done:
			if err != nil {
				t.Fatalf("attach: %v", err)
			}
			p.detach("run", sk)
			return waits
		case <-ctx.Done():
			t.Fatal("the program was not started")
		}
	}
}

// crash kills the running program and waits until the bridge saw it
// exit.
func crash(ctx context.Context, t *testing.T, p *Process) {
	t.Helper()
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-ctx.Done():
		t.Fatal("the killed program was not seen to exit")
	}
}

// noProcessGoroutines waits until no goroutine of a Process is left.
func noProcessGoroutines(ctx context.Context, t *testing.T) {
	t.Helper()
	const mark = "novaos/adapter/bridge.(*Process)"
	buf := make([]byte, 1<<20)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		stacks := string(buf[:runtime.Stack(buf, true)])
		if !strings.Contains(stacks, mark) {
			return
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			t.Fatalf("goroutines of a closed bridge are left:\n%s", stacks)
		}
	}
}

// A program that keeps exiting is started again after a wait that
// doubles, up to MaxRestartBackoff; one that ran for MaxRestartBackoff
// was healthy, and only the first wait follows its exit; a run that
// comes after the wait is over starts the program at once.
func TestProcessRestartBackoff(t *testing.T) {
	// The deadline bounds a failure only: nothing waits on wall time.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := newStepClock()
	p := newTestProcess(t, "eof", c)
	s := time.Second
	steps := []struct {
		name    string
		ran     time.Duration // how long the program runs before it exits
		later   time.Duration // how long after its exit the next run comes
		waits   []time.Duration
		noCrash bool
	}{
		{name: "first start", waits: nil},
		{name: "after one crash", waits: []time.Duration{s}},
		{name: "2nd", waits: []time.Duration{2 * s}},
		{name: "3rd", waits: []time.Duration{4 * s}},
		{name: "4th", waits: []time.Duration{8 * s}},
		{name: "5th", waits: []time.Duration{16 * s}},
		{name: "6th", waits: []time.Duration{32 * s}},
		{name: "7th, capped", waits: []time.Duration{MaxRestartBackoff}, ran: MaxRestartBackoff},
		{name: "after a healthy run", waits: []time.Duration{s}},
		{name: "growing again", waits: []time.Duration{2 * s}, later: 4 * s}, // its exit earns 4s
		{name: "a run after the wait", waits: nil, noCrash: true},
	}
	var prev time.Duration
	for _, st := range steps {
		c.advance(prev)
		got := startProgram(ctx, t, p, c)
		if !slices.Equal(got, st.waits) {
			t.Fatalf("%s: waits %v, want %v", st.name, got, st.waits)
		}
		if st.noCrash {
			break
		}
		c.advance(st.ran)
		crash(ctx, t, p)
		prev = st.later
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	noProcessGoroutines(ctx, t)
}

// A run waiting out the backoff holds no lock: Close returns while it
// waits, and ends the wait (as the end of the run's context does), and
// no program starts.
func TestProcessBackoffEnds(t *testing.T) {
	for _, by := range []string{"close", "context"} {
		t.Run(by, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			c := newStepClock()
			p := newTestProcess(t, "eof", c)
			startProgram(ctx, t, p, c)
			crash(ctx, t, p)

			runCtx, endRun := context.WithCancel(ctx)
			defer endRun()
			attached := make(chan error, 1)
			go func() {
				_, err := p.attach(runCtx, "run", newSink())
				attached <- err
			}()
			select {
			case <-c.sleeps:
			case <-ctx.Done():
				t.Fatal("the run did not wait")
			}
			closed := make(chan error, 1)
			want := errClosed
			if by == "close" {
				go func() { closed <- p.Close() }()
			} else {
				endRun()
				want = context.Canceled
			}
			select {
			case err := <-attached:
				if !errors.Is(err, want) {
					t.Fatalf("attach = %v, want %v", err, want)
				}
			case <-ctx.Done():
				t.Fatal("the wait went on")
			}
			if by == "context" {
				go func() { closed <- p.Close() }()
			}
			select {
			case err := <-closed:
				if err != nil {
					t.Fatalf("Close: %v", err)
				}
			case <-ctx.Done():
				t.Fatal("Close did not return")
			}
			p.mu.Lock()
			started := p.started
			p.mu.Unlock()
			if started || len(c.sleeps) > 0 {
				t.Errorf("started = %v, %d more waits; want no program and no wait", started, len(c.sleeps))
			}
			noProcessGoroutines(ctx, t)
		})
	}
}

func newSink() *sink { return &sink{ch: make(chan Reply, 16), gone: make(chan struct{})} }

// The lines a program wrote before it exited all reach the run: the
// program's exit closes nothing before they are read.
func TestProcessRepliesBeforeExit(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		p, err := NewProcess([]string{exe, helperArg, "burst"}, &ProcessOptions{Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		sk := newSink()
		exited, err := p.attach(t.Context(), "run", sk)
		if err != nil {
			t.Fatal(err)
		}
		<-exited
		if n := len(sk.ch); n != burstReplies {
			t.Fatalf("%d of the %d replies the program wrote before it exited were read", n, burstReplies)
		}
		p.detach("run", sk)
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
