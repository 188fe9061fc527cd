package llmgw

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"time"

	"novaos.dev/novaos/internal/httpapi"
)

// PlatformBaseURL is the base URL the platform's own model clients are
// given when they call the gateway in process (Platform.Client): its
// host is never dialled.
const PlatformBaseURL = "http://llm-gateway.novaos.internal/v1"

// Platform is how the platform's own model clients (the memory service's
// embedder and extractor, the gate's judge) reach the gateway in
// process, as the platform tenant (Options.PlatformTenant), with every
// model granted: their calls are routed, metered and budgeted like an
// agent's. Give its Client to the clients with PlatformBaseURL as their
// base URL, and the Platform to the gateway's Options; a call before the
// gateway is built, or on a server without one, fails.
type Platform struct {
	svc atomic.Pointer[Service]
}

var errNoGateway = errors.New("llmgw: the LLM gateway is not running on this server")

func (p *Platform) bind(s *Service) { p.svc.Store(s) }

// Client returns an HTTP client whose requests the gateway serves in
// process, each within timeout (none when zero).
func (p *Platform) Client(timeout time.Duration) *http.Client {
	return &http.Client{Transport: p, Timeout: timeout}
}

// RoundTrip serves req with the gateway's /v1 endpoints as the platform.
func (p *Platform) RoundTrip(req *http.Request) (*http.Response, error) {
	s := p.svc.Load()
	if s == nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, errNoGateway
	}
	s.platformOnce.Do(func() { s.platform = httpapi.HandlerTransport(s.platformHandler()) })
	return s.platform.RoundTrip(req)
}

// platformHandler serves the /v1 endpoints to the platform's calls.
func (s *Service) platformHandler() http.Handler {
	c := &caller{tenant: s.o.PlatformTenant, platform: true}
	mux := s.v1Mux()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mux.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), platformKey{}, c)))
	})
}
