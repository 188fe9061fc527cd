package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	neturl "net/url"
	"slices"
	"strings"
	"text/tabwriter"

	"novaos.dev/novaos/registry"
)

const agentsSynopsis = `agents list|search <text>|find <capability>…|register --name N --url U [flags]|update <name> [flags]`

// listFlag collects a repeated flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func runAgents(ctx context.Context, args []string, e *env) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "-help" || args[0] == "--help" {
		w, code := e.stderr, exitUsage
		if len(args) > 0 {
			w, code = e.stdout, exitOK
		}
		fmt.Fprintf(w, "Usage: novaos %s\n\n", agentsSynopsis)
		fmt.Fprintln(w, "  list                       every agent in the registry, by name")
		fmt.Fprintln(w, "  search <text>              agents whose name, description, capabilities, tags or domains hold every word")
		fmt.Fprintln(w, "  find <capability>…         agents offering the capabilities (--any, --fuzzy)")
		fmt.Fprintln(w, "  register --name N --url U  add an agent (--description, --capability, --tag, --domain, --status,")
		fmt.Fprintln(w, "                             --recipient-key FILE: its public key for sealed secrets, repeatable)")
		fmt.Fprintln(w, "  update <name>              add (--recipient-key FILE) or remove (--remove-recipient-key KID) recipient")
		fmt.Fprintln(w, "                             keys, change --url, --description, --status")
		fmt.Fprintln(w, "  register and update send the server's admin token from $"+EnvAdminToken+" or --admin-token-file")
		fmt.Fprintln(w, "\nRun \"novaos agents <subcommand> -h\" for its flags.")
		return code
	}
	sub, args := args[0], args[1:]
	fs := newFlags("agents "+sub, agentsSynopsis, e)
	server := serverFlag(fs, e)
	asJSON := fs.Bool("json", false, "print each agent (or match) as one line of JSON")
	var (
		name, url, desc, status *string
		caps, tags, domains     listFlag
		keyFiles, removeKIDs    listFlag
		anyOf, fuzzy            *bool
		tokenFile               *string
		threshold               *float64
	)
	minArgs, maxArgs := 0, 0
	switch sub {
	case "list":
		status = fs.String("status", "", "only agents with this `status` (active, inactive, …)")
		fs.Var(&tags, "tag", "only agents with this `tag`")
	case "search":
		minArgs, maxArgs = 1, -1
		status = fs.String("status", "", "only agents with this `status`")
	case "find":
		minArgs, maxArgs = 1, -1
		anyOf = fs.Bool("any", false, "agents offering any of the capabilities (default: all of them)")
		fuzzy = fs.Bool("fuzzy", false, "match capability names by similarity instead of equal normalized names")
		threshold = fs.Float64("threshold", registry.DefaultThreshold, "least similarity that matches, with --fuzzy (0 to 1]")
		status = fs.String("status", "", "only agents with this `status`")
	case "register":
		name = fs.String("name", "", "the agent's unique `name` (a-z, 0-9, '-', '_', '.')")
		url = fs.String("url", "", "the agent's A2A endpoint `URL` (http or https)")
		desc = fs.String("description", "", "what the agent does")
		status = fs.String("status", "", "its `status` (default active)")
		fs.Var(&caps, "capability", "a `capability` it offers (repeatable)")
		fs.Var(&tags, "tag", "a `tag` (repeatable)")
		fs.Var(&domains, "domain", "a `domain` it serves (repeatable)")
		fs.Var(&keyFiles, "recipient-key", "the agent's recipient key `file` for sealed secrets (see novaos keys generate): a public JWK, or a private one read for its public half only (repeatable)")
		tokenFile = fs.String("admin-token-file", "", "`file` holding the server's admin token, sent as a bearer token (default $"+EnvAdminToken+")")
	case "update":
		minArgs, maxArgs = 1, 1
		url = fs.String("url", "", "a new A2A endpoint `URL`")
		desc = fs.String("description", "", "a new description")
		status = fs.String("status", "", "a new `status`")
		fs.Var(&keyFiles, "recipient-key", "add this recipient key `file` (public JWK, or a private one read for its public half only; repeatable)")
		fs.Var(&removeKIDs, "remove-recipient-key", "remove the recipient key with this `kid` (repeatable)")
		tokenFile = fs.String("admin-token-file", "", "`file` holding the server's admin token, sent as a bearer token (default $"+EnvAdminToken+")")
	default:
		fmt.Fprintf(e.stderr, "novaos agents: unknown subcommand %q\n\n", sub)
		fmt.Fprintf(e.stderr, "Usage: novaos %s\n", agentsSynopsis)
		return exitUsage
	}
	// Flags may follow the arguments: novaos agents search weather --json.
	pos, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	switch {
	case len(pos) < minArgs:
		return usageError(fs, "want %s", map[string]string{"search": "the search text", "find": "at least one capability", "update": "the agent's name"}[sub])
	case maxArgs >= 0 && len(pos) > maxArgs:
		return usageError(fs, "unexpected argument %q", pos[maxArgs])
	}
	// The server applies its own policy to what is registered; the CLI
	// only checks the URL's shape, so local agents can be registered.
	copts := &registry.ClientOptions{Policy: &registry.Policy{AllowLoopback: true, AllowPrivate: true}}
	// Only writes send the admin token (the Client sends it with writes
	// only, too): reads are open, and a token is not handed to every
	// server a listing is asked of.
	sentToken := false
	if tokenFile != nil {
		tok, err := adminToken(*tokenFile, e)
		if err != nil {
			fmt.Fprintf(e.stderr, "novaos agents %s: %v\n", sub, err)
			return exitFail
		}
		if !tok.IsZero() {
			sentToken = true
			copts.AdminToken = tok
			if u, err := neturl.Parse(*server); err == nil && u.Scheme == "http" && !isLoopbackHost(u.Hostname()) {
				fmt.Fprintf(e.stderr, "novaos agents %s: warning: sending the admin token to %s over plain http\n", sub, u.Host)
			}
		}
	}
	c, err := registry.NewClient(*server, copts)
	if err != nil {
		return usageError(fs, "--server: %v", err)
	}
	out := agentPrinter{w: e.stdout, json: *asJSON}
	fail := func(err error) int {
		fmt.Fprintf(e.stderr, "novaos agents %s: %v\n", sub, err)
		if p, ok := registry.AsProblem(err); ok {
			for _, f := range p.Errors {
				fmt.Fprintf(e.stderr, "  %s: %s\n", f.Field, f.Message)
			}
			switch {
			case errors.Is(p, registry.ErrUnauthorized) && sentToken:
				fmt.Fprintln(e.stderr, "  the server refused the admin token sent: check $"+EnvAdminToken+" or --admin-token-file")
			case errors.Is(p, registry.ErrUnauthorized):
				fmt.Fprintln(e.stderr, "  the server needs its admin token: set $"+EnvAdminToken+" or pass --admin-token-file FILE")
			}
		}
		return exitFail
	}
	switch sub {
	case "list", "search":
		q := &registry.ListQuery{Status: *status}
		if len(tags) > 0 {
			q.Tag = tags[len(tags)-1]
		}
		var agents []*registry.Agent
		for a, err := range c.All(ctx, strings.Join(pos, " "), q) {
			if err != nil {
				return fail(err)
			}
			agents = append(agents, a)
		}
		out.agents(agents)
	case "find":
		q := registry.FindQuery{Capabilities: pos, Mode: registry.MatchAll, Fuzzy: *fuzzy, Status: *status}
		if *anyOf {
			q.Mode = registry.MatchAny
		}
		if *fuzzy {
			q.Threshold = *threshold
		}
		res, err := c.Find(ctx, q)
		if err != nil {
			return fail(err)
		}
		out.matches(res)
	case "register":
		if *name == "" || *url == "" {
			return usageError(fs, "--name and --url are required")
		}
		a := &registry.Agent{Name: *name, URL: *url, Description: *desc, Status: *status,
			Capabilities: caps, Tags: tags, Domains: domains}
		for _, f := range keyFiles {
			pub, _, err := readRecipientKey(f)
			if err != nil {
				return fail(fmt.Errorf("--recipient-key %w", err))
			}
			a.RecipientKeys = append(a.RecipientKeys, pub)
		}
		a, err := c.Register(ctx, a)
		if err != nil {
			return fail(err)
		}
		if out.json {
			out.agents([]*registry.Agent{a})
		} else {
			fmt.Fprintf(e.stdout, "registered %s (id %s) at %s%s\n", a.Name, a.ID, a.URL, withKeys(a))
		}
	case "update":
		if len(keyFiles) == 0 && len(removeKIDs) == 0 && *url == "" && *desc == "" && *status == "" {
			return usageError(fs, "nothing to change: give --recipient-key, --remove-recipient-key, --url, --description or --status")
		}
		a, err := updateAgent(ctx, c, pos[0], *url, *desc, *status, keyFiles, removeKIDs)
		if err != nil {
			return fail(err)
		}
		if out.json {
			out.agents([]*registry.Agent{a})
		} else {
			fmt.Fprintf(e.stdout, "updated %s (id %s) at %s%s\n", a.Name, a.ID, a.URL, withKeys(a))
		}
	}
	return exitOK
}

// updateAgent reads the record of name, changes what is given and writes
// it back. Of two concurrent updates of one agent, the last one wins.
func updateAgent(ctx context.Context, c *registry.Client, name, url, desc, status string, keyFiles, removeKIDs []string) (*registry.Agent, error) {
	// Read every key file before asking the server anything.
	var add []json.RawMessage
	var addKIDs []string
	for _, f := range keyFiles {
		pub, to, err := readRecipientKey(f)
		if err != nil {
			return nil, fmt.Errorf("--recipient-key %w", err)
		}
		add, addKIDs = append(add, pub), append(addKIDs, to.KID)
	}
	a, err := c.Get(ctx, name)
	if err != nil {
		return nil, err
	}
	if url != "" {
		a.URL = url
	}
	if desc != "" {
		a.Description = desc
	}
	if status != "" {
		a.Status = status
	}
	for _, kid := range removeKIDs {
		i := slices.Index(a.RecipientKIDs(), kid)
		if i < 0 {
			return nil, fmt.Errorf("--remove-recipient-key: agent %s has no recipient key %q (it has %s)", a.Name, kid, kidList(a))
		}
		a.RecipientKeys = slices.Delete(a.RecipientKeys, i, i+1)
	}
	for i, pub := range add {
		if slices.Contains(a.RecipientKIDs(), addKIDs[i]) {
			continue // registered already: adding it again changes nothing
		}
		a.RecipientKeys = append(a.RecipientKeys, pub)
	}
	return c.Update(ctx, a.ID, a)
}

// withKeys describes an agent's recipient keys for a one-line report.
func withKeys(a *registry.Agent) string {
	if len(a.RecipientKeys) == 0 {
		return ""
	}
	return ", recipient keys " + kidList(a)
}

// kidList is the kids of an agent's recipient keys, "-" for none: what
// the human listing shows of them.
func kidList(a *registry.Agent) string {
	if len(a.RecipientKeys) == 0 {
		return "-"
	}
	return strings.Join(a.RecipientKIDs(), ", ")
}

type agentPrinter struct {
	w    io.Writer
	json bool
}

func (p agentPrinter) line(v any) {
	b, _ := json.Marshal(v)
	fmt.Fprintf(p.w, "%s\n", b)
}

func (p agentPrinter) agents(agents []*registry.Agent) {
	if p.json {
		for _, a := range agents {
			p.line(a)
		}
		return
	}
	if len(agents) == 0 {
		fmt.Fprintln(p.w, "no agents")
		return
	}
	tw := tabwriter.NewWriter(p.w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSTATUS\tURL\tCAPABILITIES\tRECIPIENT KEYS\tDESCRIPTION")
	for _, a := range agents {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", a.Name, a.Status, a.URL, strings.Join(a.AllCapabilities(), ", "), kidList(a), oneLine(a.Description))
	}
	tw.Flush()
}

func (p agentPrinter) matches(res []registry.MatchResult) {
	if p.json {
		for _, m := range res {
			p.line(m)
		}
		return
	}
	if len(res) == 0 {
		fmt.Fprintln(p.w, "no agents")
		return
	}
	tw := tabwriter.NewWriter(p.w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSCORE\tURL\tMATCHED\tMISSING")
	for _, m := range res {
		fmt.Fprintf(tw, "%s\t%.2f\t%s\t%s\t%s\n", m.Agent.Name, m.Score, m.Agent.URL,
			strings.Join(m.MatchedCapabilities, ", "), strings.Join(m.MissingCapabilities, ", "))
	}
	tw.Flush()
}

// isLoopbackHost reports whether host (a URL's Hostname) names this
// machine.
func isLoopbackHost(host string) bool {
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
