package app

import (
	"context"
	"net/http"
	"path/filepath"
	"time"

	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/auth"
	"novaos.dev/novaos/internal/memorysvc"
	"novaos.dev/novaos/memory"
	"novaos.dev/novaos/store/postgres"
	"novaos.dev/novaos/store/sqlite"
)

// TokenKeyFile is the default name of the token signing key ring inside
// the data directory.
const TokenKeyFile = "token.key"

// TokenOptions configure the execution tokens the server signs and
// accepts (package internal/auth); zero fields mean its defaults.
type TokenOptions struct {
	// Issuer is the tokens' iss; default the server's base URL.
	Issuer   string
	Audience string
	// TTL is the lifetime of a token minted without one; MaxTTL the
	// longest signed (and how long a retired key stays published).
	TTL, MaxTTL time.Duration
	Leeway      time.Duration
	// KeyFile holds the signing key ring; default DataDir/token.key.
	KeyFile string
	// KeyLifetime rotates the signing key when it is this old; 0 rotates
	// only on `novaos token rotate`.
	KeyLifetime time.Duration
}

// MemoryOptions configure the memory service at /api/v1/mcp.
type MemoryOptions struct {
	// Store replaces the database's memory store (tests); with
	// Options.TaskStore set and no Store, the service is not served.
	Store memory.Store
	// Service tunes the service (embedder, extractor, TTLs, intervals);
	// its Logger and Now are the server's.
	Service memorysvc.Options
	// MaxBodyBytes bounds one request (default memorysvc.DefaultMaxBodyBytes).
	MaxBodyBytes int64
	// IndexBytes bounds the database's in-process search index of memory
	// partitions (default sqlite.DefaultMemoryIndexBytes).
	IndexBytes int64
}

// openIssuer opens the token key ring. It runs at Start, when the base
// URL, the default issuer, is known.
func (s *Server) openIssuer() error {
	o := s.opts.Token
	path := o.KeyFile
	if path == "" {
		path = filepath.Join(s.opts.DataDir, TokenKeyFile)
	}
	if s.opts.TaskStore != nil && o.KeyFile == "" {
		path = "" // no data directory in use: keys live as long as the process
	}
	iss := o.Issuer
	if iss == "" {
		iss = s.baseURL
	}
	var err error
	s.issuer, err = auth.Open(path, auth.Options{Issuer: iss, Audience: o.Audience, DefaultTTL: o.TTL, MaxTTL: o.MaxTTL,
		Leeway: o.Leeway, KeyLifetime: o.KeyLifetime, Logger: s.log})
	if err != nil {
		return err
	}
	if s.opts.TaskStore == nil {
		// novaos token mint --data reads it: its tokens then carry the
		// issuer this server checks, whatever address it listens on. A
		// server that cannot write it still serves; minting then needs
		// --issuer.
		if err := auth.WriteRecord(s.opts.DataDir, s.issuer.Record()); err != nil {
			s.log.Warn("app: cannot record the token issuer in the data directory; token mint will need --issuer", "err", err)
		}
	}
	return nil
}

// Issuer is the server's token issuer (nil before Start): tests and the
// bench mint tokens with it.
func (s *Server) Issuer() *auth.Issuer {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.issuer
}

// jwksServices publish the token keys at JWKSPath and the card key, when
// there is one, at CardJWKSPath: two key sets, so that holding one key
// never makes credentials the other's verifiers accept.
func (s *Server) jwksServices() []service {
	out := []service{{name: "jwks", patterns: []string{"GET " + JWKSPath}, handler: s.issuer.JWKSHandler()}}
	if s.opts.CardKey != nil {
		out = append(out, service{name: "card-jwks", patterns: []string{"GET " + CardJWKSPath},
			handler: auth.KeySetHandler(auth.DefaultJWKSMaxAge, s.opts.CardKey)})
	}
	return out
}

// memoryStore is the memory store of the server's database, nil when
// there is none.
func (s *Server) memoryStore() memory.Store {
	if s.opts.Memory.Store != nil {
		return s.opts.Memory.Store
	}
	switch db := s.db.(type) {
	case *sqlite.DB:
		return db.MemoryStore()
	case *postgres.DB:
		return db.MemoryStore()
	}
	return nil
}

// memoryService mounts the memory service behind token verification and
// starts its workers, which Shutdown stops.
func (s *Server) memoryService() (service, bool) {
	store := s.memoryStore()
	if store == nil {
		return service{}, false
	}
	o := s.opts.Memory.Service
	o.Logger = s.log.With("service", "memory")
	s.memory = memorysvc.New(store, &o)
	s.startWorker(s.memory.Run)
	h := s.memory.Handler(callerOf, &memorysvc.HandlerOptions{MaxBodyBytes: s.opts.Memory.MaxBodyBytes})
	return service{name: "memory", patterns: []string{memorysvc.Path}, handler: s.issuer.Middleware(h)}, true
}

// callerOf is the memory Caller of a request the token middleware let
// through.
func callerOf(r *http.Request) (*memorysvc.Caller, bool) {
	c, ok := identity.FromContext(r.Context())
	if !ok {
		return nil, false
	}
	agent := c.AgentID
	if agent == "" {
		agent = c.Subject
	}
	return &memorysvc.Caller{Tenant: c.TenantID, Agent: agent, User: c.UserID, Run: c.RunID,
		Conversation: c.ConversationID, Grants: c.HasScope}, true
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
