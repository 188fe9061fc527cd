package llmgw

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"

	"novaos.dev/novaos/llm"
)

// visibleRoutes are the routes the caller's tenant sees (its own, and
// the platform's it does not hide), by name, that the caller may use.
func (s *Service) visibleRoutes(ctx context.Context, c *caller) ([]llm.Route, error) {
	platform, err := s.deps.Store.ListRoutes(ctx, "")
	if err != nil {
		return nil, err
	}
	own := []llm.Route{}
	if c.tenant != "" {
		if own, err = s.deps.Store.ListRoutes(ctx, c.tenant); err != nil {
			return nil, err
		}
	}
	byName := map[string]llm.Route{}
	for _, list := range [][]llm.Route{platform, own} {
		for _, r := range list {
			byName[r.Name] = r
		}
	}
	out := make([]llm.Route, 0, len(byName))
	for name, r := range byName {
		if c.grants(name) {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b llm.Route) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func objectOf(r *llm.Route) llm.Model {
	owner := "novaos"
	if r.TenantID != "" {
		owner = r.TenantID
	}
	return llm.Model{ID: r.Name, Object: llm.ObjectModel, Created: r.CreatedAt.Unix(), OwnedBy: owner}
}

// serveModels answers GET /v1/models: the models the token's scopes
// grant.
func (s *Service) serveModels(w http.ResponseWriter, r *http.Request) {
	c, e := s.authenticate(r)
	if e != nil {
		writeError(w, e)
		return
	}
	routes, err := s.visibleRoutes(r.Context(), c)
	if err != nil {
		s.log.ErrorContext(r.Context(), "llmgw: list models", "err", err)
		writeError(w, serverError(http.StatusInternalServerError, "The models could not be listed."))
		return
	}
	out := llm.ModelList{Object: llm.ObjectList, Data: make([]llm.Model, 0, len(routes))}
	for i := range routes {
		out.Data = append(out.Data, objectOf(&routes[i]))
	}
	writeJSON(w, http.StatusOK, out)
}

// serveModel answers GET /v1/models/{model}.
func (s *Service) serveModel(w http.ResponseWriter, r *http.Request) {
	c, e := s.authenticate(r)
	if e != nil {
		writeError(w, e)
		return
	}
	name := r.PathValue("model")
	if !llm.ValidModelName(name) {
		writeError(w, modelNotFound(name))
		return
	}
	if !c.grants(name) {
		writeError(w, modelNotAllowed(name))
		return
	}
	route, err := s.route(r.Context(), c.tenant, name)
	if err != nil {
		if errors.Is(err, llm.ErrNotFound) {
			writeError(w, modelNotFound(name))
			return
		}
		s.log.ErrorContext(r.Context(), "llmgw: read a model", "err", err)
		writeError(w, serverError(http.StatusInternalServerError, "The model could not be read."))
		return
	}
	writeJSON(w, http.StatusOK, objectOf(&route))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeError(w, serverError(http.StatusInternalServerError, "The answer could not be encoded."))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
