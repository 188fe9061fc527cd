package postgres_test

import (
	"context"
	"log"
	"os"

	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/store/postgres"
)

func ExampleOpen() {
	ctx := context.Background()
	// NOVAOS_DATABASE_URL is what `novaos serve` reads; any program may
	// take the URL from wherever it likes.
	url := os.Getenv("NOVAOS_DATABASE_URL")
	if url == "" {
		return
	}
	db, err := postgres.Open(ctx, url, &postgres.Options{MaxConns: 16})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	_ = &a2asrv.Options{TaskStore: db.TaskStore(), PushConfigStore: db.PushConfigStore()}
}

func ExampleDB_WriteStats() {
	ctx := context.Background()
	url := os.Getenv("NOVAOS_DATABASE_URL")
	if url == "" {
		return
	}
	db, err := postgres.Open(ctx, url, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	before := db.WriteStats()
	// … serve requests …
	after := db.WriteStats()
	writes := after.Writes - before.Writes
	if writes > 0 {
		log.Printf("%.1f task writes per transaction, %.2f round trips per write",
			float64(writes)/float64(after.Transactions-before.Transactions),
			float64(after.RoundTrips-before.RoundTrips)/float64(writes))
	}
}
