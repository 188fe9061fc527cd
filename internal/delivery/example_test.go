package delivery

import (
	"context"
	"fmt"

	"novaos.dev/novaos/delivery"
	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/internal/auth"
)

// The platform offers a pull instance's run, its agent takes the event
// with a fresh token and starts the run with it, once.
func Example() {
	ctx := context.Background()
	base := "https://platform.example.com"
	ring, _ := auth.Open("", auth.Options{Issuer: base, Algorithm: auth.EdDSA}) // KeyFile in the data directory in a server
	runs := gateway.NewMemoryStore()
	svc, err := New(Deps{Store: delivery.NewMemStore(), Runs: runs, Keys: ring, BaseURL: base}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	inst, _ := runs.CreateInstance(ctx, gateway.Instance{ID: "lotse", TenantID: "acme", Name: "lotse", Delivery: gateway.DeliveryPull}, svc.o.Now())
	agent := Agent{ID: inst.ID, TenantID: inst.TenantID, Instance: inst} // AuthenticateAgent establishes it from the agent's API token
	_, _ = svc.OpenConsumer(ctx, agent, "laptop")

	run, _, _ := runs.CreateRun(ctx, gateway.RunWrite{Run: gateway.Run{ID: "run-1", TenantID: "acme", InstanceID: "lotse",
		Status: gateway.StatusQueued, Input: "Summarise the ticket", Turn: 1}, Now: svc.o.Now()})
	_ = svc.Offer(ctx, run, inst) // the execution gateway's dispatch of a pull run

	page, _ := svc.NextEvents(ctx, agent, "laptop", Batch{})
	ev := page.Events[0]
	fmt.Println(ev.Type, ev.Seq, ev.InvocationToken != "")

	started, err := svc.StartRun(ctx, agent, "run-1", ev.InvocationToken,
		delivery.RunStart{BillingModeUsed: delivery.BillingPlatform, ToolClassUsed: delivery.ToolChat})
	fmt.Println(started.State, started.Starts, err)
	_, err = svc.StartRun(ctx, agent, "run-1", ev.InvocationToken,
		delivery.RunStart{BillingModeUsed: delivery.BillingPlatform, ToolClassUsed: delivery.ToolChat})
	fmt.Println(err)
	// Output:
	// agent.invocation 1 true
	// running 1 <nil>
	// delivery: 409 already_started: the run was started already
}
