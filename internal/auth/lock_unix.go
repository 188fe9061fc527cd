//go:build unix

package auth

import (
	"fmt"
	"os"
	"syscall"
)

// lockRing takes the ring's rotation lock, an flock on a file beside it,
// so processes sharing a ring rotate it one at a time: without it two
// rotating at once would each retire the same key, and the key the first
// wrote would be lost from the file while it signs.
func lockRing(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("auth: token key ring lock: %w", err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("auth: token key ring lock: %w", err)
	}
	return func() { f.Close() }, nil // closing the file releases the lock
}
