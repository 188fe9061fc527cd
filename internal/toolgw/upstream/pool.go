package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"novaos.dev/novaos/internal/toolgw"
	"novaos.dev/novaos/netguard"
	"novaos.dev/novaos/resilience"
	"novaos.dev/novaos/tools"
)

// upstream is what the provider keeps of one registered server at one
// version of its registration: its circuit breaker, its live sessions and
// its tool list. A new version gets a new upstream; the old one is
// retired, closing its sessions.
type upstream struct {
	p       *Provider
	key     key
	version int64
	breaker *resilience.Breaker
	client  *mcp.Client

	// listMu lets one listing run at a time; the others wait for it and
	// take its result.
	listMu sync.Mutex

	mu       sync.Mutex
	sessions []*session
	dialing  int
	retired  bool
	lastUsed time.Time
	tools    []toolgw.Tool
	listedAt time.Time
	// listGen moves on whenever the list is invalidated, so a listing
	// that began before does not store what it found.
	listGen uint64
	creds   *credentials
	// dialed is closed when a dial under way ends.
	dialed chan struct{}
}

// session is one MCP client session to a server.
type session struct {
	u     *upstream
	cs    *mcp.ClientSession
	stdio bool
	// slot is set while the session holds a stdio process slot: released
	// once its process has exited, or handed to whoever takes it.
	slot atomic.Bool
	// done is closed when the session has ended.
	done chan struct{}
	// guarded by u.mu
	inflight int
	lastUsed time.Time
	dropped  bool
}

func (p *Provider) newUpstream(k key, version int64) *upstream {
	u := &upstream{p: p, key: k, version: version, lastUsed: p.o.Now(),
		breaker: resilience.NewBreaker(&resilience.BreakerOptions{Threshold: p.o.BreakerThreshold, Reset: p.o.BreakerReset, Now: p.o.Now})}
	u.client = mcp.NewClient(&mcp.Implementation{Name: "novaos-tool-gateway", Version: "1"}, &mcp.ClientOptions{
		Logger: p.log,
		// The gateway serves no roots, sampling or elicitation upstream.
		// Nor does it listen for tools/list_changed: in the stateless era
		// that holds a request open per session, and the cached list
		// expires after ListTTL anyway.
		Capabilities: &mcp.ClientCapabilities{},
	})
	return u
}

// retire closes every session of a registration that changed or went
// away; calls in flight on them fail.
func (u *upstream) retire() {
	u.mu.Lock()
	u.retired = true
	ss := u.sessions
	u.sessions = nil
	u.tools, u.listGen = nil, u.listGen+1
	for _, s := range ss {
		s.dropped = true
	}
	u.mu.Unlock()
	for _, s := range ss {
		// The watcher frees a stdio slot once the process has exited;
		// Provider.Close waits for that.
		go s.close()
	}
}

// reapIdle closes the sessions idle for the idle timeout.
func (u *upstream) reapIdle(now time.Time) {
	idle := u.p.o.IdleTimeout
	u.mu.Lock()
	var gone []*session
	u.sessions = slices.DeleteFunc(u.sessions, func(s *session) bool {
		if s.inflight == 0 && now.Sub(s.lastUsed) >= idle {
			s.dropped = true
			gone = append(gone, s)
			return true
		}
		return false
	})
	u.mu.Unlock()
	for _, s := range gone {
		// The watcher frees a stdio slot once the process has exited.
		go s.close()
	}
}

// drop removes s from the pool; false when it was gone already. u.mu
// must be held.
func (u *upstream) drop(s *session) bool {
	if s.dropped {
		return false
	}
	s.dropped = true
	u.sessions = slices.DeleteFunc(u.sessions, func(x *session) bool { return x == s })
	return true
}

// discard drops s from the pool and closes it: it failed.
func (u *upstream) discard(s *session) {
	u.mu.Lock()
	ok := u.drop(s)
	u.mu.Unlock()
	if ok {
		go s.close()
	}
}

// takeSlot takes s's stdio slot for another process; false when s holds
// none (its process exited, and the slot is free already).
func (s *session) takeSlot() bool { return s.slot.CompareAndSwap(true, false) }

// close ends the session and waits for it to end (a stdio server's
// process to exit).
func (s *session) close() {
	_ = s.cs.Close()
	<-s.done
}

// watch waits for the session to end, then takes it out of the pool and
// frees its stdio slot.
func (s *session) watch() {
	defer s.u.p.watchers.Done()
	_ = s.cs.Wait()
	s.u.mu.Lock()
	s.u.drop(s)
	s.u.mu.Unlock()
	if s.takeSlot() {
		s.u.p.releaseSlot()
	}
	close(s.done)
}

// do runs op on a session of the server, dialling one when none is live,
// behind the server's circuit breaker. ctx is the caller's, cctx the
// call's, bounded by timeout. A refused session (the server forgot it)
// is replaced and op run again: the server did not run it. With
// idempotent, op is also run again after the connection broke.
func (u *upstream) do(ctx, cctx context.Context, reg *tools.UpstreamServer, timeout time.Duration, idempotent bool, op func(*mcp.ClientSession) error) error {
	if !u.breaker.Allow() {
		return toolgw.Failf(tools.ReasonUnavailable, "upstream %s is failing; its circuit is open until it recovers", reg.Name)
	}
	for attempt := 0; ; attempt++ {
		s, err := u.acquire(cctx, reg)
		if err == nil {
			err = op(s.cs)
			u.release(s)
		}
		switch {
		case err == nil, answer(err) != nil:
			// The server answered.
			u.breaker.Success()
			return err
		case attempt == 0 && s != nil && cctx.Err() == nil &&
			(errors.Is(err, mcp.ErrSessionMissing) || idempotent && errors.Is(err, mcp.ErrConnectionClosed)):
			u.discard(s)
			continue
		}
		return u.failure(ctx, cctx, reg, timeout, s, err)
	}
}

// failure turns what went wrong talking to a server into the call's
// error, and tells the breaker: a call the caller gave up on says
// nothing about the server, a timeout or a broken connection counts
// against it.
func (u *upstream) failure(ctx, cctx context.Context, reg *tools.UpstreamServer, timeout time.Duration, s *session, err error) error {
	var te *toolgw.Error
	switch {
	case errors.As(err, &te), errors.Is(err, errRetired):
		// The provider's own refusal (not allowed, no slot, a changed
		// registration): the server was not reached, and a probe the
		// breaker let through passes to the next caller.
		u.breaker.Record(context.Canceled)
		if te == nil {
			return toolgw.Failf(tools.ReasonUnavailable, "upstream %s's registration changed during the call", reg.Name)
		}
		return te
	case errors.Is(ctx.Err(), context.Canceled):
		u.breaker.Record(context.Canceled)
		return fmt.Errorf("upstream %s: %w", reg.Name, ctx.Err())
	case ctx.Err() != nil || errors.Is(cctx.Err(), context.DeadlineExceeded):
		u.breaker.Failure()
		return toolgw.Failf(tools.ReasonTimeout, "upstream %s did not answer within %v", reg.Name, timeout)
	}
	u.breaker.Failure()
	if s != nil {
		u.discard(s)
	}
	u.p.log.Warn("upstream: call failed", "tenant_id", reg.TenantID, "server", reg.Name, "err", err)
	return toolgw.Failf(tools.ReasonUnavailable, "upstream %s: %s", reg.Name, describe(err))
}

// describe says what went wrong in words fit for the caller: the
// transport's own errors may carry addresses and URLs.
func describe(err error) string {
	var (
		refused *netguard.RefusedError
		op      *net.OpError
		dns     *net.DNSError
	)
	switch {
	case errors.As(err, &refused), errors.Is(err, netguard.ErrRefused), errors.Is(err, netguard.ErrMalformed):
		return "its address is not one this server may call"
	case errors.Is(err, errTooLarge):
		return "its answer was too large"
	case errors.Is(err, errRedirect):
		return "it answered with a redirect, which is not followed"
	case errors.As(err, &dns):
		return "its host name does not resolve"
	case errors.As(err, &op):
		return "it cannot be reached"
	case errors.Is(err, mcp.ErrConnectionClosed), errors.Is(err, mcp.ErrSessionMissing):
		return "the connection to it closed"
	case errors.Is(err, exec.ErrNotFound):
		return "its command cannot be run"
	}
	return "the exchange with it failed"
}

// acquire returns a live session, dialling a new one while every live
// session is busy and the pool has room.
func (u *upstream) acquire(ctx context.Context, reg *tools.UpstreamServer) (*session, error) {
	most := u.p.o.MaxSessionsPerServer
	if reg.Transport == tools.TransportStdio {
		// One process per stdio server: a server keeping state (a file,
		// a cache) must not race a twin.
		most = 1
	}
	for {
		u.mu.Lock()
		if u.retired {
			u.mu.Unlock()
			if u.p.isClosed() {
				return nil, toolgw.Failf(tools.ReasonUnavailable, "the tool gateway is shutting down")
			}
			return nil, errRetired
		}
		u.lastUsed = u.p.o.Now()
		var best *session
		for _, s := range u.sessions {
			if best == nil || s.inflight < best.inflight {
				best = s
			}
		}
		if best != nil && (best.inflight == 0 || len(u.sessions)+u.dialing >= most) {
			best.inflight++
			u.mu.Unlock()
			return best, nil
		}
		if best == nil && u.dialing >= most {
			// Another caller is dialling the session there may be: wait
			// for it rather than dial a twin.
			if u.dialed == nil {
				u.dialed = make(chan struct{})
			}
			ch := u.dialed
			u.mu.Unlock()
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-ch:
			}
			continue
		}
		u.dialing++
		u.mu.Unlock()
		return u.dialInto(ctx, reg, best)
	}
}

// dialInto dials a session and adds it to the pool, or falls back on
// fallback (a busy live session) when the dial fails.
func (u *upstream) dialInto(ctx context.Context, reg *tools.UpstreamServer, fallback *session) (*session, error) {
	s, err := u.dial(ctx, reg)
	u.mu.Lock()
	defer u.mu.Unlock()
	u.dialing--
	if u.dialed != nil {
		close(u.dialed)
		u.dialed = nil
	}
	if err != nil {
		if fallback != nil && !fallback.dropped {
			fallback.inflight++
			return fallback, nil
		}
		return nil, err
	}
	if u.retired {
		s.dropped = true
		go s.close()
		return nil, errRetired
	}
	s.inflight = 1
	u.sessions = append(u.sessions, s)
	return s, nil
}

// release hands a session back after a call.
func (u *upstream) release(s *session) {
	u.mu.Lock()
	s.inflight--
	s.lastUsed = u.p.o.Now()
	u.mu.Unlock()
}

// dial connects a new session to the server.
func (u *upstream) dial(ctx context.Context, reg *tools.UpstreamServer) (*session, error) {
	creds, err := u.credentials(reg)
	if err != nil {
		return nil, err
	}
	s := &session{u: u, stdio: reg.Transport == tools.TransportStdio, done: make(chan struct{}), lastUsed: u.p.o.Now()}
	var t mcp.Transport
	switch reg.Transport {
	case tools.TransportHTTP:
		if t, err = u.p.httpTransport(reg, creds); err != nil {
			return nil, err
		}
	case tools.TransportStdio:
		path, ok := u.p.commands[reg.Command]
		if !ok {
			return nil, toolgw.Failf(tools.ReasonUnavailable, "upstream %s runs a command this server does not allow", reg.Name)
		}
		if err := u.p.takeSlot(); err != nil {
			return nil, err
		}
		s.slot.Store(true)
		cmd := exec.Command(path, reg.Args...)
		cmd.Env = slices.Clone(u.p.o.StdioEnv)
		for _, name := range reg.Env {
			if v, ok := creds.Env[name]; ok {
				cmd.Env = append(cmd.Env, name+"="+v.Reveal())
			}
		}
		t = &mcp.CommandTransport{Command: cmd, TerminateDuration: u.p.o.StdioTerminate}
	default:
		return nil, toolgw.Failf(tools.ReasonUnavailable, "upstream %s has no transport this server knows", reg.Name)
	}
	cs, err := u.client.Connect(valueless{ctx}, t, nil)
	if err != nil {
		if s.takeSlot() {
			// Connect closed what it started; the process has exited.
			u.p.releaseSlot()
		}
		return nil, err
	}
	s.cs = cs
	u.p.watchers.Add(1)
	go s.watch()
	return s, nil
}

// valueless is a context's deadline and cancellation without its values,
// for dialling. A session outlives the call that dialled it and keeps its
// dial context's values, and a call that came through the gateway's own
// MCP server carries that server's marks (the caller's protocol revision):
// the SDK's client would read them as its own and initialize with the
// caller's revision rather than the one it negotiates, which a server of
// the session era refuses.
type valueless struct{ context.Context }

func (valueless) Value(any) any { return nil }

// list returns the server's tools, from the cache while it is fresh.
func (p *Provider) list(ctx context.Context, u *upstream, reg *tools.UpstreamServer) ([]toolgw.Tool, error) {
	if list, ok := u.cached(); ok {
		return list, nil
	}
	u.listMu.Lock()
	defer u.listMu.Unlock()
	if list, ok := u.cached(); ok {
		return list, nil
	}
	u.mu.Lock()
	gen := u.listGen
	u.mu.Unlock()
	timeout := reg.CallTimeout()
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var found []*mcp.Tool
	err := u.do(ctx, cctx, reg, timeout, true, func(cs *mcp.ClientSession) error {
		found = found[:0]
		for t, err := range cs.Tools(cctx, nil) {
			if err != nil {
				return err
			}
			if len(found) == p.o.MaxToolsPerServer {
				p.log.Warn("upstream: a server lists more tools than are taken", "tenant_id", reg.TenantID, "server", reg.Name,
					"most", p.o.MaxToolsPerServer)
				break
			}
			found = append(found, t)
		}
		return nil
	})
	if rpcErr := answer(err); rpcErr != nil {
		return nil, toolgw.Failf(tools.ReasonUnavailable, "upstream %s refused to list its tools: %s", reg.Name, bounded(rpcErr.Message))
	}
	if err != nil {
		return nil, err
	}
	list := p.convert(reg, found)
	u.mu.Lock()
	if u.listGen == gen && !u.retired {
		u.tools, u.listedAt = list, p.o.Now()
	}
	u.mu.Unlock()
	return list, nil
}

// cached returns the tool list while it is fresh.
func (u *upstream) cached() ([]toolgw.Tool, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.tools == nil || u.p.o.Now().Sub(u.listedAt) >= u.p.o.ListTTL {
		return nil, false
	}
	return u.tools, true
}

// convert names a server's tools for the gateway, leaving out (and
// logging) those whose names or schemas the gateway cannot take.
func (p *Provider) convert(reg *tools.UpstreamServer, found []*mcp.Tool) []toolgw.Tool {
	out := make([]toolgw.Tool, 0, len(found))
	seen := map[string]bool{}
	for _, t := range found {
		if t == nil {
			continue
		}
		name := tools.Prefix + reg.Name + "." + t.Name
		skip := func(why string) {
			p.log.Warn("upstream: a tool is left out", "tenant_id", reg.TenantID, "server", reg.Name, "tool", bounded(t.Name), "why", why)
		}
		if !tools.ValidName(name) || seen[name] {
			skip("its name is not a gateway tool name once prefixed, or is listed twice")
			continue
		}
		in, err := schema(t.InputSchema, p.o.MaxSchemaBytes)
		if err != nil {
			skip("input schema: " + err.Error())
			continue
		}
		outSchema, err := schema(t.OutputSchema, p.o.MaxSchemaBytes)
		if err != nil {
			skip("output schema: " + err.Error())
			continue
		}
		seen[name] = true
		gt := toolgw.Tool{Tool: tools.Tool{Name: name, Title: t.Title, Description: t.Description, InputSchema: in,
			OutputSchema: outSchema, Annotations: annotations(t.Annotations)}, Timeout: reg.CallTimeout()}
		if gt.Title == "" && t.Annotations != nil {
			gt.Title = t.Annotations.Title
		}
		out = append(out, gt)
	}
	return out
}

// schema encodes a tool's schema: a JSON object within most bytes, or
// none.
func schema(v any, most int) (json.RawMessage, error) {
	if v == nil {
		return nil, nil
	}
	b, err := json.Marshal(v)
	switch {
	case err != nil:
		return nil, err
	case string(b) == "null":
		return nil, nil
	case len(b) > most:
		return nil, fmt.Errorf("larger than %d bytes", most)
	case b[0] != '{':
		return nil, errors.New("not a JSON object")
	}
	return b, nil
}

// annotations are an upstream's hints as the classifier reads them.
// go-sdk reads readOnlyHint and idempotentHint as plain booleans, so an
// absent one reads as false, which is what MCP says it means.
func annotations(a *mcp.ToolAnnotations) *tools.Annotations {
	if a == nil {
		return nil
	}
	ro, idem := a.ReadOnlyHint, a.IdempotentHint
	return &tools.Annotations{ReadOnly: &ro, Destructive: clone(a.DestructiveHint), Idempotent: &idem, OpenWorld: clone(a.OpenWorldHint)}
}

func clone(b *bool) *bool {
	if b == nil {
		return nil
	}
	v := *b
	return &v
}

// httpTransport is the Streamable HTTP transport of a session to reg:
// guarded dials, the registration's headers and nothing else, no
// redirects, bounded answers.
func (p *Provider) httpTransport(reg *tools.UpstreamServer, creds *credentials) (mcp.Transport, error) {
	u, host, err := netguard.ParseURL(reg.URL)
	if err == nil {
		err = p.guard.CheckHost(host)
	}
	if err != nil {
		return nil, toolgw.Failf(tools.ReasonUnavailable, "upstream %s: %s", reg.Name, describe(err))
	}
	client := &http.Client{
		Transport: &headerTransport{base: p.base, host: u.Host, headers: creds.Headers, most: p.o.MaxResponseBytes},
		// A redirect would carry the headers elsewhere.
		CheckRedirect: func(*http.Request, []*http.Request) error { return errRedirect },
	}
	return &mcp.StreamableClientTransport{Endpoint: reg.URL, HTTPClient: client,
		// A dropped stream is not resumed: the call fails and the
		// breaker hears of it; the gateway never sends a call twice.
		MaxRetries: -1,
		// Nothing the server sends unasked is used.
		DisableStandaloneSSE: true,
		MaxEventSize:         int(min(p.o.MaxResponseBytes, 1<<30)),
	}, nil
}

var (
	errRetired  = errors.New("upstream: registration changed")
	errRedirect = errors.New("upstream: redirect refused")
	errTooLarge = errors.New("upstream: answer too large")
)

// codeRejected is the code go-sdk gives a request its transport refused
// (an HTTP error status): no answer from the server's MCP layer.
const codeRejected = -32005

// answer returns the JSON-RPC error the server answered with, or nil
// when err is not one: a transport's refusal is a failure to reach it.
func answer(err error) *jsonrpc.Error {
	if err == nil || rejected(err) {
		return nil
	}
	var e *jsonrpc.Error
	if errors.As(err, &e) {
		return e
	}
	return nil
}

// rejected reports whether err's tree holds the transport's refusal.
func rejected(err error) bool {
	var e *jsonrpc.Error
	if errors.As(err, &e) && e.Code == codeRejected {
		return true
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		return u.Unwrap() != nil && rejected(u.Unwrap())
	case interface{ Unwrap() []error }:
		for _, x := range u.Unwrap() {
			if rejected(x) {
				return true
			}
		}
	}
	return false
}
