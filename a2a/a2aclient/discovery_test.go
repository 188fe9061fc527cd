package a2aclient_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2aclient"
)

const cardJSON = `{"name":"c","version":"1","supported_interfaces":[{"url":"http://x/a","protocol_binding":"HTTP+JSON"},{"url":"http://x/j","protocolBinding":"JSONRPC","tenant":"t1"}],
"capabilities":{"extensions":[{"uri":"urn:opt"},{"uri":"urn:req","required":true}]},
"skills":[{"id":"s1","name":"S","description":"d","tags":["Search"]},{"id":"s2","name":"S2","description":"d","tags":["other"]}]}`

// cardServer serves cardJSON with the given Cache-Control and ETag, and
// counts full and conditional fetches.
type cardServer struct {
	mu                 sync.Mutex
	full, revalidated  int
	cacheControl, etag string
}

func (s *cardServer) start(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != a2a.WellKnownCardPath {
			http.NotFound(w, r)
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.cacheControl != "" {
			w.Header().Set("Cache-Control", s.cacheControl)
		}
		if s.etag != "" {
			w.Header().Set("ETag", s.etag)
			if r.Header.Get("If-None-Match") == s.etag {
				s.revalidated++
				w.WriteHeader(http.StatusNotModified)
				return
			}
		}
		s.full++
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, cardJSON)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestResolverCache(t *testing.T) {
	for _, tc := range []struct {
		name, cacheControl, etag string
		// fetches at t=0, t=0, t=61s
		wantFull, wantRevalidated int
	}{
		{"max-age reuses, then refetches", "max-age=60", "", 2, 0},
		{"max-age and ETag: 304 after expiry", "public, max-age=60", `"v1"`, 1, 1},
		{"no-cache with ETag revalidates every time", "no-cache", `"v1"`, 1, 2},
		{"no-store never caches", "no-store, max-age=60", `"v1"`, 3, 0},
		{"nothing said: not cached", "", "", 3, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := &cardServer{cacheControl: tc.cacheControl, etag: tc.etag}
			base := cs.start(t)
			now := time.Unix(1000, 0)
			r := a2aclient.NewResolver(&a2aclient.ResolverOptions{Now: func() time.Time { return now }})
			for _, at := range []time.Duration{0, 0, 61 * time.Second} {
				now = time.Unix(1000, 0).Add(at)
				card, err := r.Resolve(t.Context(), base+"/")
				must(t, err)
				if card.Name != "c" {
					t.Fatalf("card = %+v", card)
				}
			}
			if cs.full != tc.wantFull || cs.revalidated != tc.wantRevalidated {
				t.Errorf("full fetches %d, revalidations %d; want %d, %d", cs.full, cs.revalidated, tc.wantFull, tc.wantRevalidated)
			}
		})
	}
}

func TestResolverRefusals(t *testing.T) {
	big := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"name":"`+strings.Repeat("x", 2<<20)+`"}`)
	}))
	defer big.Close()
	r := a2aclient.NewResolver(nil)
	if _, err := r.Resolve(t.Context(), big.URL); !errors.Is(err, a2aclient.ErrResponseTooLarge) {
		t.Errorf("large card: %v", err)
	}
	missing := httptest.NewServer(http.NotFoundHandler())
	defer missing.Close()
	if _, err := r.Resolve(t.Context(), missing.URL); !errors.Is(err, a2aclient.ErrUnreachable) {
		t.Errorf("404: %v", err)
	}
	for _, body := range []string{`[]`, `{"name":""}`, `{"name":"x"}`, `{"name":"x","supportedInterfaces":[{"protocolBinding":"JSONRPC"}]}`} {
		if _, err := a2aclient.ParseCard([]byte(body)); !errors.Is(err, a2aclient.ErrInvalidResponse) {
			t.Errorf("ParseCard(%s) = %v", body, err)
		}
	}
}

func TestCardLookups(t *testing.T) {
	card, err := a2aclient.ParseCard([]byte(cardJSON))
	must(t, err)
	in, err := a2aclient.SelectInterface(card)
	must(t, err)
	if in.URL != "http://x/j" || in.Tenant != "t1" {
		t.Errorf("JSONRPC interface = %+v", in)
	}
	if in, err := a2aclient.SelectInterface(card, "GRPC", "http+json"); err != nil || in.URL != "http://x/a" {
		t.Errorf("HTTP+JSON interface = %+v, %v", in, err)
	}
	if _, err := a2aclient.SelectInterface(card, "GRPC"); !errors.Is(err, a2aclient.ErrNoInterface) {
		t.Errorf("GRPC: %v", err)
	}
	if s, ok := a2aclient.FindSkill(card, "s2"); !ok || s.Name != "S2" {
		t.Errorf("FindSkill = %v %v", s, ok)
	}
	if _, ok := a2aclient.FindSkill(card, "nope"); ok {
		t.Error("FindSkill found a missing skill")
	}
	if got := a2aclient.SkillsWithTag(card, "search"); len(got) != 1 || got[0].ID != "s1" {
		t.Errorf("SkillsWithTag = %v", got)
	}
	if e, ok := a2aclient.FindExtension(card, "urn:opt"); !ok || e.Required {
		t.Errorf("FindExtension = %v %v", e, ok)
	}
	if got := a2aclient.RequiredExtensions(card); len(got) != 1 || got[0] != "urn:req" {
		t.Errorf("RequiredExtensions = %v", got)
	}
	if got := a2aclient.CardURL("http://h/agents/x/"); got != "http://h/agents/x/.well-known/agent-card.json" {
		t.Errorf("CardURL = %s", got)
	}
}

func TestNewFromURLAgainstServer(t *testing.T) {
	a := newAgent(t, &agentOptions{tenant: "acme"})
	r := a2aclient.NewResolver(nil)
	c, err := a2aclient.NewFromURL(t.Context(), a.srv.URL, &a2aclient.Options{Resolver: r})
	must(t, err)
	if c.Card().Name != "scripted" || c.Tenant() != "acme" {
		t.Errorf("client card %q tenant %q", c.Card().Name, c.Tenant())
	}
	// Our server sends max-age=300 and an ETag: the second resolve is
	// served from the cache, the same card.
	c2, err := a2aclient.NewFromURL(t.Context(), a.srv.URL, &a2aclient.Options{Resolver: r})
	must(t, err)
	if c2.Card() != c.Card() {
		t.Error("second resolve did not reuse the cached card")
	}
}
