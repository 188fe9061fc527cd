// Package postgres keeps NovaOS state in PostgreSQL, through a pgx
// connection pool, for deployments that run several replicas against one
// database. It offers the same stores, with the same behaviour, as
// store/sqlite; store/storetest holds both to one contract.
//
// Open creates and upgrades the schema from migrations embedded in the
// binary, recorded in a schema_migrations table. The migration runs under a
// PostgreSQL advisory lock, so replicas that start at the same moment take
// turns and each step is applied exactly once. Writes are optimistic: an
// update names the version it read, and loses (ErrConcurrentModification)
// if another replica wrote first.
//
// Each open DB is an instance with a lease (store/lease) renewed in the
// background until Close, and every task write records its instance, so
// Recoverer can find the tasks a dead replica left SUBMITTED or WORKING
// for a2asrv.Recover; Options.Lease times it.
//
//	db, err := postgres.Open(ctx, "postgres://novaos@db.internal/novaos", nil)
//	if err != nil { ... }
//	defer db.Close()
//	h := a2asrv.NewHandler(card, exec, &a2asrv.Options{
//		TaskStore:       db.TaskStore(),
//		PushConfigStore: db.PushConfigStore(),
//	})
package postgres
