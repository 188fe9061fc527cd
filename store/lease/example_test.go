package lease_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"novaos.dev/novaos/store/lease"
)

func ExampleStart() {
	o, err := (&lease.Options{Heartbeat: 10 * time.Millisecond}).Resolve()
	if err != nil {
		panic(err)
	}
	fmt.Println("expiry:", o.Expiry)
	var renewals atomic.Int32
	renewed := make(chan struct{}, 1)
	k := lease.Start(o, func(ctx context.Context) error {
		renewals.Add(1) // UPDATE instances SET expires = now + o.Expiry WHERE id = …
		select {
		case renewed <- struct{}{}:
		default:
		}
		return nil
	}, nil)
	select {
	case <-renewed: // the first heartbeat
	case <-time.After(time.Minute):
	}
	k.Stop()
	fmt.Println("renewed:", renewals.Load() > 0)
	// Output:
	// expiry: 30s
	// renewed: true
}
