package agenthost

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"novaos.dev/novaos/internal/httpapi"
)

// DefaultGRPCMaxStreams is the number of concurrent streams (calls) a
// gRPC connection may have when Options.GRPCMaxStreams is zero: the
// smallest limit HTTP/2 recommends a peer allow.
const DefaultGRPCMaxStreams = 100

// grpcLimits puts the HTTP listener's limits on the gRPC one. A call's
// request message must arrive within the body timeout, or at the minimum
// rate past it, or its connection is cut, as an HTTP body's is. What a
// connection reads while one of its calls waits for its message is taken
// from the in-flight budget as it arrives, grpcReceiveFactor times, and
// given back as each message is whole;
// a decoded message then holds HoldFactor times its size until its
// handler returns (beyond the budget: UNAVAILABLE with retry-after).
// gRPC has no answer to give before a message is whole, so a connection
// whose bytes do not fit stops being read until handlers give back
// enough, or is cut: at once when messages still arriving hold so much of
// the budget that waiting could only wait for each other, else past the
// body timeout. Clients see a cut connection's calls as UNAVAILABLE.
//
// The rate is the connection's, not the call's: gRPC reads a connection's
// frames for all its calls, so a call that stalls beside one that sends is
// cut only once the connection as a whole falls below the rate. Streams
// per connection are capped (MaxConcurrentStreams), so that costs at most
// that many stalled calls.
type grpcLimits struct {
	guard   *httpapi.Guard
	timeout time.Duration // 0: no deadline
	rate    int64         // bytes per second; 0: none
	factor  int64
	log     *slog.Logger
	conns   sync.Map // connKey → *grpcConn
	// receiving is what connections hold of the budget for messages not
	// yet whole; the rest of what is in use is held by handlers.
	receiving atomic.Int64
}

func newGRPCLimits(g *httpapi.Guard, log *slog.Logger) *grpcLimits {
	l := g.Limits()
	return &grpcLimits{guard: g, timeout: l.BodyTimeout, rate: l.BodyMinRate, factor: int64(l.HoldFactor), log: log}
}

// options are the server options that apply the limits.
func (g *grpcLimits) options() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.StatsHandler(g),
		grpc.ChainUnaryInterceptor(g.unary),
		grpc.ChainStreamInterceptor(g.stream),
		// Fixed windows (which turn the bandwidth-delay estimate off): a
		// client may send 64 KiB of a call's message before the server
		// asks for the rest, which it does once the call is under watch
		// here, and 1 MiB over a connection's calls.
		grpc.InitialWindowSize(64 << 10),
		grpc.InitialConnWindowSize(1 << 20),
	}
}

// listener tracks ln's connections, so that calls can find theirs.
func (g *grpcLimits) listener(ln net.Listener) net.Listener { return &grpcListener{Listener: ln, g: g} }

type grpcListener struct {
	net.Listener
	g *grpcLimits
}

func (l *grpcListener) Accept() (net.Conn, error) {
	nc, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	c := &grpcConn{Conn: nc, g: l.g, key: connKey(nc.LocalAddr(), nc.RemoteAddr())}
	l.g.conns.Store(c.key, c)
	return c, nil
}

func connKey(local, remote net.Addr) string {
	if local == nil || remote == nil {
		return ""
	}
	return local.String() + " " + remote.String()
}

// grpcReceiveFactor is how many times its size a message counts while it
// arrives: its bytes, the decoded message beside them, and the wire
// buffers gRPC keeps for the next message after it. With 2, forty
// concurrent 9.9 MB messages grew the server by 2.1 times the budget; with
// 3, by 1.6 times.
const grpcReceiveFactor = 3

// errGRPCOverloaded ends a connection whose calls' messages would take
// more of the in-flight budget than is left.
var errGRPCOverloaded = errors.New("agenthost: gRPC connection cut: too many request bytes in flight")

// grpcConn is a connection of the gRPC listener: it counts what it reads,
// and while any of its calls waits for its message, takes what it reads
// from the budget.
type grpcConn struct {
	net.Conn
	g    *grpcLimits
	key  string
	read atomic.Int64

	mu      sync.Mutex
	waiting int   // calls whose request message has not arrived
	held    int64 // budget taken for bytes read while waiting > 0
	closed  bool
}

func (c *grpcConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.read.Add(int64(n))
		if !c.take(int64(n) * grpcReceiveFactor) {
			c.g.log.Warn("agenthost: gRPC connection cut: its request bytes found no room in the in-flight budget in time", "remote", c.RemoteAddr().String())
			c.Close()
			return n, errGRPCOverloaded
		}
	}
	return n, err
}

// take takes n bytes from the budget if a call is waiting for its
// message, waiting for them if need be; false: they did not come in time.
func (c *grpcConn) take(n int64) bool {
	c.mu.Lock()
	waiting := c.waiting > 0 && !c.closed
	c.mu.Unlock()
	if !waiting {
		return true
	}
	if !c.g.acquireWait(n) {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		c.g.guard.Release(n)
		return true
	}
	c.held += n
	c.g.receiving.Add(n)
	return true
}

// grpcPauseLimit bounds a wait for the budget when the body timeout is off.
const grpcPauseLimit = 30 * time.Second

// acquireWait takes n bytes of the budget, waiting up to the body timeout
// for handlers to give theirs back; false, at once, when handlers do not
// hold n: the rest is held by messages arriving on connections that may
// all be waiting here.
func (g *grpcLimits) acquireWait(n int64) bool {
	limit := g.timeout
	if limit <= 0 {
		limit = grpcPauseLimit
	}
	deadline := time.Now().Add(limit)
	for d := time.Millisecond; ; d = min(2*d, 50*time.Millisecond) {
		if g.guard.Acquire(n) {
			return true
		}
		if g.guard.Stats().InflightBytes-g.receiving.Load() < n || !time.Now().Before(deadline) {
			return false
		}
		time.Sleep(d)
	}
}

func (c *grpcConn) wait() {
	c.mu.Lock()
	c.waiting++
	c.mu.Unlock()
}

// arrived: a call's message of wire bytes is whole (or the call ended
// without one: 0). Its share of what the connection read is the decoded
// message's now, which its call counts; once no call waits, neither does
// the rest (frame headers, metadata).
func (c *grpcConn) arrived(wire int64) {
	c.mu.Lock()
	c.waiting--
	n := min(c.held, wire*grpcReceiveFactor)
	if c.waiting == 0 {
		n = c.held
	}
	c.held -= n
	c.mu.Unlock()
	c.g.receiving.Add(-n)
	c.g.guard.Release(n)
}

func (c *grpcConn) Close() error {
	c.g.conns.Delete(c.key)
	c.mu.Lock()
	n := c.held
	c.held, c.closed = 0, true
	c.mu.Unlock()
	c.g.receiving.Add(-n)
	c.g.guard.Release(n)
	return c.Conn.Close()
}

type connCtxKey struct{}
type callCtxKey struct{}

// TagConn finds the connection a gRPC transport serves.
func (g *grpcLimits) TagConn(ctx context.Context, info *stats.ConnTagInfo) context.Context {
	if c, ok := g.conns.Load(connKey(info.LocalAddr, info.RemoteAddr)); ok {
		ctx = context.WithValue(ctx, connCtxKey{}, c)
	}
	return ctx
}

func (g *grpcLimits) HandleConn(context.Context, stats.ConnStats) {}

func (g *grpcLimits) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context {
	c, ok := ctx.Value(connCtxKey{}).(*grpcConn)
	if !ok {
		return ctx
	}
	return context.WithValue(ctx, callCtxKey{}, &grpcCall{g: g, conn: c})
}

// HandleRPC watches a call from its headers until its request message
// has arrived.
func (g *grpcLimits) HandleRPC(ctx context.Context, s stats.RPCStats) {
	c, ok := ctx.Value(callCtxKey{}).(*grpcCall)
	if !ok {
		return
	}
	switch s := s.(type) {
	case *stats.InHeader:
		c.begin()
	case *stats.InPayload:
		c.arrived(int64(s.WireLength))
	case *stats.End:
		c.arrived(0)
	}
}

// grpcCall is one call waiting for its request message.
type grpcCall struct {
	g    *grpcLimits
	conn *grpcConn

	mu    sync.Mutex
	begun bool
	done  bool
	start time.Time
	from  int64 // the connection's bytes read at start
	timer *time.Timer
}

func (c *grpcCall) begin() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.begun {
		return
	}
	c.begun = true
	c.start, c.from = time.Now(), c.conn.read.Load()
	c.conn.wait()
	if c.g.timeout > 0 {
		c.timer = time.AfterFunc(c.g.timeout, c.check)
	}
}

func (c *grpcCall) arrived(wire int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.begun || c.done {
		return
	}
	c.done = true
	if c.timer != nil {
		c.timer.Stop()
	}
	c.conn.arrived(wire)
}

// check cuts the connection of a call whose message is late: past the
// timeout, and slower than the minimum rate since the call began.
func (c *grpcCall) check() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done {
		return
	}
	allowed := c.g.timeout
	if r := c.g.rate; r > 0 {
		n := c.conn.read.Load() - c.from
		if d := time.Duration(n/r)*time.Second + time.Duration(n%r)*time.Second/time.Duration(r); d > allowed {
			allowed = d
		}
	}
	if wait := time.Until(c.start.Add(allowed)); wait > 0 {
		// A second more than needed, so a steady sender costs a check a
		// second at most.
		c.timer.Reset(wait + time.Second)
		return
	}
	c.g.log.Warn("agenthost: gRPC request message too slow, connection cut", "remote", c.conn.RemoteAddr().String(),
		"after", time.Since(c.start).Round(time.Millisecond).String())
	// Closing the connection ends its transport, which ends the call (End
	// then marks it done).
	go c.conn.Close()
}

// share is what a decoded request message holds of the budget.
func (g *grpcLimits) share(m any) int64 {
	if pm, ok := m.(proto.Message); ok {
		return int64(proto.Size(pm)) * g.factor
	}
	return 0
}

// overloaded is the answer to a call beyond the budget: UNAVAILABLE,
// which clients retry, with the HTTP side's Retry-After as trailer.
func overloaded(set func(metadata.MD) error) error {
	_ = set(metadata.Pairs("retry-after", httpapi.RetryAfter))
	return status.Errorf(codes.Unavailable, "too many request bytes in flight; retry after %ss", httpapi.RetryAfter)
}

func (g *grpcLimits) unary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	n := g.share(req)
	if !g.guard.Acquire(n) {
		return nil, overloaded(func(md metadata.MD) error { return grpc.SetTrailer(ctx, md) })
	}
	defer g.guard.Release(n)
	return handler(ctx, req)
}

func (g *grpcLimits) stream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	s := &budgetStream{ServerStream: ss, g: g}
	defer func() { g.guard.Release(s.held) }()
	return handler(srv, s)
}

// budgetStream takes each message a streaming call receives from the
// budget, until the call returns.
type budgetStream struct {
	grpc.ServerStream
	g    *grpcLimits
	held int64
}

func (s *budgetStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	n := s.g.share(m)
	if !s.g.guard.Acquire(n) {
		return overloaded(func(md metadata.MD) error { s.SetTrailer(md); return nil })
	}
	s.held += n
	return nil
}
