package app

import (
	"context"
	"fmt"
	"math"
	"net"
	"strings"
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
	srv      *grpc.Server
	target   string // host:port cards name
	handlers map[string]*a2asrv.Handler
}

// grpcHandshakeTimeout bounds a new connection's HTTP/2 handshake, as the
// HTTP listener's header timeout bounds a request's headers.
const grpcHandshakeTimeout = 10 * time.Second

// listenGRPC opens the gRPC listener, under s.mu, so that the cards built
// next can name it.
func (s *Server) listenGRPC(ctx context.Context) error {
	s.grpc.handlers = map[string]*a2asrv.Handler{}
	if s.opts.GRPCAddr == "" {
		return nil
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", s.opts.GRPCAddr)
	if err != nil {
		return fmt.Errorf("app: listen gRPC: %w", err)
	}
	if err := s.checkPlaintext(ln.Addr()); err != nil {
		ln.Close()
		return err
	}
	s.grpc.ln = ln
	s.grpc.target = s.opts.GRPCPublicAddr
	if s.grpc.target == "" {
		s.grpc.target = strings.TrimPrefix(listenURL(s.opts.GRPCAddr, ln.Addr()), "http://")
	}
	if s.tls != nil && !strings.Contains(s.grpc.target, "://") {
		// A bare host:port says nothing of TLS, and a client that dials a
		// loopback one in plaintext would fail the handshake; A2A names
		// interfaces by https:// URLs.
		s.grpc.target = "https://" + s.grpc.target
	}
	return nil
}

// serveGRPC serves the hosted agents on the gRPC listener, under the HTTP
// side's limits where gRPC has the same: the body limit as the message
// limit, the header limit on metadata, the body timeout and minimum rate
// on request messages, the in-flight budget shared with HTTP, the
// connection cap (shared too, without the reserve), the idle timeout;
// and a cap on each connection's streams.
func (s *Server) serveGRPC(guard *httpapi.Guard) {
	if s.grpc.ln == nil {
		return
	}
	l := guard.Limits()
	lim := newGRPCLimits(guard, s.log)
	maxStreams := s.opts.GRPCMaxStreams
	switch {
	case maxStreams == 0:
		maxStreams = DefaultGRPCMaxStreams
	case maxStreams < 0:
		maxStreams = math.MaxUint32
	}
	opts := []grpc.ServerOption{
		grpc.MaxRecvMsgSize(int(min(s.opts.MaxBodyBytes, int64(^uint32(0)>>1)))),
		grpc.MaxHeaderListSize(uint32(l.MaxHeaderBytes)),
		grpc.MaxConcurrentStreams(uint32(min(int64(maxStreams), math.MaxUint32))),
		grpc.ConnectionTimeout(grpcHandshakeTimeout),
		grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionIdle: l.IdleTimeout}),
		// Clients may ping to keep a long stream's connection open, but
		// not often enough to cost the server anything.
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 10 * time.Second, PermitWithoutStream: true}),
	}
	opts = append(opts, lim.options()...)
	if s.tls != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(s.tls.Config())))
	}
	s.grpc.srv = grpc.NewServer(opts...)
	grpcsrv.NewMux(s.grpc.handlers).Register(s.grpc.srv)
	ln := lim.listener(guard.PlainListener(s.grpc.ln))
	go func() {
		if err := s.grpc.srv.Serve(ln); err != nil {
			s.log.Error("app: gRPC server stopped", "err", err)
		}
	}()
	s.log.Info("app: serving gRPC", "addr", s.grpc.ln.Addr().String(), "target", s.grpc.target, "maxStreams", maxStreams)
}

// GRPCAddr is the address the gRPC binding listens on ("" when off or
// before Start).
func (s *Server) GRPCAddr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.grpc.ln == nil {
		return ""
	}
	return s.grpc.ln.Addr().String()
}

// stopGRPC lets running calls finish until ctx is done, then cuts them.
func (s *Server) stopGRPC(ctx context.Context) {
	s.mu.Lock()
	srv := s.grpc.srv
	s.mu.Unlock()
	if srv == nil {
		s.grpc.close()
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
