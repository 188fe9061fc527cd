package registrysvc

import (
	"net/http"
	"strings"
	"time"

	"novaos.dev/novaos/internal/httpapi"
	"novaos.dev/novaos/registry"
)

// DNSPath is where the registry is also served in the shape the NovaOS
// Python SDK's AgentDNSClient calls: that client's base_url is the server's
// URL plus DNSPath (http://127.0.0.1:8080/api/v1/dns). It is not the SDK's bare
// /agents because /agents/{name} is where the server hosts A2A agents:
// POST /agents/search would be the JSON-RPC endpoint of an agent named
// "search".
const DNSPath = "/api/v1/dns"

// DNSHandler serves the registry read-only in the NovaOS Python SDK's
// Agent-DNS shape; mount it at DNSPath+"/":
//
//	GET  /api/v1/dns/agents          every record, as a JSON array (the list filters status, tag, domain, name as query parameters)
//	POST /api/v1/dns/agents/search   {"query", "name", "domain", "tag", "status"}, each optional: the matching records, as a JSON array
//	GET  /api/v1/dns/agents/{name}   one record by name (or id)
//
// A record has exactly that SDK's AgentDNSRecord fields: id, name, url,
// description, metadata, capabilities, domains, tags, created_at,
// updated_at (ISO 8601 with a numeric offset) and status. The query of a
// search matches as Service.Search's text does (every word, without case,
// in the name, description, a capability, a tag or a domain); name is a
// case-insensitive substring, the other filters exact. A search body may
// carry fields this API does not know; they are ignored. Errors are the
// registry's problem+json (404 for an unknown agent, which the SDK's client
// reads as "not found"). The API changes nothing, so it needs no token.
//
// It is not behind the API's Handler: nothing here writes, so the admin
// rule has nothing to guard (a search is a POST only in its method).
func (s *Service) DNSHandler() http.Handler { return dnsHandler{s} }

type dnsHandler struct{ s *Service }

func (d dnsHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	api := d.s.api
	rest, ok := strings.CutPrefix(r.URL.Path, DNSPath+"/agents")
	switch {
	case ok && rest == "":
		api.Route(w, r, httpapi.Methods{http.MethodGet: d.list})
	case ok && rest == "/search":
		// No agent is named "search" (registry.ValidName), so GET has
		// nothing to find here.
		api.Route(w, r, httpapi.Methods{http.MethodPost: d.search})
	case ok && len(rest) > 1 && rest[0] == '/' && !strings.Contains(rest[1:], "/"):
		name := rest[1:]
		api.Route(w, r, httpapi.Methods{
			http.MethodGet: func(w http.ResponseWriter, r *http.Request) { d.get(w, r, name) },
		})
	default:
		api.NotFound(w, r, "no such Agent-DNS resource: GET "+DNSPath+"/agents, POST "+DNSPath+"/agents/search, GET "+DNSPath+"/agents/{name}")
	}
}

// dnsSearch is the body of POST /agents/search.
type dnsSearch struct {
	Query  string `json:"query"`
	Name   string `json:"name"`
	Domain string `json:"domain"`
	Tag    string `json:"tag"`
	Status string `json:"status"`
}

func (d dnsHandler) list(w http.ResponseWriter, r *http.Request) {
	v := r.URL.Query()
	d.answer(w, r, registry.ListQuery{Status: v.Get("status"), Tag: v.Get("tag"), Domain: v.Get("domain"), Name: v.Get("name")}, "")
}

func (d dnsHandler) search(w http.ResponseWriter, r *http.Request) {
	var in dnsSearch
	// Unknown fields are allowed, unlike the registry's own API: the
	// Python SDK's client may send filters this API does not apply. No body is
	// no filter.
	if !d.s.api.Decode(w, r, &in, httpapi.Body{What: "the search", AllowUnknown: true, AllowEmpty: true}) {
		return
	}
	d.answer(w, r, registry.ListQuery{Status: in.Status, Tag: in.Tag, Domain: in.Domain, Name: in.Name}, in.Query)
}

// answer writes every record q and the words of text keep, in name order.
func (d dnsHandler) answer(w http.ResponseWriter, r *http.Request, q registry.ListQuery, text string) {
	snap, err := d.s.snapshot(r.Context())
	if err != nil {
		d.s.api.Fail(w, r, err)
		return
	}
	keep := filter(q, strings.Fields(strings.ToLower(text)))
	out := []dnsRecord{}
	for _, a := range snap.agents {
		if keep(a) {
			out = append(out, toDNS(a))
		}
	}
	httpapi.WriteJSON(w, r, http.StatusOK, out)
}

func (d dnsHandler) get(w http.ResponseWriter, r *http.Request, ref string) {
	a, err := d.s.Get(r.Context(), ref)
	if err != nil {
		d.s.api.Fail(w, r, err)
		return
	}
	httpapi.WriteJSON(w, r, http.StatusOK, toDNS(a))
}

// dnsRecord is the NovaOS Python SDK's AgentDNSRecord. Every field is
// written, null or empty when unset, as that SDK's dataclass has them all.
type dnsRecord struct {
	ID           string         `json:"id"`
	Name         string         `json:"name"`
	URL          string         `json:"url"`
	Description  *string        `json:"description"`
	Metadata     map[string]any `json:"metadata"`
	Capabilities []string       `json:"capabilities"`
	Domains      []string       `json:"domains"`
	Tags         []string       `json:"tags"`
	CreatedAt    *string        `json:"created_at"`
	UpdatedAt    *string        `json:"updated_at"`
	Status       string         `json:"status"`
}

// isoTime is ISO 8601 with a numeric offset rather than "Z", which
// Python's datetime.fromisoformat reads only from 3.11 on.
const isoTime = "2006-01-02T15:04:05.999999-07:00"

func toDNS(a *registry.Agent) dnsRecord {
	rec := dnsRecord{ID: a.ID, Name: a.Name, URL: a.URL, Metadata: a.Metadata,
		Capabilities: nonNil(a.Capabilities), Domains: nonNil(a.Domains), Tags: nonNil(a.Tags), Status: a.Status}
	if a.Description != "" {
		rec.Description = &a.Description
	}
	if rec.Status == "" {
		rec.Status = registry.StatusActive
	}
	rec.CreatedAt, rec.UpdatedAt = isoOrNil(a.CreatedAt), isoOrNil(a.UpdatedAt)
	return rec
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func isoOrNil(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := t.UTC().Format(isoTime)
	return &s
}
