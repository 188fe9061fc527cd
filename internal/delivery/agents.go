package delivery

import (
	"context"
	"errors"
	"net/http"
	"regexp"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/delivery"
	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/internal/httpapi"
)

// LastHeartbeat is an agent's latest heartbeat and when it came.
type LastHeartbeat struct {
	Heartbeat delivery.Heartbeat
	At        time.Time
}

// Heartbeat remembers the agent's state (in this process's memory: the
// latest of each agent) and answers the interval of the next.
func (s *Service) Heartbeat(_ context.Context, a Agent, h delivery.Heartbeat) (delivery.HeartbeatAck, error) {
	if errs := delivery.CheckHeartbeat(h); errs != nil {
		return delivery.HeartbeatAck{}, validationFailed("the heartbeat breaks its rules", errs...)
	}
	s.beatsMu.Lock()
	s.beats[a.ID] = LastHeartbeat{Heartbeat: h, At: s.o.Now()}
	s.beatsMu.Unlock()
	return delivery.HeartbeatAck{IntervalMS: s.o.HeartbeatInterval.Milliseconds()}, nil
}

// LastHeartbeatOf returns the latest heartbeat this process had of the
// agent.
func (s *Service) LastHeartbeatOf(agentID string) (LastHeartbeat, bool) {
	s.beatsMu.Lock()
	defer s.beatsMu.Unlock()
	h, ok := s.beats[agentID]
	return h, ok
}

// Triggerers answers who may trigger the agent. The platform keeps no
// allow list per agent: anyone of the tenant who may start runs of the
// instance may trigger it, which the subject "*" says; the permission
// version is the instance's, so that an agent reloads when it changes.
func (s *Service) Triggerers(_ context.Context, a Agent) delivery.AgentTriggerers {
	return delivery.AgentTriggerers{PermissionVersion: a.Instance.Version, Subjects: []string{"*"}}
}

// Discovery tells an agent where the delivery parts are.
func (s *Service) Discovery() delivery.Discovery {
	return delivery.Discovery{InstanceID: s.InstanceID(), JWKSURI: s.base + delivery.JWKSPath, Issuer: s.issuer,
		Gateway: delivery.GatewayInfo{URL: s.base + delivery.GatewayPath, ProtocolVersions: []string{delivery.ProtocolVersion}}}
}

// ScopeTokens is the scope a platform token needs to create an agent's
// API token: the one that installs and changes instances.
const ScopeTokens = "instances:write"

// serveCreateToken answers createToken: a tenant admin (the operator
// naming the tenant, or a platform token with ScopeTokens) issues an API
// token for a pull instance of the tenant, shown once; the platform
// keeps its hash.
func (s *Service) serveCreateToken(w http.ResponseWriter, r *http.Request) {
	tok, err := s.createToken(w, r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, tok)
}

func (s *Service) createToken(w http.ResponseWriter, r *http.Request) (delivery.TokenGrant, error) {
	auth := httpapi.AdminOrToken(s.deps.AdminToken, s.deps.Tokens)
	if s.deps.Tokens == nil {
		auth = httpapi.AdminRule{Token: s.deps.AdminToken}
	}
	caller, err := auth.Authenticate(r)
	if err != nil {
		return delivery.TokenGrant{}, err
	}
	r = r.WithContext(httpapi.WithCaller(r.Context(), caller))
	tc, err := httpapi.TenantCallerOf(r, true)
	if err == nil {
		err = tc.Need(ScopeTokens)
	}
	if err != nil {
		return delivery.TokenGrant{}, err
	}
	var in delivery.TokenCreate
	if err := s.decode(w, r, &in, true); err != nil {
		return delivery.TokenGrant{}, err
	}
	var errs []delivery.FieldError
	if in.DPoPJKT != "" && !jktForm.MatchString(in.DPoPJKT) {
		errs = append(errs, delivery.FieldError{Code: delivery.CodeInvalidValue, Pointer: "/dpop_jkt", Detail: "an RFC 7638 SHA-256 thumbprint: 43 characters of base64url"})
	}
	if len(in.Name) > 200 {
		errs = append(errs, delivery.FieldError{Code: delivery.CodeInvalidValue, Pointer: "/name", Detail: "at most 200 bytes"})
	}
	if errs != nil {
		return delivery.TokenGrant{}, validationFailed("the token request breaks its rules", errs...)
	}
	agentID := r.PathValue("agent")
	inst, err := s.runs.GetInstance(r.Context(), tc.Tenant, agentID)
	if errors.Is(err, gateway.ErrNotFound) || err == nil && !inst.Pulls() {
		return delivery.TokenGrant{}, notFound("no pull instance " + bounded(agentID) + " in the tenant")
	}
	if err != nil {
		return delivery.TokenGrant{}, err
	}
	value := newAPIToken()
	rec := delivery.APIToken{ID: a2a.NewID(), TenantID: inst.TenantID, AgentID: inst.ID, Hash: tokenHash(value.Reveal()),
		DPoPJKT: in.DPoPJKT, Name: in.Name, CreatedAt: s.o.Now()}
	if err := s.store.CreateAPIToken(r.Context(), rec); err != nil {
		return delivery.TokenGrant{}, err
	}
	s.log.InfoContext(r.Context(), "delivery: agent API token created", "tenant_id", inst.TenantID, "agent_id", inst.ID,
		"token_id", rec.ID, "bound", in.DPoPJKT != "", "caller", tc.Subject)
	return delivery.TokenGrant{ID: rec.ID, AgentID: inst.ID, Token: value.Reveal(), DPoPJKT: in.DPoPJKT}, nil
}

// jktForm is an RFC 7638 SHA-256 thumbprint in base64url.
var jktForm = regexp.MustCompile(`^[A-Za-z0-9_-]{43}$`)
