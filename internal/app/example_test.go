package app_test

import (
	"context"
	"fmt"
	"io"
	"net/http"

	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/internal/app"
	"novaos.dev/novaos/store"
)

func ExampleServer() {
	ctx := context.Background()
	srv, err := app.New(ctx, &app.Options{
		Addr: "127.0.0.1:0", // any free port; srv.URL() says which
		// Tasks in memory, no database: nothing is written to disk.
		Stores: &store.Stores{Tasks: a2asrv.NewMemoryTaskStore(nil)},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := srv.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Shutdown(ctx)

	for _, ep := range srv.Endpoints() {
		fmt.Println(ep.Name, ep.URL == srv.URL()+"/agents/"+ep.Name)
	}
	resp, err := http.Get(srv.URL() + "/healthz")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Print(resp.StatusCode, " ", string(body))
	// Output:
	// echo true
	// tck true
	// ask true
	// 200 {"status":"ok","database":{"kind":"custom","ok":true}}
}
