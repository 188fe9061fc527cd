package execgw

import (
	"io"
	"net/http"
	"sync"
)

// handlerTransport is a stand-in until httpapi's in-process transport lands.
type handlerTransport struct{ h http.Handler }

type pipeWriter struct {
	hdr     http.Header
	pw      *io.PipeWriter
	once    sync.Once
	started chan int
}

func (w *pipeWriter) Header() http.Header { return w.hdr }
func (w *pipeWriter) WriteHeader(code int) {
	w.once.Do(func() { w.started <- code })
}
func (w *pipeWriter) Write(p []byte) (int, error) { w.WriteHeader(200); return w.pw.Write(p) }
func (w *pipeWriter) Flush()                      { w.WriteHeader(200) }

func (t handlerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	pr, pw := io.Pipe()
	w := &pipeWriter{hdr: http.Header{}, pw: pw, started: make(chan int, 1)}
	r2 := r.Clone(r.Context())
	r2.RemoteAddr = "127.0.0.1:0"
	r2.RequestURI = r.URL.RequestURI()
	go func() {
		defer pw.Close()
		t.h.ServeHTTP(w, r2)
		w.WriteHeader(200)
	}()
	select {
	case code := <-w.started:
		return &http.Response{StatusCode: code, Header: w.hdr, Body: pr, Request: r, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}, nil
	case <-r.Context().Done():
		pr.Close()
		return nil, r.Context().Err()
	}
}
