package cli

import (
	"flag"
	"fmt"
	"math"
	"time"

	"novaos.dev/novaos/internal/app"
	"novaos.dev/novaos/store/postgres"
)

// dbFlags are serve's PostgreSQL pool flags (README: Configuration).
type dbFlags struct {
	maxConns         *int
	statementTimeout *time.Duration
}

func databaseFlags(fs *flag.FlagSet) *dbFlags {
	return &dbFlags{
		maxConns: fs.Int("db-max-conns", app.DefaultDBMaxConns, "PostgreSQL only (refused without --db or $"+EnvDatabaseURL+"): connections in this server's pool; "+
			"every replica has its own, so keep replicas × this under the database's max_connections"),
		statementTimeout: fs.Duration("db-statement-timeout", postgres.DefaultStatementTimeout, "PostgreSQL only (refused without --db or $"+EnvDatabaseURL+"): longest one statement may run before the database cancels it "+
			"(sent as the sessions' statement_timeout, over one in the URL; migrations are exempt; 0: none, for a pooler that refuses the parameter)"),
	}
}

// check says what is wrong with the flags for database URL db, or "".
// They tune a PostgreSQL pool, so given without one they would be
// silently ignored: refused instead.
func (d *dbFlags) check(fs *flag.FlagSet, db string) string {
	if !isPostgresURL(db) {
		var set []string
		fs.Visit(func(f *flag.Flag) {
			if f.Name == "db-max-conns" || f.Name == "db-statement-timeout" {
				set = append(set, "--"+f.Name)
			}
		})
		if len(set) > 0 {
			return fmt.Sprintf("%s tune a PostgreSQL pool: give --db postgres://… or $%s", set[0], EnvDatabaseURL)
		}
	}
	if *d.maxConns < 1 || *d.maxConns > math.MaxInt32 {
		return "--db-max-conns: want a positive number of connections"
	}
	if *d.statementTimeout < 0 {
		return "--db-statement-timeout: want a duration of at least 0 (0: none)"
	}
	return ""
}

// options are the flags as app.Options' DBMaxConns and DBStatementTimeout.
func (d *dbFlags) options() (maxConns int32, statementTimeout time.Duration) {
	statementTimeout = *d.statementTimeout
	if statementTimeout == 0 {
		statementTimeout = -1 // postgres.Options: negative is none, 0 its default
	}
	return int32(*d.maxConns), statementTimeout
}
