package app

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"slices"

	"novaos.dev/novaos/internal/registrysvc"
	"novaos.dev/novaos/registry"
	"novaos.dev/novaos/store/postgres"
	"novaos.dev/novaos/store/sqlite"
)

// registryStore is the database's registry store, or one in memory when
// the server runs without a database (Options.TaskStore).
func (s *Server) registryStore() registry.Store {
	switch db := s.db.(type) {
	case *sqlite.DB:
		return db.RegistryStore()
	case *postgres.DB:
		return db.RegistryStore()
	}
	return registrysvc.NewMemoryStore()
}

// registryPolicy is Options.RegistryPolicy, or by default: any public
// host, and loopback hosts too when the server itself is reached on
// loopback (a developer's machine), which Options.RegistryLoopbackIfLocal
// adds to a RegistryPolicy as well.
func (s *Server) registryPolicy() *registry.Policy {
	p := &registry.Policy{}
	if s.opts.RegistryPolicy != nil {
		if !s.opts.RegistryLoopbackIfLocal {
			return s.opts.RegistryPolicy
		}
		*p = *s.opts.RegistryPolicy
		p.AllowedHostSuffixes = slices.Clone(p.AllowedHostSuffixes)
	}
	if u, err := url.Parse(s.baseURL); err == nil {
		host := u.Hostname()
		ip := net.ParseIP(host)
		p.AllowLoopback = p.AllowLoopback || host == "localhost" || (ip != nil && ip.IsLoopback())
	}
	return p
}

// registryServices records every hosted agent in the agent registry at its
// URL under the server's base URL (replacing the record a previous run
// left under the same name), and returns the registry API and its seed 000
// Agent-DNS shape.
func (s *Server) registryServices(ctx context.Context) ([]service, error) {
	hosted := make([]string, len(s.agents))
	for i, a := range s.agents {
		hosted[i] = a.name
	}
	policy := s.registryPolicy()
	svc := registrysvc.New(s.registryStore(), &registrysvc.Options{Policy: policy, Logger: s.log, ReadOnly: hosted,
		AdminToken: s.opts.AdminToken})
	for _, a := range s.agents {
		if _, err := svc.Put(ctx, hostedRecord(a, s.baseURL)); err != nil {
			return nil, fmt.Errorf("app: register agent %s: %w", a.name, err)
		}
	}
	attrs := []any{"writes", svc.WriteMode().String(), "allowedHostSuffixes", policy.AllowedHostSuffixes,
		"allowLoopback", policy.AllowLoopback, "allowPrivate", policy.AllowPrivate}
	if svc.WriteMode() == registrysvc.WritesNeedToken {
		s.log.Info("app: registry writes need the admin token", attrs...)
	} else {
		s.log.Info("app: registry writes are accepted from loopback peers only (no admin token configured)", attrs...)
	}
	return []service{
		{name: "registry", patterns: []string{registry.APIPath, registry.APIPath + "/"}, handler: svc.Handler()},
		{name: "agent-dns", patterns: []string{registrysvc.DNSPath + "/"}, handler: svc.DNSHandler()}, // seed 000's AgentDNSClient shape
	}, nil
}

// hostedRecord describes a hosted agent from its card: its skills' ids
// and names are its capabilities, their tags its tags.
func hostedRecord(a hostedAgent, baseURL string) *registry.Agent {
	card := a.agent.Card()
	u := baseURL + agentPath(a.name)
	rec := &registry.Agent{
		Name:        a.name,
		URL:         u,
		Description: card.Description,
		Status:      registry.StatusActive,
		Metadata: map[string]any{
			"hosted":  true,
			"version": card.Version,
			"cardUrl": u + "/.well-known/agent-card.json",
		},
	}
	for _, sk := range card.Skills {
		rec.Capabilities = append(rec.Capabilities, sk.ID)
		if sk.Name != "" && registry.NormalizeCapability(sk.Name) != registry.NormalizeCapability(sk.ID) {
			rec.Capabilities = append(rec.Capabilities, sk.Name)
		}
		for _, t := range sk.Tags {
			if !slices.Contains(rec.Tags, t) {
				rec.Tags = append(rec.Tags, t)
			}
		}
	}
	return rec
}
