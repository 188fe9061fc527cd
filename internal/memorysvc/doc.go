// Package memorysvc is the platform's memory service, served to agents over
// MCP.
//
// It keeps agents' durable, tenant-isolated memory, as the NovaOS agent
// memory guide describes it, served as an MCP server at POST /api/v1/mcp
// with the tools novaos.memory.write, query, update, forget, hint and
// assemble, and the two status polls hint_status and proposal_status.
// Package novaos.dev/novaos/memory holds the wire types, the Store contract
// the SQLite and PostgreSQL stores implement, the retrieval stack and the Go
// client; this package holds what the server decides.
//
//	svc := memorysvc.New(store, &memorysvc.Options{})
//	go svc.Run(ctx) // write gate, consolidation, expiry
//	mux.Handle("POST "+memorysvc.Path, identity.Middleware(verifier, svc.Handler(callerFromToken, nil)))
//
// # Identity and policy
//
// Every call is made by a Caller: the tenant, agent, user, run and
// conversation of a verified execution token, and its scopes. No argument
// of any tool names a tenant or an owner, so a request cannot reach
// another tenant's data: the stores key every row by the token's tenant.
// Who may do what is in one table (policy.go): reading a scope needs
// memory:read:<scope>; writing needs memory:write:<scope> (403 without
// it), and the service's own policy then refuses (422) what no agent may
// do even with the scope: user memory is written only by consolidation,
// tenant memory only by a token with memory:admin, and only agent memory
// is updated in place. Task memory belongs to the token's run, since
// tokens name no task.
//
// # Writes
//
// run and task writes are stored at once (read-your-write) with a TTL of
// five minutes unless ttl_seconds says otherwise (bounded per kind of
// scope). An agent write is stored as a proposal and answered with its
// prop_ id and durable false; the write gate (Run) screens it for personal
// data and credentials (package pii: emails, phones, card numbers, API
// keys, private keys, JWTs, secret assignments) and commits it under a new
// memory id, or rejects it with the kinds it found, never the values.
// Updates screen new content the same way, synchronously (422). A write
// or forget with an idempotency key seen in the tenant within 24 hours
// returns the first result.
//
// # Hints and consolidation
//
// A hint is stored durably before it is accepted; the consolidation
// worker claims pending hints every Options.ConsolidateEvery (default
// 20s), turns each into user-scope facts with the Extractor, and records
// the hint consolidated (or dead_lettered after Options.HintAttempts
// failed extractions, or expired when it waited over an hour). The
// default Extractor, Sentences, needs no model and understands nothing:
// each sentence of three or more words becomes a fact. A model extractor
// (package internal/modelapi, any OpenAI-compatible chat completions
// endpoint) keeps facts only. Facts are written under keys derived from
// the hint, so a crash between two of them writes neither twice.
//
// # Retrieval
//
// Durable scopes are ranked by memory.Retrieve, the same function the
// LoCoMo benchmark measures: keyword search and vector search fused by
// reciprocal rank, with conversation neighbours. The default embedder is
// lexical (memory.HashEmbedder: words, word pairs and character n-grams),
// not semantic: "car" does not find "automobile". Configure an
// OpenAI-compatible embeddings endpoint for that; vectors remember their
// model and are never compared across models. query answers partial=true
// only when a store failed or missed the latency budget; assemble fans
// out to the user's and the agent's memories, the live conversation and
// the run's data under one deadline and drops (partial=true) a source
// that misses it. Results are packed to token_budget, estimated at four
// bytes a token.
//
// # Errors
//
// A refused call is an MCP tool result with isError set whose text is
// {"error": memory.Error}: the HTTP status with the meaning the memory guide
// gives it, a stable code, and the field and rule broken. Request bodies are
// bounded (HandlerOptions.MaxBodyBytes), a repeated JSON key anywhere is
// refused, and tool arguments must use the exact field names.
//
// # Telemetry
//
// Every operation, over MCP or in process (the tool gateway's
// novaos.memory.*), is a span named "memory.<op>" (memory.write,
// memory.query, …) with novaos.memory.operation, novaos.memory.outcome,
// the tenant, the agent and the run; never content. Metrics:
// novaos_memory_operations_total{op,outcome} (ok, or the error's code),
// novaos_memory_operation_duration_seconds{op}, and, for a store with an
// in-process search index (memory.IndexReporter), novaos_memory_index_size
// {kind=partitions|memories} and novaos_memory_index_bytes, read from
// memory at each scrape.
package memorysvc
