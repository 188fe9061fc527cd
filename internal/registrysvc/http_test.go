package registrysvc_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/internal/registrysvc"
	"novaos.dev/novaos/registry"
)

var clock = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

func newTestService(t *testing.T) (*registrysvc.Service, *httptest.Server) {
	t.Helper()
	var n atomic.Int64
	svc := registrysvc.New(registrysvc.NewMemoryStore(), &registrysvc.Options{
		Policy: &registry.Policy{AllowedHostSuffixes: []string{".agents.example.com"}},
		Now:    func() time.Time { return clock },
		NewID:  func() string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", n.Add(1)) },
	})
	srv := httptest.NewServer(svc.Handler())
	t.Cleanup(srv.Close)
	return svc, srv
}

type response struct {
	status int
	header http.Header
	body   string
}

func call(t *testing.T, srv *httptest.Server, method, path, contentType, body string) response {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{resp.StatusCode, resp.Header, string(b)}
}

const jsonCT = "application/json"

func agentJSON(name string) string {
	return fmt.Sprintf(`{"name":%q,"url":"https://%s.agents.example.com/a2a","description":"The %s agent","capabilities":["Web Scraping"],"tags":["t-%s"]}`,
		name, name, name, name)
}

// problem checks that r is an RFC 9457 problem with this status and type.
func problem(t *testing.T, r response, status int, typ string) registry.Problem {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d; body %s", r.status, status, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/problem+json" {
		t.Errorf("Content-Type %q, want application/problem+json", ct)
	}
	var p registry.Problem
	dec := json.NewDecoder(strings.NewReader(r.body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		t.Fatalf("problem body %s: %v", r.body, err)
	}
	if p.Type != typ || p.Status != status || p.Title == "" || !strings.HasPrefix(p.Instance, registry.APIPath) {
		t.Errorf("problem %+v, want type %s, status %d, a title and the instance path", p, typ, status)
	}
	return p
}

func decodeAgent(t *testing.T, r response, status int) *registry.Agent {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d; body %s", r.status, status, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != jsonCT {
		t.Errorf("Content-Type %q, want %s", ct, jsonCT)
	}
	var a registry.Agent
	if err := json.Unmarshal([]byte(r.body), &a); err != nil {
		t.Fatal(err)
	}
	return &a
}

func TestRegisterGetUpdateDelete(t *testing.T) {
	_, srv := newTestService(t)
	r := call(t, srv, "POST", "/api/v1/agents", "application/json; charset=utf-8", agentJSON("weather"))
	got := decodeAgent(t, r, http.StatusCreated)
	want := &registry.Agent{ID: "00000000-0000-4000-8000-000000000001", Name: "weather",
		URL: "https://weather.agents.example.com/a2a", Description: "The weather agent",
		Capabilities: []string{"Web Scraping"}, Tags: []string{"t-weather"}, Status: "active",
		CreatedAt: clock, UpdatedAt: clock}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("POST (-want +got):\n%s", diff)
	}
	if loc := r.header.Get("Location"); loc != "/api/v1/agents/"+want.ID {
		t.Errorf("Location %q", loc)
	}
	for _, ref := range []string{want.ID, "weather"} {
		if diff := cmp.Diff(want, decodeAgent(t, call(t, srv, "GET", "/api/v1/agents/"+ref, "", ""), 200)); diff != "" {
			t.Errorf("GET %s (-want +got):\n%s", ref, diff)
		}
	}
	// PUT replaces; server-assigned fields in the body are ignored.
	r = call(t, srv, "PUT", "/api/v1/agents/weather", jsonCT,
		`{"id":"ignored","url":"https://w2.agents.example.com/","status":"maintenance","createdAt":"2000-01-01T00:00:00Z"}`)
	want.URL, want.Status, want.Description, want.Capabilities, want.Tags = "https://w2.agents.example.com/", "maintenance", "", nil, nil
	if diff := cmp.Diff(want, decodeAgent(t, r, 200)); diff != "" {
		t.Errorf("PUT (-want +got):\n%s", diff)
	}
	// Rename by id.
	r = call(t, srv, "PUT", "/api/v1/agents/"+want.ID, jsonCT, `{"name":"forecast","url":"https://w2.agents.example.com/"}`)
	if got := decodeAgent(t, r, 200); got.Name != "forecast" || got.ID != want.ID {
		t.Errorf("rename: %+v", got)
	}
	problem(t, call(t, srv, "GET", "/api/v1/agents/weather", "", ""), 404, registry.ProblemAgentNotFound)
	if r := call(t, srv, "DELETE", "/api/v1/agents/forecast", "", ""); r.status != http.StatusNoContent || r.body != "" {
		t.Fatalf("DELETE: %d %s", r.status, r.body)
	}
	problem(t, call(t, srv, "DELETE", "/api/v1/agents/forecast", "", ""), 404, registry.ProblemAgentNotFound)
	problem(t, call(t, srv, "GET", "/api/v1/agents/"+want.ID, "", ""), 404, registry.ProblemAgentNotFound)
}

func TestErrors(t *testing.T) {
	_, srv := newTestService(t)
	if r := call(t, srv, "POST", "/api/v1/agents", jsonCT, agentJSON("taken")); r.status != 201 {
		t.Fatal(r.body)
	}
	if r := call(t, srv, "POST", "/api/v1/agents", jsonCT, agentJSON("other")); r.status != 201 {
		t.Fatal(r.body)
	}
	big := `{"name":"big","url":"https://big.agents.example.com/","description":"` + strings.Repeat("x", registrysvc.MaxBodyBytes) + `"}`
	tests := []struct {
		name         string
		method, path string
		contentType  string
		body         string
		status       int
		typ          string
		allow        string
	}{
		{"duplicate name", "POST", "/api/v1/agents", jsonCT, agentJSON("taken"), 409, registry.ProblemAgentExists, ""},
		{"rename onto a taken name", "PUT", "/api/v1/agents/other", jsonCT, agentJSON("taken"), 409, registry.ProblemAgentExists, ""},
		{"invalid agent", "POST", "/api/v1/agents", jsonCT, `{"name":"Bad Name","url":"ftp://x"}`, 422, registry.ProblemInvalidAgent, ""},
		{"invalid update", "PUT", "/api/v1/agents/taken", jsonCT, `{"url":"nope"}`, 422, registry.ProblemInvalidAgent, ""},
		{"url outside suffixes", "POST", "/api/v1/agents", jsonCT, `{"name":"evil","url":"https://evil.example.net/"}`, 422, registry.ProblemURLNotAllowed, ""},
		{"loopback url", "POST", "/api/v1/agents", jsonCT, `{"name":"local","url":"http://127.0.0.1:9/"}`, 422, registry.ProblemURLNotAllowed, ""},
		{"update to a url outside suffixes", "PUT", "/api/v1/agents/taken", jsonCT, `{"url":"https://evil.example.net/"}`, 422, registry.ProblemURLNotAllowed, ""},
		{"malformed JSON", "POST", "/api/v1/agents", jsonCT, `{"name":`, 400, registry.ProblemMalformedJSON, ""},
		{"not an object", "POST", "/api/v1/agents", jsonCT, `[1,2]`, 400, registry.ProblemMalformedJSON, ""},
		{"wrong field type", "POST", "/api/v1/agents", jsonCT, `{"name":1}`, 400, registry.ProblemMalformedJSON, ""},
		{"unknown field", "POST", "/api/v1/agents", jsonCT, `{"name":"x","url":"https://x.agents.example.com/","colour":"red"}`, 400, registry.ProblemMalformedJSON, ""},
		{"trailing data", "POST", "/api/v1/agents", jsonCT, agentJSON("x") + `{}`, 400, registry.ProblemMalformedJSON, ""},
		{"empty body", "POST", "/api/v1/agents", jsonCT, ``, 400, registry.ProblemMalformedJSON, ""},
		{"body too large", "POST", "/api/v1/agents", jsonCT, big, 413, registry.ProblemBodyTooLarge, ""},
		{"no content type", "POST", "/api/v1/agents", "", agentJSON("x"), 415, registry.ProblemUnsupportedMedia, ""},
		{"text content type", "PUT", "/api/v1/agents/taken", "text/plain", agentJSON("x"), 415, registry.ProblemUnsupportedMedia, ""},
		{"unknown agent", "GET", "/api/v1/agents/nobody", "", "", 404, registry.ProblemAgentNotFound, ""},
		{"unknown id", "GET", "/api/v1/agents/00000000-0000-4000-8000-000000000099", "", "", 404, registry.ProblemAgentNotFound, ""},
		{"not a name", "GET", "/api/v1/agents/NOT%20A%20NAME", "", "", 404, registry.ProblemAgentNotFound, ""},
		{"update unknown", "PUT", "/api/v1/agents/nobody", jsonCT, agentJSON("nobody"), 404, registry.ProblemAgentNotFound, ""},
		{"deeper path", "GET", "/api/v1/agents/taken/extra", "", "", 404, registry.ProblemNotFound, ""},
		{"collection method", "PATCH", "/api/v1/agents", jsonCT, `{}`, 405, registry.ProblemMethodNotAllowed, "GET, POST"},
		{"item method", "POST", "/api/v1/agents/taken", jsonCT, `{}`, 405, registry.ProblemMethodNotAllowed, "GET, PUT, DELETE"},
		{"search method", "DELETE", "/api/v1/agents/search", "", "", 405, registry.ProblemMethodNotAllowed, "GET"},
		{"find method", "POST", "/api/v1/agents/find", jsonCT, `{}`, 405, registry.ProblemMethodNotAllowed, "GET"},
		{"bad page size", "GET", "/api/v1/agents?pageSize=ten", "", "", 400, registry.ProblemInvalidQuery, ""},
		{"negative page size", "GET", "/api/v1/agents?pageSize=-1", "", "", 400, registry.ProblemInvalidQuery, ""},
		{"bad page token", "GET", "/api/v1/agents?pageToken=!!", "", "", 400, registry.ProblemInvalidPageToken, ""},
		{"page token of no name", "GET", "/api/v1/agents?pageToken=Lw", "", "", 400, registry.ProblemInvalidPageToken, ""},
		{"empty search", "GET", "/api/v1/agents/search?q=%20", "", "", 400, registry.ProblemInvalidQuery, ""},
		{"find without capability", "GET", "/api/v1/agents/find", "", "", 400, registry.ProblemInvalidQuery, ""},
		{"find bad mode", "GET", "/api/v1/agents/find?capability=x&mode=some", "", "", 400, registry.ProblemInvalidQuery, ""},
		{"find bad fuzzy", "GET", "/api/v1/agents/find?capability=x&fuzzy=maybe", "", "", 400, registry.ProblemInvalidQuery, ""},
		{"find bad threshold", "GET", "/api/v1/agents/find?capability=x&fuzzy=true&threshold=1.5", "", "", 400, registry.ProblemInvalidQuery, ""},
		{"find zero threshold", "GET", "/api/v1/agents/find?capability=x&fuzzy=true&threshold=0", "", "", 400, registry.ProblemInvalidQuery, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := call(t, srv, tc.method, tc.path, tc.contentType, tc.body)
			p := problem(t, r, tc.status, tc.typ)
			if tc.allow != "" && r.header.Get("Allow") != tc.allow {
				t.Errorf("Allow %q, want %q", r.header.Get("Allow"), tc.allow)
			}
			if tc.typ == registry.ProblemInvalidAgent || tc.typ == registry.ProblemURLNotAllowed {
				if len(p.Errors) == 0 || p.Errors[0].Field == "" || p.Errors[0].Message == "" {
					t.Errorf("an invalid agent's problem lists the broken rules: %+v", p)
				}
			}
		})
	}
	// Nothing the refused requests carried was stored.
	var page registry.Page
	if err := json.Unmarshal([]byte(call(t, srv, "GET", "/api/v1/agents", "", "").body), &page); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, a := range page.Agents {
		names = append(names, a.Name+" "+a.URL)
	}
	if diff := cmp.Diff([]string{"other https://other.agents.example.com/a2a", "taken https://taken.agents.example.com/a2a"}, names); diff != "" {
		t.Errorf("stored agents (-want +got):\n%s", diff)
	}
}

func TestListSearchFind(t *testing.T) {
	svc, srv := newTestService(t)
	ctx := t.Context()
	recs := []*registry.Agent{
		{Name: "scraper", URL: "https://s.agents.example.com/", Description: "Fetches pages", Capabilities: []string{"Web Scraping", "API Integration"}, Tags: []string{"web"}, Domains: []string{"retail"}},
		{Name: "analyst", URL: "https://a.agents.example.com/", Description: "Crunches NUMBERS", Capabilities: []string{"data_analysis", "web scrape"}, Domains: []string{"finance"}},
		{Name: "writer", URL: "https://w.agents.example.com/", Description: "Writes prose", Capabilities: []string{"Translation"}, Tags: []string{"web", "text"}, Status: "inactive"},
		{Name: "zeta", URL: "https://z.agents.example.com/", Metadata: map[string]any{"tags": []any{"meta-tag"}, "capabilities": []any{"Reporting"}}},
	}
	for _, a := range recs {
		if _, err := svc.Register(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	page := func(path string) (names []string, next string) {
		t.Helper()
		r := call(t, srv, "GET", path, "", "")
		if r.status != 200 {
			t.Fatalf("GET %s: %d %s", path, r.status, r.body)
		}
		var p registry.Page
		if err := json.Unmarshal([]byte(r.body), &p); err != nil {
			t.Fatal(err)
		}
		names = []string{}
		for _, a := range p.Agents {
			names = append(names, a.Name)
		}
		return names, p.NextPageToken
	}
	tests := []struct {
		path string
		want []string
	}{
		{"/api/v1/agents", []string{"analyst", "scraper", "writer", "zeta"}},
		{"/api/v1/agents?status=active", []string{"analyst", "scraper", "zeta"}},
		{"/api/v1/agents?tag=web", []string{"scraper", "writer"}},
		{"/api/v1/agents?tag=meta-tag", []string{"zeta"}},
		{"/api/v1/agents?domain=finance", []string{"analyst"}},
		{"/api/v1/agents?name=TE", []string{"writer"}},
		{"/api/v1/agents/search?q=numbers", []string{"analyst"}},
		{"/api/v1/agents/search?q=web", []string{"analyst", "scraper", "writer"}},
		{"/api/v1/agents/search?q=web+scraping", []string{"scraper"}},
		{"/api/v1/agents/search?q=data-analysis", []string{"analyst"}},
		{"/api/v1/agents/search?q=reporting", []string{"zeta"}},
		{"/api/v1/agents/search?q=web&status=inactive", []string{"writer"}},
		{"/api/v1/agents/search?q=nothing-like-this", []string{}},
	}
	for _, tc := range tests {
		if got, _ := page(tc.path); !cmp.Equal(tc.want, got) {
			t.Errorf("GET %s = %v, want %v", tc.path, got, tc.want)
		}
	}
	// Paging walks every record once, in name order.
	var all []string
	path := "/api/v1/agents?pageSize=3"
	for {
		names, next := page(path)
		all = append(all, names...)
		if next == "" {
			break
		}
		path = "/api/v1/agents?pageSize=3&pageToken=" + next
	}
	if !cmp.Equal(all, []string{"analyst", "scraper", "writer", "zeta"}) {
		t.Errorf("paged = %v", all)
	}
	if names, next := page("/api/v1/agents/search?q=web&pageSize=2"); !cmp.Equal(names, []string{"analyst", "scraper"}) || next == "" {
		t.Errorf("search page 1 = %v, %q", names, next)
	} else if names, next := page("/api/v1/agents/search?q=web&pageSize=2&pageToken=" + next); !cmp.Equal(names, []string{"writer"}) || next != "" {
		t.Errorf("search page 2 = %v, %q", names, next)
	}

	find := func(query string) []string {
		t.Helper()
		r := call(t, srv, "GET", "/api/v1/agents/find?"+query, "", "")
		if r.status != 200 {
			t.Fatalf("find %s: %d %s", query, r.status, r.body)
		}
		var out struct{ Matches []registry.MatchResult }
		if err := json.Unmarshal([]byte(r.body), &out); err != nil {
			t.Fatal(err)
		}
		got := []string{}
		for _, m := range out.Matches {
			got = append(got, fmt.Sprintf("%s %.3f", m.Agent.Name, m.Score))
		}
		return got
	}
	findTests := []struct {
		query string
		want  []string
	}{
		{"capability=web_scraping", []string{"scraper 1.000"}},
		{"capability=web+scraping&fuzzy=true", []string{"scraper 1.000", "analyst 0.818"}},
		{"capability=web+scraping&fuzzy=true&threshold=0.9", []string{"scraper 1.000"}},
		{"capability=web+scraping&capability=translation&mode=any", []string{"scraper 0.500", "writer 0.500"}},
		{"capability=web+scraping&capability=translation&mode=any&status=active", []string{"scraper 0.500"}},
		{"capability=web+scraping&capability=api+integration", []string{"scraper 1.000"}},
		{"capability=reporting", []string{"zeta 1.000"}},
		{"capability=cooking&fuzzy=true", []string{}},
		{"capability=web+scraping&fuzzy=true&domain=finance", []string{"analyst 0.818"}},
		{"capability=web+scraping&capability=translation&mode=any&tag=web", []string{"scraper 0.500", "writer 0.500"}},
		{"capability=web+scraping&fuzzy=true&name=scr", []string{"scraper 1.000"}},
	}
	for _, tc := range findTests {
		if diff := cmp.Diff(tc.want, find(tc.query)); diff != "" {
			t.Errorf("find %s (-want +got):\n%s", tc.query, diff)
		}
	}
}

func TestReadOnly(t *testing.T) {
	ctx := t.Context()
	svc := registrysvc.New(registrysvc.NewMemoryStore(), &registrysvc.Options{ReadOnly: []string{"echo"}})
	srv := httptest.NewServer(svc.Handler())
	defer srv.Close()
	hosted, err := svc.Put(ctx, &registry.Agent{Name: "echo", URL: "http://127.0.0.1:8080/agents/echo"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Register(ctx, &registry.Agent{Name: "mine", URL: "https://mine.example.com/"}); err != nil {
		t.Fatal(err)
	}
	problem(t, call(t, srv, "PUT", "/api/v1/agents/echo", jsonCT, `{"url":"https://evil.example.com/"}`), 403, registry.ProblemAgentReadOnly)
	problem(t, call(t, srv, "PUT", "/api/v1/agents/"+hosted.ID, jsonCT, `{"url":"https://evil.example.com/"}`), 403, registry.ProblemAgentReadOnly)
	problem(t, call(t, srv, "DELETE", "/api/v1/agents/echo", "", ""), 403, registry.ProblemAgentReadOnly)
	problem(t, call(t, srv, "POST", "/api/v1/agents", jsonCT, `{"name":"echo","url":"https://evil.example.com/"}`), 409, registry.ProblemAgentExists)
	problem(t, call(t, srv, "PUT", "/api/v1/agents/mine", jsonCT, `{"name":"echo","url":"https://evil.example.com/"}`), 409, registry.ProblemAgentExists)
	if got := decodeAgent(t, call(t, srv, "GET", "/api/v1/agents/echo", "", ""), 200); got.URL != hosted.URL {
		t.Errorf("read-only record changed: %+v", got)
	}
	// Put, the platform's own path, still updates it.
	if a, err := svc.Put(ctx, &registry.Agent{Name: "echo", URL: "http://127.0.0.1:9090/agents/echo"}); err != nil || a.ID != hosted.ID {
		t.Errorf("Put = %+v, %v", a, err)
	}
}
