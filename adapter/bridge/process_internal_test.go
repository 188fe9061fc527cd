package bridge

import (
	"bytes"
	"io"
	"log/slog"
	"os"
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

// helperProgram is an agent program that reads its input to the end and
// then exits ("eof"), or never exits on its own ("stubborn").
func helperProgram(mode string) {
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
			var exited chan struct{}
			if tc.mode != "" {
				p.mu.Lock()
				err := p.ensure()
				exited = p.exited
				p.mu.Unlock()
				if err != nil {
					t.Fatal(err)
				}
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
			p.mu.Lock()
			err = p.ensure()
			p.mu.Unlock()
			if err == nil {
				t.Error("a closed bridge started its program again")
			}
			if err := p.Close(); err != nil {
				t.Errorf("a second Close: %v", err)
			}
		})
	}
}
