// Package memory defines the NovaOS memory service's wire types, rules and
// store contract.
//
// It is the domain of the memory service, as the NovaOS agent memory guide
// describes it: the wire types of the novaos.memory.* tools with the guide's
// JSON names, the rules every request must meet, the public Store contract
// the SQLite and PostgreSQL stores implement, and the retrieval primitives
// the service and the benchmarks share.
//
// # Scopes and isolation
//
// A memory lives in a tenant and a Partition: a Scope (run, task, agent,
// user, tenant) and its owner (the run, task, agent or user id). Every Store
// method takes the tenant first, and the service passes the tenant of the
// verified token, never one from a request body, so one tenant's data cannot
// be named by another's request. Searches never leave one partition.
//
// # Retrieval
//
// Durable memories are found by two searches whose rankings Fuse merges with
// reciprocal-rank fusion:
//
//   - keyword: BM25 (k1 1.2, b 0.75, the partition's own statistics) over
//     the Terms of each memory: lower-cased words, English stop words left
//     out, light stemming;
//   - vector: cosine similarity over the partition's vectors of the
//     query's Embedder model (exact, or through an approximate index above
//     a store's size threshold). The default HashEmbedder needs no model and is
//     lexical, not semantic (see its doc); vectors of different models are
//     never compared.
//
// Each fused result carries a calibrated 0..1 score (Similarity).
//
//	emb := memory.NewHashEmbedder(0)
//	terms := memory.Terms(q)
//	kw, _ := store.SearchKeyword(ctx, tenant, f, terms, 100)
//	vec, _ := store.SearchVector(ctx, tenant, f, memory.Embedding{Model: emb.ModelID(), Vector: emb.Vector(q)}, 100)
//	for _, r := range memory.Fuse(terms, kw, vec, memory.FuseOptions{})[:10] {
//		fmt.Println(r.Memory.Content, r.Score)
//	}
package memory
