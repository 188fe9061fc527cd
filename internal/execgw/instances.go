package execgw

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"novaos.dev/novaos/a2a"
	pull "novaos.dev/novaos/delivery"
	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/httpapi"
	"novaos.dev/novaos/problem"
	"novaos.dev/novaos/registry"
)

// Limits of an instance.
const (
	maxInstanceName   = 64
	maxSecrets        = 32
	maxSecretName     = 64
	maxSecretValue    = 16 << 10
	maxScopes         = 64
	maxConfigBytes    = 64 << 10
	maxHeaderNames    = 32
	maxInstancesPage  = 500
	defaultInstPage   = 100
	instanceNameRules = "1 to 64 characters of a-z, 0-9, '-', '_' and '.', starting with a letter or digit"
)

var (
	instanceNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)
	secretNameRE   = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]{0,63}$`)
)

// InstanceRequest is the body of an install (POST) or an update (PATCH,
// where every field is optional and a missing one keeps its value).
type InstanceRequest struct {
	Name   *string `json:"name,omitempty"`
	Hosted *string `json:"hosted,omitempty"`
	URL    *string `json:"url,omitempty"`
	// AgentID names an agent of the registry to run; its URL is used.
	AgentID *string         `json:"agent_id,omitempty"`
	Config  *map[string]any `json:"config,omitempty"`
	// Secrets sets the named values; a null value removes one.
	Secrets       map[string]*string    `json:"secrets,omitempty"`
	Memory        *bool                 `json:"memory,omitempty"`
	MemoryBudget  *gateway.MemoryBudget `json:"memory_budget,omitempty"`
	Scopes        *[]string             `json:"scopes,omitempty"`
	CustomHeaders *[]string             `json:"custom_headers,omitempty"`
	Published     *bool                 `json:"published,omitempty"`
	// Delivery is "push" (the default: the platform calls the agent) or
	// "pull" (the agent connects out and pulls its runs; then none of
	// hosted, url and agent_id). BillingMode ("platform" or "agent") and
	// ToolClass ("chat", "scoped" or "host") are what a pull agent's
	// invocation tokens grant.
	Delivery    *string `json:"delivery,omitempty"`
	BillingMode *string `json:"billing_mode,omitempty"`
	ToolClass   *string `json:"tool_class,omitempty"`
}

// instancesPrincipal authenticates a caller of the instances API with
// the scope it needs.
func instancesPrincipal(r *http.Request, scope string) (principal, error) {
	p, err := principalOf(r, true)
	if err == nil {
		err = p.need(scope)
	}
	return p, err
}

// serveInstall answers POST /api/v1/instances.
func (s *Service) serveInstall(w http.ResponseWriter, r *http.Request) {
	p, err := instancesPrincipal(r, ScopeInstancesWrite)
	if err != nil {
		s.api.Fail(w, r, err)
		return
	}
	var in InstanceRequest
	if !s.api.Decode(w, r, &in, httpapi.Body{What: "the instance"}) {
		return
	}
	inst := gateway.Instance{ID: a2a.NewID(), TenantID: p.tenant}
	if err := s.apply(r.Context(), &inst, &in, true); err != nil {
		s.api.Fail(w, r, err)
		return
	}
	stored, err := s.store.CreateInstance(r.Context(), inst, s.o.Now())
	if err != nil {
		s.api.Fail(w, r, err)
		return
	}
	s.log.InfoContext(r.Context(), "gateway: instance installed", "tenant_id", stored.TenantID, "instance_id", stored.ID,
		"name", stored.Name, "caller", p.subject)
	w.Header().Set("Location", gateway.InstancesPath+"/"+stored.ID)
	httpapi.WriteJSON(w, r, http.StatusCreated, stored)
}

// serveInstances answers GET /api/v1/instances.
func (s *Service) serveInstances(w http.ResponseWriter, r *http.Request) {
	p, err := instancesPrincipal(r, ScopeInstancesRead)
	if err != nil {
		s.api.Fail(w, r, err)
		return
	}
	q := r.URL.Query()
	limit, err := limitParam(q.Get("limit"), defaultInstPage, maxInstancesPage)
	if err != nil {
		s.api.Fail(w, r, err)
		return
	}
	list, err := s.store.ListInstances(r.Context(), gateway.InstanceFilter{TenantID: p.tenant, AfterName: q.Get("after"), Limit: limit})
	if err != nil {
		s.api.Fail(w, r, err)
		return
	}
	out := struct {
		Instances  []gateway.Instance `json:"instances"`
		NextCursor string             `json:"next_cursor"`
	}{Instances: list}
	if out.Instances == nil {
		out.Instances = []gateway.Instance{}
	}
	if len(list) == limit {
		out.NextCursor = list[len(list)-1].Name
	}
	httpapi.WriteJSON(w, r, http.StatusOK, out)
}

// serveInstance answers GET, PATCH and DELETE /api/v1/instances/{id}.
func (s *Service) serveInstance(w http.ResponseWriter, r *http.Request) {
	s.api.Route(w, r, httpapi.Methods{
		http.MethodGet: func(w http.ResponseWriter, r *http.Request) {
			p, err := instancesPrincipal(r, ScopeInstancesRead)
			if err != nil {
				s.api.Fail(w, r, err)
				return
			}
			inst, err := s.instance(r.Context(), p.tenant, r.PathValue("id"))
			if err != nil {
				s.api.Fail(w, r, err)
				return
			}
			httpapi.WriteJSON(w, r, http.StatusOK, inst)
		},
		http.MethodPatch: s.serveUpdate,
		http.MethodDelete: func(w http.ResponseWriter, r *http.Request) {
			p, err := instancesPrincipal(r, ScopeInstancesWrite)
			if err == nil {
				err = s.store.DeleteInstance(r.Context(), p.tenant, r.PathValue("id"))
				if isNotFound(err) {
					err = instanceNotFound(r.PathValue("id"))
				}
			}
			if err != nil {
				s.api.Fail(w, r, err)
				return
			}
			w.WriteHeader(http.StatusNoContent)
		},
	})
}

func (s *Service) instance(ctx context.Context, tenant, id string) (*gateway.Instance, error) {
	inst, err := s.store.GetInstance(ctx, tenant, id)
	if isNotFound(err) {
		return nil, instanceNotFound(id)
	}
	if err != nil {
		return nil, err
	}
	return &inst, nil
}

// serveUpdate answers PATCH /api/v1/instances/{id}.
func (s *Service) serveUpdate(w http.ResponseWriter, r *http.Request) {
	p, err := instancesPrincipal(r, ScopeInstancesWrite)
	if err != nil {
		s.api.Fail(w, r, err)
		return
	}
	var in InstanceRequest
	if !s.api.Decode(w, r, &in, httpapi.Body{What: "the instance"}) {
		return
	}
	for range maxMutateTries {
		cur, err := s.instance(r.Context(), p.tenant, r.PathValue("id"))
		if err != nil {
			s.api.Fail(w, r, err)
			return
		}
		next := *cur
		if err := s.apply(r.Context(), &next, &in, false); err != nil {
			s.api.Fail(w, r, err)
			return
		}
		stored, err := s.store.UpdateInstance(r.Context(), next, cur.Version, s.o.Now())
		if errors.Is(err, gateway.ErrConflict) {
			continue
		}
		if err != nil {
			s.api.Fail(w, r, err)
			return
		}
		httpapi.WriteJSON(w, r, http.StatusOK, stored)
		return
	}
	s.api.Fail(w, r, gateway.ErrConflict)
}

// apply sets the request's fields on inst, checking every rule; install
// requires a name and exactly one agent.
func (s *Service) apply(ctx context.Context, inst *gateway.Instance, in *InstanceRequest, install bool) error {
	var errs []problem.FieldError
	bad := func(field, msg string) { errs = append(errs, problem.FieldError{Field: field, Message: msg}) }
	if in.Name != nil {
		if !instanceNameRE.MatchString(*in.Name) {
			bad("name", instanceNameRules)
		}
		inst.Name = *in.Name
	} else if install {
		bad("name", "required")
	}
	targets := 0
	for _, v := range []*string{in.Hosted, in.URL, in.AgentID} {
		if v != nil {
			targets++
		}
	}
	if in.Delivery != nil {
		switch *in.Delivery {
		case gateway.DeliveryPush, gateway.DeliveryPull:
			inst.Delivery = *in.Delivery
		default:
			bad("delivery", `"push" or "pull"`)
		}
	}
	if in.BillingMode != nil {
		switch pull.BillingMode(*in.BillingMode) {
		case pull.BillingPlatform, pull.BillingAgent:
			inst.BillingMode = *in.BillingMode
		default:
			bad("billing_mode", `"platform" or "agent"`)
		}
	}
	if in.ToolClass != nil {
		if pull.ToolClass(*in.ToolClass).Rank() == 0 {
			bad("tool_class", `"chat", "scoped" or "host"`)
		}
		inst.ToolClass = *in.ToolClass
	}
	switch {
	case targets > 1:
		bad("hosted", "hosted, url and agent_id exclude each other")
	case inst.Pulls() && targets > 0:
		bad("delivery", "a pull instance's agent connects out: it has no hosted, url or agent_id")
	case !inst.Pulls() && targets == 0 && (install || inst.Hosted == "" && inst.URL == ""):
		bad("hosted", "one of hosted, url and agent_id is required")
	}
	if in.Config != nil {
		if b, _ := json.Marshal(*in.Config); len(b) > maxConfigBytes {
			bad("config", "larger than 64 KiB")
		}
		inst.Config = *in.Config
	}
	if in.Memory != nil {
		inst.Memory = *in.Memory
	}
	if mb := in.MemoryBudget; mb != nil {
		if mb.TokenBudget < 0 || mb.LatencyBudgetMS < 0 {
			bad("memory_budget", "budgets are not negative")
		}
		inst.MemoryBudget = mb
	}
	if in.Scopes != nil {
		if len(*in.Scopes) > maxScopes {
			bad("scopes", "more than "+strconv.Itoa(maxScopes))
		}
		for i, sc := range *in.Scopes {
			if !identity.ValidScope(sc) {
				bad("scopes["+strconv.Itoa(i)+"]", "not a scope: segments of a-z A-Z 0-9 - _ . or *, joined by ':'")
			}
		}
		inst.Scopes = slices.Clone(*in.Scopes)
	}
	if in.CustomHeaders != nil {
		if len(*in.CustomHeaders) > maxHeaderNames {
			bad("custom_headers", "more than "+strconv.Itoa(maxHeaderNames))
		}
		for i, h := range *in.CustomHeaders {
			if h != "*" && !validHeaderName(h) {
				bad("custom_headers["+strconv.Itoa(i)+"]", "not a header name")
			}
		}
		inst.CustomHeaders = slices.Clone(*in.CustomHeaders)
	}
	if in.Published != nil {
		inst.Published = *in.Published
	}
	if len(in.Secrets) > 0 {
		if err := s.setSecrets(inst, in.Secrets, bad); err != nil {
			return err
		}
	}
	if len(errs) > 0 {
		return invalid("the instance", errs)
	}
	switch {
	case inst.Pulls():
		inst.Hosted, inst.URL, inst.AgentID = "", "", ""
	case in.Hosted != nil:
		if s.deps.Hosted == nil {
			return invalid("the instance", []problem.FieldError{{Field: "hosted", Message: "this server hosts no agents"}})
		}
		if _, ok := s.deps.Hosted.AgentHandler(*in.Hosted); !ok {
			return invalid("the instance", []problem.FieldError{{Field: "hosted", Message: "no hosted agent " + quote(*in.Hosted)}})
		}
		inst.Hosted, inst.URL, inst.AgentID = *in.Hosted, "", ""
	case in.URL != nil || in.AgentID != nil:
		if err := s.linkAgent(ctx, inst, in); err != nil {
			return err
		}
	}
	return nil
}

// setSecrets applies a request's secrets to inst's sealed set.
func (s *Service) setSecrets(inst *gateway.Instance, set map[string]*string, bad func(string, string)) error {
	values, err := s.openSecrets(inst)
	if err != nil {
		return err
	}
	for name, v := range set {
		if !secretNameRE.MatchString(name) {
			bad("secrets", "a name is not 1 to 64 characters of A-Z a-z 0-9 _ . -, starting with a letter or _")
			continue
		}
		if v == nil {
			delete(values, name)
			continue
		}
		if len(*v) > maxSecretValue {
			bad("secrets", "the value of "+name+" is larger than 16 KiB")
			continue
		}
		values[name] = *v
	}
	if len(values) > maxSecrets {
		bad("secrets", "more than "+strconv.Itoa(maxSecrets))
	}
	return s.sealSecretsAtRest(inst, values)
}

// openSecrets opens an instance's secrets (none: an empty map).
func (s *Service) openSecrets(inst *gateway.Instance) (map[string]string, error) {
	values := map[string]string{}
	if len(inst.SealedSecrets) == 0 {
		return values, nil
	}
	if s.deps.Sealer == nil {
		return nil, errNoSealer
	}
	b, err := s.deps.Sealer.Unseal(string(inst.SealedSecrets), sealSecrets, inst.TenantID, inst.ID)
	if err != nil {
		return nil, err
	}
	return values, json.Unmarshal(b, &values)
}

func (s *Service) sealSecretsAtRest(inst *gateway.Instance, values map[string]string) error {
	inst.SecretNames = inst.SecretNames[:0]
	for name := range values {
		inst.SecretNames = append(inst.SecretNames, name)
	}
	slices.Sort(inst.SecretNames)
	if len(values) == 0 {
		inst.SealedSecrets, inst.SecretNames = nil, nil
		return nil
	}
	if s.deps.Sealer == nil {
		return invalid("the instance", []problem.FieldError{{Field: "secrets", Message: "this server keeps no key to seal secrets with"}})
	}
	b, err := json.Marshal(values)
	if err != nil {
		return err
	}
	sealed, err := s.deps.Sealer.Seal(b, sealSecrets, inst.TenantID, inst.ID)
	inst.SealedSecrets = []byte(sealed)
	return err
}

// linkAgent points inst at an A2A agent by URL (registering it in the
// registry when no record has that URL) or at a registry record, after
// fetching its card (and checking its signature when it is signed).
func (s *Service) linkAgent(ctx context.Context, inst *gateway.Instance, in *InstanceRequest) error {
	var rec *registry.Agent
	if in.AgentID != nil {
		if s.registry == nil {
			return invalid("the instance", []problem.FieldError{{Field: "agent_id", Message: "this server keeps no registry"}})
		}
		got, err := s.registry.Get(ctx, *in.AgentID)
		if err != nil {
			return invalid("the instance", []problem.FieldError{{Field: "agent_id", Message: "no agent " + quote(*in.AgentID) + " in the registry"}})
		}
		rec = got
	}
	url := ""
	if rec != nil {
		url = rec.URL
	} else {
		url = strings.TrimRight(*in.URL, "/")
	}
	if err := s.o.URLPolicy.Check(url); err != nil {
		return invalid("the instance", []problem.FieldError{{Field: "url", Message: strings.TrimPrefix(err.Error(), "registry: ")}})
	}
	card, err := s.resolver.Resolve(ctx, url)
	if err != nil {
		return &problem.Problem{Type: gateway.ProblemAgentUnreachable, Status: http.StatusBadGateway, Title: "Bad Gateway",
			Detail: "the agent's card could not be fetched from " + url + ": " + describe(err)}
	}
	if err := s.checkCard(ctx, url, card); err != nil {
		return err
	}
	if rec == nil && s.registry != nil {
		if rec, err = s.registerAgent(ctx, inst, url, card); err != nil {
			return err
		}
	}
	inst.URL, inst.Hosted = url, ""
	if rec != nil {
		inst.AgentID = rec.ID
	}
	return nil
}

func invalid(what string, errs []problem.FieldError) *problem.Problem {
	return &problem.Problem{Type: gateway.ProblemInvalidRequest, Status: http.StatusBadRequest, Title: "Bad Request",
		Detail: what + " breaks " + strconv.Itoa(len(errs)) + " rule(s)", Errors: errs}
}
