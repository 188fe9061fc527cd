package platformtest_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"novaos.dev/novaos/adapter"
	"novaos.dev/novaos/delivery"
	"novaos.dev/novaos/platformtest"
)

// The kill test runs its adapters in child processes: this test binary
// again, with killChildEnv set, runs killChild instead of the tests.
const killChildEnv = "PLATFORMTEST_KILL_CHILD"

// What a child is told, by environment; its credentials are files.
const (
	killEnvURL      = "PLATFORMTEST_KILL_URL"
	killEnvAgent    = "PLATFORMTEST_KILL_AGENT"
	killEnvConsumer = "PLATFORMTEST_KILL_CONSUMER"
	killEnvState    = "PLATFORMTEST_KILL_STATE"
	killEnvCreds    = "PLATFORMTEST_KILL_CREDS"
	killEnvJournal  = "PLATFORMTEST_KILL_JOURNAL"
	killEnvNow      = "PLATFORMTEST_KILL_NOW"
	killEnvPolling  = "PLATFORMTEST_KILL_POLLING"
)

const (
	killCycles   = 50
	killConsumer = "killed"
)

func TestMain(m *testing.M) {
	if os.Getenv(killChildEnv) == "1" {
		os.Exit(killChild())
	}
	os.Exit(m.Run())
}

// killChild runs an adapter until SIGTERM (or SIGKILL). It tells its
// progress on stdout, one line each: "prepare <run>", "execute <run>",
// "replied <run>", and at a SIGTERM "stopped <failed outbox entries>".
// Before anything of an execution is done, it appends "execute <run>"
// to the journal, opened O_APPEND|O_SYNC, and "reply <run> <client
// message id>" once the reply is stored in the outbox.
func killChild() int {
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 2
	}
	creds := os.Getenv(killEnvCreds)
	tok, err := adapter.SecretFromFile(filepath.Join(creds, "token"))
	if err != nil {
		return fail(err)
	}
	key, err := adapter.LoadOrCreateDPoPKey(filepath.Join(creds, "dpop.pem"))
	if err != nil {
		return fail(err)
	}
	journal, err := os.OpenFile(os.Getenv(killEnvJournal), os.O_WRONLY|os.O_APPEND|os.O_CREATE|os.O_SYNC, 0o600)
	if err != nil {
		return fail(err)
	}
	defer journal.Close()
	cfg := adapter.Config{BaseURL: os.Getenv(killEnvURL), AgentID: os.Getenv(killEnvAgent), Consumer: os.Getenv(killEnvConsumer),
		Credentials: adapter.Credentials{APIToken: tok, DPoP: key}, StateDir: os.Getenv(killEnvState),
		Polling: os.Getenv(killEnvPolling) == "1"}
	clock := platformtest.SpedUpClock{Base: &fileClock{path: os.Getenv(killEnvNow)}, Factor: soakSpeedUp}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	a, err := adapter.New(cfg, &journalHandler{journal: journal}, &adapter.Options{Clock: clock, Logger: logger})
	if err != nil {
		return fail(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	_, err = a.Run(ctx)
	failed, ferr := a.Outbox().Failed(context.Background())
	fmt.Printf("stopped %d\n", len(failed))
	_ = a.Close()
	if err = errors.Join(err, ferr); err != nil {
		return fail(err)
	}
	return 0
}

// fileClock tells the platform's time, which the test writes to a file
// (Unix nanoseconds) whenever it lets time pass.
type fileClock struct {
	path string
	mu   sync.Mutex
	last time.Time
}

func (c *fileClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if b, err := os.ReadFile(c.path); err == nil {
		if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil {
			c.last = time.Unix(0, n).UTC()
		}
	}
	return c.last
}

// journalHandler is the child's agent: it journals its executions and
// replies through the outbox.
type journalHandler struct {
	mu      sync.Mutex
	journal *os.File
}

func (h *journalHandler) note(line string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := h.journal.WriteString(line + "\n")
	return err
}

func (h *journalHandler) Prepare(_ context.Context, inv *adapter.Invocation) error {
	fmt.Println("prepare", inv.RunID)
	return nil
}

func (h *journalHandler) Execute(ctx context.Context, run *adapter.Run) error {
	if err := h.note("execute " + run.ID); err != nil {
		return err
	}
	fmt.Println("execute", run.ID)
	id, err := run.Reply(ctx, "done")
	if err != nil {
		return err
	}
	if err := h.note("reply " + run.ID + " " + id); err != nil {
		return err
	}
	fmt.Println("replied", run.ID)
	return nil
}

// killedChild is a running child process and what it told.
type killedChild struct {
	cmd    *exec.Cmd
	first  int // the request log's length when it started
	stderr *tailBuffer
	read   chan struct{} // closed when its stdout ended

	mu     sync.Mutex
	counts map[string]int
	lines  []string
}

func (c *killedChild) count(word string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts[word]
}

// tailBuffer keeps the last bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - 16<<10; over > 0 {
		b.buf = b.buf[over:]
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}

// killWorld is the test's side: the platform, where the children keep
// their state, and how they are started.
type killWorld struct {
	t       *testing.T
	f       *platformtest.FakeServer
	exe     string
	dir     string
	nowFile string
}

func newKillWorld(t *testing.T) *killWorld {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	w := &killWorld{t: t, f: platformtest.NewFakeServer(t, nil), exe: exe, dir: t.TempDir()}
	creds := filepath.Join(w.dir, "creds")
	if err := os.Mkdir(creds, 0o700); err != nil {
		t.Fatal(err)
	}
	c := w.f.Credentials()
	pem, err := c.DPoP.MarshalPEM()
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"token": []byte(c.APIToken.Reveal()), "dpop.pem": pem} {
		if err := os.WriteFile(filepath.Join(creds, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	w.nowFile = filepath.Join(w.dir, "now")
	w.writeNow(w.f.Clock().Now())
	return w
}

// writeNow tells the children the platform's time.
func (w *killWorld) writeNow(now time.Time) {
	tmp := w.nowFile + ".tmp"
	if err := os.WriteFile(tmp, []byte(strconv.FormatInt(now.UnixNano(), 10)), 0o600); err != nil {
		w.t.Fatal(err)
	}
	if err := os.Rename(tmp, w.nowFile); err != nil {
		w.t.Fatal(err)
	}
}

// passTime lets d go by for the platform and the children; the children
// hear of it first, so that no token they see is from their future.
func (w *killWorld) passTime(ctx context.Context, d time.Duration) {
	w.writeNow(w.f.Clock().Now().Add(d))
	w.f.PassTime(ctx, d)
}

func (w *killWorld) start(polling bool) *killedChild {
	w.t.Helper()
	cmd := exec.Command(w.exe, "-test.run=^$")
	p := "0"
	if polling {
		p = "1"
	}
	cmd.Env = append(os.Environ(), killChildEnv+"=1", killEnvURL+"="+w.f.URL(), killEnvAgent+"="+w.f.AgentID(),
		killEnvConsumer+"="+killConsumer, killEnvState+"="+filepath.Join(w.dir, "state"), killEnvCreds+"="+filepath.Join(w.dir, "creds"),
		killEnvJournal+"="+filepath.Join(w.dir, "journal"), killEnvNow+"="+w.nowFile, killEnvPolling+"="+p)
	c := &killedChild{cmd: cmd, first: len(w.f.Requests()), stderr: &tailBuffer{}, read: make(chan struct{}), counts: map[string]int{}}
	cmd.Stderr = c.stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		w.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	go func() {
		defer close(c.read)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			word, _, _ := strings.Cut(sc.Text(), " ")
			c.mu.Lock()
			c.counts[word]++
			c.lines = append(c.lines, sc.Text())
			c.mu.Unlock()
		}
	}()
	return c
}

// requests counts the requests of op the platform received since the
// child started.
func (w *killWorld) requests(c *killedChild, op string) int {
	n := 0
	for _, r := range w.f.Requests()[c.first:] {
		if r.Operation == op {
			n++
		}
	}
	return n
}

// kill sends SIGKILL and waits for the child; it reports whether the
// kill ended it (and not an exit of its own before).
func (w *killWorld) kill(c *killedChild) bool {
	_ = c.cmd.Process.Signal(syscall.SIGKILL)
	err := c.cmd.Wait()
	<-c.read
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			return true
		}
	}
	w.t.Errorf("a child ended before its kill (%v): %s", err, c.stderr)
	return false
}

// killPoint is where a cycle's child is killed: once it told word n
// times, or once the platform received n requests of an operation.
type killPoint struct {
	what string
	n    int
	// fault is injected for the cycle, on what.
	fault *platformtest.Fault
}

func killPointOf(i int) killPoint {
	n := 1 + (i/7)%3
	late := platformtest.StoredLate(300 * time.Millisecond)
	limited := platformtest.RateLimited(time.Second)
	switch i % 7 {
	case 0:
		return killPoint{what: "execute", n: n}
	case 1:
		return killPoint{what: "startRun", n: n}
	case 2:
		// Stored in the outbox; the send held or refused for now.
		if i%2 == 0 {
			return killPoint{what: "replied", n: n, fault: &late}
		}
		return killPoint{what: "replied", n: n, fault: &limited}
	case 3:
		return killPoint{what: "finishRun", n: n}
	case 4:
		return killPoint{what: "prepare", n: n}
	case 5:
		return killPoint{what: "createMessage", n: n}
	default:
		return killPoint{what: "getDiscovery", n: 1} // at once
	}
}

// TestKillAdapter kills an adapter (SIGKILL, in a child process) 50
// times at varied points of its work (chosen by what it told and what
// the platform received, never by time), each time starting the next on
// the same state directory, polling and over the gateway in turn. At
// the end every run has ended (one started and interrupted by a kill is
// ended by the next process as interrupted, never retried), the
// consumer is acknowledged to the head, no run was executed or started
// twice, and every reply is on the platform once.
func TestKillAdapter(t *testing.T) {
	w := newKillWorld(t)
	f := w.f
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	tm := f.Timing()

	var runs []platformtest.Triggered
	allEnded := func() bool {
		for _, tr := range runs {
			if r, err := f.RunState(ctx, tr.RunID); err != nil || !r.State.Ended() {
				return false
			}
		}
		return true
	}
	kills, points := 0, map[string]int{}
	for i := range killCycles {
		polling := i%2 == 0
		if polling && i > 0 {
			// Events sent to the killed child and not acknowledged come
			// again after the ack timeout.
			w.passTime(ctx, tm.AckTimeout+time.Second)
		}
		kp := killPointOf(i)
		if kp.fault != nil {
			f.Inject("createMessage", *kp.fault, 1)
		}
		c := w.start(polling)
		if i == 0 {
			if err := f.WaitConsumer(ctx, killConsumer); err != nil {
				t.Fatalf("the first child did not connect: %v\n%s", err, c.stderr)
			}
		}
		for n := range 1 + i%3 {
			tr, err := f.Trigger(ctx, fmt.Sprintf("cycle %d run %d", i, n))
			if err != nil {
				t.Fatal(err)
			}
			runs = append(runs, tr)
		}
		reached := false
		err := waitCond(ctx, func() bool {
			reached = c.count(kp.what) >= kp.n || w.requests(c, kp.what) >= kp.n
			return reached || allEnded()
		})
		if err != nil {
			t.Fatalf("cycle %d: %v\n%s", i, err, c.stderr)
		}
		if reached {
			points[kp.what]++
		} else {
			points["idle"]++
		}
		if w.kill(c) {
			kills++
		}
		f.ClearFaults()
	}

	// The last child works what is left, letting platform time pass when
	// nothing moves (events sent to a killed child come again after the
	// ack timeout).
	last := w.start(false)
	journal := filepath.Join(w.dir, "journal")
	replies := func() map[string][]string {
		out := map[string][]string{}
		b, _ := os.ReadFile(journal)
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) == 3 && f[0] == "reply" {
				out[f[1]] = append(out[f[1]], f[2])
			}
		}
		return out
	}
	done := func() bool {
		if !allEnded() {
			return false
		}
		cs, err := f.ConsumerState(ctx, killConsumer)
		if err != nil || cs.AckedSeq < cs.HeadSeq {
			return false
		}
		for _, tr := range runs {
			msgs, err := f.Messages(ctx, tr.ThreadID)
			if err != nil {
				return false
			}
			for _, id := range replies()[tr.RunID] {
				if !slices.ContainsFunc(msgs, func(m delivery.StoredMessage) bool { return m.ClientMsgID == id }) {
					return false
				}
			}
		}
		return true
	}
	jumps := 0
	for !done() {
		wctx, wcancel := context.WithTimeout(ctx, soakQuiet)
		_ = waitCond(wctx, done)
		wcancel()
		if ctx.Err() != nil {
			w.dumpKill(runs, last)
			t.Fatal("the last child did not finish the work")
		}
		if !done() {
			jumps++
			w.passTime(ctx, tm.AckTimeout+time.Second)
		}
	}
	_ = last.cmd.Process.Signal(syscall.SIGTERM)
	if err := last.cmd.Wait(); err != nil {
		t.Errorf("the last child: %v\n%s", err, last.stderr)
	}
	<-last.read
	last.mu.Lock()
	stopped := slices.Contains(last.lines, "stopped 0")
	last.mu.Unlock()
	if !stopped {
		t.Errorf("the last child's outbox kept failed entries (or it did not stop): %s", last.stderr)
	}

	// The journal: each run executed once at most.
	b, err := os.ReadFile(journal)
	if err != nil {
		t.Fatal(err)
	}
	executes := map[string]int{}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "execute" {
			executes[f[1]]++
		}
	}
	states := map[string]int{}
	sent := 0
	for _, tr := range runs {
		r, err := f.RunState(ctx, tr.RunID)
		if err != nil {
			t.Fatal(err)
		}
		states[string(r.State)+" ("+r.StateReason+")"]++
		if r.Starts > 1 || executes[tr.RunID] > 1 {
			t.Errorf("run %s: %d starts, executed %d times", tr.RunID, r.Starts, executes[tr.RunID])
		}
		if r.State == delivery.RunCompleted && executes[tr.RunID] != 1 {
			t.Errorf("run %s completed after %d executions", tr.RunID, executes[tr.RunID])
		}
		msgs, err := f.Messages(ctx, tr.ThreadID)
		if err != nil {
			t.Fatal(err)
		}
		sent += len(msgs)
		if len(msgs) > executes[tr.RunID] {
			t.Errorf("run %s has %d messages after %d executions", tr.RunID, len(msgs), executes[tr.RunID])
		}
		for _, id := range replies()[tr.RunID] {
			n := 0
			for _, m := range msgs {
				if m.ClientMsgID == id {
					n++
				}
			}
			if n != 1 {
				t.Errorf("run %s: the reply %s is on the platform %d times", tr.RunID, id, n)
			}
		}
	}
	cs, _ := f.ConsumerState(ctx, killConsumer)
	t.Logf("kill: %d kills of %d cycles (at %v), %d runs, %d executions, %d replies on the platform, %d clock jumps at the end; consumer at %d of %d",
		kills, killCycles, points, len(runs), len(executes), sent, jumps, cs.AckedSeq, cs.HeadSeq)
	t.Logf("kill: run ends: %v", states)
	if kills != killCycles {
		t.Errorf("%d kills; want %d", kills, killCycles)
	}
}

// dumpKill tells what is not done, when the kill test fails.
func (w *killWorld) dumpKill(runs []platformtest.Triggered, last *killedChild) {
	ctx := context.Background()
	for _, tr := range runs {
		r, err := w.f.RunState(ctx, tr.RunID)
		if err == nil && r.State.Ended() {
			continue
		}
		w.t.Logf("kill: run %s is %s (%s), %d starts (%v)", tr.RunID, r.State, r.StateReason, r.Starts, err)
		for _, req := range w.f.Requests() {
			if strings.Contains(req.Path, tr.RunID) {
				w.t.Logf("kill:   %s %d token %s", req.Operation, req.Status, req.Token)
			}
		}
	}
	cs, err := w.f.ConsumerState(ctx, killConsumer)
	w.t.Logf("kill: consumer %+v (%v)", cs, err)
	w.t.Logf("kill: the last child's log:\n%s", last.stderr)
	b, _ := os.ReadFile(filepath.Join(w.dir, "journal"))
	w.t.Logf("kill: journal of %d lines", bytes.Count(b, []byte("\n")))
}
