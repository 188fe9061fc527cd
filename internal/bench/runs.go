package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2aclient"
	"novaos.dev/novaos/agent"
	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/secret"
)

// Names of the runs scenarios: a run through the execution gateway and
// the direct streaming call of the same agent it is compared with.
const (
	ScenarioGatewayRun = "gateway-run"
	ScenarioDirect     = "direct-stream"
)

// PauseAgentName is the name [PauseAgent] is hosted under.
const PauseAgentName = "bench-pause"

// DefaultRunsInput is the text every run and direct call sends: several
// words, so that echo streams it in several pieces.
const DefaultRunsInput = "hello from novaos bench runs"

// Defaults of [RunsOptions].
const (
	DefaultRunsRound   = time.Second
	DefaultRunsStreams = 1000
)

// PauseAgent is the agent whose runs stay open: each task streams one
// piece of text and then asks for input (INPUT_REQUIRED), which the
// gateway records as WAITING_USER with a hitl pause. Its runs have events
// both before and after their first one, so a stream cut after the first
// is resumed with something to read, and a stream opened after the pause
// stays open with nothing more to carry.
func PauseAgent() *agent.Agent {
	a := agent.New(PauseAgentName, "1.0.0", &agent.Options{
		Description:        "Benchmark agent: streams one piece of text, then waits for the user.",
		DefaultInputModes:  []string{"text/plain"},
		DefaultOutputModes: []string{"text/plain"},
	})
	a.MustRegister(agent.Skill{
		ID: "pause", Name: "Pause", Description: "Streams a piece of text, then asks for input.",
		Tags: []string{"bench"},
		Handler: func(c *agent.Context) (agent.Result, error) {
			if c.Streaming() {
				art := a2a.Artifact{ArtifactID: a2a.NewID(), Name: "progress", Parts: []a2a.Part{a2a.TextPart("working")}}
				if err := c.Updater().AppendArtifact(c, art, true); err != nil {
					return agent.Result{}, err
				}
			}
			return agent.Result{Status: agent.StatusWaitingUser, Message: "reply to continue"}, nil
		},
	})
	return a
}

// RunsTarget is the server [RunRuns] measures.
type RunsTarget struct {
	// Gateway calls the execution gateway as a caller allowed to run
	// Instance and PauseInstance and to follow and cancel their runs.
	Gateway *gateway.Client
	// Instance is the instance of the agent Direct calls, PauseInstance
	// one of [PauseAgent].
	Instance, PauseInstance string
	// Direct calls the same agent as Instance, by A2A, at its URL.
	Direct *a2aclient.Client
	// BaseURL, Token and Tenant open the raw event streams of the
	// memory phase: the server's base URL (http://), the bearer token,
	// and the X-Tenant-ID ("" for a token that carries its tenant).
	BaseURL string
	Token   secret.Value
	Tenant  string
}

// RunsOptions tune [RunRuns]; nil or zero fields mean the defaults.
type RunsOptions struct {
	// Concurrency is the number of clients, each with one run or call in
	// flight (default 32).
	Concurrency int
	// Duration is the measured time of each side (default 20s), and
	// Warmup the unmeasured time of each side first (default 2s; negative:
	// none).
	Duration, Warmup time.Duration
	// Round is how long one side runs before the other takes over
	// (default 1s): the sides alternate, ABBA, so that the machine's
	// noise and drift fall on both.
	Round time.Duration
	// Streams is how many paused runs are cut and resumed, and then
	// followed at once for the memory reading (default 1000).
	Streams int
	// Input is the text each run and call sends (default
	// DefaultRunsInput).
	Input string
	// StreamsHeld, when set, is called while the streams are held open,
	// after the memory was read (to write a heap profile, say).
	StreamsHeld func()
	// MeasuredRound, when set, is called as each measured round of a side
	// starts, with the side's scenario name and the round's number from
	// 0; the function it returns is called as the round ends. A CPU
	// profile per side is taken so.
	MeasuredRound func(scenario string, n int) (end func())
}

// runsDefaults are the turns of [RunsOptions] left zero.
var runsDefaults = turns{clients: 32, warmup: 2 * time.Second, duration: 20 * time.Second, round: DefaultRunsRound}

// turns is how o's sides take turns.
func (o *RunsOptions) turns() turns {
	tt := turnsOf(o.Concurrency, o.Warmup, o.Duration, o.Round, runsDefaults)
	tt.measured = o.MeasuredRound
	return tt
}

func (o *RunsOptions) withDefaults() RunsOptions {
	var v RunsOptions
	if o != nil {
		v = *o
	}
	tt := v.turns()
	v.Concurrency, v.Warmup, v.Duration, v.Round = tt.clients, tt.warmup, tt.duration, tt.round
	if v.Streams <= 0 {
		v.Streams = DefaultRunsStreams
	}
	if v.Input == "" {
		v.Input = DefaultRunsInput
	}
	return v
}

// RunsResult is what [RunRuns] measured.
type RunsResult struct {
	// Gateway are the runs through the execution gateway: execute, then
	// the run's event stream read to its terminal event. Direct are the
	// SendStreamingMessage calls of the same agent read to their final
	// frame.
	Gateway RunsSide `json:"gateway"`
	Direct  RunsSide `json:"direct"`
	// ThroughputRatio is the gateway's runs/s over the direct calls/s.
	ThroughputRatio float64 `json:"throughputRatio"`
	// FirstEventP99Excess is the gateway's first-event p99 minus the
	// direct call's.
	FirstEventP99Excess time.Duration `json:"firstEventP99ExcessNs"`
	Resume              Resume        `json:"resume"`
	Streams             StreamMemory  `json:"streams"`
}

// RunsSide is one side of the comparison.
type RunsSide struct {
	Scenario string `json:"scenario"`
	// Runs are the measured operations, successful or not.
	Runs   uint64 `json:"runs"`
	Errors uint64 `json:"errors"`
	// Elapsed is the measured time of this side's rounds, and Throughput
	// its successful operations per second of it.
	Elapsed    time.Duration `json:"elapsedNs"`
	Throughput float64       `json:"throughput"`
	// Latency is the whole operation's; FirstEvent the time from sending
	// the request (execute, for a run) to reading the first event off its
	// stream.
	Latency    Latency `json:"latency"`
	FirstEvent Latency `json:"firstEvent"`
	FirstError string  `json:"firstError,omitempty"`
}

// Resume is the resumption of event streams cut after their first event.
type Resume struct {
	Resumes uint64 `json:"resumes"`
	Errors  uint64 `json:"errors"`
	// Latency is from the reconnect request (with Last-Event-ID), sent as
	// soon as the stream was cut, to the first event it yields: the next
	// event may still be on its way from the agent.
	Latency Latency `json:"latency"`
	// Replay is the same for a reconnect with the same Last-Event-ID once
	// the run has paused: every event it yields is stored already, so it
	// times the gateway's own resumption.
	Replay     Latency `json:"replay"`
	FirstError string  `json:"firstError,omitempty"`
}

// StreamMemory is the process's memory before and after Streams event
// streams were opened on paused runs, each reading taken after the heap
// was collected and returned to the system. The client end of each
// stream is a bare connection, so the figures are the server's.
type StreamMemory struct {
	Streams   int    `json:"streams"`
	RSSBefore uint64 `json:"rssBeforeBytes"`
	RSSAfter  uint64 `json:"rssAfterBytes"`
	// MBPer1000 is (RSSAfter - RSSBefore) in MB (10^6 bytes) per 1,000
	// streams; HeapMBPer1000 and StackMBPer1000 the same for the Go heap
	// in use and the goroutine stacks, the parts the runtime accounts for.
	MBPer1000      float64 `json:"mbPer1000"`
	HeapMBPer1000  float64 `json:"heapMbPer1000"`
	StackMBPer1000 float64 `json:"stackMbPer1000"`
	// Goroutines is how many more goroutines ran with the streams open.
	Goroutines int `json:"goroutinesAdded"`
}

// RunRuns measures t: the gateway's runs against the direct calls, in
// alternating rounds; then Streams runs of the pause agent, each cut after
// its first event and resumed; then the memory of as many event streams
// held open on those paused runs, which it finally cancels. An operation
// that fails counts as an error of its side; RunRuns itself fails only
// when the server cannot be used at all or ctx ends.
func RunRuns(ctx context.Context, t *RunsTarget, opts *RunsOptions) (*RunsResult, error) {
	o := opts.withDefaults()
	if t == nil || t.Gateway == nil || t.Direct == nil || t.Instance == "" || t.PauseInstance == "" || t.BaseURL == "" {
		return nil, errors.New("bench: runs: incomplete target")
	}
	res := &RunsResult{}
	timed := func(do func(ctx context.Context) (time.Duration, error)) func(context.Context, int) (time.Duration, time.Duration, error) {
		return func(ctx context.Context, _ int) (time.Duration, time.Duration, error) {
			t0 := time.Now()
			first, err := do(ctx)
			return first, time.Since(t0), err
		}
	}
	sides := []*side{
		{name: ScenarioGatewayRun, do: timed(func(ctx context.Context) (time.Duration, error) { return gatewayRun(ctx, t, o.Input) })},
		{name: ScenarioDirect, do: timed(func(ctx context.Context) (time.Duration, error) { return directRun(ctx, t.Direct, o.Input) })},
	}
	if err := o.turns().run(ctx, sides); err != nil {
		return nil, err
	}
	res.Gateway, res.Direct = runsResult(sides[0]), runsResult(sides[1])
	if res.Direct.Throughput > 0 {
		res.ThroughputRatio = res.Gateway.Throughput / res.Direct.Throughput
	}
	res.FirstEventP99Excess = res.Gateway.FirstEvent.P99 - res.Direct.FirstEvent.P99

	paused, resume, err := resumeAll(ctx, t, &o)
	res.Resume = resume
	defer cancelAll(context.WithoutCancel(ctx), t, paused, o.Concurrency)
	if err != nil {
		return nil, err
	}
	if res.Streams, err = holdStreams(ctx, t, paused, o.Concurrency, o.StreamsHeld); err != nil {
		return nil, err
	}
	return res, nil
}

func runsResult(s *side) RunsSide {
	return RunsSide{Scenario: s.name, Runs: s.calls, Errors: s.errors, Elapsed: s.elapsed, Throughput: s.throughput(),
		Latency: latencyOf(&s.total), FirstEvent: latencyOf(&s.first), FirstError: s.errText}
}

// gatewayRun starts a run and reads its event stream to the end; it fails
// unless the run completed. first is from the execute request to the
// first event read.
func gatewayRun(ctx context.Context, t *RunsTarget, input string) (first time.Duration, err error) {
	t0 := time.Now()
	res, err := t.Gateway.Execute(ctx, gateway.ExecuteRequest{InstanceID: t.Instance, Input: input})
	if err != nil {
		return 0, err
	}
	var last gateway.StreamEvent
	for ev, err := range t.Gateway.Events(ctx, res.RunID, "") {
		if err != nil {
			return 0, err
		}
		if first == 0 {
			first = max(time.Since(t0), 1)
		}
		last = ev
	}
	if !last.IsTerminal() || last.IsFailure() {
		return 0, fmt.Errorf("run %s ended its stream with %s %s %q", res.RunID, last.Type, last.Status, clipKind(last.Content))
	}
	return first, nil
}

// directRun sends a streaming message and reads the stream to its final
// frame; it fails unless the task completed. first is from the request
// to the first frame read.
func directRun(ctx context.Context, c *a2aclient.Client, input string) (first time.Duration, err error) {
	t0 := time.Now()
	var last *a2a.StreamResponse
	for frame, err := range c.SendStreamingMessage(ctx, a2aclient.TextRequest(input, "", "")) {
		if err != nil {
			return 0, err
		}
		if first == 0 {
			first = max(time.Since(t0), 1)
		}
		last = frame
	}
	if last == nil {
		return 0, errors.New("stream carried no frame")
	}
	if st := frameState(last); st != a2a.TaskStateCompleted && last.Message == nil {
		return 0, fmt.Errorf("stream ended in state %s", st)
	}
	return first, nil
}

func frameState(f *a2a.StreamResponse) a2a.TaskState {
	switch {
	case f.Task != nil:
		return f.Task.Status.State
	case f.StatusUpdate != nil:
		return f.StatusUpdate.Status.State
	}
	return a2a.TaskStateUnspecified
}

// pausedRun is a run of the pause agent waiting for the user, and the id
// of its last event.
type pausedRun struct {
	id, lastEventID string
}

// resumeAll starts o.Streams runs of the pause agent from o.Concurrency
// clients; each client follows its run, cuts the stream after the first
// event (closing the connection), reconnects with that event's id as
// Last-Event-ID and times the first event the reconnection yields, then
// reads on to the pause. It returns the runs it paused, which the caller
// cancels, also on error.
func resumeAll(ctx context.Context, t *RunsTarget, o *RunsOptions) ([]pausedRun, Resume, error) {
	var next atomic.Int64
	var mu sync.Mutex
	var paused []pausedRun
	var h, replay Histogram
	var r Resume
	var wg sync.WaitGroup
	for range min(o.Concurrency, o.Streams) {
		wg.Go(func() {
			var mine, mineReplay Histogram
			var ok []pausedRun
			var resumes, errs uint64
			var errText string
			for ctx.Err() == nil && next.Add(1) <= int64(o.Streams) {
				p, took, err := cutAndResume(ctx, t, o.Input)
				if p.id != "" {
					ok = append(ok, p)
				}
				if ctx.Err() != nil {
					break
				}
				resumes++
				if err != nil {
					errs++
					if errText == "" {
						errText = err.Error()
					}
					continue
				}
				mine.Record(took.live)
				mineReplay.Record(took.replay)
			}
			mu.Lock()
			defer mu.Unlock()
			h.Merge(&mine)
			replay.Merge(&mineReplay)
			paused = append(paused, ok...)
			r.Resumes += resumes
			r.Errors += errs
			if r.FirstError == "" {
				r.FirstError = errText
			}
		})
	}
	wg.Wait()
	r.Latency, r.Replay = latencyOf(&h), latencyOf(&replay)
	if err := ctx.Err(); err != nil {
		return paused, r, fmt.Errorf("bench: resume: %w", err)
	}
	return paused, r, nil
}

// resumeTimes are one run's resumptions: live, right after the cut, and
// replay, once the run paused.
type resumeTimes struct{ live, replay time.Duration }

// cutAndResume runs one pause agent run through a cut stream: it reads
// the first event and closes the connection, reconnects at once with
// that event's id as Last-Event-ID and reads on to the pause, then
// reconnects once more with the same id and reads one event. p.id is set
// once the run exists (so that it is cancelled), p.lastEventID once it
// paused.
func cutAndResume(ctx context.Context, t *RunsTarget, input string) (p pausedRun, took resumeTimes, err error) {
	res, err := t.Gateway.Execute(ctx, gateway.ExecuteRequest{InstanceID: t.PauseInstance, Input: input})
	if err != nil {
		return p, took, err
	}
	p.id = res.RunID
	cut, _, err := firstEvent(ctx, t.Gateway, res.RunID, "")
	if err != nil {
		return p, took, err
	}
	t0 := time.Now()
	for ev, err := range t.Gateway.Events(ctx, res.RunID, cut) {
		if err != nil {
			return p, took, err
		}
		if took.live == 0 {
			took.live = max(time.Since(t0), 1)
		}
		if ev.IsTerminal() {
			return p, took, fmt.Errorf("run %s ended (%s %s) instead of pausing", res.RunID, ev.Type, ev.Status)
		}
		if ev.Type == gateway.EventHITL {
			p.lastEventID = ev.ID
			break
		}
	}
	if p.lastEventID == "" {
		return p, took, fmt.Errorf("run %s: the resumed stream ended before the pause", res.RunID)
	}
	if _, took.replay, err = firstEvent(ctx, t.Gateway, res.RunID, cut); err != nil {
		return p, took, err
	}
	return p, took, nil
}

// firstEvent opens a run's event stream after lastEventID, reads one event
// and closes the connection (leaving the loop closes the response body
// before its end): the cut. It returns the event's id and the time from
// the request to the event.
func firstEvent(ctx context.Context, gw *gateway.Client, runID, lastEventID string) (id string, took time.Duration, err error) {
	t0 := time.Now()
	for ev, err := range gw.Events(ctx, runID, lastEventID) {
		if err != nil {
			return "", 0, err
		}
		return ev.ID, max(time.Since(t0), 1), nil
	}
	return "", 0, fmt.Errorf("run %s: the stream ended before its first event", runID)
}

// holdStreams opens an event stream on every paused run after its last
// event, so that each stays open with nothing to carry, and reads the
// memory before and after. The client end of each stream is a bare
// connection that read the response's headers and nothing since: no
// goroutine, no buffer, so that what the reading shows is the server's.
func holdStreams(ctx context.Context, t *RunsTarget, paused []pausedRun, c int, held func()) (StreamMemory, error) {
	var runs []pausedRun
	for _, p := range paused {
		if p.lastEventID != "" {
			runs = append(runs, p)
		}
	}
	m := StreamMemory{Streams: len(runs)}
	if len(runs) == 0 {
		return m, errors.New("bench: streams: no run paused")
	}
	u, err := url.Parse(t.BaseURL)
	if err != nil || u.Scheme != "http" {
		return m, errors.New("bench: streams: the base URL must be an http:// URL")
	}
	before, beforeStats, err := settledMemory()
	if err != nil {
		return m, err
	}
	goroutines := runtime.NumGoroutine()
	conns := make([]net.Conn, len(runs))
	defer func() {
		for _, conn := range conns {
			if conn != nil {
				conn.Close()
			}
		}
	}()
	var next atomic.Int64
	errs := make([]error, c)
	var wg sync.WaitGroup
	for w := range c {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(runs) || ctx.Err() != nil {
					return
				}
				conn, err := openStream(ctx, u.Host, t, runs[i])
				if err != nil {
					errs[w] = err
					return
				}
				conns[i] = conn
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return m, fmt.Errorf("bench: streams: %w", err)
	}
	after, afterStats, err := settledMemory()
	if err != nil {
		return m, err
	}
	m.Goroutines = runtime.NumGoroutine() - goroutines
	m.RSSBefore, m.RSSAfter = before.RSS, after.RSS
	m.MBPer1000 = mbPer1000(before.RSS, after.RSS, len(runs))
	m.HeapMBPer1000 = mbPer1000(beforeStats.HeapInuse, afterStats.HeapInuse, len(runs))
	m.StackMBPer1000 = mbPer1000(beforeStats.StackInuse, afterStats.StackInuse, len(runs))
	if held != nil {
		held()
	}
	return m, nil
}

// mbPer1000 is the growth from before to after, in MB (10^6 bytes), per
// 1,000 of n; it is negative when memory shrank.
func mbPer1000(before, after uint64, n int) float64 {
	return (float64(after) - float64(before)) / float64(n) * 1000 / 1e6
}

// maxStreamHead bounds the response head openStream reads.
const maxStreamHead = 8 << 10

// openStream opens run p's event stream after its last event on a
// connection of its own and returns the connection once the response's
// headers arrived: the gateway sends them when it follows the run.
func openStream(ctx context.Context, host string, t *RunsTarget, p pausedRun) (net.Conn, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", host)
	if err != nil {
		return nil, err
	}
	var req []byte
	req = fmt.Appendf(req, "GET %s%s HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\nLast-Event-ID: %s\r\n",
		gateway.EventsPath, url.PathEscape(p.id), host, p.lastEventID)
	if !t.Token.IsZero() {
		req = append(req, "Authorization: Bearer "...)
		req = append(req, t.Token.Reveal()...)
		req = append(req, "\r\n"...)
	}
	if t.Tenant != "" {
		req = fmt.Appendf(req, "X-Tenant-ID: %s\r\n", t.Tenant)
	}
	req = append(req, "\r\n"...)
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	} else {
		_ = conn.SetDeadline(time.Now().Add(time.Minute))
	}
	head, err := readHead(conn, req)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("run %s: event stream: %w", p.id, err)
	}
	if !bytes.HasPrefix(head, []byte("HTTP/1.1 200 ")) {
		conn.Close()
		line, _, _ := bytes.Cut(head, []byte("\r\n"))
		return nil, fmt.Errorf("run %s: event stream answered %q", p.id, clipKind(string(line)))
	}
	_ = conn.SetDeadline(time.Time{})
	return conn, nil
}

// readHead writes req and reads the response up to the end of its
// headers; it returns the head without the blank line that ends it.
func readHead(conn io.ReadWriter, req []byte) ([]byte, error) {
	if _, err := conn.Write(req); err != nil {
		return nil, err
	}
	buf := make([]byte, 0, 1024)
	for {
		if len(buf) == cap(buf) {
			if len(buf) >= maxStreamHead {
				return nil, errors.New("response head too large")
			}
			grown := make([]byte, len(buf), min(2*cap(buf), maxStreamHead))
			copy(grown, buf)
			buf = grown
		}
		n, err := conn.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if i := bytes.Index(buf, []byte("\r\n\r\n")); i >= 0 {
			return buf[:i+2], nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// settledMemory collects the heap, returns it to the system and reads the
// resident memory and the runtime's statistics.
func settledMemory() (Memory, runtime.MemStats, error) {
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	m, err := ReadMemory()
	if err != nil && !errors.Is(err, ErrNoMemoryStats) {
		return m, ms, err
	}
	// Where the resident memory cannot be read, it reads as zero and
	// the runtime's figures still stand.
	return m, ms, nil
}

// cancelAll cancels the runs from c clients, so that a shared database is
// left with no run waiting; a failure is not the measurement's.
func cancelAll(ctx context.Context, t *RunsTarget, runs []pausedRun, c int) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range max(min(c, len(runs)), 1) {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(runs) {
					return
				}
				_, _ = t.Gateway.CancelRun(ctx, runs[i].id)
			}
		})
	}
	wg.Wait()
}
