package memorysvc

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/httpapi"
	"novaos.dev/novaos/store"
)

// Tokens verifies the execution tokens callers present: the server's
// token issuer.
type Tokens interface {
	// Middleware lets through the requests that carry a valid bearer
	// token, with its claims in their context (identity.FromContext), and
	// answers the others 401.
	Middleware(next http.Handler) http.Handler
}

// Deps are what the memory service takes from the server around it.
type Deps struct {
	Tokens Tokens // required
	// Tracing traces every memory operation ("memory.write", …); nil
	// traces nothing.
	Tracing trace.TracerProvider
	// Metrics, when set, receives the operations' metrics and the
	// store's index size.
	Metrics prometheus.Registerer
}

// Mount builds the memory service over st.Memory, its callers identified
// by deps.Tokens; nil when st keeps no memories.
func Mount(st *store.Stores, deps Deps, o *Options) *Service {
	if st.Memory == nil {
		return nil
	}
	s := New(st.Memory, o)
	s.tokens = deps.Tokens
	s.tel = newTelemetry(deps.Tracing, deps.Metrics, st.Memory, s.log)
	if o != nil {
		s.maxBody = o.MaxBodyBytes
	}
	return s
}

// Routes serve the MCP endpoint at Path behind token verification.
func (s *Service) Routes() []httpapi.Route {
	h := s.Handler(requestCaller, &HandlerOptions{MaxBodyBytes: s.maxBody})
	return []httpapi.Route{{Pattern: Path, Handler: s.tokens.Middleware(h)}}
}

// Interceptors record the turns of hosted agents' conversations (see
// turnRecorder), from the identity the host verified.
func (s *Service) Interceptors() []a2asrv.Interceptor {
	return []a2asrv.Interceptor{&turnRecorder{store: s.store, log: s.log, now: s.now}}
}

// requestCaller is the Caller of a request the token middleware let through.
func requestCaller(r *http.Request) (*Caller, bool) {
	c, ok := identity.FromContext(r.Context())
	if !ok {
		return nil, false
	}
	agent := c.AgentID
	if agent == "" {
		agent = c.Subject
	}
	return &Caller{Tenant: c.TenantID, Agent: agent, User: c.UserID, Run: c.RunID,
		Conversation: c.ConversationID, Grants: c.HasScope}, true
}
