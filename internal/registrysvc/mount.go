package registrysvc

import (
	"context"
	"fmt"

	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/internal/httpapi"
	"novaos.dev/novaos/registry"
	"novaos.dev/novaos/secret"
	"novaos.dev/novaos/store"
)

// Deps are what the registry takes from the server around it.
type Deps struct {
	// BaseURL is the server's base URL: on loopback, the default policy
	// accepts loopback agents too.
	BaseURL string
	// AdminToken is the bearer token writes must present; without one,
	// writes are accepted from loopback peers only.
	AdminToken secret.Value
	// Hosted are the agents the server hosts, recorded at Start (replacing
	// the records a previous run left under the same names) and read-only
	// through the API.
	Hosted []*registry.Agent
}

// Mount builds the registry over st.Registry, or over records kept in
// memory when st has no registry store.
func Mount(st *store.Stores, deps Deps, o *Options) *Service {
	var opts Options
	if o != nil {
		opts = *o
	}
	opts.Policy = registry.PolicyAt(opts.Policy, opts.LoopbackIfLocal, deps.BaseURL)
	opts.AdminToken = deps.AdminToken
	for _, a := range deps.Hosted {
		opts.ReadOnly = append(opts.ReadOnly, a.Name)
	}
	var rs Store = NewMemoryStore()
	if st.Registry != nil {
		rs = st.Registry
	}
	s := New(rs, &opts)
	s.hosted = deps.Hosted
	return s
}

// Start records the hosted agents.
func (s *Service) Start(ctx context.Context) error {
	for _, a := range s.hosted {
		if _, err := s.Put(ctx, a); err != nil {
			return fmt.Errorf("registry: record hosted agent %s: %w", a.Name, err)
		}
	}
	p := s.opts.Policy
	attrs := []any{"writes", s.WriteMode().String(), "allowedHostSuffixes", p.AllowedHostSuffixes,
		"allowLoopback", p.AllowLoopback, "allowPrivate", p.AllowPrivate}
	if s.WriteMode() == WritesNeedToken {
		s.opts.Logger.Info("registry: writes need the admin token", attrs...)
	} else {
		s.opts.Logger.Info("registry: writes are accepted from loopback peers only (no admin token configured)", attrs...)
	}
	return nil
}

// Routes serve the registry API at registry.APIPath and its Agent-DNS
// shape at DNSPath.
func (s *Service) Routes() []httpapi.Route {
	api, dns := s.Handler(), s.DNSHandler()
	return []httpapi.Route{
		{Pattern: registry.APIPath, Handler: api},
		{Pattern: registry.APIPath + "/", Handler: api},
		{Pattern: DNSPath + "/", Handler: dns},
	}
}

// Interceptors are none.
func (s *Service) Interceptors() []a2asrv.Interceptor { return nil }

// Run has no background work: every replica reads the shared store.
func (s *Service) Run(context.Context) {}
