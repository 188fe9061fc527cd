package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/a2a/cardsig"
	"novaos.dev/novaos/internal/httpapi"
)

// ErrStarted is returned by Start on a server that was already started or
// shut down.
var ErrStarted = errors.New("app: server already started")

// Start listens on Options.Addr and serves in the background until
// Shutdown. ctx bounds only the start itself.
func (s *Server) Start(ctx context.Context) (err error) {
	// Settle what a dead process left running before serving, without
	// s.mu held (recover.go).
	sweeping, err := s.firstSweep(ctx)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	defer func() { sweeping(err == nil) }()
	if s.started || s.shutdown {
		return ErrStarted
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", s.opts.Addr)
	if err != nil {
		return fmt.Errorf("app: listen: %w", err)
	}
	if err := s.checkPlaintext(ln.Addr()); err != nil {
		ln.Close()
		return err
	}
	guard, err := s.guardOptions(ln.Addr())
	if err != nil {
		ln.Close()
		return err
	}
	s.started = true
	s.ln = ln
	s.baseURL = s.opts.PublicURL
	if s.baseURL == "" {
		s.baseURL = s.scheme() + strings.TrimPrefix(listenURL(s.opts.Addr, ln.Addr()), "http://")
	}
	// The gRPC listener comes before the services: the cards name it.
	if err := s.listenGRPC(ctx); err != nil {
		ln.Close()
		return err
	}
	services, err := s.services(ctx)
	if err != nil {
		ln.Close()
		s.grpc.close()
		return err
	}
	mux := http.NewServeMux()
	for _, svc := range services {
		for _, p := range svc.patterns {
			mux.Handle(p, svc.handler)
		}
	}
	// No WriteTimeout: SSE streams stay open as long as their task runs.
	s.http = guard.Server(mux)
	s.http.ErrorLog = slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)
	if s.gate != nil {
		// Agents long-polling on holds must not hold the shutdown up.
		s.http.RegisterOnShutdown(s.gate.Close)
	}
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
	s.serveGRPC(guard)
	s.log.Info("app: serving", "addr", ln.Addr().String(), "url", s.baseURL, "database", s.databaseKind(), "tls", s.tls != nil)
	l := guard.Limits()
	s.log.Info("app: limits", "maxConns", l.MaxConns, "connReserve", l.ConnReserve, "maxInflightBytes", l.MaxInflightBytes,
		"maxBodyBytes", s.opts.MaxBodyBytes, "bodyTimeout", l.BodyTimeout.String(), "bodyMinRate", l.BodyMinRate,
		"headerTimeout", l.HeaderTimeout.String(), "idleTimeout", l.IdleTimeout.String(), "maxHeaderBytes", l.MaxHeaderBytes,
		"hostCheck", guard.ChecksHost(), "corsOrigins", s.opts.CORSOrigins)
	return nil
}

// service is one HTTP surface of the server: what a new platform service
// adds to the list services returns, and all Start needs to mount it. The
// Guard's limits, Host and Origin rules apply to every one; a service's
// own callers and problems are its httpapi.API's business.
type service struct {
	name     string
	patterns []string // http.ServeMux patterns
	handler  http.Handler
}

// services lists what the server mounts: the hosted agents, the key sets
// of the token keys and of the card key, the memory service, the agent registry and its
// seed 000 shape, health and the index. It runs under s.mu with s.baseURL set.
func (s *Server) services(ctx context.Context) ([]service, error) {
	if err := s.openIssuer(); err != nil {
		return nil, fmt.Errorf("app: token keys: %w", err)
	}
	out, err := s.agentServices()
	if err != nil {
		return nil, err
	}
	out = append(out, s.jwksServices()...)
	if mem, ok := s.memoryService(); ok {
		out = append(out, mem)
	}
	gate, err := s.gateServices(ctx)
	if err != nil {
		return nil, err
	}
	out = append(out, gate...)
	reg, err := s.registryServices(ctx)
	if err != nil {
		return nil, err
	}
	out = append(out, reg...)
	return append(out,
		service{name: "health", patterns: []string{"GET " + healthPath}, handler: http.HandlerFunc(s.serveHealth)},
		service{name: "index", patterns: []string{"GET /{$}"}, handler: http.HandlerFunc(s.serveIndex)},
	), nil
}

// agentServices builds the A2A handler of every hosted agent, at
// /agents/{name}: the handler routes relative to its mount point, "" being
// the JSON-RPC endpoint and /.well-known/agent-card.json the card.
func (s *Server) agentServices() ([]service, error) {
	seal, err := s.pushSealer()
	if err != nil {
		return nil, err
	}
	if err := s.startPushDelivery(seal); err != nil {
		return nil, err
	}
	var out []service
	var turns *turnRecorder
	if store := s.memoryStore(); store != nil {
		now := s.opts.Memory.Service.Now
		if now == nil {
			now = time.Now
		}
		turns = &turnRecorder{store: store, issuer: s.issuer, log: s.log, now: now}
	}
	for i := range s.agents {
		a := &s.agents[i]
		a.card = cardAt(a.agent.Card(), s.agentInterfaces(a.name))
		// Push configs are taken whenever there is a store for them;
		// notifications are sent when there is also a deliverer.
		a.card.Capabilities.PushNotifications = a2a.Bool(s.push != nil && s.pusher != nil)
		if s.opts.CardKey != nil {
			// The handler precomputes the card's bytes: sign first.
			if a.card, err = cardsig.Sign(a.card, s.opts.CardKey, nil); err != nil {
				return nil, fmt.Errorf("app: sign %s card: %w", a.name, err)
			}
		}
		opts := &a2asrv.Options{
			TaskStore:             agentTasks{store: s.tasks, agent: a.name, wake: s.wakePush},
			Logger:                s.log.With("agent", a.name),
			PushURLPolicy:         s.pushURLPolicy(),
			MaxBodyBytes:          s.opts.MaxBodyBytes,
			MaxIDBytes:            s.opts.MaxIDBytes,
			MaxExtensions:         s.opts.MaxExtensions,
			MaxExtensionURIBytes:  s.opts.MaxExtensionURIBytes,
			ArtifactFlushInterval: s.opts.ArtifactFlushInterval,
			RefuseV03:             s.opts.RefuseV03,
		}
		if s.push != nil {
			opts.PushConfigStore = agentPushConfigs{store: s.push, agent: a.name, seal: seal, wake: s.wakePush}
		}
		if f := s.taskFeed(); f != nil {
			opts.TaskFeed = agentFeed{feed: f, agent: a.name}
		}
		if seeder, ok := a.agent.(interface {
			NewTaskID(*a2a.SendMessageRequest) string
		}); ok {
			opts.NewTaskID = seeder.NewTaskID // an SDK agent's tasks take the platform's run id
		}
		if turns != nil {
			opts.Interceptors = append(opts.Interceptors, turns)
		}
		h := a2asrv.NewHandler(a.card, a.agent, opts)
		s.handlers = append(s.handlers, h)
		s.grpc.handlers[a.name] = h
		out = append(out, service{name: "agent " + a.name, patterns: []string{agentPath(a.name), agentPath(a.name) + "/"},
			handler: http.StripPrefix(agentPath(a.name), h)})
	}
	return out, nil
}

// guardOptions builds the Guard in front of every handler for a server
// listening at addr (nil: only check the options).
func (s *Server) guardOptions(addr net.Addr) (*httpapi.Guard, error) {
	g, err := httpapi.NewGuard(&httpapi.Options{
		Limits:      s.opts.Limits,
		Addr:        addr,
		PublicURL:   s.opts.PublicURL,
		AllowHosts:  s.opts.AllowHosts,
		CORSOrigins: s.opts.CORSOrigins,
		Exempt:      func(r *http.Request) bool { return r.URL.Path == healthPath },
		// An agent's root answers JSON-RPC; a refusal there is a JSON-RPC
		// error, so an A2A client reads it as one. Its HTTP+JSON paths get
		// problem+json like every other resource.
		JSONRPC: func(r *http.Request) bool {
			name, ok := strings.CutPrefix(r.URL.Path, agentsPrefix)
			return r.Method == http.MethodPost && ok && !strings.Contains(strings.TrimSuffix(name, "/"), "/")
		},
	})
	if err != nil {
		return nil, fmt.Errorf("app: %w", err)
	}
	if l := g.Limits(); l.MaxInflightBytes > 0 && l.MaxInflightBytes/int64(l.HoldFactor) < s.opts.MaxBodyBytes {
		return nil, fmt.Errorf("app: the in-flight byte budget (%d) is below %d times the largest agent request body (%d), which it could never admit",
			l.MaxInflightBytes, l.HoldFactor, s.opts.MaxBodyBytes)
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

// listenURL is the base URL of a listener. An unspecified address
// (0.0.0.0, ::, or none) is not one a client can dial, so it becomes
// loopback, IPv4 unless the configured host was an IPv6 literal; remote
// clients then need Options.PublicURL.
func listenURL(configured string, addr net.Addr) string {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok {
		return "http://" + addr.String()
	}
	ip := tcp.IP
	if ip == nil || ip.IsUnspecified() {
		ip = net.IPv4(127, 0, 0, 1)
		if host, _, err := net.SplitHostPort(configured); err == nil && strings.Contains(host, ":") {
			ip = net.IPv6loopback
		}
	}
	return "http://" + net.JoinHostPort(ip.String(), strconv.Itoa(tcp.Port))
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
	if s.tls != nil || s.opts.InsecureListen {
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

const (
	agentsPrefix = "/agents/"
	healthPath   = "/healthz"
)

func agentPath(name string) string { return agentsPrefix + name }

// JWKSPath is where the server publishes the public keys of its token
// signing key ring (execution and push tokens), and nothing else: a
// verifier of that set accepts whatever its keys sign.
const JWKSPath = "/.well-known/jwks.json"

// CardJWKSPath is where a server with Options.CardKey publishes the
// public key its agent cards are signed with, apart from the token keys,
// so the card key never verifies a token and a token key never a card.
const CardJWKSPath = "/.well-known/agent-card-jwks.json"

// DefaultBindings is the card's order of bindings unless Options say
// otherwise: JSON-RPC, which every A2A SDK speaks, first.
var DefaultBindings = []string{a2a.BindingJSONRPC, a2a.BindingHTTPJSON}

// agentInterfaces are the interfaces this server serves agent name at, in
// the order of Options.Bindings: the HTTP bindings at the agent's URL, gRPC
// at the gRPC address with the agent's name as the tenant.
func (s *Server) agentInterfaces(name string) []a2a.AgentInterface {
	out := make([]a2a.AgentInterface, 0, len(s.opts.Bindings))
	for _, b := range s.opts.Bindings {
		in := a2a.AgentInterface{URL: s.baseURL + agentPath(name), ProtocolBinding: b, ProtocolVersion: a2a.ProtocolVersion}
		if b == a2a.BindingGRPC {
			in.URL, in.Tenant = s.grpc.target, name
		}
		out = append(out, in)
	}
	return out
}

// cardAt returns a copy of card whose interfaces are served first, in
// their order. Interfaces of other bindings the card may declare are kept
// after them as they are.
func cardAt(card *a2a.AgentCard, served []a2a.AgentInterface) *a2a.AgentCard {
	c := *card
	bound := func(i a2a.AgentInterface) bool {
		return slices.ContainsFunc(served, func(s a2a.AgentInterface) bool { return s.ProtocolBinding == i.ProtocolBinding })
	}
	c.SupportedInterfaces = append(slices.Clone(served), slices.DeleteFunc(slices.Clone(card.SupportedInterfaces), bound)...)
	return &c
}

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
type Endpoint struct {
	Name    string `json:"name"`
	URL     string `json:"url"`     // the A2A JSON-RPC endpoint
	CardURL string `json:"cardUrl"` // its agent card
}

// Endpoints lists the hosted agents' URLs (nil before Start).
func (s *Server) Endpoints() []Endpoint {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.baseURL == "" {
		return nil
	}
	out := make([]Endpoint, len(s.agents))
	for i, a := range s.agents {
		u := s.baseURL + agentPath(a.name)
		out[i] = Endpoint{Name: a.name, URL: u, CardURL: u + a2a.WellKnownCardPath}
	}
	return out
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
	srv, handlers := s.http, s.handlers
	s.mu.Unlock()

	s.stopSweeper()
	var errs []error
	if srv != nil {
		// The listener closes at once; in-flight requests, including
		// streams, end when their executions do, which the handlers' own
		// shutdown bounds, so both run together.
		var agents sync.WaitGroup
		var mu sync.Mutex
		add := func(err error) {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		}
		for _, h := range handlers {
			agents.Go(func() {
				if err := h.Shutdown(ctx); err != nil {
					add(fmt.Errorf("app: shutdown agents: %w", err))
				}
			})
		}
		agents.Go(func() { s.stopGRPC(ctx) })
		if err := srv.Shutdown(ctx); err != nil {
			add(fmt.Errorf("app: shutdown http: %w", err))
			// The handlers answer the calls they cut off with an error;
			// only once that is written may the connections be cut.
			agents.Wait()
			srv.Close()
		}
		agents.Wait()
		<-s.done
	} else {
		close(s.done)
	}
	// After the requests it serves, before the database it writes closes.
	s.stopWorkers()
	if s.db != nil {
		if err := s.db.Close(); err != nil {
			errs = append(errs, fmt.Errorf("app: close database: %w", err))
		}
	}
	s.log.Info("app: stopped")
	return errors.Join(errs...)
}

func (s *Server) databaseKind() string {
	switch {
	case s.db == nil:
		return "custom"
	case s.opts.DatabaseURL != "":
		return "postgres"
	}
	return "sqlite"
}
