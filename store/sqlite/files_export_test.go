package sqlite

import "novaos.dev/novaos/tools"

// ListFilesSQL is the statement and arguments FileStore.List runs for f.
func ListFilesSQL(f *tools.FileFilter) (string, []any) { return listFilesSQL(f) }
