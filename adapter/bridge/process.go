package bridge

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"time"

	"novaos.dev/novaos/adapter"
)

// ProcessOptions tune a process bridge; nil means the defaults.
type ProcessOptions struct {
	// Dir is the program's working directory; Env adds to its
	// environment (which is the adapter's, without NOVAOS_* variables).
	Dir string
	Env []string
	// Stderr receives the program's standard error (default os.Stderr).
	Stderr io.Writer
	Logger *slog.Logger
	// RestartBackoff is the first wait before starting the program again
	// after it exited (default 1s, doubling to a minute).
	RestartBackoff time.Duration
	// StopGrace is how long Close waits for the program to exit after its
	// standard input closed, before it kills it (default 5s).
	StopGrace time.Duration
}

// Process is a Handler that talks to one long-running agent program over
// its standard input and output.
type Process struct {
	argv []string
	o    ProcessOptions

	mu      sync.Mutex
	stdin   io.WriteCloser
	cmd     *exec.Cmd
	runs    map[string]chan Reply // the runs in flight, by id
	exited  chan struct{}         // closed when the current program exits
	started bool
	closed  bool // Close was called: the program is not started again
	backoff time.Duration
	wmu     sync.Mutex // one line at a time
}

// NewProcess makes a process bridge for the program argv[0] with the
// arguments argv[1:]; it starts at the first run.
func NewProcess(argv []string, opts *ProcessOptions) (*Process, error) {
	if len(argv) == 0 {
		return nil, errors.New("bridge: name the agent program to run")
	}
	p := &Process{argv: argv, runs: map[string]chan Reply{}}
	if opts != nil {
		p.o = *opts
	}
	if p.o.Stderr == nil {
		p.o.Stderr = os.Stderr
	}
	if p.o.Logger == nil {
		p.o.Logger = slog.Default()
	}
	if p.o.RestartBackoff <= 0 {
		p.o.RestartBackoff = time.Second
	}
	if p.o.StopGrace <= 0 {
		p.o.StopGrace = 5 * time.Second
	}
	return p, nil
}

// Prepare does nothing: the agent gets the run when it starts.
func (p *Process) Prepare(context.Context, *adapter.Invocation) error { return nil }

// ensure starts the program when it is not running; p.mu is held.
func (p *Process) ensure() error {
	if p.closed {
		return errors.New("bridge: the process bridge is closed")
	}
	if p.started {
		return nil
	}
	if p.backoff > 0 {
		time.Sleep(p.backoff) // a program that keeps exiting is not started in a loop
	}
	cmd := exec.Command(p.argv[0], p.argv[1:]...)
	cmd.Dir = p.o.Dir
	cmd.Env = append(cleanEnv(os.Environ()), p.o.Env...)
	cmd.Stderr = p.o.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		p.backoff = min(max(p.backoff*2, p.o.RestartBackoff), time.Minute)
		return fmt.Errorf("bridge: starting the agent program: %w", err)
	}
	p.stdin, p.cmd, p.started = in, cmd, true
	exited := make(chan struct{})
	p.exited = exited
	go p.read(out, exited)
	go func() {
		err := cmd.Wait()
		p.mu.Lock()
		p.started = false
		p.backoff = min(max(p.backoff*2, p.o.RestartBackoff), time.Minute)
		closed := p.closed
		p.mu.Unlock()
		if closed {
			p.o.Logger.Info("bridge: the agent program stopped", "err", err)
		} else {
			p.o.Logger.Warn("bridge: the agent program exited; its runs fail", "err", err)
		}
		close(exited)
	}()
	return nil
}

// Close stops the agent program, when it runs: its standard input is
// closed, which tells it to exit, and a program still running after
// StopGrace is killed. Close returns once it exited; the program is not
// started again. Call it after the adapter's Run returned.
func (p *Process) Close() error {
	p.mu.Lock()
	p.closed = true
	running, in, cmd, exited := p.started, p.stdin, p.cmd, p.exited
	p.mu.Unlock()
	if !running {
		return nil
	}
	// Not under wmu: a write blocked on a program that stopped reading
	// must not keep it from being stopped.
	_ = in.Close()
	t := time.NewTimer(p.o.StopGrace)
	defer t.Stop()
	select {
	case <-exited:
		return nil
	case <-t.C:
	}
	p.o.Logger.Warn("bridge: the agent program did not exit when its input closed; it is killed", "grace", p.o.StopGrace)
	if err := cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("bridge: stopping the agent program: %w", err)
	}
	<-exited
	return nil
}

// cleanEnv drops the platform's own variables (an API token among them)
// from what the agent program inherits.
func cleanEnv(env []string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if len(kv) >= 7 && kv[:7] == "NOVAOS_" {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// read dispatches the program's reply lines to their runs.
func (p *Process) read(out io.Reader, exited chan struct{}) {
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64<<10), MaxLineBytes)
	for sc.Scan() {
		r, err := decodeReply(sc.Bytes())
		if err != nil {
			p.o.Logger.Warn("bridge: the agent program wrote a line that is not a reply; it is skipped", "err", err)
			continue
		}
		p.mu.Lock()
		ch := p.runs[r.RunID]
		p.mu.Unlock()
		if ch == nil {
			p.o.Logger.Warn("bridge: a reply for a run that is not in flight is skipped", "run_id", r.RunID)
			continue
		}
		select {
		case ch <- r:
		case <-exited:
			return
		}
	}
}

func (p *Process) write(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if len(b) > MaxLineBytes {
		return errors.New("bridge: a request is larger than a line may be")
	}
	p.wmu.Lock()
	defer p.wmu.Unlock()
	p.mu.Lock()
	in := p.stdin
	p.mu.Unlock()
	_, err = in.Write(append(b, '\n'))
	return err
}

// Execute sends the run to the program and applies its replies until one
// ends the turn; a cancel of the run is passed on as a cancel line.
func (p *Process) Execute(ctx context.Context, run *adapter.Run) error {
	rc, err := run.LoadContext(ctx)
	if err != nil {
		return fmt.Errorf("bridge: loading the run's context: %w", err)
	}
	ch := make(chan Reply, 16)
	p.mu.Lock()
	if err := p.ensure(); err != nil {
		p.mu.Unlock()
		return &adapter.RuntimeFailure{Err: err}
	}
	p.runs[run.ID] = ch
	exited := p.exited
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.runs, run.ID)
		p.mu.Unlock()
	}()
	if err := p.write(request(run, rc)); err != nil {
		return &adapter.RuntimeFailure{Err: fmt.Errorf("writing to the agent program: %w", err)}
	}
	t := &turn{run: run}
	for {
		select {
		case r := <-ch:
			done, err := t.apply(ctx, r)
			if err != nil || done {
				return err
			}
		case <-run.Done():
			_ = p.write(Request{Type: "cancel", RunID: run.ID, Reason: run.CancelReason()})
			return ctx.Err()
		case <-exited:
			return &adapter.RuntimeFailure{Err: errors.New("the agent program exited")}
		}
	}
}

var _ adapter.Handler = (*Process)(nil)
