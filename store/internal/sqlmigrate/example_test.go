package sqlmigrate_test

import (
	"fmt"
	"testing/fstest"

	"novaos.dev/novaos/store/internal/sqlmigrate"
)

func ExamplePending() {
	files := fstest.MapFS{
		"migrations/0001_tasks.sql":        {Data: []byte("CREATE TABLE tasks (id TEXT PRIMARY KEY);")},
		"migrations/0002_push_configs.sql": {Data: []byte("CREATE TABLE push_configs (id TEXT);")},
	}
	all, err := sqlmigrate.Load(files, "migrations")
	if err != nil {
		panic(err)
	}
	todo, _ := sqlmigrate.Pending(all, []int{1})
	for _, m := range todo {
		fmt.Println(m.Version, m.Name)
	}
	// Output: 2 0002_push_configs.sql
}
