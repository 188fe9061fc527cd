package store_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/store"
	"novaos.dev/novaos/store/sqlite"
)

// A database gives its stores as one value; a caller without a database
// fills the value with stores of its own.
func Example() {
	dir, err := os.MkdirTemp("", "novaos-store")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	db, err := sqlite.Open(context.Background(), filepath.Join(dir, "novaos.db"), nil)
	if err != nil {
		log.Fatal(err)
	}
	st := db.Stores()
	defer st.Close()
	fmt.Println(st.Kind, st.Shared, st.Memory != nil, st.Gate != nil)

	tasks := a2asrv.NewMemoryTaskStore(nil)
	mem := &store.Stores{Kind: "memory", Tasks: tasks, PushConfigs: tasks.PushConfigStore(), PushOutbox: tasks.PushOutbox()}
	fmt.Println(mem.Kind, mem.Recoverer == nil)
	// Output:
	// sqlite false true true
	// memory true
}
