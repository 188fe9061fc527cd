package delivery

import (
	"context"
	"encoding/json"
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
// latest of each agent), keeps the runs it lists as active from ending
// stale (keepAlive), and answers the interval of the next.
func (s *Service) Heartbeat(ctx context.Context, a Agent, h delivery.Heartbeat) (delivery.HeartbeatAck, error) {
	if errs := delivery.CheckHeartbeat(h); errs != nil {
		return delivery.HeartbeatAck{}, validationFailed("the heartbeat breaks its rules", errs...)
	}
	s.beatsMu.Lock()
	s.beats[a.ID] = LastHeartbeat{Heartbeat: h, At: s.o.Now()}
	s.beatsMu.Unlock()
	s.keepAlive(ctx, a, h.Details.ActiveRuns)
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
// keeps its hash. It honours Idempotency-Key (per tenant) without
// keeping the token: a repeat revokes the token of the first answer and
// answers a new one, so that a retried request leaves one token.
func (s *Service) serveCreateToken(w http.ResponseWriter, r *http.Request) {
	tok, err := s.createToken(w, r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, tok)
}

// tenantAdmin authenticates an operator of the request's tenant: the
// admin token naming it, or a platform token with ScopeTokens.
func (s *Service) tenantAdmin(r *http.Request) (httpapi.TenantCaller, error) {
	auth := httpapi.AdminOrToken(s.deps.AdminToken, s.deps.Tokens)
	if s.deps.Tokens == nil {
		auth = httpapi.AdminRule{Token: s.deps.AdminToken}
	}
	caller, err := auth.Authenticate(r)
	if err != nil {
		return httpapi.TenantCaller{}, err
	}
	tc, err := httpapi.TenantCallerOf(r.WithContext(httpapi.WithCaller(r.Context(), caller)), true)
	if err == nil {
		err = tc.Need(ScopeTokens)
	}
	return tc, err
}

func (s *Service) createToken(w http.ResponseWriter, r *http.Request) (_ delivery.TokenGrant, err error) {
	tc, err := s.tenantAdmin(r)
	if err != nil {
		return delivery.TokenGrant{}, err
	}
	ctx := r.Context()
	claim, first, fresh, err := s.claimKey(w, r, "tokens:"+tc.Tenant)
	if err != nil {
		return delivery.TokenGrant{}, err
	}
	if claim != nil {
		defer func() {
			if err != nil { // nothing was issued: a retry runs again
				_ = s.store.ForgetRequest(context.WithoutCancel(ctx), claim.Scope, claim.Key)
			}
		}()
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
	inst, err := s.runs.GetInstance(ctx, tc.Tenant, agentID)
	if errors.Is(err, gateway.ErrNotFound) || err == nil && !inst.Pulls() {
		return delivery.TokenGrant{}, notFound("no pull instance " + bounded(agentID) + " in the tenant")
	}
	if err != nil {
		return delivery.TokenGrant{}, err
	}
	now := s.o.Now()
	if claim != nil && !fresh {
		// A repeat of the key: the token of the first answer was shown once
		// and is not kept, so it is revoked and a new one issued in its
		// place — the key stands for one working token.
		var prev delivery.TokenGrant
		if json.Unmarshal(first.Body, &prev) == nil && prev.ID != "" {
			if err := s.store.RevokeAPIToken(ctx, prev.AgentID, prev.ID, now); err != nil && !errors.Is(err, delivery.ErrNotFound) {
				return delivery.TokenGrant{}, err
			}
		}
	}
	value := newAPIToken()
	rec := delivery.APIToken{ID: a2a.NewID(), TenantID: inst.TenantID, AgentID: inst.ID, Hash: tokenHash(value.Reveal()),
		DPoPJKT: in.DPoPJKT, Name: in.Name, CreatedAt: now}
	if err := s.store.CreateAPIToken(ctx, rec); err != nil {
		return delivery.TokenGrant{}, err
	}
	grant := delivery.TokenGrant{ID: rec.ID, AgentID: inst.ID, Token: value.Reveal(), DPoPJKT: in.DPoPJKT}
	if claim != nil {
		kept := grant
		kept.Token = "" // never kept
		claim.Done, claim.Status = true, http.StatusCreated
		claim.Body, _ = json.Marshal(kept)
		if err := s.store.FinishRequest(context.WithoutCancel(ctx), *claim); err != nil {
			s.log.WarnContext(ctx, "delivery: an idempotent answer could not be kept", "tenant_id", inst.TenantID, "err", err)
		}
	}
	s.log.InfoContext(ctx, "delivery: agent API token created", "tenant_id", inst.TenantID, "agent_id", inst.ID,
		"token_id", rec.ID, "bound", in.DPoPJKT != "", "replaces", claim != nil && !fresh, "caller", tc.Subject)
	return grant, nil
}

// jktForm is an RFC 7638 SHA-256 thumbprint in base64url.
var jktForm = regexp.MustCompile(`^[A-Za-z0-9_-]{43}$`)
