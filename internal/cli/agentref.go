package cli

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"novaos.dev/novaos/registry"
)

// DefaultServer is the NovaOS server a bare agent name is looked up on.
const DefaultServer = "http://127.0.0.1:8080"

func serverFlag(fs *flag.FlagSet) *string {
	return fs.String("server", DefaultServer, "NovaOS server `URL` whose registry resolves a bare agent name")
}

// agentEndpoint reads a command's agent argument. A URL is used as is; a
// bare name is looked up in the agent registry of the server, so every
// registered agent can be named, the hosted ones and any other.
func agentEndpoint(ctx context.Context, target, server string) (string, error) {
	if strings.Contains(target, "://") {
		return target, nil
	}
	// The server vets what is registered; the CLI only needs the record.
	c, err := registry.NewClient(server, &registry.ClientOptions{Policy: &registry.Policy{AllowLoopback: true, AllowPrivate: true}})
	if err != nil {
		return "", fmt.Errorf("--server: %w", err)
	}
	a, err := c.Get(ctx, target)
	if err != nil {
		return "", fmt.Errorf("agent %q on %s: %w", target, server, err)
	}
	return a.URL, nil
}
