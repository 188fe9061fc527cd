// Package a2astore holds what every store of A2A tasks and push configs
// shares.
//
// Whatever a store of tasks and push-notification configs (a2asrv.TaskStore,
// a2asrv.PushConfigStore) keeps them in, it shares: the opaque page tokens
// of ListTasks and of config listings (keyset cursors), the page-size clamp,
// the millisecond rounding of time filters, which ids and scope strings a
// store can hold, and the bytes a store keeps for a task, an appended event
// and a config. a2asrv's in-memory stores and the SQLite and PostgreSQL
// stores use it, so they issue and accept the same tokens, page the same way
// and refuse the same records; a store written outside this module may use
// it too.
//
// It sits beside a2asrv, on the floor above the wire model (it imports
// only the standard library and package a2a): a2asrv's own stores need it,
// and a protocol package must not import a store package. Its name says
// whose records it describes: A2A's, for stores. What is SQL (state lists,
// result-set scanning) stays with the SQL stores.
//
// A cursor names the last row of a page; the next page starts strictly after
// it, so rows inserted or deleted between two calls neither repeat nor shift
// a later page.
//
//	tok := a2astore.Task{TimeMs: ts, ID: id}.Token()
//	cur, err := a2astore.ParseTask(tok) // errors.Is(err, a2astore.ErrBadToken) for garbage
//	n := a2astore.Limit(q.PageSize)
//	body, err := a2astore.EncodeTask(tenant, owner, task)
package a2astore
