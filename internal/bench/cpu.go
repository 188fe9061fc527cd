package bench

import "time"

// ProcessCPU is the CPU time, user and system, the process has used so
// far (in a Go benchmark: its server and its clients); ok is false where
// it cannot be read.
func ProcessCPU() (d time.Duration, ok bool) { return processCPU() }
