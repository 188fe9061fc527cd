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
