package httpapi

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// BenchmarkGuard measures what the Guard adds to a request, against the
// bare handler in the same run: "handler" calls ServeHTTP in process (the
// Guard's rules, the budget and the read deadline changes on a real TCP
// connection), "loopback" makes keep-alive POSTs over TCP (what a client
// sees, with the counted listener). The body is a small JSON-RPC call.
func BenchmarkGuard(b *testing.B) {
	const body = `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"0190d5d4-0000-7000-8000-000000000000"}}`
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	})
	newGuard := func(addr net.Addr) *Guard {
		g, err := NewGuard(&Options{Addr: addr, CORSOrigins: []string{"https://app.example.com"}})
		if err != nil {
			b.Fatal(err)
		}
		return g
	}

	b.Run("handler", func(b *testing.B) {
		tcp := tcpPair(b)
		for _, bc := range []struct {
			name string
			h    http.Handler
		}{{"bare", handler}, {"guarded", newGuard(loopbackAddr(8080)).Handler(handler)}} {
			b.Run(bc.name, func(b *testing.B) {
				w := &deadlineWriter{conn: tcp, h: http.Header{}}
				rd := strings.NewReader(body)
				req, _ := http.NewRequest(http.MethodPost, "http://localhost:8080/agents/echo", nil)
				req.Host = "localhost:8080"
				b.ReportAllocs()
				for b.Loop() {
					rd.Reset(body)
					req.Body, req.ContentLength = io.NopCloser(rd), int64(len(body))
					clear(w.h)
					bc.h.ServeHTTP(w, req)
				}
			})
		}
	})

	b.Run("loopback", func(b *testing.B) {
		for _, guarded := range []bool{false, true} {
			name := "bare"
			if guarded {
				name = "guarded"
			}
			b.Run(name, func(b *testing.B) {
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					b.Fatal(err)
				}
				srv := &http.Server{Handler: handler, ReadHeaderTimeout: DefaultHeaderTimeout}
				serveLn := ln
				if guarded {
					g := newGuard(ln.Addr())
					srv, serveLn = g.Server(handler), g.Listener(ln)
				}
				go srv.Serve(serveLn)
				defer srv.Shutdown(context.Background())
				client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
				url := "http://" + ln.Addr().String() + "/agents/echo"
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						resp, err := client.Post(url, "application/json", strings.NewReader(body))
						if err != nil {
							b.Error(err)
							return
						}
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
					}
				})
			})
		}
	})
}

// deadlineWriter is a ResponseWriter whose read deadlines go to a real TCP
// connection, as net/http's do, so the benchmark pays for them.
type deadlineWriter struct {
	conn net.Conn
	h    http.Header
}

func (w *deadlineWriter) Header() http.Header               { return w.h }
func (w *deadlineWriter) Write(p []byte) (int, error)       { return len(p), nil }
func (w *deadlineWriter) WriteHeader(int)                   {}
func (w *deadlineWriter) SetReadDeadline(t time.Time) error { return w.conn.SetReadDeadline(t) }

func tcpPair(b *testing.B) net.Conn {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	s, err := ln.Accept()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close(); s.Close() })
	return s
}
