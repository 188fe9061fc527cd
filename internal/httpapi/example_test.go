package httpapi_test

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"

	"novaos.dev/novaos/internal/httpapi"
	"novaos.dev/novaos/problem"
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

// A REST service gets problems, callers, bodies and paging from an API and
// writes only its routes and its error mapping.
func ExampleAPI() {
	errNoNote := errors.New("notes: no such note")
	api := &httpapi.API{
		Name:    "notes",
		Auth:    httpapi.AdminRule{}, // no token: writes from this machine only
		Protect: func(r *http.Request) bool { return httpapi.IsWrite(r.Method) },
		ProblemFor: func(err error) *problem.Problem {
			if errors.Is(err, errNoNote) {
				return &problem.Problem{Type: "https://novaos.dev/problems/note-not-found", Status: http.StatusNotFound, Title: "Note Not Found"}
			}
			return nil
		},
	}
	h := api.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		api.Route(w, r, httpapi.Methods{
			http.MethodGet: func(w http.ResponseWriter, r *http.Request) { api.Fail(w, r, errNoNote) },
			http.MethodPost: func(w http.ResponseWriter, r *http.Request) {
				var note struct{ Text string }
				if !api.Decode(w, r, &note, httpapi.Body{What: "the note"}) {
					return
				}
				c, _ := httpapi.CallerFrom(r.Context())
				httpapi.WriteJSON(w, r, http.StatusCreated, map[string]string{"text": note.Text, "by": c.Scheme})
			},
		})
	}))
	do := func(method, remote, body string) {
		r := httptest.NewRequest(method, "/api/v1/notes", strings.NewReader(body))
		r.RemoteAddr = remote
		r.Host = "127.0.0.1:8080" // a loopback peer must name the server as loopback too
		r.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		fmt.Print(w.Code, " ", w.Body.String())
	}
	do("POST", "127.0.0.1:40000", `{"Text":"hello"}`)
	do("POST", "203.0.113.7:40000", `{"Text":"hello"}`)
	do("POST", "127.0.0.1:40000", `{"Text":"hello","Colour":1}`)
	do("GET", "203.0.113.7:40000", "")
	// Output:
	// 201 {"by":"loopback","text":"hello"}
	// 403 {"type":"https://novaos.dev/problems/forbidden","title":"Forbidden","status":403,"instance":"/api/v1/notes"}
	// 400 {"type":"https://novaos.dev/problems/malformed-json","title":"Malformed JSON","status":400,"detail":"unknown field \"Colour\"","instance":"/api/v1/notes"}
	// 404 {"type":"https://novaos.dev/problems/note-not-found","title":"Note Not Found","status":404,"instance":"/api/v1/notes"}
}
