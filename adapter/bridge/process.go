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
	// RestartBackoff is the least time between an exit of the program
	// and its next start (default 1s). It doubles with every exit of a
	// program that ran for less than MaxRestartBackoff, up to that; a
	// program that ran for MaxRestartBackoff or longer was healthy, and
	// the wait after its exit is RestartBackoff again. The wait happens
	// only when a run needs the program: one that comes later than the
	// wait after the exit starts it at once.
	RestartBackoff time.Duration
	// Clock tells the time of the restart backoff (default
	// adapter.SystemClock).
	Clock adapter.Clock
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
	runs    map[string]*sink // the runs in flight, by id
	exited  chan struct{}    // closed when the current program exits
	started bool
	closed  bool          // Close was called: the program is not started again
	closing chan struct{} // closed by Close: ends the backoff waits
	// backoff is the least wait after exitedAt, the program's last exit
	// (or failed start), before it is started again.
	backoff  time.Duration
	exitedAt time.Time
	wmu      sync.Mutex // one line at a time
}

// MaxRestartBackoff is the longest wait before a program that exited is
// started again, and how long a program must have run for the next wait
// to be ProcessOptions.RestartBackoff again.
const MaxRestartBackoff = time.Minute

// errClosed: the bridge was closed.
var errClosed = errors.New("bridge: the process bridge is closed")

// NewProcess makes a process bridge for the program argv[0] with the
// arguments argv[1:]; it starts at the first run.
func NewProcess(argv []string, opts *ProcessOptions) (*Process, error) {
	if len(argv) == 0 {
		return nil, errors.New("bridge: name the agent program to run")
	}
	p := &Process{argv: argv, runs: map[string]*sink{}, closing: make(chan struct{})}
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
	if p.o.Clock == nil {
		p.o.Clock = adapter.SystemClock{}
	}
	if p.o.StopGrace <= 0 {
		p.o.StopGrace = 5 * time.Second
	}
	return p, nil
}

// Prepare does nothing: the agent gets the run when it starts.
func (p *Process) Prepare(context.Context, *adapter.Invocation) error { return nil }

// attach registers the run id with ch as its replies' destination on a
// running program, starting the program when none runs; it returns the
// channel closed when that program exits. A program that exited is
// started again only after its backoff, waited for without the lock, so
// that Close and the replies of other runs go on meanwhile; Close or
// the end of ctx ends the wait at once.
func (p *Process) attach(ctx context.Context, runID string, s *sink) (<-chan struct{}, error) {
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return nil, errClosed
		}
		if p.started {
			p.runs[runID] = s
			exited := p.exited
			p.mu.Unlock()
			return exited, nil
		}
		if wait := p.exitedAt.Add(p.backoff).Sub(p.o.Clock.Now()); wait > 0 {
			p.mu.Unlock()
			// Several runs may wait at once: each looks again after its
			// wait, and the first one starts the program.
			if err := p.sleep(ctx, wait); err != nil {
				return nil, err
			}
			continue
		}
		err := p.start()
		p.mu.Unlock()
		if err != nil {
			return nil, err
		}
	}
}

// sink is where the replies of a run in flight go; gone is closed when
// its Execute no longer reads them.
type sink struct {
	ch   chan Reply
	gone chan struct{}
}

// detach forgets a run.
func (p *Process) detach(runID string, s *sink) {
	p.mu.Lock()
	if p.runs[runID] == s {
		delete(p.runs, runID)
	}
	p.mu.Unlock()
	close(s.gone)
}

// sleep waits d on the clock, or until ctx ends or Close is called.
func (p *Process) sleep(ctx context.Context, d time.Duration) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	watched := make(chan struct{})
	defer close(watched)
	go func() {
		select {
		case <-p.closing:
			cancel()
		case <-watched:
		}
	}()
	if err := p.o.Clock.Sleep(ctx, d); err != nil {
		select {
		case <-p.closing:
			return errClosed
		default:
			return err
		}
	}
	return nil
}

// exitedNow notes an exit (or a failed start) of a program that ran for
// uptime; p.mu is held.
func (p *Process) exitedNow(now time.Time, uptime time.Duration) {
	p.exitedAt = now
	limit := max(MaxRestartBackoff, p.o.RestartBackoff)
	if uptime >= limit {
		p.backoff = p.o.RestartBackoff
		return
	}
	p.backoff = min(max(p.backoff*2, p.o.RestartBackoff), limit)
}

// start starts the program; p.mu is held.
func (p *Process) start() error {
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
	startedAt := p.o.Clock.Now()
	if err := cmd.Start(); err != nil {
		p.exitedNow(startedAt, 0)
		return fmt.Errorf("bridge: starting the agent program: %w", err)
	}
	p.stdin, p.cmd, p.started = in, cmd, true
	exited := make(chan struct{})
	p.exited = exited
	read := make(chan struct{})
	go p.read(out, read)
	go func() {
		// Wait closes the pipe: the lines the program wrote before it
		// exited are read first.
		<-read
		err := cmd.Wait()
		p.mu.Lock()
		p.started = false
		now := p.o.Clock.Now()
		p.exitedNow(now, now.Sub(startedAt))
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
	if !p.closed {
		p.closed = true
		close(p.closing)
	}
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
func (p *Process) read(out io.Reader, done chan struct{}) {
	defer close(done)
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64<<10), MaxLineBytes)
	for sc.Scan() {
		r, err := decodeReply(sc.Bytes())
		if err != nil {
			p.o.Logger.Warn("bridge: the agent program wrote a line that is not a reply; it is skipped", "err", err)
			continue
		}
		p.mu.Lock()
		s := p.runs[r.RunID]
		p.mu.Unlock()
		if s == nil {
			p.o.Logger.Warn("bridge: a reply for a run that is not in flight is skipped", "run_id", r.RunID)
			continue
		}
		select {
		case s.ch <- r:
		case <-s.gone:
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
	s := &sink{ch: make(chan Reply, 16), gone: make(chan struct{})}
	exited, err := p.attach(ctx, run.ID, s)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return &adapter.RuntimeFailure{Err: err}
	}
	defer p.detach(run.ID, s)
	if err := p.write(request(run, rc)); err != nil {
		return &adapter.RuntimeFailure{Err: fmt.Errorf("writing to the agent program: %w", err)}
	}
	t := &turn{run: run}
	for {
		select {
		case r := <-s.ch:
			done, err := t.apply(ctx, r)
			if err != nil || done {
				return err
			}
		case <-run.Done():
			_ = p.write(Request{Type: "cancel", RunID: run.ID, Reason: run.CancelReason()})
			return ctx.Err()
		case <-exited:
			// Every line the program wrote is read by now: the replies
			// still buffered come first, and may end the turn.
			for {
				select {
				case r := <-s.ch:
					done, err := t.apply(ctx, r)
					if err != nil || done {
						return err
					}
				default:
					return &adapter.RuntimeFailure{Err: errors.New("the agent program exited")}
				}
			}
		}
	}
}

var _ adapter.Handler = (*Process)(nil)
