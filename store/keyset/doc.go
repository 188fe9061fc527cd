// Package keyset holds what the task and push-config stores share about
// listing: the opaque page tokens (keyset cursors), the page-size clamp and
// the millisecond rounding of time filters. The in-memory, SQLite and
// PostgreSQL stores use it so that they issue and accept the same tokens and
// page the same way.
//
// A cursor names the last row of a page; the next page starts strictly after
// it, so rows inserted or deleted between two calls neither repeat nor shift
// a later page.
//
//	tok := keyset.Task{TimeMs: ts, ID: id}.Token()
//	cur, err := keyset.ParseTask(tok) // errors.Is(err, keyset.ErrBadToken) for garbage
//	n := keyset.Limit(q.PageSize)
package keyset
