package app_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/internal/app"
	"novaos.dev/novaos/internal/httpapi"
	"novaos.dev/novaos/problem"
	"novaos.dev/novaos/registry"
)

// rawConn opens a connection the test closes.
func rawConn(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// trickle sends the headers of a SendMessage POST announcing size bytes,
// then one byte every gap until stop is closed or a write fails: a sender
// holding its connection with a body that never finishes.
func trickle(c net.Conn, host string, size int, gap time.Duration, stop <-chan struct{}) error {
	if _, err := fmt.Fprintf(c, "POST /agents/echo HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nA2A-Version: 1.0\r\nContent-Length: %d\r\n\r\n", host, size); err != nil {
		return err
	}
	go func() {
		tick := time.NewTicker(gap)
		defer tick.Stop()
		for range size {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			if _, err := c.Write([]byte{' '}); err != nil {
				return
			}
		}
	}()
	return nil
}

// closedBy reports whether the server closes c within d (after any answer
// it writes).
func closedBy(c net.Conn, d time.Duration) bool {
	c.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, c)
	ne, ok := err.(net.Error)
	return !ok || !ne.Timeout()
}

// fresh makes one request on a new connection, which it closes.
func fresh(method, url string, body io.Reader, hdr map[string]string) (int, http.Header, []byte, error) {
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		return 0, nil, nil, err
	}
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b, err
}

// The first defect: only the header timeout was set, so a body
// trickled at a byte a second held its connection for as long as the
// sender liked.
func TestSlowBodyIsCut(t *testing.T) {
	srv := start(t, &app.Options{DataDir: t.TempDir(),
		HTTP: app.HTTPOptions{Limits: httpapi.Limits{BodyTimeout: 300 * time.Millisecond, BodyMinRate: 1000}},
	})
	c := rawConn(t, srv.Addr())
	stop := make(chan struct{})
	defer close(stop)
	began := time.Now()
	if err := trickle(c, srv.Addr(), 1<<20, 20*time.Millisecond, stop); err != nil {
		t.Fatal(err)
	}
	// A minute only bounds a failure: the cut comes after 300ms.
	if !closedBy(c, time.Minute) {
		t.Fatalf("a body trickled at 50 B/s still open after %v; want it cut after the 300ms body timeout", time.Since(began))
	}
}

// A stream outlives the body timeout: the read deadline goes once the
// body is read.
func TestStreamOutlivesBodyTimeout(t *testing.T) {
	srv := start(t, &app.Options{DataDir: t.TempDir(),
		HTTP:   app.HTTPOptions{Limits: httpapi.Limits{BodyTimeout: 100 * time.Millisecond, HeaderTimeout: 100 * time.Millisecond}},
		Agents: app.AgentOptions{TCKStreamingTimeout: 800 * time.Millisecond},
	})
	msg := a2a.NewMessage(a2a.RoleUser, a2a.TextPart("slow"))
	msg.MessageID = "tck-delayed-complete-" + a2a.NewID()
	p, err := json.Marshal(a2a.SendMessageRequest{Message: msg})
	if err != nil {
		t.Fatal(err)
	}
	body := `{"jsonrpc":"2.0","id":1,"method":"SendStreamingMessage","params":` + string(p) + `}`
	req, _ := http.NewRequest(http.MethodPost, srv.URL()+"/agents/tck", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set(a2a.HeaderVersion, "1.0")
	began := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("stream cut after %v: %v", time.Since(began), err)
	}
	if !strings.Contains(string(b), "TASK_STATE_COMPLETED") {
		t.Fatalf("stream ended after %v without the final state: %s", time.Since(began), b)
	}
	if d := time.Since(began); d < 800*time.Millisecond {
		t.Errorf("stream took %v, want it to outlast the 100ms body timeout by the agent's 800ms", d)
	}
}

// The options reach the listener: idle keep-alive connections are closed
// and a large header block is refused.
func TestIdleAndHeaderLimits(t *testing.T) {
	srv := start(t, &app.Options{DataDir: t.TempDir(),
		HTTP: app.HTTPOptions{Limits: httpapi.Limits{IdleTimeout: 200 * time.Millisecond, MaxHeaderBytes: 4 << 10}},
	})
	status, _, _, err := fresh(http.MethodGet, srv.URL()+"/healthz", nil, map[string]string{"X-Big": strings.Repeat("a", 16<<10)})
	if err != nil || status != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("16 KiB header: status %d, %v; want 431", status, err)
	}

	c := rawConn(t, srv.Addr())
	fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: %s\r\n\r\n", srv.Addr())
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	// Only the idle timeout closes it before the read deadline; the
	// default one it replaces is a minute.
	c.SetReadDeadline(time.Now().Add(httpapi.DefaultIdleTimeout / 2))
	if _, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("idle keep-alive connection: read %v, want EOF (closed by the server)", err)
	}
}

// A bounded flood of slow-body connections fills the cap; /healthz still
// answers 200, other requests get 503 with Retry-After, and once the slow
// connections are gone the cap frees up. The flood is larger than the cap
// and its reserve: the excess is closed at accept, and the flood's own
// requests on the reserve get 503 and leave, so a health check may need a
// retry in the first moments. The body timeout is longer than the checks
// can take on any machine, so the cap stays full while they run; that the
// server cuts such bodies is TestSlowBodyIsCut's.
func TestConnectionFloodHealthzAnswers(t *testing.T) {
	const maxConns, flood, bodyTimeout = 16, 48, time.Minute
	srv := start(t, &app.Options{DataDir: t.TempDir(), HTTP: app.HTTPOptions{Limits: httpapi.Limits{
		MaxConns: maxConns, ConnReserve: 4, HeaderTimeout: time.Second,
		BodyTimeout: bodyTimeout, BodyMinRate: 1000,
	}},
	})
	card := srv.URL() + "/agents/echo/.well-known/agent-card.json"
	stop := make(chan struct{})
	var stopOnce sync.Once
	endFlood := func() { stopOnce.Do(func() { close(stop) }) }
	defer endFlood()
	conns := make([]net.Conn, flood)
	began := time.Now()
	for i := range conns {
		conns[i] = rawConn(t, srv.Addr())
		if err := trickle(conns[i], srv.Addr(), 1<<20, 50*time.Millisecond, stop); err != nil {
			t.Logf("flood connection %d: %v", i, err) // closed at accept: fine
		}
	}

	// retry makes fresh requests until one gets a status: a connection
	// closed at accept is no answer.
	retry := func(url string) (int, http.Header, []byte) {
		t.Helper()
		for {
			status, hdr, body, err := fresh(http.MethodGet, url, nil, nil)
			if err == nil {
				return status, hdr, body
			}
			if time.Since(began) > bodyTimeout {
				t.Fatalf("GET %s: no answer before the flood's body timeout: %v", url, err)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	// The cap is full: a plain read is refused on a reserve connection.
	status, hdr, body := retry(card)
	if status != http.StatusServiceUnavailable || hdr.Get("Retry-After") == "" {
		t.Fatalf("card at the cap: status %d, Retry-After %q; want 503 with Retry-After: %s", status, hdr.Get("Retry-After"), body)
	}
	var p problem.Problem
	if err := json.Unmarshal(body, &p); err != nil || p.Type != problem.TypeOverloaded {
		t.Errorf("503 body %s, want an overloaded problem", body)
	}
	for i := range 3 {
		if status, _, body := retry(srv.URL() + "/healthz"); status != http.StatusOK {
			t.Fatalf("healthz %d during the flood: status %d: %s", i, status, body)
		}
	}
	if held := time.Since(began); held > bodyTimeout {
		t.Fatalf("the checks ended %v after the flood began, after its body timeout: the cap was no longer full", held)
	}

	endFlood()
	for _, c := range conns {
		c.Close()
	}
	deadline := time.Now().Add(time.Minute)
	for {
		status, _, _, err := fresh(http.MethodGet, card, nil, nil)
		if err == nil && status == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the flood: card status %d, %v; want 200", status, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// heapPeak samples the heap's object bytes until stop is closed.
func heapPeak(stop <-chan struct{}) <-chan uint64 {
	out := make(chan uint64, 1)
	go func() {
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		var peak uint64
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			metrics.Read(s)
			peak = max(peak, s[0].Value.Uint64())
			select {
			case <-stop:
				out <- peak
				return
			case <-tick.C:
			}
		}
	}()
	return out
}

// gatedBody is a SendMessage body whose text is size bytes: it counts
// itself started at its first read (its request was admitted) and holds
// its last piece back until gate is closed.
type gatedBody struct {
	r       io.Reader
	started func()
	gate    <-chan struct{}
	first   bool
	left    int // bytes before the held-back piece
}

func (b *gatedBody) Read(p []byte) (int, error) {
	if !b.first {
		b.first = true
		b.started()
	}
	if b.left == 0 {
		<-b.gate
		b.left = -1
	}
	if b.left > 0 {
		p = p[:min(len(p), b.left)]
	}
	n, err := b.r.Read(p)
	if b.left > 0 {
		b.left -= n
	}
	return n, err
}

// sendGated sends a SendMessage whose text is size bytes, with Expect:
// 100-continue so that a refusal comes before the body is sent, and
// returns the status, the Retry-After header and the body.
func sendGated(url string, size int, started func(), gate <-chan struct{}) (int, string, []byte, error) {
	prefix := `{"jsonrpc":"2.0","id":7,"method":"SendMessage","params":{"message":{"messageId":"` + a2a.NewID() +
		`","role":"ROLE_USER","parts":[{"text":"`
	suffix := `"}]}}}`
	all := io.MultiReader(strings.NewReader(prefix), io.LimitReader(repeatX{}, int64(size)), strings.NewReader(suffix))
	n := len(prefix) + size + len(suffix)
	body := &gatedBody{r: all, started: started, gate: gate, left: n - 1}
	req, err := http.NewRequest(http.MethodPost, url, body)
	if err != nil {
		return 0, "", nil, err
	}
	req.ContentLength = int64(n)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(a2a.HeaderVersion, "1.0")
	req.Header.Set("Expect", "100-continue")
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true, ExpectContinueTimeout: time.Minute}}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Retry-After"), b, err
}

// repeatX is an endless text of x.
type repeatX struct{}

func (repeatX) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	return len(p), nil
}

// The in-flight budget bounds what the admitted requests hold, not only
// their bodies: each holds HoldFactor times its body until its handler
// returns. Twelve 4 MiB SendMessages arrive at once under a budget of two
// shares; the admitted ones are held (their last byte kept back) until
// every request has been admitted or refused, so exactly two run and ten
// get 503 with Retry-After and a JSON-RPC error, whatever the machine's
// speed. The heap's growth stays within twice the budget. Before, a body
// counted once and only until it was read: every request was admitted
// and the heap grew by five to eight times each body.
func TestInflightBudgetBoundsHeap(t *testing.T) {
	const (
		size       = 4 << 20
		concurrent = 12
		share      = (size + 4096) * httpapi.DefaultHoldFactor
		budget     = 2*share + share/2
	)
	defer debug.SetGCPercent(debug.SetGCPercent(25)) // keep garbage out of the peak
	srv := start(t, &app.Options{DataDir: filepath.Join(t.TempDir(), "data"),
		HTTP:   app.HTTPOptions{Limits: httpapi.Limits{MaxInflightBytes: budget}},
		Agents: app.AgentOptions{MaxBodyBytes: size + 4096},
	})
	url := srv.URL() + "/agents/echo"
	open := make(chan struct{})
	close(open)
	if status, _, body, err := sendGated(url, 1000, func() {}, open); err != nil || status != http.StatusOK {
		t.Fatalf("warm-up: %d %v %s", status, err, body)
	}

	debug.FreeOSMemory()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(sample)
	base := sample[0].Value.Uint64()

	stop := make(chan struct{})
	peakc := heapPeak(stop)
	var ok, refused, decided atomic.Int32
	gate := make(chan struct{})
	decide := func() {
		if decided.Add(1) == concurrent {
			close(gate)
		}
	}
	var wg sync.WaitGroup
	for range concurrent {
		wg.Go(func() {
			status, retry, body, err := sendGated(url, size, decide, gate)
			switch {
			case err != nil:
				t.Errorf("send: %v", err)
			case status == http.StatusOK:
				ok.Add(1)
			case status == http.StatusServiceUnavailable:
				refused.Add(1)
				decide()
				var e struct {
					ID    json.RawMessage `json:"id"`
					Error struct {
						Code    int    `json:"code"`
						Message string `json:"message"`
					} `json:"error"`
				}
				if retry == "" || json.Unmarshal(body, &e) != nil || e.Error.Code != httpapi.RPCCode(503) || string(e.ID) != "null" {
					t.Errorf("503 with Retry-After %q and body %.200s; want Retry-After and a JSON-RPC error %d", retry, body, httpapi.RPCCode(503))
				}
			default:
				t.Errorf("status %d: %.200s", status, body)
			}
		})
	}
	wg.Wait()
	close(stop)
	peak := <-peakc
	grew := int64(peak) - int64(base)
	t.Logf("%d admitted, %d refused; heap peak %d MiB above the %d MiB before, budget %d MiB", ok.Load(), refused.Load(), grew>>20, base>>20, budget>>20)
	if ok.Load() != 2 || refused.Load() != concurrent-2 {
		t.Errorf("%d admitted and %d refused of %d concurrent %d MiB bodies with a budget of two shares: want 2 and %d", ok.Load(), refused.Load(), concurrent, size>>20, concurrent-2)
	}
	if limit := int64(2 * budget); grew > limit {
		t.Errorf("heap peak grew %d MiB, want at most twice the %d MiB budget", grew>>20, budget>>20)
	}
}

// The DNS-rebinding shape: a page on another site re-points its name at
// 127.0.0.1, and its writes arrive from loopback with its own name in
// Host. In loopback-only mode they are refused; reads are not.
func TestHostCheckOnWrites(t *testing.T) {
	srv := start(t, &app.Options{DataDir: t.TempDir(), HTTP: app.HTTPOptions{AllowHosts: []string{"proxy.test"}}})
	agentBody := func(name string) io.Reader {
		return strings.NewReader(`{"name":"` + name + `","url":"https://` + name + `.agents.example.com/a2a"}`)
	}
	rpcBody := func() io.Reader {
		return strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"nope"}}`)
	}
	_, port, _ := net.SplitHostPort(srv.Addr())
	tests := []struct {
		name       string
		method     string
		path       string
		body       func() io.Reader
		host       string
		wantStatus int
		wantRPC    bool
	}{
		{name: "registry write, foreign Host", method: "POST", path: registry.APIPath, body: func() io.Reader { return agentBody("evil") }, host: "evil.attacker.test", wantStatus: 421},
		{name: "registry write, foreign Host with our port", method: "POST", path: registry.APIPath, body: func() io.Reader { return agentBody("evil2") }, host: "evil.attacker.test:" + port, wantStatus: 421},
		{name: "registry delete, foreign Host", method: "DELETE", path: registry.APIPath + "/anything", host: "evil.attacker.test", wantStatus: 421},
		{name: "agent call, foreign Host", method: "POST", path: "/agents/echo", body: rpcBody, host: "evil.attacker.test", wantStatus: 421, wantRPC: true},
		{name: "registry read, foreign Host", method: "GET", path: registry.APIPath, host: "evil.attacker.test", wantStatus: 200},
		{name: "registry write, localhost", method: "POST", path: registry.APIPath, body: func() io.Reader { return agentBody("good") }, host: "localhost:" + port, wantStatus: 201},
		{name: "registry write, wrong port", method: "POST", path: registry.APIPath, body: func() io.Reader { return agentBody("port") }, host: "127.0.0.1:1", wantStatus: 421},
		{name: "registry write, allowed host", method: "POST", path: registry.APIPath, body: func() io.Reader { return agentBody("proxied") }, host: "proxy.test", wantStatus: 201},
		{name: "agent call, own Host", method: "POST", path: "/agents/echo", body: rpcBody, host: srv.Addr(), wantStatus: 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var body io.Reader
			if tt.body != nil {
				body = tt.body()
			}
			status, hdr, b, err := fresh(tt.method, srv.URL()+tt.path, body, map[string]string{
				"Host": tt.host, "Content-Type": "application/json", a2a.HeaderVersion: "1.0"})
			if err != nil {
				t.Fatal(err)
			}
			if status != tt.wantStatus {
				t.Fatalf("status %d, want %d: %s", status, tt.wantStatus, b)
			}
			if status != 421 {
				return
			}
			if tt.wantRPC {
				var e struct {
					Error struct{ Code int } `json:"error"`
				}
				if json.Unmarshal(b, &e) != nil || e.Error.Code != httpapi.RPCCode(421) {
					t.Errorf("refusal %s, want a JSON-RPC error %d", b, httpapi.RPCCode(421))
				}
				return
			}
			var p problem.Problem
			if hdr.Get("Content-Type") != problem.ContentType || json.Unmarshal(b, &p) != nil || p.Type != problem.TypeMisdirected {
				t.Errorf("refusal %s (%s), want a misdirected-request problem", b, hdr.Get("Content-Type"))
			}
		})
	}
	c := registryClient(t, srv)
	for _, name := range []string{"evil", "evil2", "port"} {
		if _, err := c.Get(t.Context(), name); err == nil {
			t.Errorf("agent %q was registered through a refused request", name)
		}
	}
}

// A browser's cross-site "simple" POST (text/plain, foreign Origin, no
// preflight) is not acted upon; listed origins get CORS headers, others
// none.
func TestCrossOriginWrites(t *testing.T) {
	const listed, foreign = "https://app.example.com", "https://evil.attacker.test"
	srv := start(t, &app.Options{DataDir: t.TempDir(), HTTP: app.HTTPOptions{CORSOrigins: []string{listed}}})
	send := `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"` + a2a.NewID() + `","role":"ROLE_USER","parts":[{"text":"hi"}]}}}`
	tests := []struct {
		name       string
		method     string
		origin     string
		preflight  bool
		wantStatus int
		wantACAO   string
	}{
		{name: "foreign simple POST", method: "POST", origin: foreign, wantStatus: 403},
		{name: "null origin POST", method: "POST", origin: "null", wantStatus: 403},
		{name: "listed POST", method: "POST", origin: listed, wantStatus: 200, wantACAO: listed},
		{name: "own origin POST", method: "POST", origin: srv.URL(), wantStatus: 200},
		{name: "no origin POST", method: "POST", wantStatus: 200},
		{name: "listed preflight", method: "OPTIONS", origin: listed, preflight: true, wantStatus: 204, wantACAO: listed},
		{name: "foreign preflight", method: "OPTIONS", origin: foreign, preflight: true, wantStatus: 403},
		{name: "foreign card read", method: "GET", origin: foreign, wantStatus: 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url := srv.URL() + "/agents/echo"
			var body io.Reader
			// A refused write is the browser's "simple" request (text/plain,
			// no preflight); an accepted one carries the JSON type the A2A
			// endpoint requires.
			hdr := map[string]string{"Content-Type": "text/plain", a2a.HeaderVersion: "1.0"}
			if tt.wantStatus == 200 {
				hdr["Content-Type"] = "application/json"
			}
			if tt.method == "POST" {
				body = strings.NewReader(send)
			}
			if tt.method == "GET" {
				url += "/.well-known/agent-card.json"
			}
			if tt.origin != "" {
				hdr["Origin"] = tt.origin
			}
			if tt.preflight {
				hdr["Access-Control-Request-Method"] = "POST"
				hdr["Access-Control-Request-Headers"] = "content-type, a2a-version"
			}
			status, h, b, err := fresh(tt.method, url, body, hdr)
			if err != nil {
				t.Fatal(err)
			}
			if status != tt.wantStatus {
				t.Fatalf("status %d, want %d: %s", status, tt.wantStatus, b)
			}
			if got := h.Get("Access-Control-Allow-Origin"); got != tt.wantACAO {
				t.Errorf("Access-Control-Allow-Origin %q, want %q", got, tt.wantACAO)
			}
			if status == 403 && !strings.Contains(string(b), "cross-origin") {
				t.Errorf("403 body %s does not say why", b)
			}
		})
	}
}

func TestLimitOptionsChecked(t *testing.T) {
	tests := []struct {
		name string
		opts app.Options
	}{
		{name: "budget below one body", opts: app.Options{HTTP: app.HTTPOptions{Limits: httpapi.Limits{MaxInflightBytes: 1 << 20}}, Agents: app.AgentOptions{MaxBodyBytes: 4 << 20}}},
		{name: "wildcard CORS", opts: app.Options{HTTP: app.HTTPOptions{CORSOrigins: []string{"*"}}}},
		{name: "allowed host with a path", opts: app.Options{HTTP: app.HTTPOptions{AllowHosts: []string{"proxy.test/x"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.DataDir = t.TempDir()
			tt.opts.Addr = "127.0.0.1:0"
			srv, err := app.New(t.Context(), &tt.opts)
			if err == nil {
				err = srv.Start(t.Context())
				srv.Shutdown(t.Context())
			}
			if err == nil {
				t.Fatal("accepted, want an error")
			}
		})
	}
}
