package upstream

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"novaos.dev/novaos/internal/defaults"
	"novaos.dev/novaos/internal/httpapi"
	"novaos.dev/novaos/internal/toolgw"
	"novaos.dev/novaos/netguard"
	"novaos.dev/novaos/resilience"
	"novaos.dev/novaos/secret"
	"novaos.dev/novaos/store"
	"novaos.dev/novaos/tools"
)

// Defaults of Options.
const (
	DefaultIdleTimeout          = 5 * time.Minute
	DefaultMaxStdioProcesses    = 16
	DefaultMaxSessionsPerServer = 4
	DefaultListTTL              = 30 * time.Second
	DefaultLookupReuse          = time.Second
	DefaultMaxServersPerTenant  = 64
	DefaultMaxToolsPerServer    = 512
	DefaultMaxSchemaBytes       = 64 << 10
	DefaultMaxResponseBytes     = 16 << 20
	DefaultMaxCredentialBytes   = 8 << 10
	DefaultMaxBodyBytes         = 256 << 10
	DefaultStdioTerminate       = 2 * time.Second
)

// Options configure a Provider; nil or zero fields mean the defaults.
type Options struct {
	Logger *slog.Logger
	// Now is the clock of the tool-list cache, idle sessions and the
	// circuit breakers.
	Now func() time.Time
	// AllowedCommands are the commands stdio servers may run: absolute
	// paths, or names New looks up in PATH once. A registration naming
	// any other command is refused; none allowed turns stdio off. A
	// command is allowed with whatever arguments and environment a
	// tenant's admin registers, so allow only servers, never shells or
	// interpreters that run what they are given.
	AllowedCommands []string
	// StdioEnv is the environment ("NAME=value") every stdio server
	// starts with, before its registration's variables; the server's own
	// environment is never passed on.
	StdioEnv []string
	// StdioTerminate is how long a stdio server has to exit after its
	// input is closed before it is signalled (default 2 s).
	StdioTerminate time.Duration
	// AllowPrivate lets http servers be on loopback and private
	// addresses; by default only public addresses are dialled.
	AllowPrivate bool
	// IdleTimeout closes a session unused this long (default 5 min).
	IdleTimeout time.Duration
	// MaxStdioProcesses bounds the stdio servers running at once, across
	// tenants (default 16); an idle one is closed to make room.
	MaxStdioProcesses int
	// MaxSessionsPerServer bounds the sessions open to one http server
	// (default 4); a stdio server has one process.
	MaxSessionsPerServer int
	// ListTTL is how long a server's tool list is reused (default 30 s).
	ListTTL time.Duration
	// LookupReuse is how long the registration read when the gateway
	// looked a tool up serves that call (default 1 s): the call is made
	// without reading it again, unless the gate, say, took longer.
	LookupReuse time.Duration
	// BreakerThreshold consecutive failures open a server's circuit for
	// BreakerReset (resilience's defaults: 5 and 30 s).
	BreakerThreshold int
	BreakerReset     time.Duration
	// MaxServersPerTenant bounds a tenant's registrations (default 64).
	MaxServersPerTenant int
	// MaxToolsPerServer bounds the tools taken from one server (default
	// 512); MaxSchemaBytes one tool's input or output schema (64 KiB):
	// a tool past it is left out.
	MaxToolsPerServer int
	MaxSchemaBytes    int
	// MaxResponseBytes bounds one HTTP response of an http server
	// (default 16 MiB).
	MaxResponseBytes int64
	// MaxCredentialBytes bounds one header or environment value (8 KiB).
	MaxCredentialBytes int
	// MaxBodyBytes bounds a registration's request body (256 KiB).
	MaxBodyBytes int64
}

func (o *Options) withDefaults() Options {
	v := defaults.Copy(o)
	defaults.Logger(&v.Logger)
	defaults.Clock(&v.Now)
	defaults.Positive(&v.StdioTerminate, DefaultStdioTerminate)
	defaults.Positive(&v.IdleTimeout, DefaultIdleTimeout)
	defaults.Positive(&v.MaxStdioProcesses, DefaultMaxStdioProcesses)
	defaults.Positive(&v.MaxSessionsPerServer, DefaultMaxSessionsPerServer)
	defaults.Positive(&v.ListTTL, DefaultListTTL)
	defaults.Positive(&v.LookupReuse, DefaultLookupReuse)
	defaults.Positive(&v.BreakerThreshold, resilience.DefaultThreshold)
	defaults.Positive(&v.BreakerReset, resilience.DefaultReset)
	defaults.Positive(&v.MaxServersPerTenant, DefaultMaxServersPerTenant)
	defaults.Positive(&v.MaxToolsPerServer, DefaultMaxToolsPerServer)
	defaults.Positive(&v.MaxSchemaBytes, DefaultMaxSchemaBytes)
	defaults.Positive(&v.MaxResponseBytes, DefaultMaxResponseBytes)
	defaults.Positive(&v.MaxCredentialBytes, DefaultMaxCredentialBytes)
	defaults.Positive(&v.MaxBodyBytes, DefaultMaxBodyBytes)
	return v
}

// Sealer seals values at rest (internal/sealkey's Sealer): purpose names
// what is sealed, binding where it is kept, and a value opens only for
// both.
type Sealer interface {
	Seal(plain []byte, purpose string, binding ...string) (string, error)
	Unseal(sealed string, purpose string, binding ...string) ([]byte, error)
}

// Deps are what the provider takes from the server around it.
type Deps struct {
	// Sealer seals registrations' header and environment values; without
	// one, registrations carrying values are refused.
	Sealer Sealer
	// Auth establishes the callers of the admin API (the admin rule and
	// the platform's tokens); without one the API refuses every request.
	Auth httpapi.Authenticator
}

// Provider serves the tools of the upstream MCP servers tenants register
// (a toolgw.Provider), and the admin API that registers them. Safe for
// concurrent use; Close ends its sessions and processes.
type Provider struct {
	store tools.ServerStore
	deps  Deps
	o     Options
	log   *slog.Logger
	api   *httpapi.API
	guard *netguard.Policy
	// commands maps each allowed command, as the operator named it and
	// as resolved, to its absolute path.
	commands map[string]string
	// base is the guarded transport every http session's requests take.
	base *http.Transport

	mu     sync.Mutex
	ups    map[key]*upstream
	closed bool
	// slots holds a token for each stdio process running.
	slots chan struct{}
	// watchers are the goroutines that wait for sessions to end.
	watchers sync.WaitGroup
}

var _ toolgw.Provider = (*Provider)(nil)

type key struct{ tenant, name string }

// Mount builds the provider over st.ToolServers; nil when st keeps none.
func Mount(st *store.Stores, deps Deps, o *Options) (*Provider, error) {
	if st.ToolServers == nil {
		return nil, nil
	}
	return New(st.ToolServers, deps, o)
}

// New returns a provider over the registrations in s. It fails when an
// allowed command cannot be found.
func New(s tools.ServerStore, deps Deps, o *Options) (*Provider, error) {
	opts := o.withDefaults()
	p := &Provider{store: s, deps: deps, o: opts, log: opts.Logger, ups: map[key]*upstream{},
		slots: make(chan struct{}, opts.MaxStdioProcesses), commands: map[string]string{}}
	p.guard = &netguard.Policy{AllowLoopback: opts.AllowPrivate, AllowPrivate: opts.AllowPrivate}
	for _, c := range opts.AllowedCommands {
		path, err := exec.LookPath(c)
		if err != nil {
			return nil, fmt.Errorf("upstream: allowed command %q: %w", c, err)
		}
		if path, err = filepath.Abs(path); err != nil {
			return nil, fmt.Errorf("upstream: allowed command %q: %w", c, err)
		}
		p.commands[c], p.commands[path] = path, path
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	// No proxy: the dial-time guard must see where a connection goes.
	tr.Proxy = nil
	tr.DialContext = p.guard.Dialer(&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	tr.MaxIdleConnsPerHost = 16
	p.base = tr
	p.api = &httpapi.API{Name: "tools", Logger: p.log, MaxBodyBytes: opts.MaxBodyBytes, Auth: deps.Auth, ProblemFor: problemFor}
	if deps.Auth == nil {
		p.api.Auth = httpapi.AuthenticatorFunc(func(*http.Request) (*httpapi.Caller, error) {
			return nil, fmt.Errorf("%w: this server authenticates no admin callers", httpapi.ErrForbidden)
		})
	}
	return p, nil
}

// Run closes idle sessions until ctx ends.
func (p *Provider) Run(ctx context.Context) {
	t := time.NewTicker(max(p.o.IdleTimeout/4, time.Second))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			p.reap()
		}
	}
}

// Close ends every session, stopping the stdio servers, and waits for
// them to exit. Calls after Close fail.
func (p *Provider) Close() error {
	p.mu.Lock()
	p.closed = true
	ups := p.ups
	p.ups = map[key]*upstream{}
	p.mu.Unlock()
	for _, u := range ups {
		u.retire()
	}
	p.watchers.Wait()
	p.base.CloseIdleConnections()
	return nil
}

// Tools lists the tools of the caller's tenant's enabled servers. A
// server that cannot be reached (or whose circuit is open) is left out
// and logged, so one server down does not hide the others.
func (p *Provider) Tools(ctx context.Context, c *toolgw.Caller) ([]toolgw.Tool, error) {
	if c == nil || c.Tenant == "" {
		return nil, errors.New("upstream: a caller without a tenant")
	}
	regs, err := p.store.ListServers(ctx, c.Tenant)
	if err != nil {
		return nil, fmt.Errorf("upstream: list servers: %w", err)
	}
	p.forgetAbsent(c.Tenant, regs)
	var (
		mu  sync.Mutex
		out []toolgw.Tool
		wg  sync.WaitGroup
		sem = make(chan struct{}, listConcurrency)
	)
	for _, reg := range regs {
		if reg.Disabled {
			continue
		}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			list, err := p.list(ctx, p.upstream(&reg), &reg)
			if err != nil {
				if ctx.Err() == nil {
					p.log.WarnContext(ctx, "upstream: tools left out of the list", "tenant_id", reg.TenantID, "server", reg.Name, "err", err)
				}
				return
			}
			mu.Lock()
			out = append(out, list...)
			mu.Unlock()
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b toolgw.Tool) int { return cmp.Compare(a.Name, b.Name) })
	return out, nil
}

// listConcurrency bounds the servers one Tools call lists at once.
const listConcurrency = 8

// Find returns the tool called name of the caller's tenant.
func (p *Provider) Find(ctx context.Context, c *toolgw.Caller, name string) (*toolgw.Tool, bool, error) {
	if c == nil || c.Tenant == "" {
		return nil, false, errors.New("upstream: a caller without a tenant")
	}
	reg, ok, err := p.registration(ctx, c.Tenant, name)
	if !ok || err != nil {
		return nil, false, err
	}
	list, err := p.list(ctx, p.upstream(reg), reg)
	if err != nil {
		return nil, false, err
	}
	for _, t := range list {
		if t.Name == name {
			// A copy: the list is the cache's, shared with other callers.
			// Call uses the registration read here, so a call reads it
			// once.
			t.Source = &lookup{reg: reg, at: p.o.Now()}
			return &t, true, nil
		}
	}
	return nil, false, nil
}

// registration reads the enabled registration of the server a tool name
// names; ok is false when there is none.
func (p *Provider) registration(ctx context.Context, tenant, toolName string) (*tools.UpstreamServer, bool, error) {
	server := tools.Server(toolName)
	if !tools.ValidName(toolName) || !tools.ValidServerName(server) {
		return nil, false, nil
	}
	reg, err := p.store.GetServer(ctx, tenant, server)
	if errors.Is(err, tools.ErrNotFound) {
		p.forget(key{tenant, server})
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("upstream: read server %s: %w", server, err)
	}
	if reg.Disabled {
		p.forget(key{tenant, server})
		return nil, false, nil
	}
	return &reg, true, nil
}

// Call calls the tool on its server, within the registration's timeout.
// The caller's token is never sent: an http server gets its
// registration's headers only.
func (p *Provider) Call(ctx context.Context, r *toolgw.Request) (*mcp.CallToolResult, error) {
	if r == nil || r.Caller == nil || r.Caller.Tenant == "" || r.Tool == nil {
		return nil, errors.New("upstream: a call needs a caller with a tenant and a tool")
	}
	reg, ok := p.foundUnder(r)
	var err error
	if !ok {
		if reg, ok, err = p.registration(ctx, r.Caller.Tenant, r.Tool.Name); err != nil {
			return nil, err
		}
	}
	if !ok {
		return nil, toolgw.Failf(tools.ReasonToolNotFound, "no upstream server serves %s", r.Tool.Name)
	}
	upstreamName := strings.TrimPrefix(r.Tool.Name, tools.Prefix+reg.Name+".")
	args := r.Arguments
	if len(args) == 0 {
		args = []byte("{}")
	}
	u := p.upstream(reg)
	timeout := reg.CallTimeout()
	if r.Tool.Timeout > 0 && r.Tool.Timeout < timeout {
		timeout = r.Tool.Timeout
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	params := &mcp.CallToolParams{Name: upstreamName, Arguments: json.RawMessage(args), Meta: traceMeta(ctx)}
	var res *mcp.CallToolResult
	err = u.do(ctx, cctx, reg, timeout, false, func(cs *mcp.ClientSession) error {
		var err error
		res, err = cs.CallTool(cctx, params)
		return err
	})
	switch rpcErr := answer(err); {
	case rpcErr != nil:
		return rpcErrorResult(reg.Name, rpcErr), nil
	case err != nil:
		return nil, err
	case res == nil:
		return nil, toolgw.Failf(tools.ReasonUnavailable, "upstream %s answered no result", reg.Name)
	}
	return res, nil
}

// lookup is what Find read to find a tool, and when.
type lookup struct {
	reg *tools.UpstreamServer
	at  time.Time
}

// foundUnder returns the registration Find read for r's tool while it
// serves the call: read within Options.LookupReuse, the caller's tenant's,
// of the server the tool's name names, enabled.
func (p *Provider) foundUnder(r *toolgw.Request) (*tools.UpstreamServer, bool) {
	l, ok := r.Tool.Source.(*lookup)
	if !ok || l == nil || l.reg == nil || p.o.Now().Sub(l.at) >= p.o.LookupReuse {
		return nil, false
	}
	reg := l.reg
	if reg.Disabled || reg.TenantID != r.Caller.Tenant || reg.Name != tools.Server(r.Tool.Name) {
		return nil, false
	}
	return reg, true
}

// rpcErrorResult is an upstream's JSON-RPC error as a failed result: the
// server answered, and refused the call.
func rpcErrorResult(server string, e *jsonrpc.Error) *mcp.CallToolResult {
	reason := tools.ReasonUnavailable
	switch e.Code {
	case jsonrpc.CodeInvalidParams:
		reason = tools.ReasonInvalidArguments
	case jsonrpc.CodeMethodNotFound:
		reason = tools.ReasonToolNotFound
	}
	return toolgw.ErrorResult(reason, fmt.Sprintf("upstream %s answered error %d: %s", server, e.Code, bounded(e.Message)))
}

// bounded is upstream text fit to pass on: valid UTF-8, at most 512 bytes.
func bounded(s string) string {
	const most = 512
	s = strings.ToValidUTF8(s, "�")
	if len(s) > most {
		s = strings.ToValidUTF8(s[:most], "") + "…"
	}
	return s
}

// upstream returns the state of reg's server, brought up to reg's
// version: sessions and the tool list of an older registration are
// dropped, and its circuit starts closed.
func (p *Provider) upstream(reg *tools.UpstreamServer) *upstream {
	k := key{reg.TenantID, reg.Name}
	p.mu.Lock()
	u := p.ups[k]
	if u != nil && u.version == reg.Version {
		u.mu.Lock()
		u.lastUsed = p.o.Now()
		u.mu.Unlock()
		p.mu.Unlock()
		return u
	}
	old := u
	u = p.newUpstream(k, reg.Version)
	if p.closed {
		// A closed provider keeps nothing: the state serves this call's
		// failure only.
		u.retired = true
	} else {
		p.ups[k] = u
	}
	p.mu.Unlock()
	if old != nil {
		old.retire()
	}
	return u
}

// forget drops the state of a server no longer registered (or disabled).
func (p *Provider) forget(k key) {
	p.mu.Lock()
	u := p.ups[k]
	delete(p.ups, k)
	p.mu.Unlock()
	if u != nil {
		u.retire()
	}
}

// forgetAbsent drops the states of the tenant's servers that regs does
// not hold enabled.
func (p *Provider) forgetAbsent(tenant string, regs []tools.UpstreamServer) {
	live := map[string]bool{}
	for _, r := range regs {
		if !r.Disabled {
			live[r.Name] = true
		}
	}
	p.mu.Lock()
	var gone []*upstream
	for k, u := range p.ups {
		if k.tenant == tenant && !live[k.name] {
			gone = append(gone, u)
			delete(p.ups, k)
		}
	}
	p.mu.Unlock()
	for _, u := range gone {
		u.retire()
	}
}

// reap closes the sessions idle for IdleTimeout, and forgets servers
// with nothing worth keeping: no session, no dial under way, unused for
// IdleTimeout, their circuit closed. A state is forgotten under both
// locks, and upstream marks a state used under both, so no call goes on
// with a state the provider no longer holds.
func (p *Provider) reap() {
	now := p.o.Now()
	p.mu.Lock()
	ups := make([]*upstream, 0, len(p.ups))
	for _, u := range p.ups {
		ups = append(ups, u)
	}
	p.mu.Unlock()
	for _, u := range ups {
		u.reapIdle(now)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, u := range p.ups {
		u.mu.Lock()
		if len(u.sessions) == 0 && u.dialing == 0 && now.Sub(u.lastUsed) >= p.o.IdleTimeout && u.breaker.State() == resilience.Closed {
			u.retired = true
			delete(p.ups, k)
		}
		u.mu.Unlock()
	}
}

// takeSlot reserves a stdio process slot, closing the least recently
// used idle stdio session when every slot is taken. It fails when every
// stdio process is busy.
func (p *Provider) takeSlot() error {
	for {
		select {
		case p.slots <- struct{}{}:
			return nil
		default:
		}
		victim := p.idlestStdio()
		if victim == nil {
			return toolgw.Failf(tools.ReasonUnavailable, "all %d stdio upstream processes this server runs are busy", p.o.MaxStdioProcesses)
		}
		// The victim's slot passes to the caller once its process has
		// exited, so the bound holds throughout. A victim that holds none
		// has exited and freed its slot already: try again.
		if victim.takeSlot() {
			victim.close()
			return nil
		}
	}
}

// idlestStdio removes from its pool, and returns, the stdio session
// idle the longest; nil when none is idle.
func (p *Provider) idlestStdio() *session {
	for {
		p.mu.Lock()
		ups := make([]*upstream, 0, len(p.ups))
		for _, u := range p.ups {
			ups = append(ups, u)
		}
		p.mu.Unlock()
		var (
			best  *session
			owner *upstream
		)
		for _, u := range ups {
			u.mu.Lock()
			for _, s := range u.sessions {
				if s.stdio && s.inflight == 0 && (best == nil || s.lastUsed.Before(best.lastUsed)) {
					best, owner = s, u
				}
			}
			u.mu.Unlock()
		}
		if best == nil {
			return nil
		}
		owner.mu.Lock()
		ok := best.inflight == 0 && owner.drop(best)
		owner.mu.Unlock()
		if ok {
			return best
		}
		// Taken up meanwhile: look again.
	}
}

func (p *Provider) releaseSlot() { <-p.slots }

func (p *Provider) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

// credentials are a registration's header and environment values.
type credentials struct {
	Headers map[string]secret.Value
	Env     map[string]secret.Value
}
