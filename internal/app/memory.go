package app

import (
	"context"
	"time"

	"novaos.dev/novaos/internal/auth"
	"novaos.dev/novaos/internal/memorysvc"
)

// TokenKeyFile is the default name of the token signing key ring inside
// the data directory.
const TokenKeyFile = auth.DefaultKeyFile

// JWKSPath is where the server publishes its token keys.
const JWKSPath = auth.JWKSPath

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

func (s *Server) tokenOptions() *auth.Options {
	o := s.opts.Token
	return &auth.Options{Issuer: o.Issuer, Audience: o.Audience, DefaultTTL: o.TTL, MaxTTL: o.MaxTTL,
		Leeway: o.Leeway, KeyLifetime: o.KeyLifetime, Logger: s.log}
}

// MemoryOptions configure the memory service at /api/v1/mcp.
type MemoryOptions struct {
	// Service tunes the service (embedder, extractor, TTLs, intervals);
	// its Logger is the server's.
	Service memorysvc.Options
	// MaxBodyBytes bounds one request (default memorysvc.DefaultMaxBodyBytes).
	MaxBodyBytes int64
	// IndexBytes bounds the database's in-process search index of memory
	// partitions (default sqlite.DefaultMemoryIndexBytes).
	IndexBytes int64
}

func (s *Server) memoryOptions() *memorysvc.Options {
	o := s.opts.Memory.Service
	o.Logger = s.log.With("service", "memory")
	o.MaxBodyBytes = s.opts.Memory.MaxBodyBytes
	return &o
}

// Issuer is the server's token issuer (nil before Start): tests and the
// bench mint tokens with it.
func (s *Server) Issuer() *auth.Issuer {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.issuer
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
