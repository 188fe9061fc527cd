package httpapi

import (
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Options configure a Guard; nil or the zero value means the default
// Limits, no CORS, and no Host check unless Addr is a loopback address.
type Options struct {
	Limits Limits
	// Addr is where the server listens (its listener's Addr, so the real
	// port when it asked for port 0). Its port is the one a Host header
	// must name; a loopback address makes the server loopback-only.
	Addr net.Addr
	// PublicURL is the base URL clients reach the server at, if not the
	// listen address. Its host is one of the server's names; a host that is
	// not loopback makes the server not loopback-only.
	PublicURL string
	// AllowHosts are more names writes may carry in Host (for a local
	// proxy): "name" on any port, or "name:port". Setting any turns the
	// Host check on whatever the listen address.
	AllowHosts []string
	// CORSOrigins are the origins (scheme://host[:port]) given CORS access.
	// Empty: no CORS headers at all.
	CORSOrigins []string
	// Exempt reports requests served even on a reserve connection, past
	// the connection cap: health checks. Nil: none.
	Exempt func(*http.Request) bool
	// JSONRPC reports requests whose refusals are answered as a JSON-RPC
	// error response (id null) rather than a problem. Nil: none.
	JSONRPC func(*http.Request) bool
}

// Guard puts the server-wide rules in front of a handler: the connection
// cap (through Listener), body deadlines and minimum rate, the in-flight
// body budget, the Host check on writes, and Origin and CORS rules. Build
// one per listener with NewGuard; it is safe for concurrent use.
type Guard struct {
	limits  Limits
	site    *site
	conns   *connCounter // nil: no cap
	budget  *budget      // nil: no budget
	exempt  func(*http.Request) bool
	jsonRPC func(*http.Request) bool
}

// NewGuard checks opts and returns the Guard they describe.
func NewGuard(opts *Options) (*Guard, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	s, err := newSite(o.Addr, o.PublicURL, o.AllowHosts, o.CORSOrigins)
	if err != nil {
		return nil, err
	}
	g := &Guard{limits: o.Limits.withDefaults(), site: s, exempt: o.Exempt, jsonRPC: o.JSONRPC}
	if g.limits.MaxConns > 0 {
		g.conns = &connCounter{max: int64(g.limits.MaxConns), reserve: int64(g.limits.ConnReserve),
			reserveTimeout: g.limits.HeaderTimeout}
		if g.conns.reserveTimeout <= 0 {
			g.conns.reserveTimeout = DefaultHeaderTimeout
		}
	}
	if g.limits.MaxInflightBytes > 0 {
		g.budget = &budget{max: g.limits.MaxInflightBytes}
	}
	return g, nil
}

// Limits are the limits in force, defaults filled in (zero where off).
func (g *Guard) Limits() Limits { return g.limits }

// ChecksHost reports whether writes must name the server in Host.
func (g *Guard) ChecksHost() bool { return g.site.checkHost }

// Stats is a snapshot of what the Guard holds.
type Stats struct {
	OpenConns     int64 // connections open through Listener
	ShedConns     int64 // closed at accept, beyond the cap and the reserve
	InflightBytes int64 // request body bytes admitted and not yet released
}

// Stats reports the Guard's counters.
func (g *Guard) Stats() Stats {
	var s Stats
	if g.conns != nil {
		s.OpenConns, s.ShedConns = g.conns.open.Load(), g.conns.shed.Load()
	}
	if g.budget != nil {
		s.InflightBytes = g.budget.used.Load()
	}
	return s
}

// Listener counts ln's connections against the cap; it returns ln itself
// when the cap is off.
func (g *Guard) Listener(ln net.Listener) net.Listener {
	if g.conns == nil {
		return ln
	}
	return &limitListener{Listener: ln, c: g.conns}
}

// PlainListener counts ln's connections against the same cap as
// Listener, without the reserve: a connection beyond the cap is closed as
// soon as it is accepted. It is for a listener that serves another
// protocol (gRPC) beside the HTTP one, so that both share the process's
// connections. It returns ln itself when the cap is off.
func (g *Guard) PlainListener(ln net.Listener) net.Listener {
	if g.conns == nil {
		return ln
	}
	return &limitListener{Listener: ln, c: g.conns, noReserve: true}
}

// Server is an http.Server serving h behind the Guard with its timeouts
// and header limit. Serve it on g.Listener(ln). It has no WriteTimeout: a
// stream lasts as long as its handler writes.
func (g *Guard) Server(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           g.Handler(h),
		ReadHeaderTimeout: g.limits.HeaderTimeout,
		IdleTimeout:       g.limits.IdleTimeout, // 0 (off): net/http keeps idle connections open
		MaxHeaderBytes:    g.limits.MaxHeaderBytes,
		ConnContext:       g.connContext,
	}
}

// Handler returns next behind the Guard's request rules. Reserve
// connections are marked by Server's ConnContext; with another server,
// set ConnContext the same way or the reserve serves every request.
func (g *Guard) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { g.serve(w, r, next) })
}

func (g *Guard) serve(w http.ResponseWriter, r *http.Request, next http.Handler) {
	if g.conns != nil && onReserve(r.Context()) {
		w.Header().Set("Connection", "close")
		if g.exempt == nil || !g.exempt(r) {
			g.refuse(w, r, refuseConns)
			return
		}
	}
	origin := r.Header.Get("Origin")
	if g.site.cors != nil {
		h := w.Header()
		if v := h["Vary"]; v == nil {
			// Shared and never written through: Header.Add and Set replace
			// a full slice rather than write into it.
			h["Vary"] = varyOrigin
		} else {
			h["Vary"] = append(v, "Origin")
		}
		listed := origin != "" && g.site.cors[origin]
		if r.Method == http.MethodOptions && origin != "" && r.Header.Get("Access-Control-Request-Method") != "" {
			if !listed {
				g.refuse(w, r, refusePreflight)
				return
			}
			preflight(h, origin, r)
			w.WriteHeader(http.StatusNoContent)
			return
		}
		if listed {
			h.Set("Access-Control-Allow-Origin", origin)
			h.Set("Access-Control-Expose-Headers", exposedHeaders)
		}
	}
	if !safeMethod(r.Method) {
		if g.site.checkHost && !g.site.hostAllowed(r.Host) {
			g.refuse(w, r, refuseHost)
			return
		}
		if origin != "" && !g.site.originAllowed(origin) {
			g.refuse(w, r, refuseOrigin)
			return
		}
	}
	if r.Body == nil || r.Body == http.NoBody {
		next.ServeHTTP(w, r)
		return
	}
	g.serveBody(w, r, next)
}

// serveBody admits a request with a body against the budget and puts the
// body under its deadline.
func (g *Guard) serveBody(w http.ResponseWriter, r *http.Request, next http.Handler) {
	k := int64(g.limits.HoldFactor)
	if g.budget != nil && r.ContentLength > 0 {
		f := refuseBytes
		switch {
		case r.ContentLength > g.budget.max/k:
			// It would never fit: 503 would have the client retry forever.
			f = refuseTooLarge
		case g.budget.acquire(r.ContentLength * k):
			f = nil
		}
		if f != nil {
			// Not reading the body: the connection closes after the answer.
			w.Header().Set("Connection", "close")
			g.refuse(w, r, f)
			return
		}
	}
	b := &body{rc: r.Body, start: time.Now(), timeout: g.limits.BodyTimeout, rate: g.limits.BodyMinRate}
	if b.timeout > 0 {
		if ctl := readDeadline(w); ctl != nil {
			b.deadline = b.start.Add(b.timeout)
			if ctl.SetReadDeadline(b.deadline) == nil {
				b.ctl = ctl
			}
		}
	}
	r.Body = b
	if g.budget == nil {
		next.ServeHTTP(w, r)
		return
	}
	b.budget, b.factor = g.budget, k
	// The share is the handler's until it returns: what it decoded from
	// the body (and what it builds from that) lives as long as it runs.
	defer b.free()
	if r.ContentLength > 0 {
		b.held.Store(r.ContentLength * k)
		next.ServeHTTP(w, r)
		return
	}
	b.counted = true
	bw := &budgetWriter{ResponseWriter: w, b: b}
	next.ServeHTTP(bw, r)
	if t := b.tripped.Load(); t != nil && !bw.wrote {
		w.Header().Set("Connection", "close")
		g.refuse(w, r, t.refusal)
	}
}

// Acquire takes n bytes of the in-flight budget for a request that did
// not come through Handler (a gRPC message), if they fit; Release gives
// them back. Without a budget every Acquire succeeds. n is what the
// request holds: weigh a message by Limits().HoldFactor as Handler does.
func (g *Guard) Acquire(n int64) bool {
	return g.budget == nil || g.budget.acquire(n)
}

// Release gives back n bytes taken by Acquire.
func (g *Guard) Release(n int64) {
	if g.budget != nil {
		g.budget.release(n)
	}
}

func (g *Guard) refuse(w http.ResponseWriter, r *http.Request, f *refusal) {
	f.write(w, g.jsonRPC != nil && g.jsonRPC(r))
}

// safeMethod: the methods that must not change anything, which the Host
// and Origin rules let through.
func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

var varyOrigin = []string{"Origin"}

// exposedHeaders are the response headers a listed origin's scripts may
// read besides the CORS-safelisted ones.
const exposedHeaders = "A2A-Version, A2A-Extensions, Location, Retry-After, ETag"

// allowedMethods are what a preflight may ask for.
const allowedMethods = "GET, HEAD, POST, PUT, PATCH, DELETE"

// preflightMaxAge is how long a browser may cache a preflight answer.
var preflightMaxAge = strconv.Itoa(int((10 * time.Minute).Seconds()))

// preflight answers a listed origin's CORS preflight: any method the
// server has, and the headers the page asked for (a listed origin is
// trusted to send them; the handlers still check them).
func preflight(h http.Header, origin string, r *http.Request) {
	h.Set("Access-Control-Allow-Origin", origin)
	h.Set("Access-Control-Allow-Methods", allowedMethods)
	if req := r.Header.Values("Access-Control-Request-Headers"); len(req) > 0 {
		h.Set("Access-Control-Allow-Headers", strings.Join(req, ", "))
	}
	h.Set("Access-Control-Max-Age", preflightMaxAge)
	h.Add("Vary", "Access-Control-Request-Method")
	h.Add("Vary", "Access-Control-Request-Headers")
}
