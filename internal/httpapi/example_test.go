package httpapi_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"

	"novaos.dev/novaos/internal/httpapi"
)

func ExampleGuard() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	g, err := httpapi.NewGuard(&httpapi.Options{
		Addr:   ln.Addr(), // loopback: writes must name this server in Host
		Limits: httpapi.Limits{MaxInflightBytes: 1 << 20},
		Exempt: func(r *http.Request) bool { return r.URL.Path == "/healthz" },
	})
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /notes", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusCreated)
	})
	srv := g.Server(mux)
	go srv.Serve(g.Listener(ln))
	defer srv.Close()

	post := func(what, host string, size int) {
		req, _ := http.NewRequest(http.MethodPost, "http://"+ln.Addr().String()+"/notes", strings.NewReader(strings.Repeat("x", size)))
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		resp.Body.Close()
		if ra := resp.Header.Get("Retry-After"); ra != "" {
			fmt.Println(what, resp.StatusCode, "Retry-After:", ra)
			return
		}
		fmt.Println(what, resp.StatusCode)
	}
	post("own host:", ln.Addr().String(), 10)
	post("rebound host:", "evil.attacker.test", 10)                  // a page re-pointing its name at 127.0.0.1
	post("larger than the whole budget:", ln.Addr().String(), 2<<20) // never fits: no Retry-After
	// Output:
	// own host: 201
	// rebound host: 421
	// larger than the whole budget: 413
}
