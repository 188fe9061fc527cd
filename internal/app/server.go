package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"novaos.dev/novaos/internal/agenthost"
	"novaos.dev/novaos/internal/httpapi"
)

// ErrStarted is returned by Start on a server that was already started or
// shut down.
var ErrStarted = errors.New("app: server already started")

// Start listens on Options.Addr and serves in the background until
// Shutdown. ctx bounds only the start itself.
//
// The services are built once the listener's address, which their URLs
// name, is known, and each does what it must before the server serves
// (the hosted agents settle what a dead process left running, the gate
// the holds a restart left behind). That part runs without the server's
// lock, so Addr, URL and Shutdown answer at once meanwhile, and Shutdown
// cuts it short; Start then returns ErrStarted.
func (s *Server) Start(ctx context.Context) error {
	s.mu.Lock()
	if s.started || s.shutdown {
		s.mu.Unlock()
		return ErrStarted
	}
	s.started = true
	ctx, s.cancel = context.WithCancel(ctx)
	s.mu.Unlock()

	ln, guard, base, m, err := s.prepare(ctx)
	var services []service
	if m != nil {
		services = m.list
	}
	var handler http.Handler
	if err == nil {
		handler, err = s.handler(services, guard)
	}
	var metricsLn net.Listener
	var metricsSv *http.Server
	if err == nil {
		metricsLn, metricsSv, err = s.listenMetrics(ctx)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	close(s.starting)
	if s.shutdown {
		err = ErrStarted
	}
	if err != nil {
		for _, svc := range services {
			if st, ok := svc.(stopper); ok {
				st.Shutdown(context.Background())
			}
		}
		if ln != nil {
			ln.Close()
		}
		if metricsLn != nil {
			metricsLn.Close()
		}
		return err
	}
	s.ln, s.baseURL, s.running = ln, base, services
	s.issuer, s.gate, s.host, s.pull = m.issuer, m.gate, m.host, m.pull
	s.metricsLn, s.metricsSv = metricsLn, metricsSv
	// No WriteTimeout: SSE streams stay open as long as their task runs.
	s.http = guard.Server(handler)
	s.http.ErrorLog = slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)
	served := guard.Listener(ln)
	if s.tls != nil {
		s.http.TLSConfig = s.tls.Config()
		// HTTP/1.1 only, as over plaintext: the connection cap, the reserve
		// and the body deadlines are per connection, which HTTP/2 would
		// multiplex many requests over.
		s.http.Protocols = new(http.Protocols)
		s.http.Protocols.SetHTTP1(true)
		s.startWorker(s.tls.Run)
	}
	for _, svc := range services {
		s.startWorker(svc.Run)
	}
	s.startWorker(s.tel.db.Run)
	s.serveMetrics()
	go func() {
		var err error
		if s.tls != nil {
			err = s.http.ServeTLS(served, "", "") // the certificate is TLSConfig's
		} else {
			err = s.http.Serve(served)
		}
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		s.mu.Lock()
		s.err = err
		s.mu.Unlock()
		if err != nil {
			s.log.Error("app: server stopped", "err", err)
		}
		close(s.done)
	}()
	s.log.Info("app: serving", "addr", ln.Addr().String(), "url", s.baseURL, "database", s.databaseKind(), "tls", s.tls != nil)
	s.logTelemetry()
	l := guard.Limits()
	s.log.Info("app: limits", "maxConns", l.MaxConns, "connReserve", l.ConnReserve, "maxInflightBytes", l.MaxInflightBytes,
		"maxBodyBytes", s.opts.Agents.MaxBodyBytes, "bodyTimeout", l.BodyTimeout.String(), "bodyMinRate", l.BodyMinRate,
		"headerTimeout", l.HeaderTimeout.String(), "idleTimeout", l.IdleTimeout.String(), "maxHeaderBytes", l.MaxHeaderBytes,
		"hostCheck", guard.ChecksHost(), "corsOrigins", s.opts.HTTP.CORSOrigins)
	return nil
}

// prepare listens, builds the services and lets each do what it must
// before the server serves. On error it returns what it built, for Start
// to release. It runs without s.mu, so it keeps what it builds to itself.
func (s *Server) prepare(ctx context.Context) (net.Listener, *httpapi.Guard, string, *mounted, error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", s.opts.Addr)
	if err != nil {
		return nil, nil, "", nil, fmt.Errorf("app: listen: %w", err)
	}
	if err := s.checkPlaintext(ln.Addr()); err != nil {
		return ln, nil, "", nil, err
	}
	guard, err := s.guardOptions(ln.Addr())
	if err != nil {
		return ln, nil, "", nil, err
	}
	base := s.opts.PublicURL
	if base == "" {
		base = s.scheme() + strings.TrimPrefix(httpapi.ListenURL(s.opts.Addr, ln.Addr()), "http://")
	}
	m, err := s.mount(ctx, base, guard)
	if err != nil {
		return ln, nil, "", m, err
	}
	for _, svc := range m.list {
		if st, ok := svc.(starter); ok {
			if err := st.Start(ctx); err != nil {
				return ln, nil, "", m, err
			}
		}
	}
	return ln, guard, base, m, ctx.Err()
}

// handler is the main listener's handler: every service's routes on one
// mux, behind the Guard's request rules (guard.Server adds them) and,
// around all, the server span, metrics and access log of each request.
func (s *Server) handler(services []service, guard *httpapi.Guard) (http.Handler, error) {
	mux := http.NewServeMux()
	byPattern := map[string]string{}
	for _, svc := range services {
		name := serviceName(svc)
		for _, r := range svc.Routes() {
			mux.Handle(r.Pattern, r.Handler)
			byPattern[r.Pattern] = name
		}
	}
	return s.observed(mux, guard, byPattern)
}

// guardOptions builds the Guard in front of every handler for a server
// listening at addr (nil: only check the options).
func (s *Server) guardOptions(addr net.Addr) (*httpapi.Guard, error) {
	g, err := httpapi.NewGuard(&httpapi.Options{
		Limits:      s.opts.HTTP.Limits,
		Addr:        addr,
		PublicURL:   s.opts.PublicURL,
		AllowHosts:  s.opts.HTTP.AllowHosts,
		CORSOrigins: s.opts.HTTP.CORSOrigins,
		Exempt:      func(r *http.Request) bool { return r.URL.Path == healthPath },
		// An agent's root answers JSON-RPC; a refusal there is a JSON-RPC
		// error, so an A2A client reads it as one. Its HTTP+JSON paths get
		// problem+json like every other resource.
		JSONRPC: agenthost.IsJSONRPC,
	})
	if err != nil {
		return nil, fmt.Errorf("app: %w", err)
	}
	if l := g.Limits(); l.MaxInflightBytes > 0 && l.MaxInflightBytes/int64(l.HoldFactor) < s.opts.Agents.MaxBodyBytes {
		return nil, fmt.Errorf("app: the in-flight byte budget (%d) is below %d times the largest agent request body (%d), which it could never admit",
			l.MaxInflightBytes, l.HoldFactor, s.opts.Agents.MaxBodyBytes)
	}
	return g, nil
}

// holdFactor is the hold factor l puts in force.
func holdFactor(l httpapi.Limits) int {
	if l.HoldFactor > 0 {
		return l.HoldFactor
	}
	return httpapi.DefaultHoldFactor
}

// ErrPlaintextListen is Start's error for a listen address that is not
// loopback when the server has no TLS certificate and
// Options.InsecureListen is not set: what it serves (tokens, memories,
// held actions) would cross the network in clear.
var ErrPlaintextListen = errors.New("refusing to serve without TLS on an address that is not loopback")

// checkPlaintext refuses a listener on a non-loopback address (the
// unspecified one included) unless the server speaks TLS or was told
// InsecureListen.
func (s *Server) checkPlaintext(addr net.Addr) error {
	if s.tls != nil || s.opts.HTTP.InsecureListen {
		return nil
	}
	if tcp, ok := addr.(*net.TCPAddr); ok && tcp.IP.IsLoopback() {
		return nil
	}
	return fmt.Errorf("app: listen %s: %w", addr, ErrPlaintextListen)
}

// plaintextAddr refuses a listen address whose host is absent or an IP
// address that is not loopback; a host name passes (Start checks the
// address it binds).
func plaintextAddr(addr string) error {
	if addr == "" {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil // Listen reports it
	}
	ip := net.ParseIP(host)
	if host != "" && (ip == nil || ip.IsLoopback()) {
		return nil
	}
	return fmt.Errorf("app: listen %s: %w", addr, ErrPlaintextListen)
}

// scheme is the scheme of the server's own URLs.
func (s *Server) scheme() string {
	if s.tls != nil {
		return "https://"
	}
	return "http://"
}

// ReloadTLS reads the TLS certificate and key files again now (what
// SIGHUP does to novaos serve). On error the pair in use stays.
func (s *Server) ReloadTLS() error {
	if s.tls == nil {
		return errors.New("app: reload TLS: the server does not serve TLS")
	}
	if err := s.tls.Reload(); err != nil {
		return fmt.Errorf("app: reload TLS: %w", err)
	}
	return nil
}

// answerGrace is how long Shutdown past its deadline waits for the
// answers the services gave the calls they cut off to be written.
const answerGrace = 2 * time.Second

// healthPath is the server's health check, served past the connection
// cap.
const healthPath = "/healthz"

// CardJWKSPath is where a server with Options.CardKey publishes the
// public key its agent cards are signed with, apart from the token keys,
// so the card key never verifies a token and a token key never a card.
const CardJWKSPath = "/.well-known/agent-card-jwks.json"

// DefaultBindings is the cards' order of bindings unless Options say
// otherwise.
var DefaultBindings = agenthost.DefaultBindings

// Addr is the address the server listens on ("" before Start).
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return ""
	}
	return s.ln.Addr().String()
}

// URL is the base URL the server is reached at: Options.PublicURL, or the
// listen address ("" before Start).
func (s *Server) URL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.baseURL
}

// Endpoint describes one hosted agent.
type Endpoint = agenthost.Endpoint

// Endpoints lists the hosted agents' URLs (nil before Start).
func (s *Server) Endpoints() []Endpoint {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.baseURL == "" {
		return nil
	}
	return s.host.Endpoints()
}

// GRPCAddr is the address the gRPC binding listens on ("" when off or
// before Start).
func (s *Server) GRPCAddr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.baseURL == "" {
		return ""
	}
	return s.host.GRPCAddr()
}

// Done is closed when the server has stopped serving: after Shutdown, or
// when the listener failed (Err says why).
func (s *Server) Done() <-chan struct{} { return s.done }

// Err is why the server stopped serving on its own; nil while it serves
// and after a Shutdown.
func (s *Server) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Shutdown stops accepting connections, lets running requests and agent
// executions finish until ctx is done (then cuts them off), and closes the
// database. It is safe to call more than once and on a server never
// started.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	if s.shutdown {
		s.mu.Unlock()
		return nil
	}
	s.shutdown = true
	started, cancel := s.started, s.cancel
	s.mu.Unlock()
	if started {
		// A Start still preparing stops, and releases what it built.
		cancel()
		<-s.starting
	}
	s.mu.Lock()
	srv, services, metricsSv := s.http, s.running, s.metricsSv
	s.mu.Unlock()
	if metricsSv != nil {
		// A profile being taken is cut off: nothing waits on it.
		metricsSv.Close()
	}

	var errs []error
	if srv != nil {
		// The listener closes at once; in-flight requests, including
		// streams, end when the services' executions do, which their own
		// shutdown bounds, so both run together.
		var wg sync.WaitGroup
		var mu sync.Mutex
		add := func(err error) {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		}
		for _, svc := range services {
			if st, ok := svc.(stopper); ok {
				wg.Go(func() {
					if err := st.Shutdown(ctx); err != nil {
						add(fmt.Errorf("app: %w", err))
					}
				})
			}
		}
		if err := srv.Shutdown(ctx); err != nil {
			add(fmt.Errorf("app: shutdown http: %w", err))
			// The services answer the calls they cut off with an error;
			// only once that is written may the connections be cut, so
			// the connections get a moment more to fall idle.
			wg.Wait()
			drain, cancel := context.WithTimeout(context.Background(), answerGrace)
			srv.Shutdown(drain)
			cancel()
			srv.Close()
		}
		wg.Wait()
		<-s.done
	} else {
		close(s.done)
	}
	// After the requests they serve, before the database they write closes.
	s.stopWorkers()
	if err := s.shutdownTelemetry(ctx); err != nil {
		errs = append(errs, fmt.Errorf("app: %w", err))
	}
	if s.stores != nil && !s.custom && s.stores.Close != nil {
		if err := s.stores.Close(); err != nil {
			errs = append(errs, fmt.Errorf("app: close database: %w", err))
		}
	}
	s.log.Info("app: stopped")
	return errors.Join(errs...)
}

func (s *Server) databaseKind() string {
	if s.custom {
		return "custom"
	}
	return s.stores.Kind
}
