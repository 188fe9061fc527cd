// Package benchpair times an operation against its baseline in one benchmark.
//
// A quotient of two benchmarks run one after the other on a busy machine
// measures the machine as much as the code: the load changes between
// them. Run makes one call of each per iteration instead, in alternating
// order (work that one call leaves behind, a server's after answering or
// the collector's, lands on whichever comes next), and reports each
// side's ns/call and their quotient:
//
//	benchpair.Run(b, "door", door, "mcp", mcp) // door-ns/call, mcp-ns/call, door÷mcp
package benchpair

import (
	"testing"
	"time"
)

// Run calls op and base once each per iteration of b's loop, alternating
// which goes first, and reports "<opName>-ns/call", "<baseName>-ns/call"
// and "<opName>÷<baseName>", op's time over base's: 1 means op costs what
// base does, below 1 less. b.ReportAllocs, if called, counts both.
func Run(b *testing.B, opName string, op func(), baseName string, base func()) {
	b.Helper()
	var opT, baseT time.Duration
	timed := func(f func(), into *time.Duration) {
		t0 := time.Now()
		f()
		*into += time.Since(t0)
	}
	i := 0
	for b.Loop() {
		if i%2 == 0 {
			timed(op, &opT)
			timed(base, &baseT)
		} else {
			timed(base, &baseT)
			timed(op, &opT)
		}
		i++
	}
	n := float64(b.N)
	b.ReportMetric(float64(opT.Nanoseconds())/n, opName+"-ns/call")
	b.ReportMetric(float64(baseT.Nanoseconds())/n, baseName+"-ns/call")
	if baseT > 0 {
		b.ReportMetric(float64(opT)/float64(baseT), opName+"÷"+baseName)
	}
}
