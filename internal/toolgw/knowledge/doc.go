// Package knowledge serves the novaos.knowledge.* tools: document
// collections searched by the memory service's retrieval engine.
//
// A Provider is a toolgw.Provider over a tools.KnowledgeStore and a
// memory.Store; its Run does the background work (ingest jobs, graph
// builds, purges):
//
//	p := knowledge.New(stores.Knowledge, stores.Memory, &knowledge.Options{Embedder: emb})
//	go p.Run(ctx)
//	// the gateway lists p.Tools and calls p.Call
//
// # Tools
//
// create_collection, list_collections and delete_collection manage a
// tenant's collections; ingest queues a document and answers its job_id at
// once; job_status follows the job (pending, running, completed, failed,
// dead_letter, cancelled); search returns the best chunks with citations;
// build_graph, graph_status, query_graph_local and query_graph_global
// build and query an entity graph. Reads need the scope knowledge:read,
// changes knowledge:write. Every store call is keyed by the caller's
// verified tenant: no argument names a tenant, and an id of another
// tenant's collection or job is not found.
//
// # One retrieval engine
//
// A collection's chunks are memories of the memory store, in a partition
// of their own (tenant scope, owner "knowledge:<collection id>"), which no
// memory-service call can name. Search is memory.Retrieve, the function
// the memory service and its benchmark use: BM25 over memory.Terms and
// cosine over the configured Embedder's vectors, fused by reciprocal rank,
// with the calibrated 0..1 score (conversation neighbours are off: chunks
// have none). Only what retrieval does not know lives in the
// KnowledgeStore: collections, the job queue, committed documents (the
// citation's filename and source_url) and graphs. Keeping chunks in a
// store of their own would have meant a second index and a second BM25 in
// both databases.
//
// # Ingest
//
// The document is normalised (UTF-8, NFC, "\n" line breaks, no trailing
// white space; see Normalize) and bounded (Options.MaxDocumentBytes,
// Options.MaxChunks). A document whose SHA-256 the collection holds
// already is a job completed at once, with duplicate_of and document_id
// naming the original. Otherwise the job is stored pending, durably, with
// its content. A worker claims it with a lease (FOR UPDATE SKIP LOCKED on
// PostgreSQL), splits it (Split: whole sentences packed into chunks of
// Options.Chunks bytes, 1500 by default, ending at a paragraph break when
// half full, with about 200 bytes of whole sentences of overlap), embeds
// and stores the chunks 32 at a time, renewing its lease after each batch,
// and commits the document, which makes its chunks searchable: a chunk
// whose document is not committed is never returned. Chunk ids derive
// from the document's, which is its job's id, so a worker that takes over
// a job whose lease lapsed (its worker died) finds the chunks already
// written and goes on. Two jobs of one content that race past the check
// meet at the commit: the second completes as a duplicate and removes its
// chunks.
//
// A failure a retry would repeat (the embedding service refusing the
// document with a 4xx) fails the job; any other is retried after
// Options.RetryBackoff, doubling, and dead-letters the job after
// Options.MaxAttempts attempts. The job's error says which, without the
// cause's detail, which is logged. Deleting a collection cancels its
// pending and running jobs in the same transaction; a worker holding one
// learns it at its next lease renewal, and the collection's chunks are
// purged one lease later.
//
// # Graphs
//
// build_graph marks the collection's graph pending; a worker builds it
// from the committed chunks without a model: entities are runs of
// capitalised words ("Marie Curie", "Bank of England"; leading stop words
// and a sentence's common first word left out; a single word at a
// sentence's start only if it is capitalised elsewhere too);
// relationships join entities named in one chunk, weighed by the chunks
// they share; communities are the groups label propagation finds over
// those weights. The most mentioned Options.MaxGraphEntities entities and
// the heaviest Options.MaxGraphEdges relationships are kept.
//
// Until a graph is completed, query_graph_* answer from plain search with
// degraded true and a message to call build_graph. With one, answers are
// extractive, never written: query_graph_local starts from the entities
// the question names (or those of the passages search finds for it) and
// their strongest relationships, and cites the sentences of their chunks
// that name the most of them and come closest to the question
// (memory.Similarity); confidence is those sentences' mean similarity.
// query_graph_global cites one sentence for each of the communities whose
// names match the question best (else the largest); confidence is the
// share of the graph's mentions they hold.
package knowledge
