//go:build !unix

package httpapi

// openFileLimit is unknown off Unix: the caller falls back to a fixed cap.
func openFileLimit() (uint64, bool) { return 0, false }
