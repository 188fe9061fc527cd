package execgw

import (
	"net/http"
	"strings"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/internal/httpapi"
)

// Routes serve the gateway's API, its runs page and the public cards of
// published instances.
func (s *Service) Routes() []httpapi.Route {
	route := func(pattern string, m httpapi.Methods) httpapi.Route {
		return httpapi.Route{Pattern: pattern, Handler: s.api.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s.api.Route(w, r, m)
		}))}
	}
	get := func(h http.HandlerFunc) httpapi.Methods { return httpapi.Methods{http.MethodGet: h} }
	post := func(h http.HandlerFunc) httpapi.Methods { return httpapi.Methods{http.MethodPost: h} }
	runs := strings.TrimSuffix(gateway.RunsPath, "/")
	page := s.runsPage()
	return []httpapi.Route{
		route(gateway.ExecutePath, post(s.serveExecute)),
		route(gateway.EventsPath+"{runId}", get(s.serveEvents)),
		route(gateway.StreamingHealthPath, get(s.serveStreamingHealth)),
		route(runs, get(s.serveListRuns)),
		route(runs+"/{id}", get(s.serveRun)),
		route(runs+"/{id}/events", get(s.serveUserRunEvents)),
		route(runs+"/{id}/cancel", post(s.serveCancel)),
		route(runs+"/{id}/reply", post(s.serveReply)),
		route(runs+"/{id}/debug/{action}", post(s.serveDebug)),
		route(gateway.ServiceRunsPath+"{id}", get(s.serveServiceRun)),
		route(gateway.ServiceRunsPath+"{id}/events", get(s.serveServiceRunEvents)),
		route(gateway.InstancesPath, httpapi.Methods{http.MethodGet: s.serveInstances, http.MethodPost: s.serveInstall}),
		{Pattern: gateway.InstancesPath + "/{id}", Handler: s.api.Handler(http.HandlerFunc(s.serveInstance))},
		{Pattern: RunsPagePath, Handler: page},
		{Pattern: RunsPagePath + "/", Handler: page},
		{Pattern: "GET " + CardsPrefix + "{tenant}/{id}" + a2a.WellKnownCardPath, Handler: http.HandlerFunc(s.serveCard)},
	}
}
