package app

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"

	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/gate"
	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/agenthost"
	"novaos.dev/novaos/internal/auth"
	deliverysvc "novaos.dev/novaos/internal/delivery"
	"novaos.dev/novaos/internal/execgw"
	"novaos.dev/novaos/internal/gatesvc"
	"novaos.dev/novaos/internal/httpapi"
	"novaos.dev/novaos/internal/llmgw"
	"novaos.dev/novaos/internal/memorysvc"
	"novaos.dev/novaos/internal/registrysvc"
	"novaos.dev/novaos/internal/schedsvc"
	"novaos.dev/novaos/internal/sealkey"
	"novaos.dev/novaos/internal/toolgw"
)

// service is the face every platform service shows the server. A service
// package builds one with a constructor taking the server's stores
// (*store.Stores), its dependencies on the server and on other services
// (small interfaces, in its Deps) and its own Options, and gives:
//
//   - Routes: its HTTP routes, mounted on the server's one mux behind the
//     Guard (limits, Host and Origin rules);
//   - Interceptors: what it adds to every call to every hosted agent, on
//     every binding (the memory service records conversation turns);
//   - Run: its background work, until the context ends (it returns at
//     once when there is none).
//
// and, when it needs them, Start (what must happen before the server
// serves, such as settling what a crash left behind) and Shutdown (drain
// in-flight work as the server stops).
type service interface {
	Routes() []httpapi.Route
	Interceptors() []a2asrv.Interceptor
	Run(ctx context.Context)
}

type (
	starter interface {
		Start(ctx context.Context) error
	}
	stopper interface {
		Shutdown(ctx context.Context) error
	}
)

// mounted are the services Start built, in list order, and the ones the
// server's accessors hand out.
type mounted struct {
	list   []service
	issuer *auth.Issuer
	gate   *gatesvc.Service // nil without a gate store
	host   *agenthost.Host
	pull   *deliverysvc.Service // nil without delivery stores
}

// mount builds the server's services, in the order they depend on each
// other: the token issuer first (the others verify its tokens), the
// hosted agents after every service that intercepts their calls, the
// registry after the agents it records. A new service is one line here.
// On error the list holds what was built, for Start to shut down.
func (s *Server) mount(ctx context.Context, base string, guard *httpapi.Guard) (*mounted, error) {
	st, dataDir := s.stores, s.opts.DataDir
	if s.custom {
		dataDir = ""
	}
	m := &mounted{}
	l := &m.list
	var err error
	// The gateway revokes a run's tokens when the run ends; it is built
	// after the issuer, which asks it.
	var gw atomic.Pointer[execgw.Service]
	tokenOpts := s.opts.token()
	own := tokenOpts.Revoked
	tokenOpts.Revoked = func(ctx context.Context, c *identity.Claims) error {
		if own != nil {
			if err := own(ctx, c); err != nil {
				return err
			}
		}
		if g := gw.Load(); g != nil {
			return g.Revoked(ctx, c)
		}
		return nil
	}
	if m.issuer, err = auth.Mount(auth.Deps{BaseURL: base, DataDir: dataDir}, tokenOpts); err != nil {
		return m, fmt.Errorf("app: token keys: %w", err)
	}
	add(l, m.issuer)
	mem := add(l, memorysvc.Mount(st, memorysvc.Deps{Tokens: m.issuer, Tracing: s.tracing(), Metrics: s.metrics()}, s.opts.memory()))
	// The tool gateway resumes runs waiting on the gate's decisions; it
	// is built after the gate, which tells it.
	var tg atomic.Pointer[toolgw.Service]
	m.gate = add(l, gatesvc.Mount(st, gatesvc.Deps{AdminToken: s.opts.AdminToken, Tokens: m.issuer,
		Secure: strings.HasPrefix(base, "https://"), Decided: func(gate.ActionRecord) {
			if t := tg.Load(); t != nil {
				t.Decided()
			}
		}, Tracing: s.tracing(), Metrics: s.metrics()}, s.opts.gate()))
	sealer, err := s.sealer(dataDir)
	if err != nil {
		return m, fmt.Errorf("app: sealing key: %w", err)
	}
	if m.host, err = agenthost.New(ctx, st, agenthost.Deps{BaseURL: base, DataDir: dataDir, Logger: s.log, Sealer: sealer,
		Guard: guard, TLS: s.tls, CheckListener: s.checkPlaintext, Tokens: m.issuer, Interceptors: interceptorsOf(*l),
		SweepEvery: s.opts.sweepEvery(), SweepTicker: sweepTicker, Tracing: s.tracing(), Metrics: s.metrics()}, &s.opts.Agents); err != nil {
		return m, fmt.Errorf("app: %w", err)
	}
	add(l, m.host)
	// Pull delivery takes the gateway's runs of pull instances.
	pull, err := s.mountDelivery(base, dataDir, m.issuer, sealer)
	if err != nil {
		return m, err
	}
	m.pull = add(l, pull)
	gwDeps := execgw.Deps{AdminToken: s.opts.AdminToken, Tokens: m.issuer, Hosted: m.host, BaseURL: base,
		Tracing: s.tracing(), Metrics: s.metrics()}
	if sealer != nil {
		gwDeps.Sealer = sealer
	}
	if pull != nil {
		gwDeps.Pull = pull
	}
	g := add(l, execgw.Mount(st, gwDeps, s.opts.gateway()))
	if g != nil {
		gw.Store(g)
	}
	toolDeps := toolgw.Deps{Tokens: m.issuer, BaseURL: base, AdminToken: s.opts.AdminToken, Tracing: s.tracing(), Metrics: s.metrics()}
	if mem != nil {
		toolDeps.Providers = append(toolDeps.Providers, memoryTools{mem})
	}
	builtins, err := s.builtinTools(st, g, sealer, m.issuer.Authenticator())
	if err != nil {
		return m, err
	}
	toolDeps.Providers = append(toolDeps.Providers, builtins...)
	if m.gate != nil {
		toolDeps.Gate = toolGate{m.gate}
	}
	if g != nil {
		toolDeps.Runs = toolRuns{g}
	}
	if t := add(l, toolgw.Mount(st, toolDeps, s.opts.tools())); t != nil {
		tg.Store(t)
	}
	llmDeps := llmgw.Deps{Tokens: m.issuer, AdminToken: s.opts.AdminToken, Tracing: s.tracing(), Metrics: s.metrics()}
	if sealer != nil {
		llmDeps.Sealer = sealer
	}
	if g != nil {
		llmDeps.Runs = g
	}
	add(l, llmgw.Mount(st, llmDeps, s.opts.llm()))
	sd := scheduleDeps(st, m.issuer, s.opts.AdminToken, g)
	sd.Tracing, sd.Metrics = s.tracing(), s.metrics()
	add(l, schedsvc.Mount(st, sd, s.opts.schedules()))
	add(l, registrysvc.Mount(st, registrysvc.Deps{BaseURL: base, AdminToken: s.opts.AdminToken, Hosted: m.host.Records()}, s.opts.registry()))
	*l = append(*l, s.own())
	return m, nil
}

// sealer is the server's one key for values sealed at rest (push
// credentials, instances' secrets, runs' custom headers): Options.SealKeyFile,
// else SealKeyFile in the data directory, taking over the push key of a
// release that kept one; nil without either.
func (s *Server) sealer(dataDir string) (*sealkey.Sealer, error) {
	path, adopt := s.opts.SealKeyFile, ""
	if dataDir != "" {
		adopt = filepath.Join(dataDir, agenthost.PushKeyFile)
		if path == "" {
			path = filepath.Join(dataDir, SealKeyFile)
		}
	}
	if path == "" {
		return nil, nil
	}
	return sealkey.Open(path, &sealkey.Options{Logger: s.log, Shared: s.stores.Shared, Name: "sealing key",
		Flag: "--seal-key-file", Adopt: adopt})
}

// add appends svc to l unless it is nil (a service whose store the
// server does not have), and returns it.
func add[S interface {
	service
	comparable
}](l *[]service, svc S) S {
	var none S
	if svc != none {
		*l = append(*l, svc)
	}
	return svc
}

// interceptorsOf are the interceptors of services, in their order.
func interceptorsOf(services []service) []a2asrv.Interceptor {
	var out []a2asrv.Interceptor
	for _, svc := range services {
		out = append(out, svc.Interceptors()...)
	}
	return out
}

// own is what the server itself serves: /healthz, the index at the root,
// the card key's key set, and /metrics and /debug/pprof/ unless they have
// a listener of their own.
func (s *Server) own() service {
	r := routes{
		{Pattern: "GET " + healthPath, Handler: healthCheck{stores: s.stores, kind: s.databaseKind(), log: s.log}},
		{Pattern: "GET /{$}", Handler: http.HandlerFunc(s.serveIndex)},
	}
	if s.opts.Agents.CardKey != nil {
		r = append(r, httpapi.Route{Pattern: "GET " + CardJWKSPath, Handler: auth.KeySetHandler(auth.DefaultJWKSMaxAge, s.opts.Agents.CardKey)})
	}
	return append(r, s.operatorRoutes()...)
}

// routes is a service with routes and nothing else.
type routes []httpapi.Route

func (r routes) Routes() []httpapi.Route          { return r }
func (routes) Interceptors() []a2asrv.Interceptor { return nil }
func (routes) Run(context.Context)                {}
