package platformtest

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"novaos.dev/novaos/delivery"
)

// faultListener hands out connections on which the injected gateway
// frame faults act.
type faultListener struct {
	net.Listener
	fs *faults
}

func (l *faultListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &faultConn{Conn: c, fs: l.fs}, nil
}

// faultConn is the server's end of a connection. It passes HTTP through
// as it is; once the server answered 101 Switching Protocols, it takes
// the WebSocket frames of each direction whole and lets the faults of
// their ops act on them. The gateway negotiates no compression, so a
// frame's payload is its JSON.
type faultConn struct {
	net.Conn
	fs *faults
	ws atomic.Bool // the server switched to WebSocket

	rmu  sync.Mutex
	rbuf []byte // read from the agent: not yet a whole frame
	rout []byte // whole frames passed on, not yet read by the server
	rerr error

	wmu  sync.Mutex
	wbuf []byte // written by the server: not yet a whole frame
	dead bool   // a fault dropped the connection
}

// maxFaultFrame bounds a frame the wrapper holds whole; a longer one
// (none of the gateway's) drops its connection.
const maxFaultFrame = 16 << 20

var errFrameTooLarge = errors.New("platformtest: a WebSocket frame is too large for the fault wrapper")

var switching = []byte("HTTP/1.1 101 ")

func (c *faultConn) Read(p []byte) (int, error) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	for len(c.rout) == 0 {
		if c.rerr != nil {
			return 0, c.rerr
		}
		if c.ws.Load() {
			if n, op, payload, ok := wsFrame(c.rbuf); ok {
				frame := c.rbuf[:n:n]
				c.rbuf = c.rbuf[n:]
				c.fromAgent(frame, op, payload)
				continue
			} else if n > maxFaultFrame {
				c.rerr = errFrameTooLarge
				c.drop()
				continue
			}
		}
		n, err := c.Conn.Read(p)
		if !c.ws.Load() {
			return n, err
		}
		// The agent speaks WebSocket only after the 101, written (and
		// marked) before this read returned. An error (the server's own
		// deadline, the end) comes again on the next read: bytes that
		// came with it are taken first.
		c.rbuf = append(c.rbuf, p[:n]...)
		if err != nil && n == 0 {
			return 0, err
		}
	}
	n := copy(p, c.rout)
	c.rout = c.rout[n:]
	return n, nil
}

// fromAgent passes a frame the agent sent on, as its op's fault says;
// c.rmu is held.
func (c *faultConn) fromAgent(frame []byte, opcode byte, payload []byte) {
	f, ok := c.take(opcode, payload)
	if !ok {
		c.rout = append(c.rout, frame...)
		return
	}
	switch f.kind {
	case faultStoredThen502:
		c.rout = append(c.rout, frame...)
		c.rerr = net.ErrClosed
		c.drop()
	case faultStoredLate:
		time.Sleep(f.delay)
		c.rout = append(c.rout, frame...)
	case faultRateLimited:
		c.rerr = net.ErrClosed
		c.closeRateLimited(f)
	default:
		c.rerr = net.ErrClosed
		c.drop()
	}
}

func (c *faultConn) Write(p []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.dead {
		return 0, net.ErrClosed
	}
	if !c.ws.Load() {
		if !bytes.HasPrefix(p, switching) {
			return c.Conn.Write(p)
		}
		// The answer to an upgrade: its head in one write, the frames
		// after it.
		end := bytes.Index(p, []byte("\r\n\r\n"))
		if end < 0 {
			end = len(p)
		} else {
			end += 4
		}
		c.ws.Store(true)
		if n, err := c.Conn.Write(p[:end]); err != nil {
			return n, err
		}
		c.wbuf = append(c.wbuf, p[end:]...)
	} else {
		c.wbuf = append(c.wbuf, p...)
	}
	for {
		n, op, payload, ok := wsFrame(c.wbuf)
		if !ok {
			if n > maxFaultFrame {
				c.dead = true
				_ = c.Conn.Close()
				return 0, errFrameTooLarge
			}
			return len(p), nil
		}
		frame := c.wbuf[:n:n]
		c.wbuf = c.wbuf[n:]
		if err := c.toAgent(frame, op, payload); err != nil {
			return 0, err
		}
	}
}

// toAgent writes a frame of the server, as its op's fault says; c.wmu is
// held.
func (c *faultConn) toAgent(frame []byte, opcode byte, payload []byte) error {
	f, ok := c.take(opcode, payload)
	if !ok {
		_, err := c.Conn.Write(frame)
		return err
	}
	switch f.kind {
	case faultStoredThen502:
		_, _ = c.Conn.Write(frame)
		c.dead = true
		_ = c.Conn.Close()
	case faultStoredLate:
		time.Sleep(f.delay)
		_, err := c.Conn.Write(frame)
		return err
	case faultRateLimited:
		c.rateLimitedLocked(f)
	default:
		c.dead = true
		_ = c.Conn.Close()
	}
	return net.ErrClosed
}

// take is the fault of a whole text frame's op, if one is pending.
func (c *faultConn) take(opcode byte, payload []byte) (Fault, bool) {
	if opcode != wsText {
		return Fault{}, false
	}
	var f struct {
		Op string `json:"op"`
	}
	if json.Unmarshal(payload, &f) != nil || f.Op == "" {
		return Fault{}, false
	}
	return c.fs.take(GatewayFrame(f.Op))
}

// drop closes the connection without a word.
func (c *faultConn) drop() {
	c.wmu.Lock()
	c.dead = true
	c.wmu.Unlock()
	_ = c.Conn.Close()
}

// closeRateLimited closes the connection as a rate-limited gateway does.
// The server's frames are written whole (a part of one is held until
// the rest comes), so the close frame goes between two of them.
func (c *faultConn) closeRateLimited(f Fault) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if !c.dead {
		c.rateLimitedLocked(f)
	}
}

func (c *faultConn) rateLimitedLocked(f Fault) {
	ms := max(f.delay.Milliseconds(), 1)
	reason := delivery.CloseCodes[delivery.CloseRateLimited].Reason + " retry_after_ms=" + strconv.FormatInt(ms, 10)
	_, _ = c.Conn.Write(wsClose(delivery.CloseRateLimited, reason))
	c.dead = true
	_ = c.Conn.Close()
}

// WebSocket framing (RFC 6455 section 5.2), as far as the faults need it.
const (
	wsText    = 0x1
	wsOpClose = 0x8
)

// wsFrame reads the first frame of b: its length in bytes, its opcode
// (0xff for a part of a fragmented message) and its unmasked payload;
// ok is false until b holds it whole, n then is the length needed when
// it is known.
func wsFrame(b []byte) (n int, opcode byte, payload []byte, ok bool) {
	if len(b) < 2 {
		return 0, 0, nil, false
	}
	opcode = b[0] & 0x0f
	if b[0]&0x80 == 0 || opcode == 0 {
		opcode = 0xff
	}
	size, head := uint64(b[1]&0x7f), 2
	switch size {
	case 126:
		if len(b) < 4 {
			return 0, 0, nil, false
		}
		size, head = uint64(binary.BigEndian.Uint16(b[2:])), 4
	case 127:
		if len(b) < 10 {
			return 0, 0, nil, false
		}
		size, head = binary.BigEndian.Uint64(b[2:]), 10
	}
	var key []byte
	if b[1]&0x80 != 0 {
		key, head = b[head:min(head+4, len(b))], head+4
	}
	if size > maxFaultFrame {
		return maxFaultFrame + 1, 0, nil, false
	}
	n = head + int(size)
	if len(b) < n || len(key) < 4 && key != nil {
		return n, 0, nil, false
	}
	payload = append([]byte(nil), b[head:n]...)
	for i := range payload {
		if key != nil {
			payload[i] ^= key[i%4]
		}
	}
	return n, opcode, payload, true
}

// wsClose is a server's close frame (unmasked) with code and reason (at
// most 123 bytes).
func wsClose(code int, reason string) []byte {
	b := []byte{0x80 | wsOpClose, byte(2 + len(reason)), byte(code >> 8), byte(code)}
	return append(b, reason...)
}
