// Package postgres keeps NovaOS state in PostgreSQL, for replicas sharing
// one database.
//
// It works through a pgx connection pool. It offers the same stores, with
// the same behaviour, as store/sqlite; store/storetest holds both to one
// contract.
//
// Open creates and upgrades the schema from migrations embedded in the
// binary, recorded in a schema_migrations table. The migration runs under a
// PostgreSQL advisory lock, so replicas that start at the same moment take
// turns and each step is applied exactly once. Writes are optimistic: an
// update names the version it read, and loses (ErrConcurrentModification)
// if another replica wrote first.
//
// The task store's writes (Create, Update and Append, and the Recoverer's
// Settle) commit group-wise, as store/sqlite's do. A writer takes every
// write that is waiting, up to 256 and at most one per task, and sends
// them as one pgx batch: one round trip, which PostgreSQL runs as one
// implicit transaction, committed as the server's synchronous_commit
// says. Options.WriteConns batches may be in flight at once (default 1).
// A caller returns once the transaction holding its write has committed,
// so a nil error means the write is durable and that every replica sees
// it: a read that starts, on any DB handle, after the caller was answered
// finds it, and no reader anywhere sees any write of a batch before the
// batch commits. One write's failure is its caller's alone: when a
// statement fails, PostgreSQL rolls the batch back, and the write that
// failed runs again by itself and the rest again together; a deadlock,
// serialization or commit failure runs each write again by itself. A
// caller whose context ends before its write is sent gets the context's
// error and the write is not sent; after that it waits for the outcome,
// unless every caller of the batch has given up, which cancels the batch.
// A batch takes its task rows' locks in task-id order, so batches of
// different replicas wait for each other but do not deadlock. Close
// finishes the writes already handed over before it closes the pool and
// refuses later ones. WriteStats counts the writes, transactions and
// round trips.
//
// GateStore keeps the governance gate's records (gate.Store): sessions,
// gated actions, the trajectory ledger, versioned rule sets, the
// hash-chained audit log and the service's heartbeat. An action write is
// a compare-and-set on the row's version in one transaction with the
// audit and ledger entries it carries. Audit appends lock the chain's head
// row (SELECT … FOR UPDATE) until they commit, so replicas append one
// after another and the chain never forks; the price is that audited
// writes commit one at a time. Rule set versions are taken the same way
// from a per-tenant head row. Times are kept to the microsecond
// (gate.AuditTime); actions, decisions, rule sets and audit bodies are
// bytea, not jsonb, so they come back byte for byte, as the chain's hashes
// need.
//
// The ledger keeps running totals, as in store/sqlite: each entry carries
// its subject series' and its action type's count and compensated sum up
// to itself, and a window's total is the series' head minus its last
// entry before the window, two index lookups per aggregate in one
// statement for a rule set's batch (so one snapshot), whatever the
// window or the ledger holds. A write locks the heads of its entries'
// series (INSERT … ON CONFLICT DO UPDATE, in one sorted order, subjects'
// before action types' and both before the audit chain's head, all in one
// round trip), so concurrent writers of a series, on any replica, file
// one after another and cannot deadlock; writers of other series do not
// wait for each other there. An entry is filed no earlier than the latest
// time in its series, so a replica whose clock is behind is counted from
// that time (see gate.LedgerEntry).
//
// For two minutes after Open, a DB analyzes the tables of its schema whose
// rows changed more since their last ANALYZE than it counted (analyze.go):
// in a new database, plans cached from empty tables' statistics would scan
// sequentially until autovacuum's first look, a minute later.
//
// Each open DB is an instance with a lease (store/lease) renewed in the
// background until Close, and every task write records its instance, so
// Recoverer can find the tasks a dead replica left SUBMITTED or WORKING
// for a2asrv.Recover; Options.Lease times it.
//
// TaskFeed is how replicas hear of each other's task writes (an
// a2asrv.TaskFeed, for streams and CancelTask across replicas): LISTEN/NOTIFY
// on the channel novaos_tasks. Each write that moves a live task on
// (Update, Append, Settle) queues a pg_notify in its own transaction, so
// the notification goes out if and only if the write commits, in commit
// order; it carries the write's versions and, when they fit in 7,900 bytes,
// its events or the task as written, which a watcher otherwise reads by
// version (CatchUp). A task's creation is not announced: nobody can follow
// a task on another replica before it exists. PostgreSQL serialises the
// commits of transactions that notify; group commit makes that one per
// batch. Each DB keeps one listening connection outside the pool; a
// connection quiet for 5 s is pinged, a broken one is replaced (100 ms,
// doubling to 5 s), and then every watcher is told to catch up from the
// store. ListenerStatus says whether it listens now. The connection needs
// session state, so it must reach PostgreSQL directly or through a pooler
// in session mode.
//
// GatewayStore keeps the execution gateway's records (gateway.Store):
// installed agents (instances), runs and their events. A run write is one
// statement, committed group-wise through the task store's writer: a
// compare-and-set on the run's version, the append of its events numbered
// on from the run's last sequence, and a notification on the channel
// novaos_runs ("<last sequence>:<origin>:<run id>"), delivered if and only
// if the write commits. Claims choose the oldest due runs with FOR UPDATE
// SKIP LOCKED, so replicas claiming at once pass over each other's choices.
// WatchEvents hears of every replica's appends through the listening
// connection TaskFeed keeps, and is told ("", 0) when it comes back after
// it broke.
//
// DeliveryStore keeps pull delivery's records (delivery.Store): agents'
// event streams, consumers, invocation and API tokens, DPoP proofs,
// Idempotency-Keys and messages. An append is one statement, committed group-wise through
// the same writer: an upsert of each agent's head row, whose lock orders
// the agent's appends on every replica, the events numbered after the
// head it returns, and a notification on the channel novaos_delivery
// ("<head>:<origin>:<agent id>"). Its dedupe keys are looked up before
// it, and a key another append stored in between makes the unique index
// refuse it whole, and the append looks up again. Consumers are written
// by compare-and-set on their version. A DPoP proof is recorded once
// across replicas with one upsert, which waits for a racing one's
// commit. Used tokens and proofs past their time are pruned in bounded
// batches that pass over the rows another replica is pruning (SKIP
// LOCKED).
//
// ToolStore keeps the tool gateway's records (tools.Store): MCP sessions
// and tenants' policies. A session's creation, touch and deletion are one
// statement each, committed group-wise through the same writer; a touch
// checks the idle timeout and moves the session's last use on, or deletes
// it, under its row lock, so no touch revives a session found idle.
// Sweeps pass over sessions a write holds (SKIP LOCKED).
//
// The memory store's vector search uses pgvector when the server has the
// vector extension and the role may create it (CREATE EXTENSION IF NOT
// EXISTS vector at Open; otherwise Open logs at info that it is not used).
// Each vector is then also kept in memories.embedding, written by the
// statement that writes the memory, so Update, Forget and Sweep keep it in
// step; rows stored before are backfilled at Open. Each dimension gets an
// HNSW index (cosine), memories_embedding_<dims>, created when a vector of
// that length is first stored (up to 2000 dimensions; longer vectors are
// scanned exactly by the server). A search names the model and the length
// of the query, applies the whole filter in the same statement, and lets the
// planner choose between the index and an exact sort of the partition,
// which it does from table statistics (autovacuum's ANALYZE): a small
// partition in a large table is read through its btree and sorted exactly,
// a large one is searched through the index. With pgvector 0.8 or newer
// the search sets hnsw.iterative_scan = strict_order, so a filter that
// rejects most of the index's candidates still gets its limit, up to
// hnsw.max_scan_tuples (20,000 by default) candidates, which only a filter
// the planner misjudges as broad can reach; hnsw.ef_search is
// max(100, 2×limit). The index is approximate: recall@10
// against exact cosine was 0.998 unfiltered and 0.995–0.998 (the graph is
// built with random levels) with a filter keeping half the partition (2,000 random 64-dimension vectors; TestPGVectorRecall).
// Scores are cosine similarity, 1 − cosine distance. A stored vector whose
// length differs from the query's is not a candidate (the in-process scan
// scores it 0). Without pgvector the vectors are kept and scored by the
// process's memory index (store/internal/memindex), as on SQLite: exact
// below its HNSW threshold, each process holding the partition's vectors.
// On PGlite (PostgreSQL in WebAssembly, serving one connection at a time,
// so only the ratio means anything) a top-10 search over 256-dimension
// vectors through pgvector took 1/12 of the time of reading and scoring
// every vector of the partition from the database at 10k vectors and 1/28
// at 50k (BenchmarkSearchVectorPGVector; the index now spares that read).
//
//	db, err := postgres.Open(ctx, "postgres://novaos@db.internal/novaos", nil)
//	if err != nil { ... }
//	defer db.Close()
//	h := a2asrv.NewHandler(card, exec, &a2asrv.Options{
//		TaskStore:       db.TaskStore(),
//		PushConfigStore: db.PushConfigStore(),
//	})
//	d, err := a2apush.New(db.PushOutbox(), nil) // push notifications
//	go d.Run(ctx)
//
// Every task write queues its push notifications, for the task's configs,
// in the write's own transaction (db.PushOutbox, a2asrv.PushOutbox), and
// PushConfigStore reports each config's delivery state
// (a2asrv.PushDeliveryStore).
package postgres
