package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"strings"

	"novaos.dev/novaos/registry"
)

// DefaultServer is the NovaOS server the client commands talk to when
// neither --server nor $NOVAOS_SERVER names one.
const DefaultServer = "http://127.0.0.1:8080"

// EnvServer names the NovaOS server the client commands (send, agents,
// card, memory, gate) talk to when --server is not given, so a shell can
// point them all at a server that is not on the default address.
const EnvServer = "NOVAOS_SERVER"

// defaultServer is $NOVAOS_SERVER, else DefaultServer.
func defaultServer(e *env) string {
	if s := e.getenv(EnvServer); s != "" {
		return s
	}
	return DefaultServer
}

func serverFlag(fs *flag.FlagSet, e *env) *string {
	return fs.String("server", defaultServer(e), "NovaOS server `URL` whose registry resolves a bare agent name ($"+EnvServer+" sets the default)")
}

// agentEndpoint reads a command's agent argument. A URL is used as is; a
// bare name is looked up in the agent registry of the server, so every
// registered agent can be named, the hosted ones and any other.
func agentEndpoint(ctx context.Context, target, server string, hc *http.Client) (string, error) {
	url, _, err := agentRecord(ctx, target, server, hc)
	return url, err
}

// agentRecord is agentEndpoint that also returns the registry record a
// bare name was resolved through (nil for a URL). hc, when not nil, makes
// the registry request.
func agentRecord(ctx context.Context, target, server string, hc *http.Client) (string, *registry.Agent, error) {
	if strings.Contains(target, "://") {
		return target, nil, nil
	}
	// The server vets what is registered; the CLI only needs the record.
	c, err := registry.NewClient(server, &registry.ClientOptions{HTTPClient: hc, Policy: &registry.Policy{AllowLoopback: true, AllowPrivate: true}})
	if err != nil {
		return "", nil, fmt.Errorf("--server: %w", err)
	}
	a, err := c.Get(ctx, target)
	if err != nil {
		return "", nil, fmt.Errorf("agent %q on %s: %w", target, server, err)
	}
	return a.URL, a, nil
}

// parseArgs parses fs and returns the positional arguments, which may come
// before, between or after the flags (novaos send echo "hi" --stream). On
// -h it returns exitOK and ok false; on a bad flag exitUsage.
func parseArgs(fs *flag.FlagSet, args []string) (pos []string, code int, ok bool) {
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, exitOK, false
			}
			return nil, exitUsage, false
		}
		if fs.NArg() == 0 {
			return pos, 0, true
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}
