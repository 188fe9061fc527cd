package execgw

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2aclient"
	"novaos.dev/novaos/a2a/cardsig"
	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/internal/httpapi"
	"novaos.dev/novaos/jwk"
	"novaos.dev/novaos/problem"
	"novaos.dev/novaos/registry"
)

// CardKeysPath is where an agent's origin publishes the keys its card is
// signed with: the path the platform publishes its own at.
const CardKeysPath = "/.well-known/agent-card-jwks.json"

// CardsPrefix is where the gateway publishes the cards of published
// instances: CardsPrefix + tenant + "/" + instance id +
// a2a.WellKnownCardPath (CardPath).
const CardsPrefix = "/cards/"

// CardPath is the public path of a published instance's card.
func CardPath(tenant, instance string) string {
	return CardsPrefix + url.PathEscape(tenant) + "/" + url.PathEscape(instance) + a2a.WellKnownCardPath
}

// checkCard verifies a signed card against the keys its agent's origin
// publishes at CardKeysPath; an unsigned card is taken as it is.
func (s *Service) checkCard(ctx context.Context, base string, card *a2a.AgentCard) error {
	if len(card.Signatures) == 0 {
		return nil
	}
	u, err := url.Parse(base)
	if err != nil {
		return badRequest("the agent's URL does not parse")
	}
	keysURL := u.Scheme + "://" + u.Host + CardKeysPath
	keys, err := jwk.FetchKeySet(ctx, keysURL, &jwk.FetchOptions{Client: s.outbound})
	if err == nil {
		_, err = cardsig.Verify(card, keys, nil)
	}
	if err != nil {
		return &problem.Problem{Type: gateway.ProblemInvalidRequest, Status: http.StatusUnprocessableEntity, Title: "Unprocessable Content",
			Detail: "the agent's card is signed but its signature does not verify against " + keysURL + ": " + err.Error()}
	}
	return nil
}

var slugRE = regexp.MustCompile(`[^a-z0-9]+`)

// registerAgent records an agent installed by URL in the registry,
// where its owner publishes its recipient keys.
func (s *Service) registerAgent(ctx context.Context, inst *gateway.Instance, base string, card *a2a.AgentCard) (*registry.Agent, error) {
	rec := agentRecord(inst.TenantID, base, card, s.o.Now())
	if err := registry.Validate(rec, s.o.URLPolicy); err != nil {
		return nil, &problem.Problem{Type: gateway.ProblemInvalidRequest, Status: http.StatusBadRequest, Title: "Bad Request",
			Detail: "the agent cannot be registered: " + err.Error()}
	}
	if err := s.registry.Create(ctx, rec); err != nil {
		return nil, err
	}
	return rec, nil
}

// agentRecord is the registry record of an agent at base with card,
// installed by tenant: named after the card with a random suffix (names
// are unique across tenants), its skills as capabilities, within the
// registry's limits.
func agentRecord(tenant, base string, card *a2a.AgentCard, now time.Time) *registry.Agent {
	const maxSlug = 40
	slug := strings.Trim(slugRE.ReplaceAllString(strings.ToLower(card.Name), "-"), "-")
	if len(slug) > maxSlug {
		slug = strings.TrimRight(slug[:maxSlug], "-")
	}
	if slug == "" {
		slug = "agent"
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	now = now.UTC()
	rec := &registry.Agent{ID: a2a.NewID(), Name: slug + "-" + hex.EncodeToString(b[:]), URL: base,
		Description: truncate(card.Description, registry.MaxDescriptionLen), Status: registry.StatusActive,
		Tags: []string{truncate("tenant:"+tenant, registry.MaxTagLen)}, CreatedAt: now, UpdatedAt: now}
	for _, sk := range card.Skills {
		if len(rec.Capabilities) == registry.MaxListItems {
			break
		}
		if sk.ID != "" && len(sk.ID) <= registry.MaxCapabilityLen {
			rec.Capabilities = append(rec.Capabilities, sk.ID)
		}
	}
	return rec
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// serveCard answers GET /cards/{tenant}/{id}/.well-known/agent-card.json: the
// public card of a published instance, without authentication. An
// instance that is not published is not found; the extended card is
// never served here.
func (s *Service) serveCard(w http.ResponseWriter, r *http.Request) {
	inst, err := s.store.GetInstance(r.Context(), r.PathValue("tenant"), r.PathValue("id"))
	if err != nil || !inst.Published {
		s.api.Fail(w, r, notFound{gateway.ProblemInstanceNotFound, "no published agent " + quote(r.PathValue("id"))})
		return
	}
	var card *a2a.AgentCard
	switch {
	case inst.Hosted != "":
		card, err = s.hostedCard(r.Context(), inst.Hosted)
	default:
		card, err = s.resolver.Resolve(r.Context(), inst.URL)
	}
	if err != nil {
		s.api.Fail(w, r, &problem.Problem{Type: gateway.ProblemAgentUnreachable, Status: http.StatusBadGateway, Title: "Bad Gateway",
			Detail: "the agent's card could not be fetched"})
		return
	}
	w.Header().Set("Cache-Control", "public, max-age=300")
	httpapi.WriteJSON(w, r, http.StatusOK, card)
}

// hostedCard reads a hosted agent's card through its handler.
func (s *Service) hostedCard(ctx context.Context, name string) (*a2a.AgentCard, error) {
	h, ok := s.deps.Hosted.AgentHandler(name)
	if !ok {
		return nil, errors.New("no such hosted agent")
	}
	res := a2aclient.NewResolver(&a2aclient.ResolverOptions{HTTPClient: hostedClient(name, h)})
	return res.Resolve(ctx, hostedBase+name)
}
