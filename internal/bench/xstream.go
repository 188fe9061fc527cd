package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/resilience"
)

// ScenarioXStream names the cross-replica stream scenario ([RunXStream]).
const ScenarioXStream = "xstream"

// Defaults of [XStreamOptions].
const (
	DefaultXStreamUpdates    = 10
	DefaultXStreamInterval   = 5 * time.Millisecond
	DefaultXStreamStartDelay = 50 * time.Millisecond
)

// XStreamOptions shape the tasks of the xstream scenario; zero fields mean
// the defaults. The agent and the load generator must be given the same.
type XStreamOptions struct {
	// Updates is how many WORKING status updates a task emits before its
	// COMPLETED one (default 10).
	Updates int
	// Interval spaces the updates (default 5ms).
	Interval time.Duration
	// StartDelay is how long a task waits before its first update
	// (default 50ms), so that the subscription on the other replica is
	// usually open by then. A later one is not a failure: it expects the
	// updates after its snapshot only, and counts as late.
	StartDelay time.Duration
}

func (o *XStreamOptions) withDefaults() XStreamOptions {
	var v XStreamOptions
	if o != nil {
		v = *o
	}
	if v.Updates <= 0 {
		v.Updates = DefaultXStreamUpdates
	}
	if v.Interval <= 0 {
		v.Interval = DefaultXStreamInterval
	}
	if v.StartDelay <= 0 {
		v.StartDelay = DefaultXStreamStartDelay
	}
	return v
}

// xstreamKey is the metadata member the agent stamps its updates with:
// {"seq": n} on each status message, so a task snapshot says which update
// it shows, and {"seq": n, "emittedUnixNano": "…"} on each status update
// event (a string: nanoseconds since 1970 do not fit a JSON number's
// exact range).
const xstreamKey = "novaosBench"

// XStreamAgent is the agent of the xstream scenario, hosted by the servers
// under test: each task waits StartDelay, then emits Updates WORKING status
// updates Interval apart and a COMPLETED one, each stamped with its
// sequence number (1 to Updates+1) and the time it was emitted.
type XStreamAgent struct{ o XStreamOptions }

var _ a2asrv.Executor = (*XStreamAgent)(nil)

// NewXStreamAgent returns the agent; nil options mean the defaults.
func NewXStreamAgent(o *XStreamOptions) *XStreamAgent {
	return &XStreamAgent{o: o.withDefaults()}
}

// Card describes the agent; the server hosting it fills in its interfaces.
func (a *XStreamAgent) Card() *a2a.AgentCard {
	return &a2a.AgentCard{
		Name:                ScenarioXStream,
		Description:         "Benchmark agent: emits timestamped status updates a few milliseconds apart, then completes.",
		SupportedInterfaces: []a2a.AgentInterface{},
		Version:             "1.0.0",
		Capabilities:        a2a.AgentCapabilities{Streaming: a2a.Bool(true), PushNotifications: a2a.Bool(false)},
		DefaultInputModes:   []string{"text/plain"},
		DefaultOutputModes:  []string{"text/plain"},
		Skills: []a2a.AgentSkill{{ID: ScenarioXStream, Name: "Timestamped updates",
			Description: "Emits timestamped status updates, then completes.", Tags: []string{"bench"}}},
	}
}

// Execute emits the task's updates.
func (a *XStreamAgent) Execute(ctx context.Context, _ *a2asrv.RequestContext, u a2asrv.Updater) error {
	if err := resilience.Sleep(ctx, a.o.StartDelay); err != nil {
		return err
	}
	last := a.o.Updates + 1
	for seq := 1; seq <= last; seq++ {
		state := a2a.TaskStateWorking
		if seq == last {
			state = a2a.TaskStateCompleted
		}
		msg := a2a.NewMessage(a2a.RoleAgent, a2a.TextPart("update "+strconv.Itoa(seq)))
		msg.TaskID, msg.ContextID = u.TaskID(), u.ContextID()
		msg.Metadata = map[string]any{xstreamKey: map[string]any{"seq": seq}}
		stamp := map[string]any{xstreamKey: map[string]any{"seq": seq, "emittedUnixNano": strconv.FormatInt(time.Now().UnixNano(), 10)}}
		if err := u.UpdateStatus(ctx, state, msg, stamp); err != nil {
			return err
		}
		if seq < last {
			if err := resilience.Sleep(ctx, a.o.Interval); err != nil {
				return err
			}
		}
	}
	return nil
}

// XStream is the cross-replica stream scenario: each client sends a task
// to the xstream agent on one server (replica A) with returnImmediately,
// subscribes to it on another (replica B), and times every status update
// from its emission on A to its receipt on B.
type XStream struct {
	// Send and Subscribe are the [XStreamAgent]'s JSON-RPC URLs on the
	// replicas: client i sends to Send[i mod n] and subscribes on
	// Subscribe[i mod n]. Giving one URL to both measures a stream on the
	// replica that runs the task.
	Send, Subscribe []string
	// Options must be the agent's.
	Options XStreamOptions
	// Wait bounds one subscription beyond the task's own duration
	// (default 10s): past it, the updates not seen are missing.
	Wait time.Duration
}

// Frames counts the status updates of the measured xstream tasks.
type Frames struct {
	// Expected are the updates each subscription should have seen: all of
	// its task's, or those after its opening snapshot when it was late.
	Expected uint64 `json:"expected"`
	// Seen are those it received, in order, each once.
	Seen uint64 `json:"seen"`
	// Late counts subscriptions whose snapshot already showed an update.
	Late uint64 `json:"late"`
}

// RunXStream runs xs from opts.Concurrency clients as [RunOp] runs an
// operation. A task fails when its subscription ends, or times out, before
// the COMPLETED update, or when an update is missing, repeated or out of
// order. Requests and Throughput count tasks; Latency is the status
// updates', from emission to receipt (both clocks are this process's), and
// Frames counts them.
func RunXStream(ctx context.Context, xs XStream, opts *Options) (*Result, error) {
	if len(xs.Send) == 0 || len(xs.Send) != len(xs.Subscribe) {
		return nil, errors.New("bench: xstream: want as many subscribe URLs as send URLs, at least one")
	}
	var po PaceOptions // closed loop
	if opts != nil {
		po.Options = *opts
	}
	o := po.withDefaults()
	r := &xstreamRun{XStream: xs, o: xs.Options.withDefaults(), client: o.Client}
	if r.client == nil {
		r.client = NewClient(o.Concurrency)
		defer r.client.CloseIdleConnections()
	}
	if r.Wait <= 0 {
		r.Wait = 10 * time.Second
	}
	r.pending = make([]xstreamTally, o.Concurrency)
	r.total = make([]xstreamTally, o.Concurrency)
	res, err := RunOp(ctx, Op{Name: ScenarioXStream, Do: r.do, Settle: r.settle}, &po)
	if res == nil {
		return nil, err
	}
	var h Histogram
	var f Frames
	for i := range r.total {
		t := &r.total[i]
		h.Merge(&t.hist)
		f.Expected += t.expected
		f.Seen += t.seen
		f.Late += t.late
	}
	res.Latency = latencyOf(&h)
	res.Frames = &f
	return res, err
}

type xstreamRun struct {
	XStream
	o      XStreamOptions
	client *http.Client
	// pending holds each client's tally of its current task until Settle
	// says whether it counts; total what counted. Each client owns its
	// entries until RunOp returns.
	pending, total []xstreamTally
}

type xstreamTally struct {
	latencies            []time.Duration // pending only
	hist                 Histogram       // total only
	expected, seen, late uint64
}

func (r *xstreamRun) settle(client int, counted bool) {
	p, t := &r.pending[client], &r.total[client]
	if counted {
		for _, d := range p.latencies {
			t.hist.Record(d)
		}
		t.expected += p.expected
		t.seen += p.seen
		t.late += p.late
	}
	*p = xstreamTally{latencies: p.latencies[:0]}
}

func (r *xstreamRun) do(ctx context.Context, client int) error {
	n := len(r.Send)
	id, err := r.send(ctx, r.Send[client%n])
	if err != nil {
		return fmt.Errorf("send on replica A: %w", err)
	}
	return r.follow(ctx, r.Subscribe[client%n], id, &r.pending[client])
}

// send starts a task with returnImmediately and returns its id.
func (r *xstreamRun) send(ctx context.Context, url string) (string, error) {
	body := `{"jsonrpc":"2.0","id":1,"method":"` + a2a.MethodSendMessage + `","params":{"message":{"messageId":"` + a2a.NewID() +
		`","role":"ROLE_USER","parts":[{"text":"xstream"}]},"configuration":{"returnImmediately":true}}}`
	resp, err := r.post(ctx, url, "application/json", body)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", fmt.Errorf("read answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("status %d: %s", resp.StatusCode, clip(b))
	}
	var out a2a.SendMessageResponse
	rpcErr, err := a2a.DecodeResult(b, &out)
	switch {
	case err != nil:
		return "", err
	case rpcErr != nil:
		return "", rpcErr
	case out.Task == nil || out.Task.ID == "":
		return "", errors.New("the answer holds no task")
	}
	return out.Task.ID, nil
}

func (r *xstreamRun) post(ctx context.Context, url, accept, body string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("new request: %w", err)
	}
	req.Header = a2aHeader(accept)
	return r.client.Do(req)
}

// follow subscribes to task id at url and checks and times its updates
// into p.
func (r *xstreamRun) follow(ctx context.Context, url, id string, p *xstreamTally) error {
	wait := r.o.StartDelay + time.Duration(r.o.Updates)*r.o.Interval + r.Wait
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	idJSON, _ := json.Marshal(id)
	resp, err := r.post(ctx, url, "text/event-stream",
		`{"jsonrpc":"2.0","id":1,"method":"`+a2a.MethodSubscribeToTask+`","params":{"id":`+string(idJSON)+`}}`)
	if err != nil {
		return fmt.Errorf("subscribe on replica B: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrBody))
		if resp.StatusCode == http.StatusOK {
			return fmt.Errorf("subscribe on replica B: %w", checkSendError(b))
		}
		return fmt.Errorf("subscribe on replica B: status %d: %s", resp.StatusCode, clip(b))
	}
	return readUpdates(ctx, resp.Body, r.o.Updates+1, wait, p)
}

// readUpdates reads a subscription's stream from body, expecting total
// status updates in all, and checks and times them into p. ctx ends the
// wait, which took wait.
func readUpdates(ctx context.Context, body io.Reader, total int, wait time.Duration, p *xstreamTally) error {
	er := a2a.NewEventReader(body, 0)
	start, next, frames, seen := 0, 1, 0, 0
	for {
		ev, err := er.Next()
		received := time.Now()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("replica B saw %d of %d status updates in %v", seen, total-start, wait)
			}
			return fmt.Errorf("replica B: read stream: %w", err)
		}
		frames++
		var f a2a.StreamResponse
		rpcErr, err := a2a.DecodeResult(ev.Data, &f)
		switch {
		case err != nil:
			return fmt.Errorf("replica B: %w", err)
		case rpcErr != nil && frames == 1 && rpcErr.Code == a2a.CodeUnsupportedOperation:
			// The task ended before the subscription opened (a busy
			// machine outran StartDelay): late, with no update to expect.
			p.late++
			return nil
		case rpcErr != nil:
			return fmt.Errorf("replica B: stream error: %w", rpcErr)
		case frames == 1:
			if f.Task == nil {
				return errors.New("replica B: the stream did not open with the task")
			}
			if m := f.Task.Status.Message; m != nil {
				start, _ = stampOf(m.Metadata)
			}
			if start > 0 {
				p.late++
			}
			next = start + 1
			p.expected += uint64(total - start)
		case f.StatusUpdate != nil:
			seq, emitted := stampOf(f.StatusUpdate.Metadata)
			switch {
			case emitted == 0:
				return fmt.Errorf("replica B: a status update without the bench's stamp (metadata %v)", f.StatusUpdate.Metadata)
			case seq < next:
				return fmt.Errorf("replica B: status update %d came again after %d (duplicated or out of order)", seq, next-1)
			case seq > next:
				return fmt.Errorf("replica B: status updates %d to %d are missing (update %d came next)", next, seq-1, seq)
			}
			p.latencies = append(p.latencies, received.Sub(time.Unix(0, emitted)))
			p.seen++
			seen++
			next++
			if seq == total {
				return nil
			}
		default:
			return fmt.Errorf("replica B: unexpected frame after the snapshot: %.200s", ev.Data)
		}
	}
	if frames == 0 {
		return errors.New("replica B: the stream closed without a frame")
	}
	if frames == 1 {
		return fmt.Errorf("replica B saw %d of %d status updates: its stream closed after the snapshot", seen, total-start)
	}
	return fmt.Errorf("replica B saw %d of %d status updates: its stream closed after %d frames", seen, total-start, frames)
}

// stampOf reads the bench's stamp from metadata: the update's sequence
// number, and when it was emitted (0 when not stamped).
func stampOf(md map[string]any) (seq int, emittedUnixNano int64) {
	m, _ := md[xstreamKey].(map[string]any)
	switch v := m["seq"].(type) {
	case float64:
		seq = int(v)
	case json.Number:
		n, _ := v.Int64()
		seq = int(n)
	}
	if s, ok := m["emittedUnixNano"].(string); ok {
		emittedUnixNano, _ = strconv.ParseInt(s, 10, 64)
	}
	return seq, emittedUnixNano
}

// clip cuts a body for an error message.
func clip(b []byte) []byte {
	b = bytes.TrimSpace(b)
	if len(b) > maxErrBody {
		b = b[:maxErrBody]
	}
	return b
}
