package httpapi_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/internal/httpapi"
)

// bound is how long a test waits for something that must happen, as a
// failure bound only: no assertion depends on how fast it happens.
const bound = 30 * time.Second

// inProcess is a client whose requests h serves in process.
func inProcess(h http.Handler) *http.Client {
	return &http.Client{Transport: httpapi.HandlerTransport(h)}
}

// exchange is what a client observes of one call.
type exchange struct {
	Status        int
	ContentLength int64
	Header        map[string]string // the headers the case names
	Body          string
	NoBody        bool // Response.Body is http.NoBody
}

// Whatever a client observes of a unary call is the same in process as
// over a TCP connection to an http.Server: the table runs both.
func TestHandlerTransportLikeServer(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"path":%q,"query":%q}`, r.URL.Path, r.URL.RawQuery)
	})
	mux.HandleFunc("POST /echo", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Length", fmt.Sprint(r.ContentLength))
		w.Header().Set("X-Type", r.Header.Get("Content-Type"))
		w.WriteHeader(http.StatusCreated)
		io.Copy(w, r.Body)
	})
	mux.HandleFunc("GET /sniff", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "<html><body>hi</body></html>")
	})
	mux.HandleFunc("GET /length", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "5")
		io.WriteString(w, "12345")
	})
	mux.HandleFunc("GET /size/{n}", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.PathValue("n"))
		w.Write([]byte(strings.Repeat("x", n)))
	})
	mux.HandleFunc("GET /streamed-length", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "10000")
		for range 10 {
			w.Write([]byte(strings.Repeat("y", 1000)))
		}
	})
	mux.HandleFunc("GET /status/{code}", func(w http.ResponseWriter, r *http.Request) {
		code, _ := strconv.Atoi(r.PathValue("code"))
		w.WriteHeader(code)
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, "body")
	})
	mux.HandleFunc("GET /nothing", func(w http.ResponseWriter, r *http.Request) {})
	mux.HandleFunc("GET /no-content", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
		if _, err := w.Write([]byte("x")); !errors.Is(err, http.ErrBodyNotAllowed) {
			panic(fmt.Sprintf("Write on a 204: %v", err))
		}
	})
	mux.HandleFunc("GET /header-changed-late", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Early", "1")
		w.WriteHeader(http.StatusAccepted)
		w.Header().Set("X-Late", "1")    // ignored once the header is sent
		w.WriteHeader(http.StatusTeapot) // ignored: superfluous
		io.WriteString(w, "ok")
	})
	mux.HandleFunc("GET /early-hints", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", "</style.css>; rel=preload")
		w.WriteHeader(http.StatusEarlyHints)
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, "after hints")
	})
	mux.HandleFunc("HEAD /head", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "dropped")
	})
	mux.HandleFunc("HEAD /head-flushed", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "dropped")
		w.(http.Flusher).Flush()
		io.WriteString(w, "dropped too")
	})
	mux.HandleFunc("GET /large", func(w http.ResponseWriter, r *http.Request) {
		for i := range 1000 {
			fmt.Fprintf(w, "line %04d %s\n", i, strings.Repeat("x", 100))
		}
	})

	tests := []struct {
		name    string
		method  string
		path    string
		body    string
		chunked bool     // the body's length unknown to the client
		headers []string // response headers to compare
	}{
		{"json", "GET", "/json?a=1&b=%20", "", false, []string{"Content-Type"}},
		{"body with a length", "POST", "/echo", `{"x":1}`, false, []string{"X-Length", "X-Type"}},
		{"body without a length", "POST", "/echo", "abcdef", true, []string{"X-Length", "X-Type"}},
		{"sniffed type", "GET", "/sniff", "", false, []string{"Content-Type"}},
		{"content length set", "GET", "/length", "", false, []string{"Content-Length"}},
		{"nothing written", "GET", "/nothing", "", false, []string{"Content-Length", "Content-Type"}},
		{"204", "GET", "/no-content", "", false, []string{"Content-Length"}},
		{"header changed late", "GET", "/header-changed-late", "", false, []string{"X-Early", "X-Late"}},
		{"1xx dropped", "GET", "/early-hints", "", false, []string{"Content-Type"}},
		{"HEAD", "HEAD", "/head", "", false, []string{"Content-Type"}},
		{"HEAD flushed", "HEAD", "/head-flushed", "", false, []string{"Content-Type", "Content-Length"}},
		{"not found", "GET", "/missing", "", false, []string{"Content-Type"}},
		{"wrong method", "DELETE", "/json", "", false, []string{"Allow"}},
		{"large", "GET", "/large", "", false, nil},
		{"2048 bytes", "GET", "/size/2048", "", false, nil},
		{"2049 bytes", "GET", "/size/2049", "", false, nil},
		{"4096 bytes", "GET", "/size/4096", "", false, nil},
		{"4097 bytes", "GET", "/size/4097", "", false, nil},
		{"streamed with a length", "GET", "/streamed-length", "", false, nil},
		{"status 999", "GET", "/status/999", "", false, nil},
		{"status 100", "GET", "/status/100", "", false, nil},
		{"status 199", "GET", "/status/199", "", false, nil},
	}
	srv := httptest.NewUnstartedServer(mux)
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the superfluous WriteHeader is on purpose
	srv.Start()
	defer srv.Close()
	call := func(t *testing.T, c *http.Client, base, method, path, body string, chunked bool, headers []string) exchange {
		t.Helper()
		var r io.Reader
		switch {
		case chunked:
			r = io.MultiReader(strings.NewReader(body))
		case body != "":
			r = strings.NewReader(body)
		}
		req, err := http.NewRequest(method, base+path, r)
		if err != nil {
			t.Fatal(err)
		}
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		got := exchange{Status: resp.StatusCode, ContentLength: resp.ContentLength, Body: string(b), NoBody: resp.Body == http.NoBody, Header: map[string]string{}}
		for _, h := range headers {
			got.Header[h] = resp.Header.Get(h)
		}
		return got
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := call(t, srv.Client(), srv.URL, tt.method, tt.path, tt.body, tt.chunked, tt.headers)
			got := call(t, inProcess(mux), "http://agents.internal", tt.method, tt.path, tt.body, tt.chunked, tt.headers)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("in process vs. over TCP (-server +in-process):\n%s", diff)
			}
		})
	}
}

// The handler sees a request as a server would have read it.
func TestHandlerTransportRequest(t *testing.T) {
	type seen struct {
		Method, Host, RemoteAddr, RequestURI, Path, Query, Proto string
		URLHost, Scheme                                          string
		Auth, Custom                                             string
		TLS                                                      bool
		ContentLength                                            int64
		Body                                                     string
	}
	var got seen
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = seen{r.Method, r.Host, r.RemoteAddr, r.RequestURI, r.URL.Path, r.URL.RawQuery, r.Proto,
			r.URL.Host, r.URL.Scheme, r.Header.Get("Authorization"), r.Header.Get("X-Custom"), r.TLS != nil, r.ContentLength, string(b)}
	})
	tests := []struct {
		name  string
		build func() *http.Request
		want  seen
	}{
		{"host from the URL", func() *http.Request {
			r, _ := http.NewRequest("POST", "https://agent.example:8443/agents/echo/x%2Fy?q=1", strings.NewReader("hello"))
			r.Header.Set("Authorization", "Bearer t")
			r.Header.Set("X-Custom", "v")
			return r
		}, seen{Method: "POST", Host: "agent.example:8443", RemoteAddr: "127.0.0.1:0", RequestURI: "/agents/echo/x%2Fy?q=1", Path: "/agents/echo/x/y", Query: "q=1",
			Proto: "HTTP/1.1", Auth: "Bearer t", Custom: "v", ContentLength: 5, Body: "hello"}},
		{"host set on the request", func() *http.Request {
			r, _ := http.NewRequest("GET", "http://127.0.0.1:8080/", nil)
			r.Host = "novaos.example.com"
			return r
		}, seen{Method: "GET", Host: "novaos.example.com", RemoteAddr: "127.0.0.1:0", RequestURI: "/", Path: "/", Proto: "HTTP/1.1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := tt.build()
			resp, err := inProcess(h).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("request as the handler saw it (-want +got):\n%s", diff)
			}
			if resp.Request != req {
				t.Errorf("Response.Request is not the caller's request")
			}
		})
	}
}

// readFrame reads one SSE frame (up to its blank line).
func readFrame(r *bufio.Reader) (string, error) {
	var b strings.Builder
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return b.String(), err
		}
		if line == "\n" {
			return b.String(), nil
		}
		b.WriteString(line)
	}
}

// An SSE frame arrives when it is written and flushed: the handler does
// not write the second until the client has read the first, which only
// works if the first did not wait for more.
func TestHandlerTransportStreamsFrames(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	readOne := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "id: 1\ndata: one\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-readOne:
		case <-r.Context().Done():
			return
		}
		io.WriteString(w, "id: 2\ndata: two\n\n")
		w.(http.Flusher).Flush()
	})
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://agents.internal/events", nil)
	resp, err := inProcess(h).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.Header.Get("Content-Type") != "text/event-stream" || resp.ContentLength != -1 {
		t.Errorf("response %v, length %d", resp.Header, resp.ContentLength)
	}
	br := bufio.NewReader(resp.Body)
	var frames []string
	for i := range 2 {
		f, err := readFrame(br)
		if err != nil {
			t.Fatalf("frame %d: %v (after %q)", i+1, err, frames)
		}
		frames = append(frames, f)
		if i == 0 {
			close(readOne)
		}
	}
	if _, err := br.ReadByte(); err != io.EOF {
		t.Errorf("after the last frame: %v, want EOF", err)
	}
	if diff := cmp.Diff([]string{"id: 1\ndata: one\n", "id: 2\ndata: two\n"}, frames); diff != "" {
		t.Errorf("frames (-want +got):\n%s", diff)
	}
}

// handlerEnd is how a streaming handler ended.
type handlerEnd struct {
	writeErr error
	ctxErr   error
}

// streamer writes frames until a write fails, then reports how it ended.
func streamer(ended chan<- handlerEnd) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		var err error
		for i := 0; err == nil; i++ {
			_, err = fmt.Fprintf(w, "data: %d\n\n", i)
		}
		ended <- handlerEnd{writeErr: err, ctxErr: r.Context().Err()}
	}
}

// waitGoroutines waits until no more goroutines run than before, failing
// at the bound: the transport's goroutine ends with its handler.
func waitGoroutines(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines, %d before:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		runtime.Gosched()
		time.Sleep(time.Millisecond)
	}
}

// Closing the body mid-stream stops the handler as a dropped connection
// would: its next write fails, its context ends, it returns, and nothing
// is left running.
func TestHandlerTransportBodyClosed(t *testing.T) {
	before := runtime.NumGoroutine()
	ended := make(chan handlerEnd, 1)
	resp, err := inProcess(streamer(ended)).Get("http://agents.internal/stream")
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(resp.Body)
	for range 3 {
		if _, err := readFrame(br); err != nil {
			t.Fatal(err)
		}
	}
	if err := resp.Body.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case end := <-ended:
		if !errors.Is(end.writeErr, httpapi.ErrBodyClosed) {
			t.Errorf("the handler's write failed with %v, want ErrBodyClosed", end.writeErr)
		}
		if !errors.Is(end.ctxErr, context.Canceled) {
			t.Errorf("the handler's context: %v, want canceled", end.ctxErr)
		}
	case <-time.After(bound):
		t.Fatal("the handler is still writing after the body was closed")
	}
	if _, err := resp.Body.Read(make([]byte, 1)); err == nil {
		t.Error("a read after Close succeeded")
	}
	if err := resp.Body.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	waitGoroutines(t, before)
}

// The request's context ending cancels the handler's, before the header
// (RoundTrip fails with the context's error) and while the body streams
// (the read fails with it at once, even if the handler takes no notice).
func TestHandlerTransportContextCancel(t *testing.T) {
	t.Run("before the header", func(t *testing.T) {
		before := runtime.NumGoroutine()
		ctx, cancel := context.WithCancel(context.Background())
		entered, handlerCtx := make(chan struct{}), make(chan error, 1)
		writeErr := make(chan error, 1)
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			close(entered)
			<-r.Context().Done()
			handlerCtx <- r.Context().Err()
			_, err := io.WriteString(w, "too late") // nobody reads it
			writeErr <- err
		})
		go func() { <-entered; cancel() }()
		req, _ := http.NewRequestWithContext(ctx, "GET", "http://agents.internal/", nil)
		resp, err := inProcess(h).Do(req)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Do = %v, %v; want context.Canceled", resp, err)
		}
		if err := <-handlerCtx; !errors.Is(err, context.Canceled) {
			t.Errorf("the handler's context: %v", err)
		}
		if err := <-writeErr; !errors.Is(err, httpapi.ErrBodyClosed) {
			t.Errorf("a write after the caller left: %v, want ErrBodyClosed", err)
		}
		waitGoroutines(t, before)
	})
	t.Run("while streaming", func(t *testing.T) {
		before := runtime.NumGoroutine()
		ctx, cancel := context.WithCancel(context.Background())
		ended := make(chan handlerEnd, 1)
		req, _ := http.NewRequestWithContext(ctx, "GET", "http://agents.internal/", nil)
		resp, err := inProcess(streamer(ended)).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(resp.Body)
		if _, err := readFrame(br); err != nil {
			t.Fatal(err)
		}
		cancel()
		var rerr error
		for rerr == nil {
			_, rerr = br.ReadByte()
		}
		if !errors.Is(rerr, context.Canceled) {
			t.Errorf("read after cancel: %v, want context.Canceled", rerr)
		}
		end := <-ended
		if end.writeErr == nil || !errors.Is(end.ctxErr, context.Canceled) {
			t.Errorf("handler ended with %+v", end)
		}
		resp.Body.Close()
		waitGoroutines(t, before)
	})
	t.Run("already done", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		called := false
		req, _ := http.NewRequestWithContext(ctx, "GET", "http://agents.internal/", nil)
		if _, err := inProcess(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { called = true })).Do(req); !errors.Is(err, context.Canceled) || called {
			t.Errorf("Do = %v, handler called %v", err, called)
		}
	})
}

// A panicking handler is a 500 before its header, a broken body after it;
// the process carries on.
func TestHandlerTransportPanic(t *testing.T) {
	t.Run("before the header", func(t *testing.T) {
		resp, err := inProcess(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Partial", "1")
			w.WriteHeader(http.StatusAccepted)
			io.WriteString(w, "buffered, never sent")
			panic("boom")
		})).Get("http://agents.internal/")
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusInternalServerError || err != nil || len(b) != 0 || resp.Header.Get("X-Partial") != "" {
			t.Errorf("response %d %v %q, %v; want an empty 500", resp.StatusCode, resp.Header, b, err)
		}
	})
	t.Run("after the header", func(t *testing.T) {
		resp, err := inProcess(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, "partial")
			w.(http.Flusher).Flush()
			panic(errors.New("boom"))
		})).Get("http://agents.internal/")
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		pe, ok := errors.AsType[*httpapi.PanicError](err)
		if string(b) != "partial" || !ok || fmt.Sprint(pe.Value) != "boom" || !strings.Contains(string(pe.Stack), "TestHandlerTransportPanic") {
			t.Errorf("body %q, %v; want the partial body and a *PanicError with the stack", b, err)
		}
	})
	t.Run("abort", func(t *testing.T) {
		resp, err := inProcess(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, "partial")
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler)
		})).Get("http://agents.internal/")
		if err != nil {
			t.Fatal(err)
		}
		if b, err := io.ReadAll(resp.Body); string(b) != "partial" || !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("body %q, %v; want io.ErrUnexpectedEOF", b, err)
		}
	})
	t.Run("invalid status", func(t *testing.T) {
		resp, err := inProcess(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(42)
		})).Get("http://agents.internal/")
		if err != nil || resp.StatusCode != http.StatusInternalServerError {
			t.Errorf("WriteHeader(42): %v, %v", resp, err)
		}
	})
}

// http.ResponseController finds what it needs: flushing, deadlines (no-ops
// without a connection) and full duplex succeed; hijacking is refused.
func TestHandlerTransportResponseController(t *testing.T) {
	got := map[string]string{}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		res := func(err error) string { return fmt.Sprint(err) }
		got["SetReadDeadline"] = res(rc.SetReadDeadline(time.Now().Add(time.Minute)))
		got["SetWriteDeadline"] = res(rc.SetWriteDeadline(time.Time{}))
		got["EnableFullDuplex"] = res(rc.EnableFullDuplex())
		got["Flush"] = res(rc.Flush())
		_, _, err := rc.Hijack()
		got["Hijack is ErrNotSupported"] = fmt.Sprint(errors.Is(err, http.ErrNotSupported))
	})
	resp, err := inProcess(h).Get("http://agents.internal/")
	if err != nil {
		t.Fatal(err)
	}
	io.ReadAll(resp.Body) // to its end: the handler has returned
	resp.Body.Close()
	want := map[string]string{"SetReadDeadline": "<nil>", "SetWriteDeadline": "<nil>", "EnableFullDuplex": "<nil>", "Flush": "<nil>", "Hijack is ErrNotSupported": "true"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ResponseController (-want +got):\n%s", diff)
	}
}

// The Guard's handler (body budget, read deadlines through
// http.ResponseController) serves in process too.
func TestHandlerTransportBehindGuard(t *testing.T) {
	g, err := httpapi.NewGuard(&httpapi.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h := g.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		fmt.Fprintf(w, "read %d", len(b))
	}))
	resp, err := inProcess(h).Post("http://127.0.0.1:8080/", "application/json", strings.NewReader(strings.Repeat("x", 100000)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || string(b) != "read 100000" {
		t.Errorf("%d %q", resp.StatusCode, b)
	}
}

// The request body streams to the handler while its response streams
// back: a line echoed before the next is sent.
func TestHandlerTransportFullDuplex(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		sc := bufio.NewScanner(r.Body)
		for sc.Scan() {
			fmt.Fprintf(w, "echo %s\n", sc.Text())
			w.(http.Flusher).Flush()
		}
	})
	pr, pw := io.Pipe()
	req, _ := http.NewRequest("POST", "http://agents.internal/", pr)
	resp, err := inProcess(h).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	for i := range 3 {
		go fmt.Fprintf(pw, "line %d\n", i)
		got, err := br.ReadString('\n')
		if want := fmt.Sprintf("echo line %d\n", i); got != want || err != nil {
			t.Fatalf("%q, %v; want %q", got, err, want)
		}
	}
	pw.Close()
	if rest, err := io.ReadAll(br); len(rest) != 0 || err != nil {
		t.Errorf("after the request body ended: %q, %v", rest, err)
	}
}

// The request body is closed once the handler returns, whether or not it
// read it: RoundTrip's contract.
func TestHandlerTransportClosesRequestBody(t *testing.T) {
	body := &closeCounter{Reader: strings.NewReader("unread")}
	req, _ := http.NewRequest("POST", "http://agents.internal/", body)
	resp, err := inProcess(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	deadline := time.Now().Add(bound)
	for body.closed() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if n := body.closed(); n != 1 {
		t.Errorf("request body closed %d times, want 1", n)
	}
}

type closeCounter struct {
	io.Reader
	mu sync.Mutex
	n  int
}

func (c *closeCounter) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	return nil
}

func (c *closeCounter) closed() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// Writes after the handler returned (a goroutine it left behind) fail
// instead of reaching a response that has ended.
func TestHandlerTransportWriteAfterReturn(t *testing.T) {
	leaked := make(chan http.ResponseWriter, 1)
	resp, err := inProcess(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "done")
		leaked <- w
	})).Get("http://agents.internal/")
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	if string(b) != "done" || err != nil {
		t.Fatalf("%q, %v", b, err)
	}
	w := <-leaked
	if _, err := w.Write([]byte("late")); err == nil {
		t.Error("a write after the handler returned succeeded")
	}
	if err := http.NewResponseController(w).Flush(); err == nil {
		t.Error("a flush after the handler returned succeeded")
	}
}

func TestHandlerTransportBadRequest(t *testing.T) {
	// A request made by hand, without a header map: the handler gets one.
	u, _ := url.Parse("http://agents.internal/")
	resp, err := httpapi.HandlerTransport(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Set("X-Seen", "1")
		w.Header().Set("X-Seen", r.Header.Get("X-Seen"))
	})).RoundTrip(&http.Request{Method: "GET", URL: u})
	if err != nil || resp.Header.Get("X-Seen") != "1" {
		t.Errorf("a request without a header map: %v, %v", resp, err)
	}

	if _, err := httpapi.HandlerTransport(nil).RoundTrip(&http.Request{URL: nil}); err == nil {
		t.Error("RoundTrip without a URL succeeded")
	}
	req, _ := http.NewRequest("GET", "http://agents.internal/", nil)
	if _, err := httpapi.HandlerTransport(nil).RoundTrip(req); err == nil {
		t.Error("RoundTrip without a handler succeeded")
	}
}
