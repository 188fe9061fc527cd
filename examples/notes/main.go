// Command notes is an A2A agent that remembers. Told "remember: TEXT", it
// writes TEXT to its agent memory; asked anything else, it answers with the
// memory that matches best. Its memory lives in the platform's memory
// service, not in the process: it survives restarts and is shared by every
// replica of the agent.
//
// The platform calls it: install it as an instance with memory scopes and
// run it (docs/examples.md shows the commands). Each run's platform context
// carries an execution token and the platform's URL, which memory.From reads.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net/http"
	"strings"

	"novaos.dev/novaos/agent"
	"novaos.dev/novaos/memory"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:9002", "address to listen on")
	flag.Parse()

	a := agent.New("notes", "1.0.0", &agent.Options{Description: "Remembers what it is told"})
	a.MustRegister(agent.Skill{
		ID:          "notes",
		Description: `"remember: TEXT" stores TEXT; anything else asks what was stored`,
		Handler:     handle,
	})
	url := "http://" + *addr
	log.Printf("notes is serving on %s", url)
	log.Fatal(http.ListenAndServe(*addr, a.Handler(url, nil)))
}

func handle(c *agent.Context) (agent.Result, error) {
	// A client that calls the memory service as this agent, with the
	// run's execution token.
	mc, err := memory.From(c, nil)
	if err != nil {
		return agent.Result{}, err
	}
	if fact, ok := strings.CutPrefix(c.Input(), "remember:"); ok {
		return remember(c, mc, strings.TrimSpace(fact))
	}
	res, err := mc.Query(c, &memory.QueryRequest{Scope: memory.ScopeAgent, Query: c.Input()})
	if err != nil {
		return agent.Result{}, err
	}
	if len(res.Items) == 0 {
		return agent.Result{Output: "I remember nothing about that."}, nil
	}
	return agent.Result{Output: "I remember: " + res.Items[0].Content}, nil
}

// remember writes fact to the agent's memory. An agent-scope write is a
// proposal that the service's write gate screens (it refuses personal data
// and credentials, for one); the skill waits for the decision, so that the
// next run can read the memory.
func remember(ctx context.Context, mc *memory.Client, fact string) (agent.Result, error) {
	w, err := mc.Write(ctx, &memory.WriteRequest{Scope: memory.ScopeAgent, Content: fact})
	if err != nil {
		return agent.Result{}, err
	}
	if w.Durable {
		return agent.Result{Output: "Noted."}, nil
	}
	st, err := mc.PollProposal(ctx, w.MemoryID, 0)
	if err != nil {
		return agent.Result{}, err
	}
	if st.Status != memory.ProposalCommitted {
		reason := "no reason given"
		if st.Reason != nil {
			reason = *st.Reason
		}
		return agent.Result{}, errors.New("the memory service did not keep it: " + reason)
	}
	return agent.Result{Output: fmt.Sprintf("Noted (memory %s).", *st.MemoryID)}, nil
}
