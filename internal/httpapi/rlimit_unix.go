//go:build unix

package httpapi

import "syscall"

// openFileLimit is the soft RLIMIT_NOFILE.
func openFileLimit() (uint64, bool) {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil || r.Cur == 0 {
		return 0, false
	}
	return uint64(r.Cur), true
}
