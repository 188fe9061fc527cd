// Package keyset holds what task and push-config stores share about
// listing: the opaque page tokens (keyset cursors), the page-size clamp, the
// millisecond rounding of time filters and which ids a store can hold. The
// in-memory store in a2asrv and the SQLite and PostgreSQL stores use it, so
// they issue and accept the same tokens and page the same way; a store
// written outside this module may use it too. It depends on the standard
// library and the a2a wire model only, so the agent SDK can carry it.
//
// A cursor names the last row of a page; the next page starts strictly after
// it, so rows inserted or deleted between two calls neither repeat nor shift
// a later page.
//
//	tok := keyset.Task{TimeMs: ts, ID: id}.Token()
//	cur, err := keyset.ParseTask(tok) // errors.Is(err, keyset.ErrBadToken) for garbage
//	n := keyset.Limit(q.PageSize)
package keyset
