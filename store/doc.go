// Package store names the platform's stores on one database.
//
// store/sqlite and store/postgres each give a [Stores] value (their DB's
// Stores method): the public store contracts every platform service is
// built from, and what differs between the databases (whether replicas
// share it, a notification listener). A caller with stores of its own,
// such as a2asrv's in-memory task store in a benchmark, fills the value
// itself; a service whose store is nil is not served.
//
// store/storetest is the contract suite both databases pass.
package store
