//go:build !unix

package bench

import "time"

// processCPU is the CPU time the process has used so far: not read on
// this platform.
func processCPU() (d time.Duration, ok bool) { return 0, false }
