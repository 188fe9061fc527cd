package adapter

import (
	"context"
	"errors"
	"sync"
	"time"

	"novaos.dev/novaos/delivery"
)

// Defaults of PollingOptions.
const (
	DefaultPollLimit         = 100
	DefaultPollWait          = 20 * time.Second
	DefaultHeartbeatInterval = 30 * time.Second
	// MinHeartbeatInterval is the shortest interval a polling source
	// sends heartbeats at, whatever the platform's answer says.
	MinHeartbeatInterval = time.Second
)

// pollMaxHeartbeatMS bounds the interval a HeartbeatAck may name (an
// hour), so that no answer can stop the heartbeat for good.
const pollMaxHeartbeatMS = 3600 * 1000

// PollingOptions are a polling source's optional parts; zero fields mean
// defaults.
type PollingOptions struct {
	// Limit is the most events asked for in one page (0:
	// DefaultPollLimit).
	Limit int
	// Wait is how long the platform may hold an empty page open for an
	// event (long polling; 0: DefaultPollWait, negative: none). It is cut
	// as Client.PollEvents says.
	Wait time.Duration
	// Heartbeat, when set, is asked for each heartbeat (see
	// HeartbeatSource.SetHeartbeat).
	Heartbeat func() delivery.Heartbeat
	// HeartbeatInterval is the interval until the platform's first
	// HeartbeatAck names one (0: DefaultHeartbeatInterval); both are
	// raised to MinHeartbeatInterval.
	HeartbeatInterval time.Duration
}

// PollingSource receives an agent's events by polling a consumer over
// REST (pollAgentEvents, ackAgentEvents). It polls again at once after a
// page with events, waits Settings.PollInterval after an empty one, and
// backs off (full jitter between Settings.ReconnectBackoffBase and
// ReconnectBackoffCap) after a call that failed for a while, once the
// client's own retries ran out; a refusal for good (an unknown agent, a
// revoked token) ends Receive with its error. From its first Receive
// until Close it sends the heartbeat, when one is set, every
// HeartbeatAck.interval_ms. Clock decides every wait.
type PollingSource struct {
	c         *Client
	agentID   string
	consumer  string
	limit     int
	wait      time.Duration
	bg        context.Context // ends with Close
	stop      context.CancelFunc
	heartbeat sync.WaitGroup

	// recvMu makes Receives take turns: the wait after a page belongs
	// to the next poll, whoever makes it.
	recvMu   sync.Mutex
	pause    time.Duration
	failures int

	mu         sync.Mutex
	build      func() delivery.Heartbeat
	interval   time.Duration
	received   bool // Receive was called: the source is connected
	hbRunning  bool
	closed     bool
	ackedSeq   int64
	ackedValid bool
}

var _ HeartbeatSource = (*PollingSource)(nil)

// NewPollingSource makes a source of the events of agentID's consumer.
// It sends nothing until the first Receive.
func NewPollingSource(c *Client, agentID, consumer string, opts *PollingOptions) (*PollingSource, error) {
	if c == nil {
		return nil, errors.New("adapter: a polling source needs a client")
	}
	if agentID == "" || consumer == "" {
		return nil, errors.New("adapter: a polling source needs an agent id and a consumer name")
	}
	if opts == nil {
		opts = &PollingOptions{}
	}
	s := &PollingSource{c: c, agentID: agentID, consumer: consumer, limit: opts.Limit, wait: opts.Wait,
		build: opts.Heartbeat, interval: opts.HeartbeatInterval}
	if s.limit <= 0 {
		s.limit = DefaultPollLimit
	}
	if s.wait == 0 {
		s.wait = DefaultPollWait
	}
	if s.interval <= 0 {
		s.interval = DefaultHeartbeatInterval
	}
	s.interval = max(s.interval, MinHeartbeatInterval)
	s.bg, s.stop = context.WithCancel(context.Background())
	return s, nil
}

// String names the source.
func (s *PollingSource) String() string {
	return "adapter.PollingSource{agent=" + s.agentID + " consumer=" + s.consumer + "}"
}

// GoString is String.
func (s *PollingSource) GoString() string { return s.String() }

// Receive polls until a page holds events.
func (s *PollingSource) Receive(ctx context.Context) ([]delivery.Event, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(s.bg, cancel)()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrSourceClosed
	}
	s.received = true
	s.startHeartbeatLocked()
	s.mu.Unlock()

	s.recvMu.Lock()
	defer s.recvMu.Unlock()
	for {
		if s.pause > 0 {
			if err := s.c.clock.Sleep(ctx, s.pause); err != nil {
				return nil, s.ended(err)
			}
			s.pause = 0
		}
		asked := time.Now()
		page, err := s.c.PollEvents(ctx, s.agentID, s.consumer, s.limit, max(s.wait, 0))
		if err != nil {
			if ctx.Err() != nil {
				return nil, s.ended(ctx.Err())
			}
			if !IsTransient(err) {
				return nil, err
			}
			s.pause = clientBackoff(s.failures, s.c.settings.ReconnectBackoffBase, s.c.settings.ReconnectBackoffCap, s.c.int64N)
			var pe *ProblemError
			if errors.As(err, &pe) && pe.RetryAfter > s.pause {
				s.pause = pe.RetryAfter
			}
			s.failures++
			s.c.log.WarnContext(ctx, "adapter: polling failed; polling again after a wait", "agent", s.agentID,
				"consumer", s.consumer, "failures", s.failures, "wait", s.pause, "error", err.Error())
			continue
		}
		s.failures = 0
		if len(page.Events) == 0 {
			// A platform that held the poll open has waited already; one
			// that answered at once is asked again after PollInterval.
			// Real time, not the clock: it measures the platform.
			if s.wait <= 0 || time.Since(asked) < s.wait/2 {
				s.pause = s.c.settings.PollInterval
			}
			continue
		}
		s.mu.Lock()
		if s.ackedValid && page.Events[0].Seq <= s.ackedSeq {
			// The platform lost an acknowledgement (a restore, a rewind):
			// the next one is sent even if it is not higher.
			s.ackedValid = false
		}
		s.mu.Unlock()
		return page.Events, nil
	}
}

// ended is the error of a Receive whose context ended: ErrSourceClosed
// when Close ended it.
func (s *PollingSource) ended(err error) error {
	if s.bg.Err() != nil {
		return ErrSourceClosed
	}
	return err
}

// Ack acknowledges every event up to seq; an ack at or below one already
// made is not sent again.
func (s *PollingSource) Ack(ctx context.Context, seq int64) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrSourceClosed
	}
	done := s.ackedValid && seq <= s.ackedSeq
	s.mu.Unlock()
	if done {
		return nil
	}
	if _, err := s.c.AckEvents(ctx, s.agentID, s.consumer, seq); err != nil {
		return err
	}
	s.mu.Lock()
	if !s.ackedValid || seq > s.ackedSeq {
		s.ackedSeq, s.ackedValid = seq, true
	}
	s.mu.Unlock()
	return nil
}

// SetHeartbeat sets what the heartbeats say; nil sends none.
func (s *PollingSource) SetHeartbeat(build func() delivery.Heartbeat) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.build = build
	s.startHeartbeatLocked()
}

// Close stops polling and heartbeats and waits for the heartbeat to
// end.
func (s *PollingSource) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.stop()
	s.heartbeat.Wait()
	return nil
}

// startHeartbeatLocked starts the heartbeat once the source is
// connected and has something to say. s.mu is held.
func (s *PollingSource) startHeartbeatLocked() {
	if s.closed || !s.received || s.build == nil || s.hbRunning {
		return
	}
	s.hbRunning = true
	s.heartbeat.Add(1)
	go s.heartbeatLoop()
}

// heartbeatLoop sends a heartbeat at once and then every interval the
// platform names, until Close. A failed heartbeat is logged and the
// next sent on time: the platform learns of a dead agent by the
// missing ones, not from this side.
func (s *PollingSource) heartbeatLoop() {
	defer s.heartbeat.Done()
	for {
		s.mu.Lock()
		build, interval := s.build, s.interval
		s.mu.Unlock()
		if build != nil {
			ack, err := s.c.SendHeartbeat(s.bg, s.agentID, build())
			switch {
			case err == nil && ack.IntervalMS > 0:
				interval = max(time.Duration(min(ack.IntervalMS, pollMaxHeartbeatMS))*time.Millisecond, MinHeartbeatInterval)
				s.mu.Lock()
				s.interval = interval
				s.mu.Unlock()
			case err != nil && s.bg.Err() == nil:
				s.c.log.Warn("adapter: heartbeat failed", "agent", s.agentID, "error", err.Error())
			}
		}
		if s.c.clock.Sleep(s.bg, interval) != nil {
			return
		}
	}
}
