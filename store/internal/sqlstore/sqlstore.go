package sqlstore

import (
	"strings"

	"novaos.dev/novaos/a2a"
)

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
