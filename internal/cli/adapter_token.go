package cli

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"strings"

	"novaos.dev/novaos/adapter"
	"novaos.dev/novaos/delivery"
	"novaos.dev/novaos/gateway"
)

// jktForm is an RFC 7638 SHA-256 thumbprint in base64url.
var jktForm = regexp.MustCompile(`^[A-Za-z0-9_-]{43}$`)

func runAdapterToken(ctx context.Context, args []string, e *env) int {
	g := newGWFlags("adapter token", "--agent ID|NAME (--dpop-key FILE | --dpop-jkt THUMBPRINT) [--name TEXT] [--out FILE]", e)
	agent := g.fs.String("agent", "", "the pull instance (its `id` or name) the token is for")
	keyFile := g.fs.String("dpop-key", "", "bind the token to this DPoP proof key `file` (created owner-only when missing): the one adapter run gets")
	jkt := g.fs.String("dpop-jkt", "", "bind the token to the key with this RFC 7638 `thumbprint` (novaos adapter key prints it where the key is)")
	name := g.fs.String("name", "", "what the token is for, shown in lists (`text`, at most 200 bytes)")
	out := g.fs.String("out", "", "write the token to this `file`, created owner-only (0600) and never overwritten; without it the token goes to stdout")
	describeFlags(g.fs, e, "adapter token --agent ID|NAME (--dpop-key FILE | --dpop-jkt THUMBPRINT) [flags]",
		"Creates an API token for a pull instance's adapter (createToken), as a tenant admin: the server's",
		"admin token with --tenant, or a platform token with instances:write. The token is bound to the",
		"agent's DPoP proof key, so that it is useless without the key. It is shown this once: written to",
		"--out, or to stdout; never to stderr or a log.")
	if _, code, ok := g.parse(args, 0, 0, ""); !ok {
		return code
	}
	switch {
	case *agent == "":
		return usageError(g.fs, "--agent is required: the pull instance's id or name")
	case (*keyFile == "") == (*jkt == ""):
		return usageError(g.fs, "give --dpop-key or --dpop-jkt (exactly one): the key the token is bound to")
	case *jkt != "" && !jktForm.MatchString(*jkt):
		return usageError(g.fs, "--dpop-jkt: want an RFC 7638 SHA-256 thumbprint (43 characters of base64url)")
	case len(*name) > 200:
		return usageError(g.fs, "--name: at most 200 bytes")
	}
	fail := func(err error) int {
		fmt.Fprintf(e.stderr, "novaos adapter token: %v\n", err)
		return exitFail
	}
	if *out != "" {
		// Refused before a token is made that could not be kept.
		if _, err := os.Lstat(*out); err == nil {
			return fail(fmt.Errorf("--out %s: file exists; a token file is never overwritten", *out))
		}
	}
	tok, code, ok := g.credentials()
	if !ok {
		return code
	}
	if *keyFile != "" {
		key, created, err := loadOrCreateKey(*keyFile)
		if err != nil {
			return fail(err)
		}
		*jkt = key.Thumbprint()
		if created {
			fmt.Fprintf(e.stderr, "created the DPoP key %s (thumbprint %s)\n", *keyFile, *jkt)
		}
	}
	gc, err := gateway.NewClient(*g.server, &gateway.ClientOptions{Token: tok, Tenant: *g.tenant})
	if err != nil {
		return fail(err)
	}
	id, err := resolveInstance(ctx, gc, *agent)
	if err != nil {
		return g.fail(err)
	}
	// The delivery API's own client: createToken's idempotency key and
	// problems are its. The admin token acts for --tenant by a header.
	ac, err := adapter.NewClient(*g.server, adapter.Credentials{APIToken: tok},
		&adapter.ClientOptions{HTTPClient: &http.Client{Transport: tenantHeader{tenant: *g.tenant, next: http.DefaultTransport}}})
	if err != nil {
		return fail(err)
	}
	grant, err := ac.CreateToken(ctx, id, delivery.TokenCreate{DPoPJKT: *jkt, Name: *name})
	if err != nil {
		return fail(fmt.Errorf("createToken: %s", strings.TrimPrefix(err.Error(), "adapter: ")))
	}
	if *out != "" {
		if err := writeNewFile(*out, []byte(grant.Token+"\n")); err != nil {
			return fail(fmt.Errorf("the token %s was created but not written (create another): %w", grant.ID, err))
		}
	}
	if *g.json {
		shown := grant
		if *out != "" {
			shown.Token = ""
		}
		printJSON(e.stdout, tokenJSON(shown))
	} else if *out == "" {
		fmt.Fprintln(e.stdout, grant.Token)
	}
	where := "stdout"
	if *out != "" {
		where = *out
	}
	fmt.Fprintf(e.stderr, "created API token %s for agent %s, bound to the DPoP key %s; written to %s\n", grant.ID, grant.AgentID, grant.DPoPJKT, where)
	return exitOK
}

// tokenJSON is a TokenGrant as --json shows it: TokenGrant keeps its
// token out of fmt, not out of encoding/json.
type tokenJSON struct {
	ID      string `json:"id"`
	AgentID string `json:"agent_id"`
	Token   string `json:"token,omitempty"`
	DPoPJKT string `json:"dpop_jkt,omitempty"`
}

// tenantHeader sends X-Tenant-ID: the tenant the admin token acts for.
type tenantHeader struct {
	tenant string
	next   http.RoundTripper
}

func (t tenantHeader) RoundTrip(r *http.Request) (*http.Response, error) {
	if t.tenant == "" {
		return t.next.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	r.Header.Set("X-Tenant-ID", t.tenant)
	return t.next.RoundTrip(r)
}

func runAdapterKey(_ context.Context, args []string, e *env) int {
	fs := newFlags("adapter key", "adapter key --dpop-key FILE", e)
	keyFile := fs.String("dpop-key", "", "the DPoP proof key `file` (ES256, PKCS#8 PEM): created owner-only (0600) when missing, else read")
	describeFlags(fs, e, "adapter key --dpop-key FILE",
		"Makes the agent's DPoP proof key, or reads the one there, and prints its RFC 7638 thumbprint:",
		"what a tenant admin binds the agent's API token to (novaos adapter token --dpop-jkt).")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if *keyFile == "" {
		return usageError(fs, "--dpop-key is required")
	}
	key, created, err := loadOrCreateKey(*keyFile)
	if err != nil {
		fmt.Fprintf(e.stderr, "novaos adapter key: %v\n", err)
		return exitFail
	}
	if created {
		fmt.Fprintf(e.stderr, "created the DPoP key %s\n", *keyFile)
	}
	fmt.Fprintln(e.stdout, key.Thumbprint())
	return exitOK
}
