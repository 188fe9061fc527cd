package app

import (
	"context"

	"novaos.dev/novaos/internal/auth"
	"novaos.dev/novaos/internal/gatesvc"
	"novaos.dev/novaos/internal/memorysvc"
	"novaos.dev/novaos/internal/registrysvc"
)

// Defaults and paths of the services, by the names the server's users know.
const (
	// TokenKeyFile is the default name of the token signing key ring
	// inside the data directory.
	TokenKeyFile = auth.DefaultKeyFile
	// JWKSPath is where the server publishes its token keys.
	JWKSPath = auth.JWKSPath
	// TriagePath is the gate's operator triage page.
	TriagePath = gatesvc.TriagePath
)

// The options each service is given: Options' group, with the server's
// logger where the group names none.
func (s *Server) tokenOptions() *auth.Options {
	o := s.opts.Token
	if o.Logger == nil {
		o.Logger = s.log
	}
	return &o
}

func (s *Server) memoryOptions() *memorysvc.Options {
	o := s.opts.Memory
	if o.Logger == nil {
		o.Logger = s.log.With("service", "memory")
	}
	return &o
}

func (s *Server) gateOptions() *gatesvc.Options {
	o := s.opts.Gate
	if o.Logger == nil {
		o.Logger = s.log.With("service", "gate")
	}
	return &o
}

func (s *Server) registryOptions() *registrysvc.Options {
	o := s.opts.Registry
	if o.Logger == nil {
		o.Logger = s.log
	}
	return &o
}

// Issuer is the server's token issuer (nil before Start): tests and the
// bench mint tokens with it.
func (s *Server) Issuer() *auth.Issuer {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.issuer
}

// Gate is the server's gate service (nil before Start or without a gate
// store): tests and the bench drive it directly.
func (s *Server) Gate() *gatesvc.Service {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gate
}

// startWorker runs a service's background loop until Shutdown.
func (s *Server) startWorker(run func(context.Context)) {
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		run(ctx)
	}()
	s.workers = append(s.workers, func() { stop(); <-done })
}

// stopWorkers stops the services' background loops, last started first.
func (s *Server) stopWorkers() {
	for i := len(s.workers) - 1; i >= 0; i-- {
		s.workers[i]()
	}
	s.workers = nil
}
