// Package sqlstore holds the SQL that store/sqlite and store/postgres share.
//
// It is what the two SQL stores share beyond their migrations
// (store/internal/sqlmigrate): reading a result set of encoded records
// (ScanBodies over the Rows that database/sql and pgx have in common) and
// the SQL list of task states an IN condition and a partial index both name
// (StateList); the gate store's column layout (SessionCols, ActionCols
// with their Args and Scan functions, times as Micros) with what a store
// assigns before it writes (PrepareSession, PrepareActionWrite), how an
// audit entry takes its place in the chain (Chain), and how a ledger entry
// is filed with its series' running totals (RunningTotal, LedgerSeries,
// LedgerHeads.File, ReadLedgerTotals); the memory store's rows
// (MemoryCols, ProposalCols, HintCols with ScanMemory, ScanProposal,
// ScanHint, times as Millis), a push config's delivery state
// (PushStateCols, ScanPushState), and the execution gateway's rows
// (InstanceCols, RunCols, RunSetCols, EventCols with their Args and Scan
// functions) with what a store assigns before it writes (PrepareInstance,
// PrepareRunWrite, Number) and the watchers of its appends
// (EventWatchers); the tool gateway's rows (ToolSessionCols,
// ToolPolicyCols with their Args and Scan functions); the tool files'
// rows (FileInfoCols, ScanFileInfo, PrepareFilePut) and the key range
// of a listing (FilePage).
//
// Where the two stores differ only in their statements, the store itself
// is here: ScheduleStore (a heartbeat.Store), GatewayStore (a
// gateway.Store), LLMStore (an llm.Store) and DeliveryStore (a
// delivery.Store) hold the checks, the steps between statements and the
// errors both build, over the statements each runs in its own dialect (a
// ScheduleSQL, a GatewaySQL, an LLMSQL, a DeliverySQL) and what it tells
// of its database (a Dialect). An append of delivery events is planned
// here too (PlanAppend: which events repeat a dedupe key, and their
// numbering after each agent's head).
// It holds what is SQL but not one
// dialect's, so it stays out of the public a2a/a2astore, whose encodings
// any store may use; it is internal to store/ because no one else writes
// SQL.
//
//	var orphanStates = sqlstore.StateList(a2asrv.OrphanStates())
//	tasks, err := sqlstore.ScanBodies(rows, a2astore.DecodeTask)
package sqlstore
