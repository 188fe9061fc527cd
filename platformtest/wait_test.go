package platformtest_test

import (
	"context"
	"time"
)

// waitCond checks cond until it holds or ctx ends: what the tests wait
// for has no notification of its own.
func waitCond(ctx context.Context, cond func() bool) error {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-tick.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}
