package sqlstore

import (
	"errors"
	"fmt"
	"strings"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2astore"
)

// Dialect is what the stores built here (ScheduleStore, GatewayStore,
// LLMStore) need to know of a database beyond its statements.
type Dialect struct {
	// Name begins every error the store returns: "sqlite", "postgres".
	Name string
	// NoRows is the driver's error for a row that is not there.
	NoRows error
	// StrictText says the database's text holds neither NUL nor invalid
	// UTF-8 (PostgreSQL): a key with either names nothing, so the store
	// answers without asking the database.
	StrictText bool
}

// Holds reports whether the database can hold every one of s.
func (d Dialect) Holds(s ...string) bool { return !d.StrictText || a2astore.ValidText(s...) }

// Missing is notFound when err is the driver's error for a missing row,
// else err.
func (d Dialect) Missing(err, notFound error) error {
	if errors.Is(err, d.NoRows) {
		return notFound
	}
	return err
}

// Rows is what database/sql's and pgx's result sets have in common.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// ScanBodies reads a result set of one encoded-record column, decoding
// each row with decode.
func ScanBodies[T any](rows Rows, decode func([]byte) (T, error)) ([]T, error) {
	var out []T
	for rows.Next() {
		var body []byte
		if err := rows.Scan(&body); err != nil {
			return nil, err
		}
		v, err := decode(body)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// StateList returns states as an SQL list of string literals, "('A', 'B')",
// the form both SQL stores keep states in, for an IN condition. State names
// are fixed identifiers without quotes, so no escaping is needed; a state
// list in a partial index must name the same states.
func StateList(states []a2a.TaskState) string {
	names := make([]string, len(states))
	for i, s := range states {
		names[i] = "'" + s.String() + "'"
	}
	return "(" + strings.Join(names, ", ") + ")"
}

// wrap prefixes *err, unless nil, with the dialect's name and what
// failed.
func (d Dialect) wrap(err *error, format string, args ...any) {
	if *err != nil {
		*err = fmt.Errorf("%s: %s: %w", d.Name, fmt.Sprintf(format, args...), *err)
	}
}

// CountBy reads rows of (key, count), such as a GROUP BY status.
func CountBy[K ~string](rows Rows) (map[K]int64, error) {
	out := map[K]int64{}
	for rows.Next() {
		var (
			k string
			n int64
		)
		if err := rows.Scan(&k, &n); err != nil {
			return nil, err
		}
		out[K(k)] = n
	}
	return out, rows.Err()
}
