// Package storetest is the contract suites of the stores the platform
// defines: one suite of subtests per store interface that the in-memory,
// SQLite and PostgreSQL stores all pass, and that a store written outside
// this module runs the same way.
//
//   - TestTaskStore and TestPushConfigStore: a2asrv.TaskStore and
//     a2asrv.PushConfigStore. They check optimistic versions (including
//     many concurrent updaters), tenant and owner isolation on every
//     method, listing order, filters, paging and page tokens, deletion,
//     that stored and returned tasks are independent copies, and that a
//     task with every kind of content survives a round trip.
//   - TestRecoverer holds a durable store's a2asrv.Recoverer to its
//     contract with several instances on one database: only a dead
//     instance's waiting tasks are orphans, a settled task jumps
//     a2asrv.RecoveryVersionGap versions, and of two instances settling one
//     task exactly one succeeds.
//   - TestRegistryStore: registry.Store, the agent registry's records.
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
