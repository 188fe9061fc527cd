// Package sqlmigrate works out which embedded migration files a database
// still needs.
//
// It reads the numbered migration files a store embeds. It holds no SQL and
// talks to no database: store/sqlite and store/postgres apply the steps in
// their own dialect, inside their own transactions and locks.
//
// Files are named NNNN_description.sql; the number is the schema version,
// and versions must run 1, 2, 3, … without gaps, so that two branches adding
// the same number collide at build time instead of in production.
//
//	//go:embed migrations/*.sql
//	var migrationFS embed.FS
//
//	all, err := sqlmigrate.Load(migrationFS, "migrations")
//	todo, err := sqlmigrate.Pending(all, appliedVersions)
//	for _, m := range todo { /* exec m.SQL, record m.Version */ }
package sqlmigrate
