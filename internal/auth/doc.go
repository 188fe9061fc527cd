// Package auth is the platform's token issuer: it signs and verifies
// execution tokens.
//
// It signs execution tokens with a key kept in the data directory (RS256
// with a 2048-bit RSA key by default, as the Python SDK's agents verify
// them; EdDSA with Ed25519 when Options.Algorithm says so), publishes the
// public keys as a JWKS, rotates, and verifies its own tokens for the
// platform's services, asking Options.Revoked about each (the execution
// gateway revokes the tokens of a run that has ended).
//
// The key ring is one owner-only file (KeyFile, "token.key" in the data
// directory), created on first use with keyfile.Create and rewritten
// whole with keyfile.Replace. It holds the active private key, and the
// public halves of retired keys with the time until which they stay
// published: a rotated-out key keeps verifying until the last token it
// can have signed has expired (its retirement plus MaxTTL plus the
// verifiers' leeway), then drops out. Every kid is the key's RFC 7638
// thumbprint. A ring whose active key is not of Options.Algorithm (made
// when the platform signed EdDSA by default) is rotated at the first
// signature, its old key published like any retired one. Processes that
// share a ring rotate it one at a time, under an flock on the file
// beside it (KeyFile plus ".lock").
//
// The ring may also hold a companion: a private key of the algorithm the
// active key is not, for MintAs. The execution gateway signs the tokens
// of agents hosted in the platform's process EdDSA, about 30 times
// cheaper than RS256, which only agents reached by URL need. It is made
// at the first such token under the same lock, published beside the
// active key, replaced once older than Options.KeyLifetime, and retired
// with the active key at every rotation.
//
//	iss, err := auth.Open(filepath.Join(dataDir, auth.KeyFile), auth.Options{Issuer: "http://127.0.0.1:8080"})
//	token, err := iss.Mint(ctx, identity.Claims{TenantID: "acme", AgentID: "mailer",
//		Scopes: []string{"memory:read:*", "memory:write:agent"}}, 15*time.Minute)
//	mux.Handle("GET /.well-known/jwks.json", iss.JWKSHandler()) // token keys only
//	mux.Handle("GET /.well-known/agent-card-jwks.json", auth.KeySetHandler(0, cardKey))
//	mux.Handle("POST /api/v1/mcp", iss.Middleware(memoryService))
//
// A server records its issuer and audience beside the ring (WriteRecord,
// RecordFile in its data directory) so that a command minting with the
// same directory (ReadRecord) signs tokens the server accepts.
//
// A process that did not rotate the ring itself (a server while `novaos
// token rotate` runs beside it) notices that the file changed the next
// time it mints, verifies or serves the JWKS: it looks at the file (one
// stat) at most once a second.
package auth
