package delivery

import (
	"net/http"
	"slices"
	"strings"

	"novaos.dev/novaos/delivery"
	"novaos.dev/novaos/dpop"
	"novaos.dev/novaos/internal/httpapi"
)

// agentHandler serves one operation for an authenticated agent.
type agentHandler func(w http.ResponseWriter, r *http.Request, a Agent)

// Routes serve delivery.Routes: discovery and the key set to anyone, the
// token issue and the consumer rewind to a tenant admin, every other operation to the agent its
// API token names; every answer carries a fresh DPoP-Nonce. The last
// route is the WebSocket gateway (delivery.GatewayPath).
func (s *Service) Routes() []httpapi.Route {
	public := map[string]http.HandlerFunc{
		"getDiscovery":   func(w http.ResponseWriter, r *http.Request) { writeJSON(w, http.StatusOK, s.Discovery()) },
		"getJwks":        s.serveJWKS,
		"createToken":    s.serveCreateToken,
		"rewindConsumer": s.serveRewind,
	}
	agents := map[string]agentHandler{
		"pollAgentEvents":      s.servePoll,
		"ackAgentEvents":       s.serveAck,
		"getConsumerState":     s.serveConsumer,
		"sendHeartbeat":        s.serveHeartbeat,
		"getAgentTriggerers":   s.serveTriggerers,
		"getRun":               s.serveGetRun,
		"patchRun":             s.servePatch,
		"getRunContext":        s.serveContext,
		"startRun":             s.serveStart,
		"resumeRun":            s.serveResume,
		"renewInvocationToken": s.serveRenew,
		"awaitRunInput":        s.serveAwait,
		"finishRun":            s.serveFinish,
		"createMessage":        s.serveMessage,
	}
	paths := map[string]httpapi.Methods{}
	var order []string
	for _, rt := range delivery.Routes {
		h, ok := public[rt.OperationID]
		if ah, isAgent := agents[rt.OperationID]; isAgent {
			h, ok = s.agentRoute(rt, ah), true
		}
		if !ok {
			continue
		}
		if paths[rt.Template] == nil {
			paths[rt.Template] = httpapi.Methods{}
			order = append(order, rt.Template)
		}
		paths[rt.Template][rt.Method] = h
	}
	out := make([]httpapi.Route, 0, len(order)+1)
	for _, tmpl := range order {
		m := paths[tmpl]
		out = append(out, httpapi.Route{Pattern: tmpl, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set(dpop.NonceHeader, s.Nonce())
			method := r.Method
			if method == http.MethodHead {
				method = http.MethodGet
			}
			if h, ok := m[method]; ok {
				h(w, r)
				return
			}
			var allow []string
			for name := range m {
				allow = append(allow, name)
			}
			slices.Sort(allow)
			w.Header().Set("Allow", strings.Join(allow, ", "))
			writeProblem(w, newProblem(http.StatusMethodNotAllowed, "method_not_allowed", "", "use "+strings.Join(allow, " or ")))
		})})
	}
	return append(out, httpapi.Route{Pattern: delivery.GatewayPath, Handler: http.HandlerFunc(s.serveGateway)})
}

// agentRoute authenticates the agent and, for a write its route does
// not exempt, answers a repeated Idempotency-Key with the first answer.
func (s *Service) agentRoute(rt delivery.Route, h agentHandler) http.HandlerFunc {
	keyed := (rt.Method == http.MethodPost || rt.Method == http.MethodPatch) && rt.ExemptReason == ""
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, span := s.tel.span(r.Context(), rt.OperationID, "")
		defer span.End()
		r = r.WithContext(ctx)
		a, err := s.authAgent(r)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		span.SetAttributes(attrAgent.String(a.ID))
		if keyed {
			s.idempotent(w, r, a, func(w http.ResponseWriter, r *http.Request) { h(w, r, a) })
			return
		}
		h(w, r, a)
	}
}

// decode reads r's JSON body into v (within Options.MaxBodyBytes,
// unknown members ignored: a newer agent may send more); allowEmpty
// takes an empty body for v's zero value.
func (s *Service) decode(w http.ResponseWriter, r *http.Request, v any, allowEmpty bool) error {
	if allowEmpty && r.ContentLength == 0 {
		return nil
	}
	return httpapi.DecodeJSON(w, r, v, httpapi.Body{MaxBytes: s.o.MaxBodyBytes, AllowUnknown: true, AllowEmpty: allowEmpty})
}

// runToken is the Invocation-Token of r.
func runToken(r *http.Request) string { return r.Header.Get(delivery.InvocationTokenHeader) }

func (s *Service) servePoll(w http.ResponseWriter, r *http.Request, a Agent) {
	limit, wait, err := s.pollParams(r)
	if err == nil {
		var page delivery.EventPage
		if page, err = s.Poll(r.Context(), a, r.PathValue("consumer"), Batch{Limit: limit}, wait); err == nil {
			writeJSON(w, http.StatusOK, page)
			return
		}
	}
	s.fail(w, r, err)
}

func (s *Service) serveAck(w http.ResponseWriter, r *http.Request, a Agent) {
	var in delivery.ConsumerAck
	err := s.decode(w, r, &in, false)
	if err == nil {
		var st delivery.ConsumerState
		if st, err = s.Ack(r.Context(), a, r.PathValue("consumer"), in.Seq); err == nil {
			writeJSON(w, http.StatusOK, st)
			return
		}
	}
	s.fail(w, r, err)
}

func (s *Service) serveConsumer(w http.ResponseWriter, r *http.Request, a Agent) {
	st, err := s.ConsumerState(r.Context(), a, r.PathValue("consumer"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

// serveHeartbeat reads the heartbeat strictly: an unknown member, which
// might carry what a heartbeat must not, is refused.
func (s *Service) serveHeartbeat(w http.ResponseWriter, r *http.Request, a Agent) {
	body, err := s.readBody(w, r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	h, errs := delivery.DecodeHeartbeat(body)
	if errs != nil {
		s.fail(w, r, validationFailed("the heartbeat breaks its rules", errs...))
		return
	}
	ack, err := s.Heartbeat(r.Context(), a, h)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, ack)
}

func (s *Service) serveTriggerers(w http.ResponseWriter, r *http.Request, a Agent) {
	writeJSON(w, http.StatusOK, s.Triggerers(r.Context(), a))
}

func (s *Service) serveGetRun(w http.ResponseWriter, r *http.Request, a Agent) {
	run, err := s.GetRun(r.Context(), a, r.PathValue("run"), runToken(r))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, run)
}

func (s *Service) serveContext(w http.ResponseWriter, r *http.Request, a Agent) {
	rc, err := s.RunContext(r.Context(), a, r.PathValue("run"), runToken(r))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, rc)
}

func (s *Service) servePatch(w http.ResponseWriter, r *http.Request, a Agent) {
	var in delivery.RunPatch
	err := s.decode(w, r, &in, false)
	if err == nil {
		var res delivery.RunPatchResult
		if res, err = s.UpdateRun(r.Context(), a, r.PathValue("run"), runToken(r), in); err == nil {
			writeJSON(w, http.StatusOK, res)
			return
		}
	}
	s.fail(w, r, err)
}

func (s *Service) serveStart(w http.ResponseWriter, r *http.Request, a Agent) {
	var in delivery.RunStart
	err := s.decode(w, r, &in, true)
	if err == nil {
		var run delivery.Run
		if run, err = s.StartRun(r.Context(), a, r.PathValue("run"), runToken(r), in); err == nil {
			writeJSON(w, http.StatusOK, run)
			return
		}
	}
	s.fail(w, r, err)
}

func (s *Service) serveResume(w http.ResponseWriter, r *http.Request, a Agent) {
	var in delivery.RunResume
	err := s.decode(w, r, &in, true)
	if err == nil {
		var run delivery.Run
		if run, err = s.ResumeRun(r.Context(), a, r.PathValue("run"), runToken(r), in); err == nil {
			writeJSON(w, http.StatusOK, run)
			return
		}
	}
	s.fail(w, r, err)
}

func (s *Service) serveRenew(w http.ResponseWriter, r *http.Request, a Agent) {
	var in delivery.InvocationTokenRenew
	err := s.decode(w, r, &in, true)
	if err == nil {
		var g delivery.InvocationTokenGrant
		if g, err = s.RenewToken(r.Context(), a, r.PathValue("run"), runToken(r)); err == nil {
			writeJSON(w, http.StatusOK, g)
			return
		}
	}
	s.fail(w, r, err)
}

func (s *Service) serveAwait(w http.ResponseWriter, r *http.Request, a Agent) {
	var in delivery.RunAwaitInput
	err := s.decode(w, r, &in, true)
	if err == nil {
		var run delivery.Run
		if run, err = s.AwaitInput(r.Context(), a, r.PathValue("run"), runToken(r), in); err == nil {
			writeJSON(w, http.StatusOK, run)
			return
		}
	}
	s.fail(w, r, err)
}

func (s *Service) serveFinish(w http.ResponseWriter, r *http.Request, a Agent) {
	var in delivery.RunFinish
	err := s.decode(w, r, &in, false)
	if err == nil {
		var run delivery.Run
		if run, err = s.FinishRun(r.Context(), a, r.PathValue("run"), runToken(r), in); err == nil {
			writeJSON(w, http.StatusOK, run)
			return
		}
	}
	s.fail(w, r, err)
}

func (s *Service) serveMessage(w http.ResponseWriter, r *http.Request, a Agent) {
	var in delivery.MessageCreate
	err := s.decode(w, r, &in, false)
	if err == nil {
		var m delivery.Message
		var created bool
		if m, created, err = s.CreateMessage(r.Context(), a, runToken(r), in); err == nil {
			status := http.StatusOK
			if created {
				status = http.StatusCreated
			}
			writeJSON(w, status, m)
			return
		}
	}
	s.fail(w, r, err)
}
