package toolgw

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/httpapi"
	"novaos.dev/novaos/strictjson"
	"novaos.dev/novaos/tools"
)

// envelope is what the gateway reads of a JSON-RPC request before the
// MCP SDK does: enough to route, authorise and bound it.
type envelope struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		Query     string          `json:"query"`
		Meta      struct {
			Query  string `json:"novaos.dev/query"`
			CallID string `json:"novaos.dev/call_id"`
			// Traceparent and Tracestate are the caller's trace context,
			// as MCP's conventions carry it.
			Traceparent string `json:"traceparent"`
			Tracestate  string `json:"tracestate"`
		} `json:"_meta"`
	} `json:"params"`

	// plain is set when the body holds only the members the SDK reads,
	// spelt as it spells them (fast.go); jsonrpc, hasParams and meta are
	// read for such a body only.
	plain     bool
	jsonrpc   json.RawMessage
	hasParams bool
	meta      json.RawMessage
}

// request is what one HTTP request hands the tool methods: the caller
// and what the envelope said.
type request struct {
	caller *Caller
	env    *envelope
	// gateOnly is set when the tenant's policy leaves a write to the
	// gate's rules alone, without asking for a person.
	gateOnly bool
	// tool and provider are a tools/call's tool, found before the SDK
	// reads the request; findErr when it was not.
	tool     *Tool
	provider Provider
	findErr  error
}

const requestKey = "novaos.toolgw.request"

// handler is the gateway's MCP endpoint.
func (s *Service) handler() http.Handler {
	s.impl = &mcp.Implementation{Name: "novaos-tools", Title: "NovaOS tool gateway", Version: s.o.Version}
	srv := mcp.NewServer(s.impl,
		&mcp.ServerOptions{
			Instructions: "One governed door to the platform's tools and the tenant's MCP servers. Identity comes from the bearer token.",
			Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}},
		})
	srv.AddReceivingMiddleware(s.toolMethods)
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true, MaxRequestBodyBytes: s.o.MaxBodyBytes,
			// The platform's Guard checks Host and Origin for every route.
			DisableLocalhostProtection: true})
	withRequest := auth.RequireBearerToken(func(_ context.Context, _ string, r *http.Request) (*auth.TokenInfo, error) {
		req, ok := r.Context().Value(requestCtxKey{}).(*request)
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: req.caller.Tenant + "/" + req.caller.Subject, Scopes: req.caller.Scopes,
			Expiration: req.caller.Expiry, Extra: map[string]any{requestKey: req}}, nil
	}, nil)(sdk)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodPost:
		case http.MethodDelete:
			s.serveDelete(w, r)
			return
		default:
			// No server-to-client stream: every answer comes on its POST.
			w.Header().Set("Allow", "POST, DELETE")
			writeRPCError(w, http.StatusMethodNotAllowed, nil, -32600, "the tool gateway takes POST (and DELETE of a session)", nil)
			return
		}
		c, ok := s.authenticate(w, r)
		if !ok {
			return
		}
		data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.o.MaxBodyBytes))
		if err != nil {
			if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
				writeRPCError(w, http.StatusRequestEntityTooLarge, nil, -32600, fmt.Sprintf("request body over %d bytes", s.o.MaxBodyBytes), nil)
				return
			}
			writeRPCError(w, http.StatusBadRequest, nil, -32700, "request body could not be read", nil)
			return
		}
		env, status, code, msg := parseEnvelope(data)
		if code != 0 {
			writeRPCError(w, status, nil, code, msg, nil)
			return
		}
		sessionID := r.Header.Get(tools.SessionHeader)
		if sessionID != "" {
			sess, err := s.sessions.touch(r.Context(), sessionID)
			if err != nil || sess.TenantID != c.Tenant || sess.Subject != c.Subject {
				// Unknown, expired or another caller's: the client
				// starts a new session (MCP's answer to a lost one).
				writeRPCError(w, http.StatusNotFound, env.ID, -32600, "the session is unknown or expired: initialize again", nil)
				return
			}
		}
		r.Body = io.NopCloser(bytes.NewReader(data))
		r.ContentLength = int64(len(data))
		// A client that asks for anything (or says nothing) gets JSON; the
		// SDK insists the Accept header names both of its media types.
		if acc := r.Header.Get("Accept"); acc == "" || acc == "*/*" || !strings.Contains(acc, "text/event-stream") {
			r.Header.Set("Accept", "application/json, text/event-stream")
		}
		if baseType(r.Header.Get("Content-Type")) == "" {
			r.Header.Set("Content-Type", "application/json")
		}
		if env.Method == "initialize" && sessionID == "" {
			id, err := s.sessions.create(r.Context(), c, protocolOf(env, data))
			if err != nil {
				s.log.Error("toolgw: create session", "err", err)
				writeRPCError(w, http.StatusServiceUnavailable, env.ID, -32603, "the session could not be stored", nil)
				return
			}
			w.Header().Set(tools.SessionHeader, id)
		}
		req := &request{caller: c, env: env}
		if env.Method == "tools/call" {
			// A scope missing is the resource server's 403, with the
			// challenge naming the scope, before any MCP processing.
			req.tool, req.provider, req.findErr = s.find(r.Context(), c, env.Params.Name)
			if req.findErr == nil {
				if scope := missingScope(c, req.tool); scope != "" {
					w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="`+scope+`", resource_metadata="`+
						s.deps.BaseURL+tools.ResourceMetadataPath+`"`)
					writeRPCError(w, http.StatusForbidden, env.ID, tools.CodeForbidden, "the token lacks the scope "+scope,
						&tools.ErrorData{Code: tools.ReasonInsufficientScope, Scope: scope, Tool: req.tool.Name})
					return
				}
			}
		}
		if fa, ok := s.fastPath(r, c, env); ok {
			s.serveFast(w, r, req, fa)
			return
		}
		r = r.WithContext(context.WithValue(r.Context(), requestCtxKey{}, req))
		withRequest.ServeHTTP(w, r)
	})
}

type requestCtxKey struct{}

// authenticate establishes the caller from the bearer token, answering
// 401 (with where to learn how to authenticate) or 403 itself.
func (s *Service) authenticate(w http.ResponseWriter, r *http.Request) (*Caller, bool) {
	tok, ok := httpapi.BearerToken(r)
	if !ok {
		s.challenge(w, "", "a bearer token is required")
		return nil, false
	}
	claims, err := s.deps.Tokens.Verify(r.Context(), tok)
	if err != nil {
		if errors.Is(err, identity.ErrInvalid) {
			// Why, in as much as tells the caller what to do: a token that
			// expired mid-run, or whose run ended, is refreshed or dropped,
			// not fixed.
			msg := "the token is not valid"
			switch {
			case errors.Is(err, identity.ErrExpired):
				msg = "the token has expired"
			case errors.Is(err, identity.ErrRevoked):
				msg = "the token has been revoked"
			}
			s.challenge(w, "invalid_token", msg)
			return nil, false
		}
		s.log.Error("toolgw: verify a token", "err", err)
		writeRPCError(w, http.StatusServiceUnavailable, nil, -32603, "the token could not be checked", nil)
		return nil, false
	}
	if claims.TenantID == "" {
		s.challenge(w, "invalid_token", "the token names no tenant")
		return nil, false
	}
	if h := r.Header.Get(tools.TenantHeader); h != "" && h != claims.TenantID {
		writeRPCError(w, http.StatusForbidden, nil, tools.CodeForbidden, "X-Tenant-ID names another tenant than the token's",
			&tools.ErrorData{Code: tools.ReasonTenantMismatch})
		return nil, false
	}
	// The access log and the request's span above name the tenant.
	httpapi.NoteCaller(r.Context(), &httpapi.Caller{Scheme: httpapi.SchemeExecutionToken, Claims: claims})
	return callerOf(claims, tok), true
}

// callerOf is the Caller of verified claims.
func callerOf(c *identity.Claims, tok string) *Caller {
	agent := c.AgentID
	if agent == "" {
		agent = c.Subject
	}
	subject := c.Subject
	if subject == "" {
		subject = agent
	}
	return &Caller{Tenant: c.TenantID, Agent: agent, User: c.UserID, Run: c.RunID, Instance: c.InstanceID,
		Conversation: c.ConversationID, Subject: subject, CallID: c.CallID, Scopes: c.Scopes, Token: secretOf(tok), Expiry: c.Expiry}
}

// challenge answers 401 with the Bearer challenge MCP clients follow to
// the protected-resource metadata.
func (s *Service) challenge(w http.ResponseWriter, errCode, msg string) {
	v := `Bearer resource_metadata="` + s.deps.BaseURL + tools.ResourceMetadataPath + `"`
	if errCode != "" {
		v += `, error="` + errCode + `", error_description="` + msg + `"`
	}
	w.Header().Set("WWW-Authenticate", v)
	writeRPCError(w, http.StatusUnauthorized, nil, tools.CodeUnauthorized, msg, nil)
}

// serveDelete ends the caller's session.
func (s *Service) serveDelete(w http.ResponseWriter, r *http.Request) {
	c, ok := s.authenticate(w, r)
	if !ok {
		return
	}
	id := r.Header.Get(tools.SessionHeader)
	if id == "" {
		writeRPCError(w, http.StatusBadRequest, nil, -32600, "DELETE ends a session: send its Mcp-Session-Id", nil)
		return
	}
	if err := s.sessions.remove(r.Context(), c, id); err != nil {
		writeRPCError(w, http.StatusNotFound, nil, -32600, "the session is unknown or expired", nil)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// envelopeFields are the members the gateway checks a request for in its
// one pass: no repeated key anywhere.
var envelopeCheck = &strictjson.Options{Object: true}

// parseEnvelope checks a body and reads its envelope. A nonzero code is
// the JSON-RPC error to answer, with the HTTP status.
func parseEnvelope(data []byte) (env *envelope, status, code int, msg string) {
	b := bytes.TrimLeft(data, " \t\r\n")
	if len(b) > 0 && b[0] == '[' {
		return nil, http.StatusBadRequest, -32600, "JSON-RPC batches are not supported: send one request per POST"
	}
	if strictjson.Check(data, plainShape) == nil {
		// The one pass the common request takes; its checks include
		// envelopeCheck's.
		env, err := decodePlain(data)
		if err != nil {
			return nil, http.StatusBadRequest, -32600, "the body is not a JSON-RPC request"
		}
		return env, 0, 0, ""
	}
	if err := strictjson.Check(data, envelopeCheck); err != nil {
		if se, ok := errors.AsType[*strictjson.Error](err); ok && se.Problem == strictjson.Duplicate {
			return nil, http.StatusBadRequest, -32600, fmt.Sprintf("duplicate key %s at %s", strconv.Quote(se.Key), se.Path)
		}
		return nil, http.StatusBadRequest, -32700, "the body is not one JSON object"
	}
	env = &envelope{}
	if err := json.Unmarshal(data, env); err != nil {
		return nil, http.StatusBadRequest, -32600, "the body is not a JSON-RPC request"
	}
	return env, 0, 0, ""
}

// protocolOf is the protocol revision an initialize request asks for.
func protocolOf(_ *envelope, data []byte) string {
	var v struct {
		Params struct {
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"params"`
	}
	_ = json.Unmarshal(data, &v)
	if len(v.Params.ProtocolVersion) > 32 {
		return ""
	}
	return v.Params.ProtocolVersion
}

func baseType(ct string) string {
	t, _, _ := strings.Cut(ct, ";")
	return strings.TrimSpace(t)
}

// writeRPCError answers a JSON-RPC error outside the SDK.
func writeRPCError(w http.ResponseWriter, status int, id json.RawMessage, code int, msg string, data any) {
	body := map[string]any{"code": code, "message": msg}
	if data != nil {
		body["data"] = data
	}
	var rid any
	if len(id) > 0 {
		rid = id
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": rid, "error": body})
}
