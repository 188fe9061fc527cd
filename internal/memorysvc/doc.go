// Package memorysvc is the platform's memory service, served over MCP and a
// direct door.
//
// It keeps agents' durable, tenant-isolated memory, as the NovaOS agent
// memory guide describes it, served as an MCP server at POST /api/v1/mcp
// with the tools novaos.memory.write, query, update, forget, hint and
// assemble, and the two status polls hint_status and proposal_status; the
// same path takes the direct door's requests (see The direct door).
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
// is updated in place (an update of another scope is 422 before the
// token's scopes are looked at). Task memory belongs to the token's run,
// since tokens name no task. A hint needs any memory write scope
// (memory:write:run, task, agent, user or tenant): the memory guide's
// agent tokens carry memory:write:agent and run, and a hint is how such a
// token reaches user memory, so it needs no scope of its own.
//
// Who learns what exists: the memory guide's client expects an update of
// another agent's memory to fail with 403, so Update, on finding no such
// memory among the caller's own, looks the id up in the caller's tenant
// and answers 403 (not_owner) for another agent's agent memory. That tells
// an agent of the tenant that the id exists; ids are random and reach an
// agent only when given to it, and the guide asks for the status. Nowhere
// else does the guide ask for it, so nowhere else is it told: a forget of
// another agent's memory, and any call naming another tenant's, is 404 as
// if it did not exist (the stores are never asked about another tenant),
// and so are another agent's hints and proposals. A forget of no memory is
// 404, as the guide's client says.
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
// # The direct door
//
// The memory guide's MemoryClient posts "tool name + payload + context" to
// Path and reads the outcome from the HTTP status; Handler serves it beside
// MCP. A body that is one well-formed JSON object without a top-level
// "jsonrpc" member is a door request (every MCP message names jsonrpc), and
// anything else is MCP's to answer as before:
//
//	POST /api/v1/mcp
//	{"tool": "memory.write", "payload": {"scope": "run", "content": "…"}, "context": {"request_id": "r-1"}}
//
//	200 {"memory_id": "…", "scope": "run", "write_event_id": "…", "created_at": "…", "durable": true}
//
// The guide names the parts, not their members; these are ours (DoorRequest).
// tool is memory.query, write, update, forget, hint or assemble, or the
// polls memory.hint_status and memory.proposal_status; payload is the tool's
// arguments under exactly the MCP tool's names; context is an optional
// object the service accepts and does not read, since identity comes from
// the token and correlation ids travel in the payload. The answer is the
// tool's result with 200, or the refusal's status (401, 403, 404, 409, 413,
// 422, 503) with problem+json (DoorProblem: the problem type
// ProblemTypePrefix plus the code, and the memory.Error members code, field
// and rule). Both doors run one operation: the same decoding of the
// arguments, validation, policy, idempotency, telemetry and store.
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
// A refused MCP call is a tool result with isError set whose text is
// {"error": memory.Error}: the HTTP status with the meaning the memory guide
// gives it, a stable code, and the field and rule broken; a refused door
// call is that status with problem+json. Request bodies are
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
//
// # Where this differs from the memory guide
//
//   - The direct door's member names (tool, payload, context), its tool
//     names for the two polls, and its error body are ours: the guide
//     leaves them open.
//   - context is accepted and not read.
//   - A forget of another agent's memory is 404, not 403: the guide asks
//     for 403 on update only, and 404 tells nothing.
//   - A body over the size limit is 413 in the shape the body began in,
//     since its end was never read.
package memorysvc
