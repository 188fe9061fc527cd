// Package lease keeps a process's claim on the tasks it writes alive.
//
// It serves the durable stores that implement a2asrv.Recoverer.
//
// Each opened database handle is one instance: it registers a random id in
// the database with an expiry, renews it every Heartbeat, and stamps every
// task it writes with that id. A task whose instance's lease has lapsed
// (no renewal for Expiry) was left by a process that is gone, and another
// instance may settle it. Expiry is a multiple of Heartbeat, so a few late
// or failed renewals do not make a live process look dead. The package holds
// the timing only; the SQL of registering, renewing and finding orphans lives
// in store/sqlite and store/postgres.
//
//	o, err := (&lease.Options{Heartbeat: 2 * time.Second}).Resolve() // Expiry defaults to 30s
//	k := lease.Start(o, func(ctx context.Context) error { return renew(ctx, id, o.Expiry) }, logErr)
//	defer k.Stop()
package lease
