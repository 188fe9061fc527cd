// Package sqlite keeps NovaOS state in one SQLite file, without cgo.
//
// It uses the pure-Go driver modernc.org/sqlite. It is the default store:
// zero setup, durable across restarts.
//
// The database runs in WAL mode with synchronous=FULL, so a write that
// returned has reached the disk. Every write goes through one dedicated
// connection (SQLite allows one writer at a time; queueing in the process
// is cheaper and fairer than retrying on SQLITE_BUSY), and writes that
// queue up while a commit is on its way to the disk share the next commit
// (group commit: one fsync for many callers, each answered only after it).
// Reads use a pool of read-only connections that WAL lets run beside the
// writer. The
// schema is created and upgraded on Open from migrations embedded in the
// binary and recorded in a schema_migrations table.
//
// Tasks are stored as their A2A JSON encoding next to indexed copies of the
// fields that lookups and listings need.
//
// GateStore keeps the governance gate's records (gate.Store): sessions,
// gated actions, the trajectory ledger, versioned rule sets, the
// hash-chained audit log and the service's heartbeat. The single writer
// makes every action write's compare-and-set, and every audit append with
// its chain's head, one step that no other write interleaves; an action
// write and the audit and ledger entries it carries commit together or
// not at all. Times are kept to the microsecond (gate.AuditTime), and
// audit bodies byte for byte, as the chain's hashes need.
//
// The ledger keeps running totals: each entry is filed with its subject
// series' and its action type's count and sum up to and including itself
// (the sum compensated, so a window keeps its cents after a lifetime in
// the trillions), and a head row per series moves in the same write. A
// window's total is its series' head minus the series' last entry before
// the window, read from a covering index: two lookups whatever the window
// or the ledger holds, and a rule set's aggregates are one statement on a
// read connection. An entry is filed no earlier than the latest time in
// its series (see gate.LedgerEntry). A NaN or infinite amount, or a sum
// past float64's range, refuses the write (gate.ErrLedgerAmount).
//
// GatewayStore keeps the execution gateway's records (gateway.Store):
// installed agents (instances), runs and their events. A run write's
// compare-and-set and the numbering of its events, and a claim's choice of
// runs and their leases, each run on the single writer in one step, so
// sequences have no gap and no run is leased twice, in this process or in
// another using the file. Its WatchEvents reports the appends of this
// handle: a process sharing the file is not watched.
//
// DeliveryStore keeps pull delivery's records (delivery.Store): agents'
// event streams, consumers, invocation and API tokens, DPoP proofs,
// Idempotency-Keys and messages. An append's lookup of its dedupe keys,
// the numbering of its events after each agent's head and the move of
// the head run on the single writer in one step, so sequences have no
// gap and a key names one event; concurrent appends share a commit. Its
// WatchEvents, as the gateway's, reports the appends of this handle.
//
// ToolStore keeps the tool gateway's records (tools.Store): MCP sessions
// and tenants' policies. A touch's check of the idle timeout and its
// update, or the deletion of the session it found idle, and a policy's
// compare-and-set each run on the single writer in one step.
//
// Each open DB is an instance with a lease (store/lease) renewed in the
// background until Close, and every task write records its instance, so
// Recoverer can find the tasks a dead process left SUBMITTED or WORKING
// for a2asrv.Recover; Options.Lease times it.
//
//	db, err := sqlite.Open(ctx, "novaos-data/novaos.db", nil)
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
package sqlite
