// Package storetest holds the contract suites of the stores the platform
// defines.
//
// There is one suite of subtests per store interface that the in-memory,
// SQLite and PostgreSQL stores all pass, and that a store written outside
// this module runs the same way.
//
//   - TestTaskStore and TestPushConfigStore: a2asrv.TaskStore and
//     a2asrv.PushConfigStore. They check optimistic versions (including
//     many concurrent updaters), tenant and owner isolation on every
//     method, listing order, filters, paging and page tokens, deletion,
//     that stored and returned tasks are independent copies, and that a
//     task with every kind of content survives a round trip.
//   - TestPushOutbox: a2asrv.PushOutbox with the task and config stores
//     that fill it. It checks that every task write queues its
//     notifications for each active config and a failed write none, that
//     a config's stream is delivered in write order with only its head
//     ever claimable, lease expiry, disjoint claims by concurrent
//     claimers, retries, dead-lettering and a fresh start when the config
//     is put again, and that a notification id is never used twice.
//   - TestRecoverer holds a durable store's a2asrv.Recoverer to its
//     contract with several instances on one database: only a dead
//     instance's waiting tasks are orphans, a settled task jumps
//     a2asrv.RecoveryVersionGap versions, and of two instances settling one
//     task exactly one succeeds.
//   - TestRegistryStore: registry.Store, the agent registry's records.
//   - TestGateStore: gate.Store, the governance gate's records. It checks
//     that an action's compare-and-set is granted to exactly one of many
//     concurrent writers (how a claim is granted once), that the audit and
//     ledger entries of a write are recorded with it or not at all, the
//     audit chain under concurrent appends (no gap or fork; every entry
//     verifies with gate.NewAuditVerifier; bodies kept byte for byte),
//     ledger totals at their time boundary and against a brute-force
//     recount of random entries and windows (batches of any length, one
//     snapshot under concurrent writers, cents after a lifetime of 10^12,
//     late entries filed at their series' latest time, non-finite amounts
//     refused whole), rule set versions under concurrent puts, listing
//     order and keyset paging, tenant isolation, and that every time (to
//     the microsecond, in UTC), duration and JSON field survives a round
//     trip. TestGateLedgerBackfill checks the migration to running
//     totals on a store's older schema. BenchmarkGateStore measures
//     action writes, BenchmarkGateLedger ledger totals at two ledger
//     sizes against the old count and sum.
//   - TestGatewayStore: gateway.Store, the execution gateway's instances,
//     runs and events. It checks that every field of an instance and a run
//     (raw JSON and sealed bytes byte for byte, times to the microsecond
//     in UTC, zero values zero) survives a round trip, uniqueness of ids
//     and names, tenant isolation, compare-and-set with exactly one of
//     many concurrent writers winning and nothing written by the losers,
//     event sequences without gap or duplicate under retrying writers,
//     paging of events, instances and runs (newest first, past runs that
//     share a creation time), the filters, claims (only QUEUED and RUNNING
//     runs whose lease and backoff are over, oldest first, never one run
//     to two concurrent claimers) and WatchEvents (every append reported,
//     no failed write, nothing after the context ends).
//     TestGatewayReplicas checks claims and, for a shared database,
//     WatchEvents across handles; TestGatewayReopen durability;
//     BenchmarkGatewayStore a run write and a page of 100 events.
//   - TestToolStore: tools.Store, the tool gateway's sessions and
//     policies. It checks that a session survives a round trip (times to
//     the microsecond in UTC), that a touch moves its last use on and
//     never back, that one idle past the timeout is gone at the touch
//     that finds it (and stays gone under racing touches), deletion in
//     the session's tenant only, sweeps of exactly the idle sessions,
//     policy versions (0 creates; a stale version conflicts) with exactly
//     one of many concurrent puts winning, tenant isolation, and that
//     text no store can keep (NUL, invalid UTF-8) is refused.
//     TestToolReplicas checks touches and puts across handles,
//     TestToolReopen durability.
//   - TestFileStore: tools.FileStore, the tool gateway's files. It checks
//     round trips (content byte for byte, digests, times to the
//     microsecond in UTC), areas and tenants apart, versions unique in a
//     tenant and growing past deletes, conditional puts and deletes,
//     listings in byte order with prefixes and paging against a brute
//     force, usage against a model over random puts and deletes, the
//     quota (only growth refused) and every rule of a valid key; and
//     that of concurrent puts exactly as many succeed as the quota holds
//     and of concurrent conditional writers exactly one wins.
//     TestFileReplicas runs those races across handles; TestFileReopen
//     checks durability and the version counter across restarts.
//   - TestKnowledgeStore: tools.KnowledgeStore, the tool gateway's
//     knowledge collections. It checks names and the collection limit
//     (exactly the limit wins among concurrent creators), tenant
//     isolation, that a deletion cancels the collection's live jobs and
//     frees its name (also racing commits and new jobs: each is committed
//     before it or cancelled by it, and nothing deadlocks), purges, the job queue's claims (only due jobs,
//     oldest first, leases lapsing, attempts counted, never one job to two
//     concurrent claimers), that a lost claim can neither extend nor
//     finish its job, every outcome of a job, duplicates found at commit,
//     the active-job limit, sweeps, and graph builds (claims, a request
//     superseding a build in progress, data kept as given).
//     TestKnowledgeReplicas checks claims across handles;
//     TestKnowledgeReopen durability.
//   - TestDeliveryStore: delivery.Store, pull delivery's records. It
//     checks that every field of an event survives a round trip (the
//     payload byte for byte, times to the microsecond in UTC), that each
//     agent's sequence runs from 1 without gap or duplicate under
//     concurrent appenders, that a dedupe key names one event (across
//     appends, within one, and among racing appenders, each answered with
//     the stored event), refused appends storing nothing, paging of
//     events and the page bound, WatchEvents (every append with new
//     events reported, nothing after the context ends), consumers opened
//     at the head once (also by racing openers), updates by
//     compare-and-set with exactly one of racing updaters winning, an
//     acknowledgement that never moves back or past the head, rewinds,
//     each run's newest token, tokens used once, DPoP proof ids recorded
//     once until their time (exactly one of racing recorders fresh) and
//     pruned in bounded steps, API tokens by hash with
//     revocation, Idempotency-Keys (exactly one of racing claims fresh,
//     answers, forgetting, pruning by age) and messages stored once per
//     client message id and read by thread, newest last.
//     TestDeliveryReplicas runs the races across handles and, for a
//     shared database, WatchEvents; TestDeliveryReopen checks durability;
//     BenchmarkDeliveryStore measures appends with their acknowledgement
//     (events/s).
//
// The contracts are public (a2asrv's store interfaces, registry.Store) and
// this package imports no internal package of the module, so an outside
// store needs only these imports. It runs a suite from its own tests,
// handing it a constructor for fresh, empty stores:
//
//	import (
//		"novaos.dev/novaos/a2a/a2asrv"
//		"novaos.dev/novaos/registry"
//		"novaos.dev/novaos/store/storetest"
//	)
//
//	func TestTaskStore(t *testing.T) {
//		storetest.TestTaskStore(t, func(t *testing.T) a2asrv.TaskStore {
//			return newStoreForTest(t) // a fresh, empty store
//		})
//	}
//
//	func TestRegistryStore(t *testing.T) {
//		storetest.TestRegistryStore(t, func(t *testing.T) registry.Store { return newRegistryStoreForTest(t) })
//	}
package storetest
