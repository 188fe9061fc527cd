package sqlmigrate

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
)

// Migration is one schema step.
type Migration struct {
	Version int
	Name    string // the file name, for error messages and the history table
	SQL     string
}

// ErrNewerSchema is returned by Pending when the database has a version this
// binary does not know: it was migrated by a newer release, and running an
// older one against it could corrupt data.
var ErrNewerSchema = errors.New("sqlmigrate: database schema is newer than this binary")

// Load reads dir/*.sql from fsys, ordered by version. It fails unless the
// versions are exactly 1..n.
func Load(fsys fs.FS, dir string) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("sqlmigrate: %w", err)
	}
	var out []Migration
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".sql") {
			continue
		}
		num, _, ok := strings.Cut(name, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("sqlmigrate: %s: want NNNN_description.sql", name)
		}
		b, err := fs.ReadFile(fsys, path.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("sqlmigrate: %w", err)
		}
		out = append(out, Migration{Version: v, Name: name, SQL: string(b)})
	}
	slices.SortFunc(out, func(a, b Migration) int { return a.Version - b.Version })
	for i, m := range out {
		if m.Version != i+1 {
			return nil, fmt.Errorf("sqlmigrate: %s: version %d, want %d (versions must be 1..n without gaps or repeats)", m.Name, m.Version, i+1)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("sqlmigrate: no migrations in %s", dir)
	}
	return out, nil
}

// Pending returns the migrations from all whose versions are not in applied,
// in order. It returns ErrNewerSchema when applied holds a version past the
// last known one.
func Pending(all []Migration, applied []int) ([]Migration, error) {
	done := make(map[int]bool, len(applied))
	for _, v := range applied {
		if v > len(all) {
			return nil, fmt.Errorf("%w (database at version %d, binary knows %d)", ErrNewerSchema, v, len(all))
		}
		done[v] = true
	}
	var out []Migration
	for _, m := range all {
		if !done[m.Version] {
			out = append(out, m)
		}
	}
	return out, nil
}
