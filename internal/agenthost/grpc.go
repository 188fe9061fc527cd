package agenthost

import (
	"context"
	"fmt"
	"math"
	"net"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"

	"novaos.dev/novaos/a2a/a2agrpc/grpcsrv"
	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/internal/httpapi"
)

// grpcServing is the A2A gRPC binding of a server with Options.GRPCAddr:
// its own listener, one service routing to the hosted agents by name.
type grpcServing struct {
	ln       net.Listener
	target   string // host:port cards name
	handlers map[string]*a2asrv.Handler

	mu      sync.Mutex
	srv     *grpc.Server // nil until Run serves
	stopped bool         // Shutdown came: Run serves no more
}

// grpcHandshakeTimeout bounds a new connection's HTTP/2 handshake, as the
// HTTP listener's header timeout bounds a request's headers.
const grpcHandshakeTimeout = 10 * time.Second

// listenGRPC opens the gRPC listener, so that the cards built next can
// name it.
func (h *Host) listenGRPC(ctx context.Context) error {
	if h.opts.GRPCAddr == "" {
		return nil
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", h.opts.GRPCAddr)
	if err != nil {
		return fmt.Errorf("agenthost: listen gRPC: %w", err)
	}
	if check := h.deps.CheckListener; check != nil {
		if err := check(ln.Addr()); err != nil {
			ln.Close()
			return err
		}
	}
	h.grpc.ln = ln
	h.grpc.target = h.opts.GRPCPublicAddr
	if h.grpc.target == "" {
		h.grpc.target = strings.TrimPrefix(httpapi.ListenURL(h.opts.GRPCAddr, ln.Addr()), "http://")
	}
	if h.deps.TLS != nil && !strings.Contains(h.grpc.target, "://") {
		// A bare host:port says nothing of TLS, and a client that dials a
		// loopback one in plaintext would fail the handshake; A2A names
		// interfaces by https:// URLs.
		h.grpc.target = "https://" + h.grpc.target
	}
	return nil
}

// serveGRPC serves the hosted agents on the gRPC listener, under the HTTP
// side's limits where gRPC has the same: the body limit as the message
// limit, the header limit on metadata, the body timeout and minimum rate
// on request messages, the in-flight budget shared with HTTP, the
// connection cap (shared too, without the reserve), the idle timeout;
// and a cap on each connection's streams.
func (h *Host) serveGRPC() {
	if h.grpc.ln == nil {
		return
	}
	guard := h.deps.Guard
	l := guard.Limits()
	lim := newGRPCLimits(guard, h.log)
	maxStreams := h.opts.GRPCMaxStreams
	switch {
	case maxStreams == 0:
		maxStreams = DefaultGRPCMaxStreams
	case maxStreams < 0:
		maxStreams = math.MaxUint32
	}
	opts := []grpc.ServerOption{
		grpc.MaxRecvMsgSize(int(min(h.opts.MaxBodyBytes, int64(^uint32(0)>>1)))),
		grpc.MaxHeaderListSize(uint32(l.MaxHeaderBytes)),
		grpc.MaxConcurrentStreams(uint32(min(int64(maxStreams), math.MaxUint32))),
		grpc.ConnectionTimeout(grpcHandshakeTimeout),
		grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionIdle: l.IdleTimeout}),
		// Clients may ping to keep a long stream's connection open, but
		// not often enough to cost the server anything.
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 10 * time.Second, PermitWithoutStream: true}),
	}
	opts = append(opts, lim.options()...)
	if h.deps.TLS != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(h.deps.TLS.Config())))
	}
	srv := grpc.NewServer(opts...)
	grpcsrv.NewMux(h.grpc.handlers).Register(srv)
	h.grpc.mu.Lock()
	if h.grpc.stopped {
		h.grpc.mu.Unlock()
		h.grpc.ln.Close()
		return
	}
	h.grpc.srv = srv
	h.grpc.mu.Unlock()
	ln := lim.listener(guard.PlainListener(h.grpc.ln))
	go func() {
		if err := srv.Serve(ln); err != nil {
			h.log.Error("agenthost: gRPC server stopped", "err", err)
		}
	}()
	h.log.Info("agenthost: serving gRPC", "addr", h.grpc.ln.Addr().String(), "target", h.grpc.target, "maxStreams", maxStreams)
}

// GRPCAddr is the address the gRPC binding listens on ("" when off).
func (h *Host) GRPCAddr() string {
	if h.grpc.ln == nil {
		return ""
	}
	return h.grpc.ln.Addr().String()
}

// stopGRPC lets running calls finish until ctx is done, then cuts them.
func (h *Host) stopGRPC(ctx context.Context) {
	h.grpc.mu.Lock()
	srv := h.grpc.srv
	h.grpc.stopped = true
	h.grpc.mu.Unlock()
	if srv == nil {
		h.grpc.close()
		return
	}
	done := make(chan struct{})
	go func() {
		srv.GracefulStop()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		srv.Stop()
		<-done
	}
}

// close drops a listener that never served.
func (g *grpcServing) close() {
	if g.ln != nil && g.srv == nil {
		g.ln.Close()
	}
}
