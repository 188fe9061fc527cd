package llmgw

import (
	"net/http"

	"novaos.dev/novaos/internal/httpapi"
)

// Routes serve the OpenAI-compatible API under /v1 and the
// administration under /api/v1/llm.
func (s *Service) Routes() []httpapi.Route {
	return append(s.v1Routes(), s.adminRoutes()...)
}

// v1Routes are the OpenAI-compatible API's routes.
func (s *Service) v1Routes() []httpapi.Route {
	return []httpapi.Route{
		{Pattern: ChatPath, Handler: s.serveCall(opChat)},
		{Pattern: EmbeddingsPath, Handler: s.serveCall(opEmbeddings)},
		{Pattern: "GET " + ModelsPath, Handler: http.HandlerFunc(s.serveModels)},
		{Pattern: "GET " + ModelsPath + "/{model}", Handler: http.HandlerFunc(s.serveModel)},
	}
}

// v1Mux serves the /v1 routes alone.
func (s *Service) v1Mux() *http.ServeMux {
	mux := http.NewServeMux()
	for _, r := range s.v1Routes() {
		mux.Handle(r.Pattern, r.Handler)
	}
	return mux
}
