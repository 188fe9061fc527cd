package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"novaos.dev/novaos/problem"
	"novaos.dev/novaos/secret"
)

func decodeProblem(t *testing.T, rec *httptest.ResponseRecorder) problem.Problem {
	t.Helper()
	var p problem.Problem
	if ct := rec.Header().Get("Content-Type"); ct != problem.ContentType {
		t.Fatalf("Content-Type %q, want %s; body %s", ct, problem.ContentType, rec.Body)
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil {
		t.Fatalf("problem %s: %v", rec.Body, err)
	}
	if p.Status != rec.Code {
		t.Errorf("problem status %d, response %d", p.Status, rec.Code)
	}
	return p
}

func TestDecodeJSON(t *testing.T) {
	type note struct {
		Text string `json:"text"`
	}
	tests := []struct {
		name, ctype, body string
		b                 Body
		want              string // problem type, "" when decoded
		text              string // the decoded text
	}{
		{"one object", "application/json", `{"text":"hi"}`, Body{}, "", "hi"},
		{"trailing white space", "application/json; charset=utf-8", "{\"text\":\"hi\"}\n\t ", Body{}, "", "hi"},
		{"no content type", "", `{"text":"hi"}`, Body{}, problem.TypeUnsupportedMedia, ""},
		{"text/plain", "text/plain", `{"text":"hi"}`, Body{}, problem.TypeUnsupportedMedia, ""},
		{"unknown field", "application/json", `{"text":"hi","colour":1}`, Body{}, problem.TypeMalformedJSON, ""},
		{"unknown field allowed", "application/json", `{"text":"hi","colour":1}`, Body{AllowUnknown: true}, "", "hi"},
		{"two values", "application/json", `{"text":"a"}{"text":"b"}`, Body{}, problem.TypeMalformedJSON, ""},
		{"repeated member", "application/json", `{"text":"a","text":"b"}`, Body{}, problem.TypeMalformedJSON, ""},
		{"repeated member, unknown allowed", "application/json", `{"text":"a","x":{"k":1,"k":2}}`, Body{AllowUnknown: true}, problem.TypeMalformedJSON, ""},
		{"truncated", "application/json", `{"text":`, Body{}, problem.TypeMalformedJSON, ""},
		{"empty", "application/json", ``, Body{}, problem.TypeMalformedJSON, ""},
		{"empty allowed", "application/json", " \n", Body{AllowEmpty: true}, "", ""},
		{"wrong type", "application/json", `{"text":1}`, Body{}, problem.TypeMalformedJSON, ""},
		{"too large", "application/json", `{"text":"` + strings.Repeat("x", 100) + `"}`, Body{MaxBytes: 64}, problem.TypeBodyTooLarge, ""},
		{"too large after the value", "application/json", `{"text":"x"}` + strings.Repeat(" ", 100) + "x", Body{MaxBytes: 64}, problem.TypeBodyTooLarge, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/notes", strings.NewReader(tc.body))
			if tc.ctype != "" {
				r.Header.Set("Content-Type", tc.ctype)
			}
			w := httptest.NewRecorder()
			var n note
			err := DecodeJSON(w, r, &n, tc.b)
			if tc.want == "" {
				if err != nil || n.Text != tc.text {
					t.Fatalf("DecodeJSON = %v, text %q; want nil, %q", err, n.Text, tc.text)
				}
				return
			}
			var p *problem.Problem
			if !errors.As(err, &p) || p.Type != tc.want || p.Detail == "" {
				t.Fatalf("DecodeJSON = %v, want a %s problem with a detail", err, tc.want)
			}
			if (tc.want == problem.TypeUnsupportedMedia) != (w.Header().Get("Accept") == "application/json") {
				t.Errorf("Accept %q on a %s problem", w.Header().Get("Accept"), tc.want)
			}
		})
	}
}

func TestAdminRule(t *testing.T) {
	const token = "adm-0123456789abcdef"
	tests := []struct {
		name, token, remote, auth string
		want                      error // nil: admitted
		scheme                    string
		host                      string // "": 127.0.0.1:8080
	}{
		{"token", token, "203.0.113.9:1", "Bearer " + token, nil, SchemeAdminToken, ""},
		{"token, lower-case scheme", token, "203.0.113.9:1", "bearer " + token, nil, SchemeAdminToken, ""},
		{"token needed from loopback too", token, "127.0.0.1:1", "", ErrUnauthenticated, "", ""},
		{"near miss", token, "127.0.0.1:1", "Bearer " + token[:len(token)-1] + "0", ErrUnauthenticated, "", ""},
		{"basic scheme", token, "127.0.0.1:1", "Basic " + token, ErrUnauthenticated, "", ""},
		{"loopback, no token configured", "", "127.0.0.1:1", "", nil, SchemeLoopback, ""},
		{"mapped loopback", "", "[::ffff:127.0.0.1]:1", "", nil, SchemeLoopback, ""},
		{"v6 loopback", "", "[::1]:1", "Bearer whatever", nil, SchemeLoopback, ""},
		{"remote, no token configured", "", "10.0.0.8:1", "Bearer " + token, ErrForbidden, "", ""},
		{"a name is not an address", "", "localhost:1", "", ErrForbidden, "", ""},
		// With no token, the peer must name the server as loopback in Host
		// too: a page whose name an attacker rebound to 127.0.0.1 sends its
		// own name (DNS rebinding), for reads as for writes.
		{"loopback, Host localhost", "", "127.0.0.1:1", "", nil, SchemeLoopback, "localhost:8080"},
		{"loopback, Host without a port", "", "127.0.0.1:1", "", nil, SchemeLoopback, "localhost"},
		{"loopback, Host upper case, trailing dot", "", "127.0.0.1:1", "", nil, SchemeLoopback, "LocalHost.:8080"},
		{"loopback, Host under .localhost", "", "127.0.0.1:1", "", nil, SchemeLoopback, "app.localhost:8080"},
		{"loopback, Host [::1]", "", "[::1]:1", "", nil, SchemeLoopback, "[::1]:8080"},
		{"loopback, Host mapped", "", "[::1]:1", "", nil, SchemeLoopback, "[::ffff:127.0.0.1]:8080"},
		{"loopback, Host 127.9.9.9", "", "127.0.0.1:1", "", nil, SchemeLoopback, "127.9.9.9"},
		{"loopback, rebound name", "", "127.0.0.1:1", "", ErrForbidden, "", "rebind.attacker.test:8080"},
		{"loopback, rebound name without a port", "", "127.0.0.1:1", "", ErrForbidden, "", "rebind.attacker.test"},
		{"loopback, name ending in localhost", "", "127.0.0.1:1", "", ErrForbidden, "", "evillocalhost:8080"},
		{"loopback, localhost as a label", "", "127.0.0.1:1", "", ErrForbidden, "", "localhost.attacker.test:8080"},
		{"loopback, loopback-looking name", "", "127.0.0.1:1", "", ErrForbidden, "", "127.0.0.1.nip.io:8080"},
		{"loopback, short address form", "", "127.0.0.1:1", "", ErrForbidden, "", "127.1:8080"},
		{"loopback, unspecified address", "", "[::1]:1", "", ErrForbidden, "", "0.0.0.0:8080"},
		{"loopback, private address", "", "127.0.0.1:1", "", ErrForbidden, "", "192.168.1.5:8080"},
		{"loopback, bare v6 Host", "", "[::1]:1", "", ErrForbidden, "", "::1"},
		{"loopback, empty Host", "", "127.0.0.1:1", "", ErrForbidden, "", " "},
		{"loopback, Host with user info", "", "127.0.0.1:1", "", ErrForbidden, "", "x@127.0.0.1:8080"},
		// The admin token holds whatever the Host: the Guard's Host rule
		// covers writes, and a rebinding page cannot send the token.
		{"token, foreign Host", token, "127.0.0.1:1", "Bearer " + token, nil, SchemeAdminToken, "rebind.attacker.test"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/x", nil)
			r.RemoteAddr = tc.remote
			r.Host = "127.0.0.1:8080"
			if tc.host != "" {
				r.Host = strings.TrimSpace(tc.host)
			}
			if tc.auth != "" {
				r.Header.Set("Authorization", tc.auth)
			}
			rule := AdminRule{Token: secret.New(tc.token)}
			c, err := rule.Authenticate(r)
			if tc.want != nil {
				if !errors.Is(err, tc.want) || c != nil {
					t.Fatalf("Authenticate = %v, %v; want %v", c, err, tc.want)
				}
				if strings.Contains(err.Error(), token[4:]) {
					t.Errorf("the error repeats the token: %v", err)
				}
				// A loopback peer naming another host gets a 421 saying
				// how to reach the server; the others the service's own.
				var p *problem.Problem
				if foreign := tc.token == "" && IsLoopbackPeer(tc.remote); errors.As(err, &p) != foreign ||
					(foreign && (p.Status != http.StatusMisdirectedRequest || p.Type != problem.TypeMisdirected || !strings.Contains(p.Detail, "127.0.0.1"))) {
					t.Errorf("Authenticate = %v: want a 421 problem exactly for a loopback peer naming another host", err)
				}
				return
			}
			if err != nil || c == nil || c.Scheme != tc.scheme || !c.Admin {
				t.Fatalf("Authenticate = %+v, %v; want an admin caller by %s", c, err, tc.scheme)
			}
		})
	}
}

// Behind a Guard's Server, a loopback peer may also name the server by
// the names the Guard accepts writes for; anything else stays refused.
func TestAdminRuleTakesTheGuardsNames(t *testing.T) {
	g, err := NewGuard(&Options{Addr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080},
		PublicURL: "https://novaos.example.com", AllowHosts: []string{"proxy.test", "other.test:9000"}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		host  string
		guard bool // served by the Guard's Server
		want  bool
	}{
		{"127.0.0.1:8080", false, true},
		{"localhost:1234", false, true}, // a loopback name on any port
		{"proxy.test", false, false},    // not without the Guard's names
		{"127.0.0.1:8080", true, true},
		{"localhost:1234", true, true},
		{"novaos.example.com", true, true},
		{"novaos.example.com:443", true, true},
		{"novaos.example.com:8443", true, false},
		{"proxy.test", true, true},
		{"proxy.test:1234", true, true},
		{"other.test:9000", true, true},
		{"other.test:9001", true, false},
		{"rebind.attacker.test:8080", true, false},
		{"novaos.example.com.attacker.test", true, false},
	}
	for _, tc := range tests {
		r := httptest.NewRequest(http.MethodGet, "/x", nil)
		r.RemoteAddr, r.Host = "127.0.0.1:5000", tc.host
		if tc.guard {
			r = r.WithContext(g.connContext(r.Context(), nil))
		}
		c, err := AdminRule{}.Authenticate(r)
		if got := err == nil && c != nil && c.Admin; got != tc.want || NamesServer(r) != tc.want {
			t.Errorf("Host %q (Guard %v): admitted %v (%v), want %v", tc.host, tc.guard, got, err, tc.want)
		}
	}
}

var errNoNote = errors.New("notes: no such note")

// notes is a tiny service on API: reads open, writes need the AdminRule.
func notes(token string, logs *bytes.Buffer) http.Handler {
	api := &API{Name: "notes", Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Auth:    AdminRule{Token: secret.New(token)},
		Protect: func(r *http.Request) bool { return IsWrite(r.Method) },
		ProblemFor: func(err error) *problem.Problem {
			if errors.Is(err, errNoNote) {
				return &problem.Problem{Type: "https://novaos.dev/problems/note-not-found", Status: http.StatusNotFound, Title: "Note Not Found"}
			}
			return nil
		}}
	return api.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		api.Route(w, r, Methods{
			http.MethodGet: func(w http.ResponseWriter, r *http.Request) {
				switch r.URL.Query().Get("case") {
				case "missing":
					api.Fail(w, r, fmt.Errorf("get 7: %w", errNoNote))
				case "broken":
					api.Fail(w, r, errors.New("disk on fire"))
				case "size":
					n, err := PageSize(r.URL.Query())
					if err != nil {
						api.Fail(w, r, err)
						return
					}
					WriteJSON(w, r, http.StatusOK, n)
				default:
					WriteJSON(w, r, http.StatusOK, []string{"a"})
				}
			},
			http.MethodPost: func(w http.ResponseWriter, r *http.Request) {
				var in struct{ Text string }
				if !api.Decode(w, r, &in, Body{What: "the note"}) {
					return
				}
				c, _ := CallerFrom(r.Context())
				WriteJSON(w, r, http.StatusCreated, c.Scheme)
			},
		})
	}))
}

func TestAPI(t *testing.T) {
	const token = "tok-0123456789abcdef"
	tests := []struct {
		name, method, target, remote, auth, body string
		status                                   int
		problem                                  string // type, "" for a success
	}{
		{"read from anywhere", "GET", "/notes", "203.0.113.9:1", "", "", 200, ""},
		{"head is get", "HEAD", "/notes", "203.0.113.9:1", "", "", 200, ""},
		{"write with the token", "POST", "/notes", "203.0.113.9:1", "Bearer " + token, `{"Text":"x"}`, 201, ""},
		{"write without it", "POST", "/notes", "127.0.0.1:1", "", `{"Text":"x"}`, 401, problem.TypeUnauthorized},
		{"write with another", "POST", "/notes", "127.0.0.1:1", "Bearer nope", `{"Text":"x"}`, 401, problem.TypeUnauthorized},
		{"guarded before routing", "PATCH", "/notes", "127.0.0.1:1", "", "", 401, problem.TypeUnauthorized},
		{"no such method", "PATCH", "/notes", "127.0.0.1:1", "Bearer " + token, "", 405, problem.TypeMethodNotAllowed},
		{"malformed body", "POST", "/notes", "127.0.0.1:1", "Bearer " + token, `{"Text":`, 400, problem.TypeMalformedJSON},
		{"service error", "GET", "/notes?case=missing", "127.0.0.1:1", "", "", 404, "https://novaos.dev/problems/note-not-found"},
		{"unexpected error", "GET", "/notes?case=broken", "127.0.0.1:1", "", "", 500, problem.TypeInternal},
		{"bad page size", "GET", "/notes?case=size&pageSize=-1", "127.0.0.1:1", "", "", 400, problem.TypeInvalidQuery},
		{"page size", "GET", "/notes?case=size&pageSize=7", "127.0.0.1:1", "", "", 200, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			r := httptest.NewRequest(tc.method, tc.target, strings.NewReader(tc.body))
			r.RemoteAddr = tc.remote
			r.Header.Set("Content-Type", "application/json")
			if tc.auth != "" {
				r.Header.Set("Authorization", tc.auth)
			}
			rec := httptest.NewRecorder()
			notes(token, &logs).ServeHTTP(rec, r)
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.status, rec.Body)
			}
			if strings.Contains(rec.Body.String()+fmt.Sprint(rec.Header())+logs.String(), token[4:]) {
				t.Error("the token shows in the response or the logs")
			}
			if tc.problem == "" {
				if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
					t.Errorf("Content-Type %q", ct)
				}
				return
			}
			p := decodeProblem(t, rec)
			if p.Type != tc.problem || p.Instance != "/notes" {
				t.Errorf("problem %+v, want type %s at /notes", p, tc.problem)
			}
			switch tc.status {
			case 401:
				if got := rec.Header().Get("WWW-Authenticate"); got != `Bearer realm="novaos-notes"` {
					t.Errorf("WWW-Authenticate %q", got)
				}
			case 405:
				if got := rec.Header().Get("Allow"); got != "GET, POST" {
					t.Errorf("Allow %q, want GET, POST", got)
				}
			case 500:
				if strings.Contains(rec.Body.String(), "fire") || !strings.Contains(logs.String(), "fire") {
					t.Errorf("an unexpected error must be logged, not sent: body %s", rec.Body)
				}
			}
		})
	}
}

func TestPageToken(t *testing.T) {
	valid := func(k string) bool { return k != "" && !strings.Contains(k, "/") }
	for _, key := range []string{"a", "agent-0042", "ünïcode", strings.Repeat("k", maxPageKey)} {
		got, err := ParsePageToken(PageToken(key), nil)
		if err != nil || got != key {
			t.Errorf("ParsePageToken(PageToken(%q)) = %q, %v", key, got, err)
		}
	}
	for _, tok := range []string{"!!", "a=", PageToken("a/b"), PageToken(""), PageToken(strings.Repeat("k", maxPageKey+1))} {
		if _, err := ParsePageToken(tok, valid); !errors.Is(err, ErrBadPageToken) {
			t.Errorf("ParsePageToken(%q) = %v, want ErrBadPageToken", tok, err)
		}
	}
	p := Paging{Default: 50, Max: 200}
	for n, want := range map[int]int{-1: 50, 0: 50, 1: 1, 200: 200, 201: 200} {
		if got := p.Clamp(n); got != want {
			t.Errorf("Clamp(%d) = %d, want %d", n, got, want)
		}
	}
}

// Any body gets a value or a problem of the body's own statuses, never a
// panic or another error.
func FuzzDecodeJSON(f *testing.F) {
	for _, s := range []string{`{"text":"hi"}`, `{"text":`, `[]`, `null`, `{"a":1}{}`, "\x00", `{"text":"\ud800"}`, " "} {
		f.Add([]byte(s), false, false)
	}
	f.Fuzz(func(t *testing.T, body []byte, unknown, empty bool) {
		r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		var v struct {
			Text string   `json:"text"`
			N    *float64 `json:"n"`
		}
		err := DecodeJSON(httptest.NewRecorder(), r, &v, Body{MaxBytes: 256, AllowUnknown: unknown, AllowEmpty: empty})
		if err == nil {
			return
		}
		var p *problem.Problem
		if !errors.As(err, &p) || (p.Status != 400 && p.Status != 413) || p.Detail == "" {
			t.Fatalf("DecodeJSON(%q) = %v", body, err)
		}
	})
}

// Any token parses to a key whose token it is, or is refused.
func FuzzParsePageToken(f *testing.F) {
	for _, s := range []string{PageToken("agent"), "", "!!", "YQ", "YQ=", "YQo", "00", "\r", "Y\nQ"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, tok string) {
		key, err := ParsePageToken(tok, nil)
		if err != nil {
			if !errors.Is(err, ErrBadPageToken) {
				t.Fatalf("ParsePageToken(%q) = %v", tok, err)
			}
			return
		}
		if PageToken(key) != tok {
			t.Fatalf("ParsePageToken(%q) = %q, whose token is %q", tok, key, PageToken(key))
		}
	})
}
