// Command replicas shows two replicas of the platform as one. Given the URL
// of the same agent on two novaos serve processes that share a PostgreSQL
// database, it runs a task on the first, reads it on the second, continues
// the conversation on the second and lists it on the first. No replica
// keeps a task to itself, so a client (or a load balancer) may send any
// call to any replica, and a task outlives the replica that ran it.
//
//	go run ./examples/replicas http://127.0.0.1:8081/agents/echo http://127.0.0.1:8082/agents/echo
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2aclient"
)

func main() {
	if len(os.Args) != 3 {
		log.Fatal("usage: replicas AGENT_URL_ON_REPLICA_A AGENT_URL_ON_REPLICA_B")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a, b := client(ctx, os.Args[1]), client(ctx, os.Args[2])

	first := send(ctx, a, "hello from A", "")
	fmt.Printf("replica A ran task %s: %s\n", first.ID, describe(first))

	// The task was written to the shared database, so B knows it.
	read, err := b.GetTask(ctx, &a2a.GetTaskRequest{ID: first.ID})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("replica B reads task %s: %s\n", read.ID, describe(read))

	// A new message in the same conversation (context id), on B this time.
	second := send(ctx, b, "hello from B", first.ContextID)
	fmt.Printf("replica B ran task %s in the same conversation: %s\n", second.ID, describe(second))

	list, err := a.ListTasks(ctx, &a2a.ListTasksRequest{ContextID: first.ContextID, IncludeArtifacts: true})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("replica A lists the conversation: %d tasks\n", len(list.Tasks))
}

// client builds an A2A client for the agent at url, from its card.
func client(ctx context.Context, url string) *a2aclient.Client {
	c, err := a2aclient.NewFromURL(ctx, url, nil)
	if err != nil {
		log.Fatal(err)
	}
	return c
}

// send sends text in the conversation contextID ("" starts one) and
// returns the task the agent answers with.
func send(ctx context.Context, c *a2aclient.Client, text, contextID string) *a2a.Task {
	resp, err := c.SendMessage(ctx, a2aclient.TextRequest(text, "", contextID))
	if err != nil {
		log.Fatal(err)
	}
	if resp.Task == nil {
		log.Fatalf("%s answered with a message, not a task", c.URL())
	}
	return resp.Task
}

// describe is a task's state and the text of its artifacts.
func describe(t *a2a.Task) string {
	var out string
	for _, art := range t.Artifacts {
		out += a2a.PartsText(art.Parts)
	}
	return fmt.Sprintf("%s %q", t.Status.State, out)
}
