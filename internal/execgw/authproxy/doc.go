// Package authproxy puts execution-token checks and X-NovaOS-* headers in front of any agent.
//
// It is the Python SDK's auth-proxy sidecar, for an agent process written
// in any language: an http.Handler that verifies each request's execution
// token, replaces the caller's X-NovaOS-* headers with the ones the token
// proves, and reverse-proxies the request to the agent.
//
// For every request but GET /healthz (the proxy's own health, answered
// without a token) the proxy requires Authorization: Bearer <token> and
// verifies it with an identity.Verifier (strict: the allow-listed
// algorithm, a kid of the key set, iss, aud, exp). A request without a
// token gets 401 with WWW-Authenticate: Bearer realm="novaos"; a rejected
// token 401 with error="invalid_token" and an RFC 9457 problem saying why,
// never the token; keys that cannot be fetched 503. Only a verified request
// reaches the agent, with:
//
//   - every X-NovaOS-* header the caller set removed, whatever its case;
//   - X-NovaOS-User-Id, -Tenant-Id, -Run-Id, -Agent-Id and -Instance-Id
//     set from the token's claims (and -Agent-Name, -Conversation-Id when
//     the token carries them), and X-NovaOS-Execution-Token set to the
//     token itself, for the agent's outbound calls;
//   - Authorization unchanged, so the agent may verify the token again;
//   - X-Forwarded-For, -Host and -Proto.
//
// Responses stream through as the agent writes them (an SSE stream frame
// by frame). A request body beyond Options.MaxBodyBytes is refused with
// 413 before or while it is read. Nothing the proxy logs holds a token.
//
//	v, _ := identity.NewJWKSVerifier("https://novaos.example.com", "https://novaos.example.com", nil, nil)
//	p, _ := authproxy.New("http://127.0.0.1:9000", v, nil)
//	http.ListenAndServe(":8090", p)
//
// `novaos proxy` runs one.
package authproxy
