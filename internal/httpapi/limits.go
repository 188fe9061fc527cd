package httpapi

import (
	"math"
	"runtime/debug"
	"time"
)

// Defaults of the zero Limits.
const (
	DefaultHeaderTimeout  = 10 * time.Second
	DefaultBodyTimeout    = 30 * time.Second
	DefaultBodyMinRate    = 4 << 10 // bytes per second
	DefaultIdleTimeout    = 60 * time.Second
	DefaultMaxHeaderBytes = 64 << 10
	DefaultConnReserve    = 16
	// DefaultMaxInflightBytes is the in-flight budget unless the Go memory
	// limit (GOMEMLIMIT) makes a quarter of it smaller.
	DefaultMaxInflightBytes = 256 << 20
	// DefaultHoldFactor is how many times its body's size a request is
	// counted as holding: a 9.9 MB SendMessage to the echo agent peaks at
	// 5 times its body in live heap (the body, the decoded text, the stored
	// and the answered JSON), so admitted requests keep their live heap
	// within the budget, and the process's growth, garbage included,
	// within about twice it.
	DefaultHoldFactor = 5
	// maxDefaultConns bounds the derived connection cap: each open
	// connection costs tens of KiB (goroutine, buffers), so a file limit of
	// a million would otherwise admit more than a machine can hold.
	maxDefaultConns = 32768
	// fallbackMaxConns is the cap where the file limit cannot be read.
	fallbackMaxConns = 4096
)

// RetryAfter is what every overload answer (503) puts in Retry-After, in
// seconds: the limits here free up as soon as one request finishes.
const RetryAfter = "1"

// Limits bound what clients may hold of a server: time, connections and
// memory. A zero field means its default (the Default… constants, and
// DefaultMaxConns for MaxConns); a negative one turns that limit off.
// MaxHeaderBytes cannot be turned off (net/http always has one).
type Limits struct {
	// HeaderTimeout bounds reading a request line and its headers. On a
	// reserve connection (see ConnReserve) it bounds the whole exchange
	// (DefaultHeaderTimeout there when off).
	HeaderTimeout time.Duration
	// BodyTimeout is how long any request body may take to arrive. Past
	// it, the body must have arrived at BodyMinRate on average since its
	// request began; a slower one has its connection cut. Once the body is
	// read, no read deadline is left, so a response (an SSE stream) may
	// last as long as it needs.
	BodyTimeout time.Duration
	// BodyMinRate, in bytes per second, lets a large body take longer than
	// BodyTimeout as long as it keeps coming at this rate. Off (negative),
	// every body must arrive within BodyTimeout.
	BodyMinRate int64
	// IdleTimeout closes a keep-alive connection idle this long.
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds the request line and headers; more gets 431.
	MaxHeaderBytes int
	// MaxConns caps the open connections, below the process's file limit.
	// Beyond it, ConnReserve more are accepted: they are answered 503 with
	// Retry-After (Options.Exempt requests, health checks, are served) and
	// closed, within HeaderTimeout. Beyond those, a connection is closed as
	// soon as it is accepted.
	MaxConns int
	// ConnReserve is the number of connections above MaxConns kept for
	// health checks and overload answers.
	ConnReserve int
	// MaxInflightBytes bounds the memory the requests in flight may hold,
	// each counted as HoldFactor times its body: by Content-Length when it
	// arrives, as it is read for a chunked body. A request holds its share
	// until its handler returns, since the handler keeps what it decoded
	// from the body until then. A request that would go beyond it gets 503
	// with Retry-After.
	MaxInflightBytes int64
	// HoldFactor is how many times its body's size a request is counted
	// against MaxInflightBytes (zero or less: DefaultHoldFactor).
	HoldFactor int
}

// withDefaults fills the zero fields and turns the negative ones into
// zero (off).
func (l Limits) withDefaults() Limits {
	dur := func(d *time.Duration, def time.Duration) {
		switch {
		case *d == 0:
			*d = def
		case *d < 0:
			*d = 0
		}
	}
	dur(&l.HeaderTimeout, DefaultHeaderTimeout)
	dur(&l.BodyTimeout, DefaultBodyTimeout)
	dur(&l.IdleTimeout, DefaultIdleTimeout)
	switch {
	case l.BodyMinRate == 0:
		l.BodyMinRate = DefaultBodyMinRate
	case l.BodyMinRate < 0:
		l.BodyMinRate = 0
	}
	if l.MaxHeaderBytes <= 0 {
		l.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	switch {
	case l.MaxConns == 0:
		l.MaxConns = DefaultMaxConns()
	case l.MaxConns < 0:
		l.MaxConns = 0
	}
	switch {
	case l.ConnReserve == 0:
		l.ConnReserve = DefaultConnReserve
	case l.ConnReserve < 0:
		l.ConnReserve = 0
	}
	if l.HoldFactor <= 0 {
		l.HoldFactor = DefaultHoldFactor
	}
	switch {
	case l.MaxInflightBytes == 0:
		l.MaxInflightBytes = DefaultInflightBytes()
	case l.MaxInflightBytes < 0:
		l.MaxInflightBytes = 0
	}
	return l
}

// DefaultMaxConns is the connection cap of the zero Limits: three quarters
// of the process's open-file limit (the rest is for the database, outbound
// calls and the reserve), at most 32768; 4096 where the limit cannot be
// read. Go raises the soft limit to the hard one at start-up on Linux, so
// this is usually three quarters of the hard limit.
func DefaultMaxConns() int {
	n, ok := openFileLimit()
	if !ok {
		return fallbackMaxConns
	}
	return capFraction(n)
}

func capFraction(files uint64) int {
	c := files / 4 * 3
	if c > maxDefaultConns {
		c = maxDefaultConns
	}
	if c < 1 {
		c = 1
	}
	return int(c)
}

// DefaultInflightBytes is the in-flight budget of the zero Limits:
// DefaultMaxInflightBytes, or a quarter of the Go memory limit when that is
// smaller (the garbage a request leaves counts against the memory limit
// too).
func DefaultInflightBytes() int64 {
	n := int64(DefaultMaxInflightBytes)
	if lim := debug.SetMemoryLimit(-1); lim != math.MaxInt64 && lim/4 < n {
		n = max(lim/4, 1<<20)
	}
	return n
}
