// Command greeter is a one-skill A2A agent written with the NovaOS SDK.
// It serves JSON-RPC and HTTP+JSON on --addr and keeps its tasks in memory.
package main

import (
	"flag"
	"log"
	"net/http"

	"novaos.dev/novaos/agent"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:9000", "address to listen on")
	flag.Parse()

	a := agent.New("greeter", "1.0.0", &agent.Options{Description: "Says hello"})
	a.MustRegister(agent.Skill{
		ID:          "greet",
		Description: "Greets the caller by name",
		Handler: func(c *agent.Context) (agent.Result, error) {
			// c is a context.Context, cancelled by CancelTask, that also
			// carries the task's ids, history and a task updater.
			return agent.Result{Output: "Hello, " + c.Input() + "!"}, nil
		},
	})
	url := "http://" + *addr
	log.Printf("greeter is serving on %s", url)
	// nil options: tasks in memory; a2asrv.Options takes a durable store.
	log.Fatal(http.ListenAndServe(*addr, a.Handler(url, nil)))
}
