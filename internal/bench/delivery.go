package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"novaos.dev/novaos/adapter"
	"novaos.dev/novaos/delivery"
	"novaos.dev/novaos/secret"
)

// Defaults of [DeliveryOptions].
const (
	DefaultDeliveryProducers = 32
	DefaultDeliveryBacklog   = 1000
	DefaultDeliveryEntries   = 10_000
)

// deliveryWait bounds every wait of a delivery benchmark for the
// platform or the adapter (a drain, a resume, an acknowledgement): a
// failure bound, not a measure.
const deliveryWait = time.Minute

// DeliveryTarget is the platform a delivery benchmark runs against: a
// pull agent, its credentials, and how an invocation is offered to it.
type DeliveryTarget struct {
	// BaseURL is the platform's base URL (http on loopback).
	BaseURL string
	// AgentID is the pull instance's id; Credentials its API token (and
	// the DPoP key it is bound to).
	AgentID     string
	Credentials adapter.Credentials
	// Offer stores one new invocation in the agent's stream, as the
	// platform does when it dispatches a run of the agent. It is called
	// concurrently.
	Offer func(ctx context.Context) error
	// Stamps is the platform's delivery store: it times the events from
	// their append to their acknowledgement.
	Stamps *DeliveryStamps
}

// DeliveryOptions tune a delivery benchmark; nil or zero fields mean the
// defaults.
type DeliveryOptions struct {
	// Producers are the goroutines offering invocations (default 32).
	Producers int
	// Backlog bounds the invocations offered and not yet acknowledged in
	// a closed-loop load (default 1000, the gateway's in-flight window).
	Backlog int
	// Duration is the measured time of a load (default 10s), Warmup its
	// unmeasured time first (default 2s; negative: none).
	Duration, Warmup time.Duration
	// Dir holds the adapters' state (inbox files); "" is a new temporary
	// directory, removed by Close.
	Dir string
	// Logger receives the adapter's warnings (nil: discarded).
	Logger *slog.Logger
}

// DeliveryLoad is what one load of a delivery benchmark measured.
type DeliveryLoad struct {
	Scenario string `json:"scenario"`
	// Rate is the invocations per second offered on a schedule, 0 for a
	// closed loop bounded by Backlog.
	Rate    float64 `json:"rate,omitempty"`
	Backlog int     `json:"backlog,omitempty"`
	// Offered and Acked are the invocations offered, and acknowledged at
	// the platform, in the measured window.
	Offered uint64        `json:"offered"`
	Acked   uint64        `json:"acked"`
	Elapsed time.Duration `json:"elapsedNs"`
	// Throughput is Acked per second of Elapsed; OfferedRate Offered's.
	Throughput  float64 `json:"throughput"`
	OfferedRate float64 `json:"offeredRate"`
	// Latency is each acknowledged invocation's time from its append's
	// commit to the commit of the acknowledgement covering it, both at
	// the platform's store.
	Latency Latency `json:"latency"`
	// InAdapter is the adapter's part of Latency: from the receipt of
	// an invocation's batch to its acknowledgement sent (the tokens
	// checked, the inbox committed), per invocation.
	InAdapter Latency `json:"inAdapter"`
	// Lag is how late scheduled offers began (with a Rate only): a p99
	// far above zero means the producers could not keep the rate.
	Lag *Latency `json:"lag,omitempty"`
	// PerCommit is the invocations the adapter stored per inbox commit:
	// what its group commit gathered.
	PerCommit float64 `json:"perCommit"`
	// CPUPerEvent is the CPU time this whole process (platform, adapter
	// and producers) used in the window over Acked; zero where the
	// platform does not tell. Other work on the machine moves it less
	// than Throughput.
	CPUPerEvent time.Duration `json:"cpuPerEventNs"`
	// Unstamped counts acknowledgements seen before their append (not
	// timed); Errors failed offers.
	Unstamped  uint64 `json:"unstamped,omitempty"`
	Errors     uint64 `json:"errors"`
	FirstError string `json:"firstError,omitempty"`
}

// DeliveryResume is what the disconnects of a delivery benchmark
// measured.
type DeliveryResume struct {
	Drops int `json:"drops"`
	// Resumed counts sessions taken up again with resume; Identified
	// those that had to identify anew instead.
	Resumed    int `json:"resumed"`
	Identified int `json:"identified"`
	// Latency is from the cut to the adapter's session resumed (its
	// resumed frame read); Acked from the cut to the platform storing
	// the acknowledgement of an invocation offered right after the cut.
	Latency Latency `json:"latency"`
	Acked   Latency `json:"acked"`
	// BeyondBackoff is Latency less the backoff the adapter chose to
	// wait before it reconnected: noticing the cut, dialling, and the
	// handshake up to resumed.
	BeyondBackoff Latency `json:"beyondBackoff"`
	Errors        int     `json:"errors"`
	FirstError    string  `json:"firstError,omitempty"`
}

// DeliveryMemory is what an adapter's inbox of Entries entries takes.
type DeliveryMemory struct {
	Entries int `json:"entries"`
	// HeapBase is the Go heap a connected adapter with an empty inbox
	// adds; Heap what the entries add to it (both after a GC, the whole
	// process's live heap, the platform's included).
	HeapBase int64 `json:"heapBaseBytes"`
	Heap     int64 `json:"heapBytes"`
	// RSS is the resident memory the entries add: the Go heap and the
	// embedded SQLite's page caches, which live outside it.
	RSS int64 `json:"rssBytes"`
	// Disk is the inbox's files (database, WAL and shared memory) with
	// the entries and the adapter open; DiskClosed the database file
	// alone once the adapter closed and checkpointed it.
	Disk       int64 `json:"diskBytes"`
	DiskClosed int64 `json:"diskClosedBytes"`
}

// Per10k scales a byte count of an inbox of entries to 10,000 entries.
func Per10k(bytes int64, entries int) float64 {
	if entries <= 0 {
		return 0
	}
	return float64(bytes) * 10_000 / float64(entries)
}

// DeliveryBench runs an adapter against a target: the adapter SDK's
// gateway session, its token verifier and its SQLite inbox, composed as
// an adapter's receive loop composes them (receive a batch, verify each
// token, store the batch in one inbox commit, acknowledge), without
// starting runs. Close it when done.
type DeliveryBench struct {
	t      *DeliveryTarget
	o      DeliveryOptions
	dir    string
	ownDir bool
	ad     *deliveryAdapter
	issued atomic.Uint64 // invocations offered since Track
}

// NewDeliveryBench connects an adapter (consumer "bench") to t and
// starts timing its events.
func NewDeliveryBench(ctx context.Context, t *DeliveryTarget, o *DeliveryOptions) (*DeliveryBench, error) {
	if t == nil || t.Offer == nil || t.Stamps == nil || t.AgentID == "" {
		return nil, errors.New("bench: delivery: the target needs an agent, Offer and Stamps")
	}
	d := &DeliveryBench{t: t}
	if o != nil {
		d.o = *o
	}
	d.o.Producers = cmpOr(d.o.Producers, DefaultDeliveryProducers)
	d.o.Backlog = cmpOr(d.o.Backlog, DefaultDeliveryBacklog)
	if d.o.Duration <= 0 {
		d.o.Duration = 10 * time.Second
	}
	if d.o.Warmup == 0 {
		d.o.Warmup = 2 * time.Second
	}
	d.o.Warmup = max(d.o.Warmup, 0)
	if d.o.Logger == nil {
		d.o.Logger = slog.New(slog.DiscardHandler)
	}
	d.dir = d.o.Dir
	if d.dir == "" {
		dir, err := os.MkdirTemp("", "novaos-bench-adapter-")
		if err != nil {
			return nil, err
		}
		d.dir, d.ownDir = dir, true
	}
	if err := t.Stamps.Track(ctx, t.AgentID, "bench"); err != nil {
		d.Close()
		return nil, err
	}
	ad, err := startDeliveryAdapter(ctx, t, "bench", filepath.Join(d.dir, "bench"), d.o.Logger)
	if err != nil {
		d.Close()
		return nil, err
	}
	d.ad = ad
	return d, nil
}

func cmpOr(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

// Close disconnects the adapter and removes what it stored (unless
// DeliveryOptions.Dir named where).
func (d *DeliveryBench) Close() error {
	var err error
	if d.ad != nil {
		err = d.ad.close()
		d.ad = nil
	}
	if d.ownDir {
		os.RemoveAll(d.dir)
		d.ownDir = false
	}
	return err
}

// Load offers invocations for the warm-up and then the measured
// duration, on a schedule of rate a second (spread over the producers)
// or, with rate 0, in a closed loop of at most Backlog outstanding; then
// it waits until every offered invocation is acknowledged.
func (d *DeliveryBench) Load(ctx context.Context, name string, rate float64) (DeliveryLoad, error) {
	res := DeliveryLoad{Scenario: name, Rate: max(rate, 0)}
	if rate <= 0 {
		res.Backlog = d.o.Backlog
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	p := d.produce(ctx, rate, 0, false)
	if err := sleepCtx(ctx, d.o.Warmup); err != nil {
		p.stop()
		return res, err
	}
	d.t.Stamps.Take()
	d.ad.take()
	acked0, _ := d.t.Stamps.Acked()
	offered0, commits0, stored0 := d.issued.Load(), d.ad.commits.Load(), d.ad.stored.Load()
	p.measure(true)
	cpu0, cpuOK0 := processCPU()
	start := time.Now()
	sleepErr := sleepCtx(ctx, d.o.Duration)
	hist, unstamped := d.t.Stamps.Take()
	inAdapter := d.ad.take()
	acked1, _ := d.t.Stamps.Acked()
	res.Elapsed = time.Since(start)
	cpu1, cpuOK1 := processCPU()
	offered1, commits1, stored1 := d.issued.Load(), d.ad.commits.Load(), d.ad.stored.Load()
	p.measure(false)
	p.stop()
	if sleepErr != nil {
		return res, sleepErr
	}
	res.Offered, res.Acked, res.Unstamped = offered1-offered0, acked1-acked0, unstamped
	res.Throughput = float64(res.Acked) / res.Elapsed.Seconds()
	res.OfferedRate = float64(res.Offered) / res.Elapsed.Seconds()
	res.Latency, res.InAdapter = latencyOf(&hist), latencyOf(&inAdapter)
	if rate > 0 {
		lag := latencyOf(&p.lag)
		res.Lag = &lag
	}
	if c := commits1 - commits0; c > 0 {
		res.PerCommit = float64(stored1-stored0) / float64(c)
	}
	if cpuOK0 && cpuOK1 && res.Acked > 0 {
		res.CPUPerEvent = (cpu1 - cpu0) / time.Duration(res.Acked)
	}
	res.Errors, res.FirstError = p.errors, p.firstErr
	return res, d.drain(ctx)
}

// Events offers n invocations in a closed loop of at most Backlog
// outstanding and waits until all are acknowledged: the throughput is n
// over the time from the first offer to the last acknowledgement (a Go
// benchmark's b.N).
func (d *DeliveryBench) Events(ctx context.Context, n int) (DeliveryLoad, error) {
	res := DeliveryLoad{Scenario: "events", Backlog: d.o.Backlog}
	d.t.Stamps.Take()
	d.ad.take()
	acked0, _ := d.t.Stamps.Acked()
	offered0, commits0, stored0 := d.issued.Load(), d.ad.commits.Load(), d.ad.stored.Load()
	cpu0, cpuOK0 := processCPU()
	start := time.Now()
	p := d.produce(ctx, 0, n, true)
	p.wait()
	if p.errors > 0 {
		return res, fmt.Errorf("bench: delivery: %d offers failed; first: %s", p.errors, p.firstErr)
	}
	if err := d.drain(ctx); err != nil {
		return res, err
	}
	res.Elapsed = time.Since(start)
	if cpu1, cpuOK1 := processCPU(); cpuOK0 && cpuOK1 && n > 0 {
		res.CPUPerEvent = (cpu1 - cpu0) / time.Duration(n)
	}
	hist, unstamped := d.t.Stamps.Take()
	inAdapter := d.ad.take()
	acked1, _ := d.t.Stamps.Acked()
	res.Offered, res.Acked, res.Unstamped = d.issued.Load()-offered0, acked1-acked0, unstamped
	res.Throughput = float64(res.Acked) / res.Elapsed.Seconds()
	res.OfferedRate = float64(res.Offered) / res.Elapsed.Seconds()
	res.Latency, res.InAdapter = latencyOf(&hist), latencyOf(&inAdapter)
	if c := d.ad.commits.Load() - commits0; c > 0 {
		res.PerCommit = float64(d.ad.stored.Load()-stored0) / float64(c)
	}
	return res, nil
}

// drain waits until every invocation offered is acknowledged, and fails
// when the adapter failed.
func (d *DeliveryBench) drain(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, deliveryWait)
	defer cancel()
	err := d.t.Stamps.WaitAcked(ctx, d.issued.Load())
	return errors.Join(d.ad.failed(), err)
}

// DeliveryTotals count a delivery benchmark's invocations since it
// started (or since Memory began): after a drain, all three are equal
// when nothing was lost and nothing stored twice.
type DeliveryTotals struct {
	// Offered were stored in the agent's stream; Acked acknowledged at
	// the platform; Stored stored as new entries in the adapter's inbox.
	Offered uint64 `json:"offered"`
	Acked   uint64 `json:"acked"`
	Stored  uint64 `json:"stored"`
}

// Totals counts the invocations so far.
func (d *DeliveryBench) Totals() DeliveryTotals {
	acked, _ := d.t.Stamps.Acked()
	t := DeliveryTotals{Offered: d.issued.Load(), Acked: acked}
	if d.ad != nil {
		t.Stored = uint64(d.ad.stored.Load())
	}
	return t
}

// producers offer invocations until stopped or, with a count, until
// they offered it.
type producers struct {
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	measured atomic.Bool

	mu       sync.Mutex
	lag      Histogram
	errors   uint64
	firstErr string
}

// produce starts the producers: on a schedule of rate a second, or (rate
// 0) each offering as soon as fewer than Backlog are outstanding; count,
// when positive, is how many to offer in all. Stopping them ends no offer
// midway (ctx does): every offer either counts or failed.
func (d *DeliveryBench) produce(ctx context.Context, rate float64, count int, measured bool) *producers {
	stopCtx, cancel := context.WithCancel(ctx)
	p := &producers{cancel: cancel}
	p.measured.Store(measured)
	var left atomic.Int64
	left.Store(int64(count))
	start := time.Now()
	n := d.o.Producers
	for i := range n {
		p.wg.Go(func() {
			var lag Histogram
			defer func() {
				p.mu.Lock()
				p.lag.Merge(&lag)
				p.mu.Unlock()
			}()
			for k := int64(i); stopCtx.Err() == nil; k += int64(n) {
				if count > 0 && left.Add(-1) < 0 {
					return
				}
				if rate > 0 {
					due := start.Add(time.Duration(float64(k) / rate * float64(time.Second)))
					if err := sleepCtx(stopCtx, time.Until(due)); err != nil {
						return
					}
					if p.measured.Load() {
						lag.Record(time.Since(due))
					}
				} else if err := d.awaitRoom(stopCtx); err != nil {
					return
				}
				d.issued.Add(1)
				if err := d.t.Offer(ctx); err != nil {
					// Not offered: it is not waited for.
					d.issued.Add(^uint64(0))
					p.fail(err)
				}
			}
		})
	}
	return p
}

// awaitRoom waits until fewer than Backlog invocations are outstanding.
func (d *DeliveryBench) awaitRoom(ctx context.Context) error {
	for {
		acked, changed := d.t.Stamps.Acked()
		if d.issued.Load() < acked+uint64(d.o.Backlog) {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (p *producers) measure(on bool) { p.measured.Store(on) }

func (p *producers) fail(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.measured.Load() {
		p.errors++
	}
	if p.firstErr == "" {
		p.firstErr = err.Error()
	}
}

// stop stops the producers and waits for them.
func (p *producers) stop() {
	p.cancel()
	p.wg.Wait()
}

// wait waits for producers with a count to finish.
func (p *producers) wait() {
	p.wg.Wait()
	p.cancel()
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Resume cuts the adapter's connection drops times, one after the
// other: each cut closes the socket under the adapter's session (as a
// network that drops it would), an invocation is offered at once, and
// the adapter's gateway reconnects after its backoff (a random part of
// Settings.ReconnectBackoffBase) and resumes. Each is timed from the cut
// to the session resumed and to the invocation's acknowledgement stored.
func (d *DeliveryBench) Resume(ctx context.Context, drops int) (DeliveryResume, error) {
	res := DeliveryResume{Drops: drops}
	var resumed, acked, beyond Histogram
	d.ad.sessions.drain()
	for range drops {
		ok, err := d.resumeOnce(ctx, &res, &resumed, &acked, &beyond)
		if err != nil {
			return res, err
		}
		if !ok {
			// The adapter may be between sessions: wait for the next one
			// before the next cut.
			if err := d.ad.awaitSession(ctx); err != nil {
				return res, err
			}
		}
	}
	res.Latency, res.Acked, res.BeyondBackoff = latencyOf(&resumed), latencyOf(&acked), latencyOf(&beyond)
	return res, nil
}

// resumeOnce cuts the connection once and times the resume; false
// counts a failed one in res.
func (d *DeliveryBench) resumeOnce(ctx context.Context, res *DeliveryResume, resumed, acked, beyond *Histogram) (bool, error) {
	fail := func(err error) (bool, error) {
		res.Errors++
		if res.FirstError == "" {
			res.FirstError = err.Error()
		}
		return false, nil
	}
	wctx, cancel := context.WithTimeout(ctx, deliveryWait)
	defer cancel()
	if err := d.drain(wctx); err != nil {
		return false, err
	}
	d.ad.sessions.waited() // forget the waits of earlier sessions
	cut := time.Now()
	if !d.ad.conns.cut() {
		return fail(errors.New("no connection to cut"))
	}
	d.issued.Add(1)
	if err := d.t.Offer(wctx); err != nil {
		d.issued.Add(^uint64(0))
		return fail(fmt.Errorf("offer: %w", err))
	}
	select {
	case s := <-d.ad.sessions.up:
		if !s.resumed {
			res.Identified++
			return fail(errors.New("the session was identified anew, not resumed"))
		}
		res.Resumed++
		resumed.Record(s.at.Sub(cut))
		// Every wait of this cut was logged before the wait began, so
		// before the session came up; more than one when a dial failed.
		if waited, n := d.ad.sessions.waited(); n > 0 {
			beyond.Record(s.at.Sub(cut) - waited)
		}
	case <-wctx.Done():
		return false, fmt.Errorf("bench: delivery: no session %v after a cut: %w", deliveryWait, errors.Join(d.ad.failed(), ctx.Err()))
	}
	if err := d.drain(wctx); err != nil {
		return false, err
	}
	acked.Record(time.Since(cut))
	return true, nil
}

// Memory closes the bench's adapter, connects a second one (consumer
// "bench-memory") with an empty inbox, has entries invocations offered
// and stored by it, and reads what they take: the process's Go heap
// after a GC, its resident memory, and the inbox's files. Only Close may
// follow it.
func (d *DeliveryBench) Memory(ctx context.Context, entries int) (DeliveryMemory, error) {
	res := DeliveryMemory{Entries: entries}
	if d.ad == nil {
		return res, errors.New("bench: delivery: the bench is closed")
	}
	err := d.ad.close()
	d.ad = nil
	if err != nil {
		return res, err
	}
	// The second consumer opens at the head: it is sent only what is
	// offered from now on.
	if err := d.t.Stamps.Track(ctx, d.t.AgentID, "bench-memory"); err != nil {
		return res, err
	}
	d.issued.Store(0)
	heap0 := liveHeap()
	dir := filepath.Join(d.dir, "memory")
	ad, err := startDeliveryAdapter(ctx, d.t, "bench-memory", dir, d.o.Logger)
	if err != nil {
		return res, err
	}
	d.ad = ad
	heap1 := liveHeap()
	rss1, _ := ReadMemory()
	res.HeapBase = int64(heap1) - int64(heap0)
	p := d.produce(ctx, 0, entries, true)
	p.wait()
	if p.errors > 0 {
		return res, fmt.Errorf("bench: delivery: %d offers failed; first: %s", p.errors, p.firstErr)
	}
	wctx, cancel := context.WithTimeout(ctx, deliveryWait)
	defer cancel()
	if err := errors.Join(d.drain(wctx), ad.awaitStored(wctx, int64(entries))); err != nil {
		return res, err
	}
	heap2 := liveHeap()
	rss2, _ := ReadMemory()
	res.Heap = int64(heap2) - int64(heap1)
	if rss1.RSS > 0 && rss2.RSS > 0 {
		res.RSS = int64(rss2.RSS) - int64(rss1.RSS)
	}
	res.Disk = filesSize(ad.path, ad.path+"-wal", ad.path+"-shm")
	err = ad.close()
	d.ad = nil
	if err != nil {
		return res, err
	}
	res.DiskClosed = filesSize(ad.path)
	return res, nil
}

// liveHeap is the Go heap in use after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC() // the first one's finalizers freed more
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// filesSize is the size of the files that exist among paths.
func filesSize(paths ...string) int64 {
	var n int64
	for _, p := range paths {
		if fi, err := os.Stat(p); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// deliveryAdapter is one adapter of a delivery benchmark: a gateway
// session on a connection it can cut, a verifier, an inbox, and the
// loop between them.
type deliveryAdapter struct {
	gw       *adapter.Gateway
	inbox    *adapter.SQLiteInbox
	path     string
	conns    *connCutter
	sessions *sessionLog
	cancel   context.CancelFunc
	done     chan struct{}
	err      error // the loop's, once done

	stored  atomic.Int64 // distinct invocations stored
	commits atomic.Int64 // inbox commits

	mu      sync.Mutex
	changed chan struct{} // closed and replaced when stored moves
	held    Histogram     // receipt to acknowledgement, per invocation
}

// take returns the adapter's receipt-to-acknowledgement times since the
// last take.
func (ad *deliveryAdapter) take() Histogram {
	ad.mu.Lock()
	defer ad.mu.Unlock()
	h := ad.held
	ad.held = Histogram{}
	return h
}

// startDeliveryAdapter opens an inbox in dir, connects a gateway
// session of consumer and starts the receive loop.
func startDeliveryAdapter(ctx context.Context, t *DeliveryTarget, consumer, dir string, log *slog.Logger) (*deliveryAdapter, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	ad := &deliveryAdapter{path: filepath.Join(dir, "inbox.sqlite3"), conns: &connCutter{}, sessions: newSessionLog(log.Handler()),
		done: make(chan struct{}), changed: make(chan struct{})}
	in, err := adapter.OpenSQLiteInbox(ad.path, &adapter.InboxOptions{ObserveCommit: func(int) { ad.commits.Add(1) }})
	if err != nil {
		return nil, err
	}
	ad.inbox = in
	api, err := adapter.NewClient(t.BaseURL, t.Credentials, &adapter.ClientOptions{Logger: log})
	if err != nil {
		in.Close()
		return nil, err
	}
	disc, err := api.Discover(ctx)
	if err != nil {
		in.Close()
		return nil, fmt.Errorf("bench: delivery: discovery: %w", err)
	}
	jwksURL, err := api.JWKSURL(disc)
	if err != nil {
		in.Close()
		return nil, err
	}
	keys, err := adapter.NewJWKSCache(jwksURL, nil)
	if err != nil {
		in.Close()
		return nil, err
	}
	verify := adapter.NewVerifier(keys, &adapter.VerifierOptions{JTIs: in})
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	hc := &http.Client{Transport: &http.Transport{Proxy: nil, DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dialer.DialContext(ctx, network, addr)
		if err == nil {
			ad.conns.set(c)
		}
		return c, err
	}}}
	ad.gw, err = adapter.DialGateway(ctx, t.BaseURL, disc.Gateway, &adapter.GatewayOptions{AgentID: t.AgentID, Consumer: consumer,
		Credentials: t.Credentials, Logger: slog.New(ad.sessions), HTTPClient: hc})
	if err != nil {
		in.Close()
		return nil, fmt.Errorf("bench: delivery: dial the gateway: %w", err)
	}
	loopCtx, cancel := context.WithCancel(context.Background())
	ad.cancel = cancel
	go func() {
		defer close(ad.done)
		ad.err = ad.loop(loopCtx, t.AgentID, disc.Issuer, verify)
	}()
	return ad, nil
}

// loop is the adapter's receive loop: it ends when ctx does, and fails
// at the first event it cannot settle (in a benchmark every token is
// good, so that is a failure of the run).
func (ad *deliveryAdapter) loop(ctx context.Context, agentID, issuer string, verify *adapter.Verifier) error {
	actual := adapter.Actual{BillingMode: delivery.BillingPlatform, ToolClass: delivery.ToolChat}
	leeway := adapter.DefaultSettings().InvocationTokenLeeway
	for {
		evs, err := ad.gw.Receive(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("bench: delivery: receive: %w", err)
		}
		received := time.Now()
		var last int64
		accepts := make([]adapter.InboxAccept, 0, len(evs))
		for _, ev := range evs {
			last = max(last, ev.Seq)
			if !delivery.TokenBearing(ev.Type) {
				continue
			}
			want, err := adapter.ExpectationFor(ev, agentID, issuer)
			if err != nil {
				return fmt.Errorf("bench: delivery: %w", err)
			}
			chk, err := verify.Check(ctx, ev.InvocationToken, want, actual)
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return fmt.Errorf("bench: delivery: check event %d: %w", ev.Seq, err)
			}
			switch chk.Verdict {
			case adapter.VerdictValid:
			case adapter.VerdictReplay:
				// A token stored before, sent again: a duplicate.
				if _, err := ad.inbox.Get(ctx, ev.ID); err == nil {
					continue
				}
				fallthrough
			default:
				return fmt.Errorf("bench: delivery: event %d: token %s", ev.Seq, chk.Verdict)
			}
			accepts = append(accepts, adapter.InboxAccept{Event: ev, RunID: want.RunID,
				Token:         adapter.InboxToken{Value: secret.New(ev.InvocationToken), JTI: chk.JTI, IssuedAt: chk.IssuedAt, ExpiresAt: chk.ExpiresAt},
				RememberUntil: chk.ExpiresAt.Add(leeway)})
		}
		if len(accepts) > 0 {
			results, err := ad.inbox.Accept(ctx, accepts)
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return fmt.Errorf("bench: delivery: store %d events: %w", len(accepts), err)
			}
			n := 0
			for _, r := range results {
				if r.Outcome == adapter.InboxNew {
					n++
				}
			}
			ad.stored.Add(int64(n))
		}
		if last > 0 {
			if err := ad.gw.Ack(ctx, last); err != nil && ctx.Err() == nil {
				return fmt.Errorf("bench: delivery: ack: %w", err)
			}
		}
		held := time.Since(received)
		ad.mu.Lock()
		for range accepts {
			ad.held.Record(held)
		}
		close(ad.changed)
		ad.changed = make(chan struct{})
		ad.mu.Unlock()
	}
}

// failed is the loop's error once it ended, else nil.
func (ad *deliveryAdapter) failed() error {
	select {
	case <-ad.done:
		if ad.err == nil {
			return errors.New("bench: delivery: the adapter stopped")
		}
		return ad.err
	default:
		return nil
	}
}

// awaitStored waits until n distinct invocations are stored.
func (ad *deliveryAdapter) awaitStored(ctx context.Context, n int64) error {
	for {
		ad.mu.Lock()
		ch := ad.changed
		ad.mu.Unlock()
		if ad.stored.Load() >= n {
			return nil
		}
		select {
		case <-ch:
		case <-ad.done:
			return ad.failed()
		case <-ctx.Done():
			return fmt.Errorf("bench: delivery: %d of %d events stored: %w", ad.stored.Load(), n, ctx.Err())
		}
	}
}

// awaitSession waits for the gateway's next session.
func (ad *deliveryAdapter) awaitSession(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, deliveryWait)
	defer cancel()
	select {
	case <-ad.sessions.up:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("bench: delivery: no session: %w", errors.Join(ad.failed(), ctx.Err()))
	}
}

// close stops the loop, the session and the inbox.
func (ad *deliveryAdapter) close() error {
	ad.cancel()
	gwErr := ad.gw.Close()
	<-ad.done
	return errors.Join(ad.err, gwErr, ad.inbox.Close())
}

// connCutter remembers the adapter's newest connection, so that the
// bench can cut it as a network would.
type connCutter struct {
	mu   sync.Mutex
	conn net.Conn
}

func (c *connCutter) set(conn net.Conn) {
	c.mu.Lock()
	c.conn = conn
	c.mu.Unlock()
}

// cut closes the newest connection; false when there is none.
func (c *connCutter) cut() bool {
	c.mu.Lock()
	conn := c.conn
	c.conn = nil
	c.mu.Unlock()
	return conn != nil && conn.Close() == nil
}

// sessionLog hears the gateway's sessions come up from its log: the
// Gateway tells of a session ready (identified) or resumed, and of the
// backoff it waits before it reconnects, there and nowhere else. Every
// record also goes to next.
type sessionLog struct {
	next  slog.Handler
	up    chan session
	waits chan time.Duration
}

// session is a gateway session that came up, and when.
type session struct {
	at      time.Time
	resumed bool
}

// The messages adapter.Gateway logs as a session comes up, and as it
// waits to reconnect (its "wait" attribute).
const (
	gwLogReady     = "gateway session ready"
	gwLogResumed   = "gateway session resumed"
	gwLogReconnect = "gateway connection ended; reconnecting"
)

func newSessionLog(next slog.Handler) *sessionLog {
	return &sessionLog{next: next, up: make(chan session, 64), waits: make(chan time.Duration, 64)}
}

func (h *sessionLog) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelInfo || h.next.Enabled(ctx, l)
}

func (h *sessionLog) Handle(ctx context.Context, r slog.Record) error {
	switch r.Message {
	case gwLogReady, gwLogResumed:
		select {
		case h.up <- session{at: time.Now(), resumed: r.Message == gwLogResumed}:
		default:
		}
	case gwLogReconnect:
		r.Attrs(func(a slog.Attr) bool {
			if a.Key != "wait" || a.Value.Kind() != slog.KindDuration {
				return true
			}
			select {
			case h.waits <- a.Value.Duration():
			default:
			}
			return false
		})
	}
	if h.next.Enabled(ctx, r.Level) {
		return h.next.Handle(ctx, r)
	}
	return nil
}

func (h *sessionLog) WithAttrs(as []slog.Attr) slog.Handler {
	return &sessionLog{next: h.next.WithAttrs(as), up: h.up, waits: h.waits}
}

func (h *sessionLog) WithGroup(name string) slog.Handler {
	return &sessionLog{next: h.next.WithGroup(name), up: h.up, waits: h.waits}
}

// waited sums the waits heard of since the last call.
func (h *sessionLog) waited() (sum time.Duration, n int) {
	for {
		select {
		case w := <-h.waits:
			sum += w
			n++
		default:
			return sum, n
		}
	}
}

// drain forgets the sessions and waits heard of so far.
func (h *sessionLog) drain() {
	for {
		select {
		case <-h.up:
		case <-h.waits:
		default:
			return
		}
	}
}
