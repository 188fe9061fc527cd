// Package identity verifies NovaOS execution tokens and carries the
// identity they prove.
//
// It is the Go form of the NovaOS Python SDK's token_verifier and
// ExecutionContext.
//
// An execution token is a JWT the platform signs (RS256 by default, or
// EdDSA; ES256 tokens of another issuer verify too) naming who acts and
// for whom: tenant_id, agent_id, agent_name, instance_id, user_id,
// run_id, conversation_id, call_id (a resume token bound to one tool
// call), scopes, and llm_max_tokens and llm_max_cost_usd (a run's own
// limit on its model use), with iss, aud (default "acp-agent"), exp, nbf
// and iat. A Verifier checks one strictly: the allow-listed algorithm
// ("none", HS256 and everything else refused), the key its kid names in a
// KeySource (StaticKeys in-process, or JWKS fetched from a URL with a
// cache and a throttled refresh), the signature, the issuer (required,
// never defaulted), the audience, exp/nbf/iat within Options.Leeway, and a
// tenant. Errors match ErrInvalid and one kind (ErrExpired,
// ErrBadSignature, ErrUnknownKey, ErrIssuer, ErrAudience, ErrMalformed, …)
// and never include the token. A token whose signature verified is
// remembered by its SHA-256 (Options.CacheSize, default 4096) and not
// verified again while its key source returns the same key; its claims are
// checked on every call, and so is Options.Revoked, the hook that refuses
// a token whose run has ended (ErrRevoked).
//
//	v, err := identity.NewJWKSVerifier("https://novaos.example.com", "https://novaos.example.com", nil, nil)
//	claims, err := v.Verify(ctx, token)
//	if errors.Is(err, identity.ErrExpired) { … }
//	if claims.HasScope("memory:read:tenant") { … }
//
// Middleware puts verified claims in a request's context for a handler
// (FromContext); an Execution (ExecutionFromContext, or the agent SDK's
// Context.Execution) holds the token as a secret.Value and gives the
// headers an agent calls platform services with (AuthHeaders,
// Authorize): it acts as itself, never as a body says it is.
//
// Scopes are segments joined by ":" where "*" matches one segment, or
// every remaining one in last place: memory:read:* grants
// memory:read:tenant; see ScopeMatches.
package identity
