package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"novaos.dev/novaos/problem"
)

// serveGuard serves h behind a Guard built from opts on a loopback port.
func serveGuard(t *testing.T, opts *Options, h http.Handler) (*Guard, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	o := *opts
	o.Addr = ln.Addr()
	g, err := NewGuard(&o)
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	srv := g.Server(h)
	go srv.Serve(g.Listener(ln))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			srv.Close()
		}
	})
	return g, ln.Addr().String()
}

// dial opens a raw connection that the test closes.
func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// closedWithin reports whether the server closes c (a read ends in EOF or
// a reset, after any response bytes) within d.
func closedWithin(c net.Conn, d time.Duration) bool {
	c.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, c)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		return false
	}
	return true
}

// startSlowPost sends a POST's headers announcing size bytes and then
// trickles one byte every gap until stop is closed or a write fails.
func startSlowPost(t *testing.T, c net.Conn, host, path string, size int, gap time.Duration, stop <-chan struct{}) {
	t.Helper()
	if _, err := fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", path, host, size); err != nil {
		t.Fatal(err)
	}
	go func() {
		tick := time.NewTicker(gap)
		defer tick.Stop()
		for i := 0; i < size; i++ {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			if _, err := c.Write([]byte{'x'}); err != nil {
				return
			}
		}
	}()
}

func readBody(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			http.Error(w, "read: "+err.Error(), http.StatusBadRequest)
			return
		}
		h.ServeHTTP(w, r)
	})
}

var okHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })

func TestSlowBodyIsCut(t *testing.T) {
	tests := []struct {
		name    string
		limits  Limits
		gap     time.Duration // between bytes
		size    int
		wantCut bool
	}{
		// 1 byte every 20ms is 50 B/s, under the 1000 B/s floor: cut at the
		// 300ms body timeout.
		{name: "trickle", limits: Limits{BodyTimeout: 300 * time.Millisecond, BodyMinRate: 1000}, gap: 20 * time.Millisecond, size: 1 << 20, wantCut: true},
		// No minimum rate: the body timeout alone.
		{name: "no rate", limits: Limits{BodyTimeout: 300 * time.Millisecond, BodyMinRate: -1}, gap: 20 * time.Millisecond, size: 1 << 20, wantCut: true},
		// Off: the same trickle is still being read when the test stops it.
		{name: "off", limits: Limits{BodyTimeout: -1}, gap: 20 * time.Millisecond, size: 1 << 20, wantCut: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, addr := serveGuard(t, &Options{Limits: tt.limits}, readBody(okHandler))
			c := dial(t, addr)
			stop := make(chan struct{})
			defer close(stop)
			began := time.Now()
			startSlowPost(t, c, addr, "/", tt.size, tt.gap, stop)
			cut := closedWithin(c, 2*time.Second)
			if cut != tt.wantCut {
				t.Fatalf("connection closed by the server: %v after %v, want %v", cut, time.Since(began), tt.wantCut)
			}
			if cut && time.Since(began) < tt.limits.BodyTimeout {
				t.Errorf("cut after %v, before the body timeout %v", time.Since(began), tt.limits.BodyTimeout)
			}
		})
	}
}

// A body sent above the minimum rate may take longer than the body
// timeout.
func TestBodyAboveMinRateMayOutlastTimeout(t *testing.T) {
	_, addr := serveGuard(t, &Options{Limits: Limits{BodyTimeout: 200 * time.Millisecond, BodyMinRate: 1000}}, readBody(okHandler))
	c := dial(t, addr)
	const size = 4000 // at 8 KB/s: half a second, more than twice the timeout
	fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n\r\n", addr, size)
	chunk := strings.Repeat("x", 80)
	for sent := 0; sent < size; sent += len(chunk) {
		if _, err := io.WriteString(c, chunk); err != nil {
			t.Fatalf("write after %d bytes: %v", sent, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d, want 200", resp.StatusCode)
	}
}

// Once the body is read, the read deadline is lifted: a response stream
// lasting well past the body timeout is not cut, and its request context
// stays alive.
func TestStreamOutlivesBodyTimeout(t *testing.T) {
	stream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range 8 {
			select {
			case <-r.Context().Done():
				return
			case <-time.After(50 * time.Millisecond):
			}
			fmt.Fprintf(w, "data: %d\n\n", i)
			w.(http.Flusher).Flush()
		}
		io.WriteString(w, "data: end\n\n")
	})
	_, addr := serveGuard(t, &Options{Limits: Limits{BodyTimeout: 100 * time.Millisecond, HeaderTimeout: 100 * time.Millisecond}}, readBody(stream))
	resp, err := http.Post("http://"+addr+"/", "application/json", strings.NewReader(`{"x":1}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("stream cut: %v after %q", err, b)
	}
	if !strings.HasSuffix(string(b), "data: end\n\n") {
		t.Fatalf("stream ended early: %q", b)
	}
}

func TestIdleConnectionClosed(t *testing.T) {
	_, addr := serveGuard(t, &Options{Limits: Limits{IdleTimeout: 200 * time.Millisecond}}, okHandler)
	c := dial(t, addr)
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s\r\n\r\n", addr)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	// Only the 200ms idle timeout closes it before the read deadline:
	// the server's others are a minute or more (DefaultIdleTimeout is
	// what an ignored IdleTimeout would leave).
	c.SetReadDeadline(time.Now().Add(DefaultIdleTimeout / 2))
	if _, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("idle connection: read %v, want EOF", err)
	}
}

func TestHeaderLimit(t *testing.T) {
	_, addr := serveGuard(t, &Options{Limits: Limits{MaxHeaderBytes: 4 << 10}}, okHandler)
	for _, tt := range []struct {
		size int
		want int
	}{{1 << 10, http.StatusOK}, {16 << 10, http.StatusRequestHeaderFieldsTooLarge}} {
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/", nil)
		req.Header.Set("X-Big", strings.Repeat("a", tt.size))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tt.want {
			t.Errorf("%d-byte header: status %d, want %d", tt.size, resp.StatusCode, tt.want)
		}
	}
}

func TestConnectionCap(t *testing.T) {
	opts := &Options{
		Limits: Limits{MaxConns: 3, ConnReserve: 1, HeaderTimeout: 2 * time.Second, BodyTimeout: 400 * time.Millisecond},
		Exempt: func(r *http.Request) bool { return r.URL.Path == "/healthz" },
	}
	g, addr := serveGuard(t, opts, readBody(okHandler))
	stop := make(chan struct{})
	defer close(stop)
	var slow []net.Conn
	for range 3 {
		c := dial(t, addr)
		startSlowPost(t, c, addr, "/", 1<<20, 50*time.Millisecond, stop)
		slow = append(slow, c)
	}
	waitFor(t, func() bool { return g.Stats().OpenConns == 3 })

	// The fourth connection is the reserve: health is served, the rest
	// gets 503, and the connection is closed after the answer.
	for _, tt := range []struct {
		path string
		want int
	}{{"/healthz", http.StatusOK}, {"/other", http.StatusServiceUnavailable}} {
		c := dial(t, addr)
		fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", tt.path, addr)
		c.SetReadDeadline(time.Now().Add(2 * time.Second))
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("%s on the reserve: %v", tt.path, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tt.want || !resp.Close {
			t.Errorf("%s on the reserve: status %d close %v, want %d and close", tt.path, resp.StatusCode, resp.Close, tt.want)
		}
		if tt.want == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") == "" {
			t.Errorf("%s: 503 without Retry-After", tt.path)
		}
		if _, err := br.ReadByte(); err == nil {
			t.Errorf("%s: the reserve connection stayed open", tt.path)
		}
	}

	// With the reserve held, one more is closed at accept.
	held := dial(t, addr)
	waitFor(t, func() bool { return g.Stats().OpenConns == 4 })
	shed := dial(t, addr)
	if !closedWithin(shed, time.Second) {
		t.Error("a connection beyond the reserve was not closed at once")
	}
	if g.Stats().ShedConns == 0 {
		t.Error("ShedConns = 0 after a connection beyond the reserve")
	}
	held.Close()

	// The slow senders are cut by the body timeout, and the cap frees up.
	for i, c := range slow {
		if !closedWithin(c, 3*time.Second) {
			t.Errorf("slow connection %d still open", i)
		}
	}
	waitFor(t, func() bool { return g.Stats().OpenConns == 0 })
	resp, err := http.Get("http://" + addr + "/other")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("after the flood: status %d, want 200", resp.StatusCode)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestInflightBudget(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, 4)
	// The first body is left unread, so its share stays held until the
	// handler returns; the chunked one is read, and trips the budget.
	hold := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength < 0 {
			readBody(okHandler).ServeHTTP(w, r)
			return
		}
		entered <- struct{}{}
		<-release
		io.WriteString(w, "ok")
	})
	opts := &Options{
		Limits:  Limits{MaxInflightBytes: 1000, HoldFactor: 1},
		JSONRPC: func(r *http.Request) bool { return strings.HasPrefix(r.URL.Path, "/rpc") },
	}
	g, addr := serveGuard(t, opts, hold)
	base := "http://" + addr

	var wg sync.WaitGroup
	var firstStatus int
	wg.Go(func() {
		resp, err := http.Post(base+"/", "application/json", strings.NewReader(strings.Repeat("x", 600)))
		if err != nil {
			t.Error(err)
			return
		}
		resp.Body.Close()
		firstStatus = resp.StatusCode
	})
	<-entered
	if got := g.Stats().InflightBytes; got != 600 {
		t.Errorf("InflightBytes = %d, want 600", got)
	}

	tests := []struct {
		name    string
		path    string
		body    io.Reader
		wantCT  string
		wantRPC bool
	}{
		{name: "content-length", path: "/", body: strings.NewReader(strings.Repeat("y", 600)), wantCT: problem.ContentType},
		{name: "json-rpc", path: "/rpc", body: strings.NewReader(strings.Repeat("y", 600)), wantCT: "application/json", wantRPC: true},
		// No length: counted as read, so it is refused once past 400 bytes.
		{name: "chunked", path: "/", body: io.MultiReader(strings.NewReader(strings.Repeat("z", 300)), strings.NewReader(strings.Repeat("z", 300))), wantCT: problem.ContentType},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, base+tt.path, tt.body)
			req.ContentLength = -1
			if sr, ok := tt.body.(*strings.Reader); ok {
				req.ContentLength = int64(sr.Len())
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != RetryAfter {
				t.Fatalf("status %d Retry-After %q, want 503 and %s: %s", resp.StatusCode, resp.Header.Get("Retry-After"), RetryAfter, b)
			}
			if ct := resp.Header.Get("Content-Type"); ct != tt.wantCT {
				t.Errorf("Content-Type %q, want %q", ct, tt.wantCT)
			}
			if tt.wantRPC {
				var e struct {
					JSONRPC string          `json:"jsonrpc"`
					ID      json.RawMessage `json:"id"`
					Error   struct {
						Code int             `json:"code"`
						Data problem.Problem `json:"data"`
					} `json:"error"`
				}
				if err := json.Unmarshal(b, &e); err != nil || e.JSONRPC != "2.0" || string(e.ID) != "null" || e.Error.Code != -31503 || e.Error.Data.Type != problem.TypeOverloaded {
					t.Errorf("JSON-RPC refusal %s (%v)", b, err)
				}
			} else {
				var p problem.Problem
				if err := json.Unmarshal(b, &p); err != nil || p.Type != problem.TypeOverloaded || p.Status != 503 {
					t.Errorf("problem %s (%v)", b, err)
				}
			}
		})
	}
	close(release)
	wg.Wait()
	if firstStatus != http.StatusOK {
		t.Errorf("admitted request: status %d, want 200", firstStatus)
	}
	waitFor(t, func() bool { return g.Stats().InflightBytes == 0 })
}

// A request's share of the budget is held until its handler returns,
// whatever the handler did with its body: a handler keeps what it decoded
// from the body (and builds from it) until then. While one is held, a
// second request that would not fit gets 503 with Retry-After; the share
// is given back once only. The share is HoldFactor times the body.
func TestInflightHeldUntilHandlerReturns(t *testing.T) {
	tests := []struct {
		name    string
		chunked bool
		use     func(io.ReadCloser) // what the blocked handler does with its body
		want    int64               // held while the handler runs
	}{
		{name: "read to end", use: func(b io.ReadCloser) { io.Copy(io.Discard, b) }, want: 800},
		{name: "read exactly its length", use: func(b io.ReadCloser) { io.ReadFull(b, make([]byte, 200)) }, want: 800},
		{name: "closed unread", use: func(b io.ReadCloser) { b.Close() }, want: 800},
		{name: "read in part", use: func(b io.ReadCloser) { io.ReadFull(b, make([]byte, 100)) }, want: 800},
		{name: "chunked read to end", chunked: true, use: func(b io.ReadCloser) { io.Copy(io.Discard, b) }, want: 800},
		{name: "chunked closed", chunked: true, use: func(b io.ReadCloser) { io.ReadFull(b, make([]byte, 200)); b.Close() }, want: 800},
		{name: "chunked read in part", chunked: true, use: func(b io.ReadCloser) { io.ReadFull(b, make([]byte, 100)) }, want: 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			release := make(chan struct{})
			entered := make(chan struct{}, 1)
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/block" {
					readBody(okHandler).ServeHTTP(w, r)
					return
				}
				tt.use(r.Body)
				entered <- struct{}{}
				<-release
				io.WriteString(w, "done")
			})
			g, addr := serveGuard(t, &Options{Limits: Limits{MaxInflightBytes: 1000, HoldFactor: 4}}, h)
			base := "http://" + addr
			var wg sync.WaitGroup
			defer wg.Wait()
			wg.Go(func() {
				var body io.Reader = strings.NewReader(strings.Repeat("x", 200))
				if tt.chunked {
					body = io.MultiReader(body) // no length: sent chunked
				}
				resp, err := http.Post(base+"/block", "application/json", body)
				if err != nil {
					t.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			})
			<-entered
			if got := g.Stats().InflightBytes; got != tt.want {
				t.Errorf("while the handler runs: InflightBytes = %d, want %d", got, tt.want)
			}
			resp, err := http.Post(base+"/", "application/json", strings.NewReader(strings.Repeat("y", 200)))
			if err != nil {
				close(release)
				t.Fatal(err)
			}
			resp.Body.Close()
			wantStatus := http.StatusOK
			if tt.want+800 > 1000 {
				wantStatus = http.StatusServiceUnavailable
			}
			if resp.StatusCode != wantStatus {
				t.Errorf("a second request while the first is held: status %d, want %d", resp.StatusCode, wantStatus)
			}
			if wantStatus == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") != RetryAfter {
				t.Errorf("503 without Retry-After %s", RetryAfter)
			}
			close(release)
			wg.Wait()
			waitFor(t, func() bool { return g.Stats().InflightBytes <= 0 })
			if got := g.Stats().InflightBytes; got != 0 {
				t.Errorf("after the handler returned: InflightBytes = %d, want 0 (given back more than once?)", got)
			}
		})
	}
}

// A body whose share (HoldFactor times its size) is more than the whole
// budget gets 413 though the body alone would fit.
func TestHoldFactorTooLarge(t *testing.T) {
	called := make(chan struct{}, 1)
	_, addr := serveGuard(t, &Options{Limits: Limits{MaxInflightBytes: 1000, HoldFactor: 4}},
		readBody(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { called <- struct{}{} })))
	for _, n := range []int{250, 251} {
		resp, err := http.Post("http://"+addr+"/", "application/json", strings.NewReader(strings.Repeat("x", n)))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		want := http.StatusOK
		if n > 250 {
			want = http.StatusRequestEntityTooLarge
		}
		if resp.StatusCode != want {
			t.Errorf("%d-byte body under a 1000-byte budget, factor 4: status %d, want %d", n, resp.StatusCode, want)
		}
	}
	if len(called) != 1 {
		t.Errorf("handler called %d times, want 1", len(called))
	}
}

// A body bigger than the whole budget can never be admitted: it gets 413,
// not 503 with Retry-After, which would have its client retry forever.
func TestBodyLargerThanBudget(t *testing.T) {
	opts := &Options{
		Limits:  Limits{MaxInflightBytes: 1000, HoldFactor: 1},
		JSONRPC: func(r *http.Request) bool { return strings.HasPrefix(r.URL.Path, "/rpc") },
	}
	called := make(chan struct{}, 4)
	g, addr := serveGuard(t, opts, readBody(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		called <- struct{}{}
		io.WriteString(w, "ok")
	})))
	tests := []struct {
		name    string
		path    string
		chunked bool
		wantRPC bool
	}{
		{name: "content-length", path: "/"},
		{name: "json-rpc", path: "/rpc", wantRPC: true},
		{name: "chunked", path: "/", chunked: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var body io.Reader = strings.NewReader(strings.Repeat("x", 2000))
			if tt.chunked {
				body = io.MultiReader(body)
			}
			resp, err := http.Post("http://"+addr+tt.path, "application/json", body)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusRequestEntityTooLarge || resp.Header.Get("Retry-After") != "" {
				t.Fatalf("status %d Retry-After %q, want 413 and none: %s", resp.StatusCode, resp.Header.Get("Retry-After"), b)
			}
			var p problem.Problem
			if tt.wantRPC {
				var e struct {
					Error struct {
						Code int             `json:"code"`
						Data problem.Problem `json:"data"`
					} `json:"error"`
				}
				err = json.Unmarshal(b, &e)
				if e.Error.Code != RPCCode(http.StatusRequestEntityTooLarge) {
					t.Errorf("JSON-RPC code %d", e.Error.Code)
				}
				p = e.Error.Data
			} else {
				err = json.Unmarshal(b, &p)
			}
			if err != nil || p.Type != problem.TypeBodyTooLarge || p.Status != http.StatusRequestEntityTooLarge {
				t.Errorf("refusal %s (%v)", b, err)
			}
		})
	}
	if len(called) != 0 {
		t.Errorf("the handler answered %d too-large requests", len(called))
	}
	waitFor(t, func() bool { return g.Stats().InflightBytes == 0 })
}

func TestHostAndOriginRules(t *testing.T) {
	tests := []struct {
		name   string
		opts   Options
		method string
		host   string
		origin string
		want   int
	}{
		{name: "own host write", method: "POST", host: "localhost:8080", want: 200},
		{name: "foreign host write", method: "POST", host: "evil.attacker.test", want: 421},
		{name: "foreign host with port", method: "DELETE", host: "evil.attacker.test:8080", want: 421},
		{name: "wrong port", method: "PUT", host: "127.0.0.1:9090", want: 421},
		{name: "foreign host read", method: "GET", host: "evil.attacker.test", want: 200},
		{name: "foreign host head", method: "HEAD", host: "evil.attacker.test", want: 200},
		{name: "allowed host", opts: Options{AllowHosts: []string{"app.test"}}, method: "POST", host: "app.test:1234", want: 200},
		{name: "not loopback-only", opts: Options{PublicURL: "https://novaos.example.com"}, method: "POST", host: "evil.attacker.test", want: 200},
		{name: "own origin", method: "POST", host: "localhost:8080", origin: "http://localhost:8080", want: 200},
		{name: "foreign origin", method: "POST", host: "localhost:8080", origin: "https://evil.attacker.test", want: 403},
		{name: "null origin", method: "POST", host: "localhost:8080", origin: "null", want: 403},
		{name: "foreign origin read", method: "GET", host: "localhost:8080", origin: "https://evil.attacker.test", want: 200},
		{name: "listed origin", opts: Options{CORSOrigins: []string{"https://app.example.com"}}, method: "POST", host: "localhost:8080", origin: "https://app.example.com", want: 200},
		{name: "foreign origin, public server", opts: Options{PublicURL: "https://novaos.example.com"}, method: "POST", host: "novaos.example.com", origin: "https://evil.attacker.test", want: 403},
		{name: "public origin", opts: Options{PublicURL: "https://novaos.example.com"}, method: "POST", host: "novaos.example.com", origin: "https://novaos.example.com", want: 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := tt.opts
			o.Addr = loopbackAddr(8080)
			g, err := NewGuard(&o)
			if err != nil {
				t.Fatal(err)
			}
			called := false
			h := g.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { called = true }))
			req := httptest.NewRequest(tt.method, "http://localhost:8080/api/v1/agents", nil)
			req.Host = tt.host
			if tt.origin != "" {
				req.Header.Set("Origin", tt.origin)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tt.want {
				t.Fatalf("status %d, want %d: %s", rec.Code, tt.want, rec.Body)
			}
			if called != (tt.want == 200) {
				t.Errorf("handler called: %v", called)
			}
			if tt.want != 200 && rec.Header().Get("Content-Type") != problem.ContentType {
				t.Errorf("refusal Content-Type %q", rec.Header().Get("Content-Type"))
			}
		})
	}
}

func TestCORS(t *testing.T) {
	const listed, other = "https://app.example.com", "https://evil.attacker.test"
	tests := []struct {
		name       string
		cors       []string
		method     string
		origin     string
		preflight  bool
		wantStatus int
		wantACAO   string
		wantVary   bool
	}{
		{name: "off: preflight", method: "OPTIONS", origin: listed, preflight: true, wantStatus: 200},
		{name: "off: read", method: "GET", origin: listed, wantStatus: 200},
		{name: "listed preflight", cors: []string{listed}, method: "OPTIONS", origin: listed, preflight: true, wantStatus: 204, wantACAO: listed, wantVary: true},
		{name: "other preflight", cors: []string{listed}, method: "OPTIONS", origin: other, preflight: true, wantStatus: 403, wantVary: true},
		{name: "listed read", cors: []string{listed}, method: "GET", origin: listed, wantStatus: 200, wantACAO: listed, wantVary: true},
		{name: "other read", cors: []string{listed}, method: "GET", origin: other, wantStatus: 200, wantVary: true},
		{name: "no origin", cors: []string{listed}, method: "GET", wantStatus: 200, wantVary: true},
		{name: "listed write", cors: []string{listed}, method: "POST", origin: listed, wantStatus: 200, wantACAO: listed, wantVary: true},
		{name: "other write", cors: []string{listed}, method: "POST", origin: other, wantStatus: 403, wantVary: true},
		{name: "plain OPTIONS", cors: []string{listed}, method: "OPTIONS", origin: listed, wantStatus: 200, wantACAO: listed, wantVary: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := NewGuard(&Options{Addr: loopbackAddr(8080), CORSOrigins: tt.cors})
			if err != nil {
				t.Fatal(err)
			}
			h := g.Handler(okHandler)
			req := httptest.NewRequest(tt.method, "http://localhost:8080/agents/echo", nil)
			if tt.origin != "" {
				req.Header.Set("Origin", tt.origin)
			}
			if tt.preflight {
				req.Header.Set("Access-Control-Request-Method", "POST")
				req.Header.Set("Access-Control-Request-Headers", "content-type, a2a-version")
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tt.wantStatus {
				t.Errorf("status %d, want %d", rec.Code, tt.wantStatus)
			}
			if got := rec.Header().Get("Access-Control-Allow-Origin"); got != tt.wantACAO {
				t.Errorf("Access-Control-Allow-Origin %q, want %q", got, tt.wantACAO)
			}
			if got := strings.Contains(strings.Join(rec.Header().Values("Vary"), ","), "Origin"); got != tt.wantVary {
				t.Errorf("Vary: Origin %v, want %v", got, tt.wantVary)
			}
			if tt.wantStatus == 204 {
				if rec.Header().Get("Access-Control-Allow-Methods") == "" || rec.Header().Get("Access-Control-Allow-Headers") != "content-type, a2a-version" {
					t.Errorf("preflight headers %v", rec.Header())
				}
			}
			if tt.wantACAO == "" {
				for k := range rec.Header() {
					if strings.HasPrefix(k, "Access-Control-") {
						t.Errorf("CORS header %s sent to an unlisted origin", k)
					}
				}
			}
		})
	}
}

func TestDefaultLimits(t *testing.T) {
	l := Limits{}.withDefaults()
	if l.MaxConns <= 0 || l.MaxConns > maxDefaultConns || l.MaxInflightBytes <= 0 || l.BodyTimeout != DefaultBodyTimeout ||
		l.BodyMinRate != DefaultBodyMinRate || l.IdleTimeout != DefaultIdleTimeout || l.MaxHeaderBytes != DefaultMaxHeaderBytes || l.HoldFactor != DefaultHoldFactor {
		t.Errorf("defaults %+v", l)
	}
	if files, ok := openFileLimit(); ok && uint64(l.MaxConns+l.ConnReserve) >= files {
		t.Errorf("MaxConns %d + reserve %d not below the file limit %d", l.MaxConns, l.ConnReserve, files)
	}
	off := Limits{HeaderTimeout: -1, BodyTimeout: -1, BodyMinRate: -1, IdleTimeout: -1, MaxConns: -1, ConnReserve: -1, MaxInflightBytes: -1}.withDefaults()
	if off != (Limits{MaxHeaderBytes: DefaultMaxHeaderBytes, HoldFactor: DefaultHoldFactor}) {
		t.Errorf("all off: %+v", off)
	}
	for _, tt := range []struct {
		files uint64
		want  int
	}{{1024, 768}, {1 << 20, maxDefaultConns}, {1, 1}, {^uint64(0), maxDefaultConns}} {
		if got := capFraction(tt.files); got != tt.want {
			t.Errorf("capFraction(%d) = %d, want %d", tt.files, got, tt.want)
		}
	}
}

// flushRecorder is a ResponseWriter that flushes, as net/http's does.
type flushRecorder struct {
	http.ResponseWriter
	flushes int
}

func (w *flushRecorder) Flush() { w.flushes++ }

// unwrapper hides a Flusher behind Unwrap, as middleware does.
type unwrapper struct{ w http.ResponseWriter }

func (u *unwrapper) Header() http.Header         { return u.w.Header() }
func (u *unwrapper) Write(p []byte) (int, error) { return u.w.Write(p) }
func (u *unwrapper) WriteHeader(code int)        { u.w.WriteHeader(code) }
func (u *unwrapper) Unwrap() http.ResponseWriter { return u.w }

// A stream flushes once per event: budgetWriter's Flush reaches the
// connection's directly when it can, and through Unwrap when it must.
func TestBudgetWriterFlush(t *testing.T) {
	tests := []struct {
		name       string
		wrap       func(*flushRecorder) http.ResponseWriter
		wantAllocs float64 // -1: not checked
	}{
		{name: "flusher", wrap: func(f *flushRecorder) http.ResponseWriter { return f }, wantAllocs: 0},
		{name: "behind unwrap", wrap: func(f *flushRecorder) http.ResponseWriter { return &unwrapper{f} }, wantAllocs: -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			under := &flushRecorder{ResponseWriter: httptest.NewRecorder()}
			bw := &budgetWriter{ResponseWriter: tt.wrap(under), b: &body{}}
			allocs := testing.AllocsPerRun(100, bw.Flush)
			if tt.wantAllocs >= 0 && allocs != tt.wantAllocs {
				t.Errorf("Flush allocates %v times per call, want %v", allocs, tt.wantAllocs)
			}
			if under.flushes == 0 || !bw.wrote {
				t.Errorf("Flush did not reach the connection: %d flushes, wrote %v", under.flushes, bw.wrote)
			}
		})
	}
}
