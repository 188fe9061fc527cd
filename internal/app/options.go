package app

import (
	"cmp"
	"context"
	"time"

	"novaos.dev/novaos/internal/auth"
	deliverysvc "novaos.dev/novaos/internal/delivery"
	"novaos.dev/novaos/internal/execgw"
	"novaos.dev/novaos/internal/gatesvc"
	"novaos.dev/novaos/internal/llmgw"
	"novaos.dev/novaos/internal/memorysvc"
	"novaos.dev/novaos/internal/registrysvc"
	"novaos.dev/novaos/internal/toolgw"
	"novaos.dev/novaos/store/lease"
)

// Defaults and paths of the services, by the names the server's users know.
const (
	// TokenKeyFile is the default name of the token signing key ring
	// inside the data directory.
	TokenKeyFile = auth.DefaultKeyFile
	// JWKSPath is where the server publishes its token keys.
	JWKSPath = auth.JWKSPath
	// SealKeyFile is the default name of the sealing key inside the data
	// directory.
	SealKeyFile = "seal.key"
	// TriagePath is the gate's operator triage page.
	TriagePath = gatesvc.TriagePath
)

// The options each service is given: its group of Options, with the
// server's logger where the group names none.

func (o *Options) token() *auth.Options {
	t := o.Token
	t.Logger = cmp.Or(t.Logger, o.Logger)
	return &t
}

func (o *Options) memory() *memorysvc.Options {
	m := o.Memory
	m.Logger = cmp.Or(m.Logger, o.Logger.With("service", "memory"))
	return &m
}

func (o *Options) gate() *gatesvc.Options {
	g := o.Gate
	g.Logger = cmp.Or(g.Logger, o.Logger.With("service", "gate"))
	return &g
}

func (o *Options) gateway() *execgw.Options {
	g := o.Gateway
	g.Logger = cmp.Or(g.Logger, o.Logger.With("service", "gateway"))
	return &g
}

func (o *Options) tools() *toolgw.Options {
	t := o.Tools
	t.Logger = cmp.Or(t.Logger, o.Logger.With("service", "tools"))
	if t.GatePage == "" {
		t.GatePage = TriagePath
	}
	return &t
}

func (o *Options) llm() *llmgw.Options {
	m := o.LLM
	m.Logger = cmp.Or(m.Logger, o.Logger.With("service", "llm"))
	return &m
}

func (o *Options) registry() *registrysvc.Options {
	r := o.Registry
	r.Logger = cmp.Or(r.Logger, o.Logger)
	return &r
}

// lease are the lease times the database is opened with.
func (o *Options) lease() *lease.Options {
	return &lease.Options{Heartbeat: o.Database.LeaseHeartbeat, Expiry: o.Database.LeaseExpiry}
}

// sweepEvery is the lease Expiry: a process that dies leaves orphans only
// once its lease lapses, so sweeping more often buys nothing.
func (o *Options) sweepEvery() time.Duration {
	lo, err := o.lease().Resolve()
	if err != nil { // New checked the options
		return lease.DefaultExpiry
	}
	return lo.Expiry
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

// Delivery is the server's pull-delivery service (nil before Start or
// without delivery stores): the bench offers runs to pull agents with it.
func (s *Server) Delivery() *deliverysvc.Service {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pull
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
