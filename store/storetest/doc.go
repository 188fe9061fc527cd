// Package storetest is the contract every a2asrv.TaskStore and
// a2asrv.PushConfigStore must meet: one suite of subtests that the in-memory,
// SQLite and PostgreSQL stores all pass, and that a store written outside
// this module can run too.
//
// It checks optimistic versions (including many concurrent updaters),
// tenant and owner isolation on every method, listing order, filters, paging
// and page tokens, deletion, that stored and returned tasks are independent
// copies, and that a task with every kind of content survives a round trip.
// TestRecoverer holds a durable store's a2asrv.Recoverer to its contract
// with several instances on one database: only a dead instance's waiting
// tasks are orphans, a settled task jumps a2asrv.RecoveryVersionGap
// versions, and of two instances settling one task exactly one succeeds.
//
//	func TestTaskStore(t *testing.T) {
//		storetest.TestTaskStore(t, func(t *testing.T) a2asrv.TaskStore {
//			return newStoreForTest(t) // a fresh, empty store
//		})
//	}
package storetest
