package delivery

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"strings"

	"novaos.dev/novaos/delivery"
	"novaos.dev/novaos/dpop"
	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/secret"
)

// Agent is an authenticated agent: a pull instance, whose id is the
// agent's id (its tokens' audience), in its tenant.
type Agent struct {
	ID       string
	TenantID string
	// TokenID is the API token the agent used.
	TokenID  string
	Instance gateway.Instance
}

// Credentials are what an agent presents: its API token, and a DPoP
// proof for the request (Method, URL) when the token is bound to a key
// (then Scheme is "DPoP"; an unbound token comes as "Bearer").
type Credentials struct {
	Scheme string
	Token  secret.Value
	Proof  string
	Method string
	// URL is the request's public URL: the server's base URL and path
	// (for the gateway, its ws URL, which a proof names as http).
	URL string
}

// APITokenPrefix starts every agent API token, so that a leaked one is
// recognised by secret scanners.
const APITokenPrefix = "nvat_"

// maxAPITokenBytes bounds an API token the service hashes.
const maxAPITokenBytes = 256

// newAPIToken makes an API token: the prefix and 32 random bytes.
func newAPIToken() secret.Value {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return secret.New(APITokenPrefix + base64.RawURLEncoding.EncodeToString(b[:]))
}

func tokenHash(tok string) []byte {
	sum := sha256.Sum256([]byte(tok))
	return sum[:]
}

// Nonce is the DPoP nonce of now: what every answer carries in
// DPoP-Nonce, and the gateway's hello.
func (s *Service) Nonce() string { return s.nonces.Issue(s.o.Now()) }

// AuthenticateAgent establishes the agent c names: its API token (by
// hash; not revoked), the proof of its bound key (checked against the
// request, a current nonce, and never seen before), and its pull
// instance. Its errors are *delivery.Problem: 401 unauthenticated, 401
// use_dpop_nonce (answer with a fresh Nonce), or 403 for an instance
// that no longer pulls.
func (s *Service) AuthenticateAgent(ctx context.Context, c Credentials) (Agent, error) {
	tok := c.Token.Reveal()
	if tok == "" || len(tok) > maxAPITokenBytes {
		return Agent{}, unauthenticated("send the agent's API token as Authorization: Bearer <token>, or DPoP <token> with a proof")
	}
	rec, err := s.store.FindAPIToken(ctx, tokenHash(tok))
	if errors.Is(err, delivery.ErrNotFound) || err == nil && !rec.RevokedAt.IsZero() {
		return Agent{}, unauthenticated("the API token is unknown or revoked")
	}
	if err != nil {
		return Agent{}, err
	}
	bound := rec.DPoPJKT != ""
	switch {
	case bound && !strings.EqualFold(c.Scheme, "DPoP"):
		return Agent{}, unauthenticated("the API token is bound to a key: send it as Authorization: DPoP <token> with a DPoP proof")
	case strings.EqualFold(c.Scheme, "DPoP") || c.Proof != "":
		now := s.o.Now()
		checked, err := dpop.Verify(c.Proof, dpop.Expect{Method: c.Method, URL: c.URL, AccessToken: tok, JKT: rec.DPoPJKT,
			Nonce: s.nonces.Valid, Now: now, Window: s.o.ProofWindow})
		if errors.Is(err, dpop.ErrUseNonce) {
			return Agent{}, newProblem(http.StatusUnauthorized, delivery.CodeUseDPoPNonce, "", "repeat the request with a proof carrying the nonce in DPoP-Nonce")
		}
		if err != nil {
			return Agent{}, badProof("the DPoP proof is missing or does not fit the request and the token")
		}
		if err := s.firstUse(ctx, checked, now); err != nil {
			return Agent{}, err
		}
	}
	inst, err := s.runs.GetInstance(ctx, rec.TenantID, rec.AgentID)
	if errors.Is(err, gateway.ErrNotFound) || err == nil && !inst.Pulls() {
		return Agent{}, forbidden("the agent is no longer installed for pull delivery")
	}
	if err != nil {
		return Agent{}, err
	}
	return Agent{ID: inst.ID, TenantID: inst.TenantID, TokenID: rec.ID, Instance: inst}, nil
}

// credentialsOf reads a request's credentials: its Authorization scheme
// and token, its DPoP proof, and its public URL.
func (s *Service) credentialsOf(r *http.Request) Credentials {
	scheme, tok, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	c := Credentials{Scheme: scheme, Token: secret.New(strings.TrimLeft(tok, " ")), Method: r.Method,
		URL: s.base + r.URL.EscapedPath()}
	if proofs := r.Header.Values(dpop.Header); len(proofs) == 1 {
		c.Proof = proofs[0]
	} else if len(proofs) > 1 {
		c.Proof = "" // RFC 9449 §4.3: exactly one proof; none is checked
		c.Scheme = "DPoP"
	}
	return c
}

// authAgent authenticates r's agent and checks that it is the agent its
// path names ({agent}, when the route has one): another agent's
// resources are not there for it (404).
func (s *Service) authAgent(r *http.Request) (Agent, error) {
	a, err := s.AuthenticateAgent(r.Context(), s.credentialsOf(r))
	if err != nil {
		return Agent{}, err
	}
	if id := r.PathValue("agent"); id != "" && id != a.ID {
		return Agent{}, notFound("no such agent for this token")
	}
	return a, nil
}
