package app

import (
	"novaos.dev/novaos/internal/gatesvc"
)

// GateOptions configure the governance gate at /api/v1/gate.
type GateOptions struct {
	// Service tunes the gate (hold window, restart grace, judge); its
	// Logger and Now are the server's when unset.
	Service gatesvc.Options
	// MaxBodyBytes bounds one request (default gatesvc.DefaultMaxBodyBytes).
	MaxBodyBytes int64
}

// TriagePath is the gate's operator triage page.
const TriagePath = gatesvc.TriagePath

func (s *Server) gateOptions() *gatesvc.Options {
	o := s.opts.Gate.Service
	if o.Logger == nil {
		o.Logger = s.log.With("service", "gate")
	}
	o.MaxBodyBytes = s.opts.Gate.MaxBodyBytes
	return &o
}

// Gate is the server's gate service (nil before Start or without a gate
// store): tests and the bench drive it directly.
func (s *Server) Gate() *gatesvc.Service {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gate
}
