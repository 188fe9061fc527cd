package httpapi

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"sync/atomic"
	"time"
)

// connCounter caps the connections a listener hands out. Accept never
// blocks on the cap: leaving connections in the kernel's backlog would
// keep a health check waiting behind a flood, so a connection beyond the
// cap and its reserve is accepted and closed at once, which also frees its
// file descriptor at once.
type connCounter struct {
	max, reserve   int64
	reserveTimeout time.Duration
	open           atomic.Int64
	shed           atomic.Int64 // closed at accept, beyond the reserve
}

// limitListener is a net.Listener whose connections are counted by a
// connCounter until they close.
type limitListener struct {
	net.Listener
	c *connCounter
	// noReserve: beyond the cap a connection is closed at once, for a
	// listener whose protocol has no overload answer to give on it.
	noReserve bool
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		nc, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		n := l.c.open.Add(1)
		if n <= l.c.max {
			return &conn{Conn: nc, c: l.c}, nil
		}
		if !l.noReserve && n <= l.c.max+l.c.reserve {
			rc := &conn{Conn: nc, c: l.c, reserved: true, hard: time.Now().Add(l.c.reserveTimeout)}
			if err := nc.SetDeadline(rc.hard); err != nil {
				rc.Close()
				continue
			}
			return rc, nil
		}
		l.c.open.Add(-1)
		l.c.shed.Add(1)
		nc.Close()
	}
}

// conn is a counted connection. A reserved one keeps a hard deadline that
// the HTTP server's own deadline changes cannot move past, so a reserve
// slot is held for at most the reserve timeout.
type conn struct {
	net.Conn
	c        *connCounter
	reserved bool
	hard     time.Time
	closed   atomic.Bool
}

func (c *conn) Close() error {
	if c.closed.CompareAndSwap(false, true) {
		c.c.open.Add(-1)
	}
	return c.Conn.Close()
}

func (c *conn) clamp(t time.Time) time.Time {
	if c.reserved && (t.IsZero() || t.After(c.hard)) {
		return c.hard
	}
	return t
}

func (c *conn) SetDeadline(t time.Time) error      { return c.Conn.SetDeadline(c.clamp(t)) }
func (c *conn) SetReadDeadline(t time.Time) error  { return c.Conn.SetReadDeadline(c.clamp(t)) }
func (c *conn) SetWriteDeadline(t time.Time) error { return c.Conn.SetWriteDeadline(c.clamp(t)) }

// ReadFrom keeps net/http's sendfile and splice path, which it takes only
// when the connection is an io.ReaderFrom.
func (c *conn) ReadFrom(r io.Reader) (int64, error) {
	if rf, ok := c.Conn.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(struct{ io.Writer }{c.Conn}, r)
}

// CloseWrite lets net/http half-close the connection before closing it,
// as it does with a bare *net.TCPConn, so the client reads the last
// response instead of a reset.
func (c *conn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

type reservedKey struct{}

// connContext marks the requests of a reserve connection.
func connContext(ctx context.Context, nc net.Conn) context.Context {
	if tc, ok := nc.(*tls.Conn); ok {
		nc = tc.NetConn() // served over TLS: the counted connection is under it
	}
	if c, ok := nc.(*conn); ok && c.reserved {
		return context.WithValue(ctx, reservedKey{}, true)
	}
	return ctx
}

func onReserve(ctx context.Context) bool {
	v, _ := ctx.Value(reservedKey{}).(bool)
	return v
}
