package builtin_test

import (
	"context"
	"errors"
	"fmt"

	"novaos.dev/novaos/internal/toolgw"
	"novaos.dev/novaos/internal/toolgw/builtin"
)

// The built-in servers are Providers: the gateway lists their tools and
// calls them. A server whose backend is off says so.
func Example() {
	ctx := context.Background()
	caller := &toolgw.Caller{Tenant: "acme", Agent: "support-bot", Run: "run-1"}
	web, err := builtin.HTTP(nil) // no allowed domains
	if err != nil {
		panic(err)
	}
	for _, p := range []toolgw.Provider{web, builtin.HITL()} {
		list, _ := p.Tools(ctx, caller)
		for _, tool := range list {
			_, err := p.Call(ctx, &toolgw.Request{Caller: caller, Tool: &tool, Arguments: []byte(`{"url":"https://example.com/","prompt":"?"}`)})
			var te *toolgw.Error
			if errors.As(err, &te) {
				fmt.Printf("%s: %s\n", tool.Name, te.Reason)
			}
		}
	}
	// Output:
	// novaos.http.fetch: SERVICE_DISABLED
	// novaos.hitl.request_input: SERVICE_DISABLED
}
