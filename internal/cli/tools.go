package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	neturl "net/url"
	"strings"

	"novaos.dev/novaos/envconfig"
	"novaos.dev/novaos/secret"
	"novaos.dev/novaos/tools"
)

// maxToolArgsBytes bounds the arguments tools call builds: the gateway
// takes a few MiB per request.
const maxToolArgsBytes = 4 << 20

var toolsCommands = []command{
	{"list", "the tools the token may call: tools list [--query TEXT]", runToolsList},
	{"call", "call a tool and print its result: tools call NAME [--args JSON | key=value | key:=JSON …]", runToolsCall},
}

func runTools(ctx context.Context, args []string, e *env) int {
	return runSubcommand(ctx, "tools", toolsCommands, args, e)
}

// toolsCmdFlags are the flags every tools subcommand has.
type toolsCmdFlags struct {
	fs         *flag.FlagSet
	server     *string
	token      *string
	tokenFile  *string
	tenant     *string
	initialize *bool
	e          *env
}

func newToolsCmdFlags(sub, synopsis string, e *env) *toolsCmdFlags {
	fs := newFlags("tools "+sub, "tools "+sub+" "+synopsis+" [--server URL] [--token T | --token-file FILE] [--tenant T]", e)
	f := &toolsCmdFlags{fs: fs, e: e, server: new(string)}
	fs.StringVar(f.server, "server", defaultServer(e), "NovaOS server `URL`, or the tool gateway's endpoint ($"+EnvServer+" sets the default)")
	fs.StringVar(f.server, "url", defaultServer(e), "the same as --server")
	f.token = fs.String("token", "", "execution or platform `token` with mcp:tools scopes (default $"+EnvToken+"; prefer the variable or --token-file: a flag shows in the process list)")
	f.tokenFile = fs.String("token-file", "", "`file` holding the token")
	f.tenant = fs.String("tenant", "", "tenant `id` to send as "+tools.TenantHeader+"; the gateway refuses one that is not the token's")
	f.initialize = fs.Bool("session", false, "open an MCP session (initialize) before the call")
	return f
}

// client returns a gateway client, or the exit code of the usage or
// configuration error it reported.
func (f *toolsCmdFlags) client(ctx context.Context) (*tools.Client, int, bool) {
	e := f.e
	u, err := neturl.Parse(*f.server)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		// Not the URL itself: it may carry credentials.
		return nil, usageError(f.fs, "--server: want an absolute http(s) URL without user information"), false
	}
	if err := envconfig.CheckHost(*f.server, envconfig.AllowedHosts(e.lookup)); err != nil {
		fmt.Fprintf(e.stderr, "novaos %s: --server: %v\n", f.fs.Name(), err)
		return nil, exitFail, false
	}
	var tok secret.Value
	switch {
	case *f.token != "" && *f.tokenFile != "":
		return nil, usageError(f.fs, "give --token or --token-file, not both"), false
	case *f.tokenFile != "":
		if tok, err = platformToken(*f.tokenFile); err != nil {
			fmt.Fprintf(e.stderr, "novaos %s: %v\n", f.fs.Name(), err)
			return nil, exitFail, false
		}
	case *f.token != "":
		tok = secret.New(bearerless(*f.token))
	default:
		tok = secret.New(bearerless(e.getenv(EnvToken)))
	}
	if tok.IsZero() {
		return nil, usageError(f.fs, "no token: set $%s, --token-file or --token (novaos token mint makes one)", EnvToken), false
	}
	if u.Scheme == "http" && !isLoopbackHost(u.Hostname()) {
		fmt.Fprintf(e.stderr, "novaos %s: warning: sending a token to %s over plain http\n", f.fs.Name(), u.Host)
	}
	c, err := tools.NewClient(*f.server, tok, &tools.ClientOptions{TenantID: *f.tenant, ClientName: "novaos-cli", ClientVersion: versionString()})
	if err != nil {
		fmt.Fprintf(e.stderr, "novaos %s: %v\n", f.fs.Name(), err)
		return nil, exitFail, false
	}
	if *f.initialize {
		if err := c.Initialize(ctx); err != nil {
			return nil, f.fail(err), false
		}
	}
	return c, 0, true
}

// fail reports err as one line, with a hint for the usual causes, and
// returns exitFail.
func (f *toolsCmdFlags) fail(err error) int {
	fmt.Fprintf(f.e.stderr, "novaos %s: %s\n", f.fs.Name(), toolsError(err))
	return exitFail
}

// toolsError renders a gateway error for a person.
func toolsError(err error) string {
	var held *tools.WriteConfirmationRequired
	if errors.As(err, &held) {
		s := strings.TrimPrefix(held.Error(), "tools: ")
		if u := held.ApprovalURL(); u != "" {
			s += "; a person decides at " + u
		}
		return s + ". Nothing ran; once it is approved, call again with the same arguments and --call-id " + held.Data.CallID
	}
	s := strings.TrimPrefix(err.Error(), "tools: ")
	if errors.Is(err, context.DeadlineExceeded) {
		return s + " (the call's timeout is $" + envconfig.ToolTimeoutEnv + " seconds, default 128)"
	}
	var e *tools.Error
	if errors.As(err, &e) {
		switch {
		case e.Status == http.StatusUnauthorized:
			s += " (check the token: --token-file, --token or $" + EnvToken + ")"
		case e.Data.Code == tools.ReasonInsufficientScope && e.Data.Scope != "":
			s += " (the token lacks the scope " + e.Data.Scope + ")"
		case e.Status == http.StatusNotFound:
			s += " (is the tool gateway served at this URL?)"
		}
	}
	return s
}

func runToolsList(ctx context.Context, args []string, e *env) int {
	f := newToolsCmdFlags("list", "[--query TEXT]", e)
	query := f.fs.String("query", "", "only tools whose name or description contains `text` (case-insensitive)")
	if code, ok := parse(f.fs, args); !ok {
		return code
	}
	c, code, ok := f.client(ctx)
	if !ok {
		return code
	}
	list, err := c.ListTools(ctx, *query)
	if err != nil {
		return f.fail(err)
	}
	if list == nil {
		list = []tools.Tool{}
	}
	printJSON(e.stdout, list)
	return exitOK
}

func runToolsCall(ctx context.Context, args []string, e *env) int {
	f := newToolsCmdFlags("call", "NAME [--args JSON | key=value | key:=JSON …]", e)
	argsJSON := f.fs.String("args", "", "the arguments as one JSON `object`")
	callID := f.fs.String("call-id", "", "the call's `id`: to make a held call again once it is approved, give the id the hold named")
	describeFlags(f.fs, e, "tools call NAME [--args JSON | key=value | key:=JSON …] [flags]",
		"Calls the tool NAME through the tool gateway and prints its result as JSON (MCP's CallToolResult).",
		"Arguments are one JSON object (--args), or key=value pairs (a string value) and key:=JSON pairs",
		"(a JSON value: numbers, booleans, objects). Exit 0 when the tool succeeded; 1 when it failed (the",
		"result is printed), the gateway refused the call, or held it for a person's approval.",
		"The call times out after $"+envconfig.ToolTimeoutEnv+" seconds (default 128); with $"+envconfig.AllowedHostsEnv+" set,",
		"--server must name one of its hosts or a subdomain of one.")
	pos, code, ok := parseArgs(f.fs, args)
	if !ok {
		return code
	}
	if len(pos) == 0 {
		return usageError(f.fs, "want the tool's name: novaos tools call NAME")
	}
	name := pos[0]
	callArgs, err := toolArgs(*argsJSON, pos[1:])
	if err != nil {
		return usageError(f.fs, "%v", err)
	}
	timeout, err := envconfig.ToolTimeout(e.lookup)
	if err != nil {
		fmt.Fprintf(e.stderr, "novaos tools call: %v\n", err)
		return exitFail
	}
	c, code, ok := f.client(ctx)
	if !ok {
		return code
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if *callID != "" {
		ctx = tools.WithCallID(ctx, *callID)
	}
	res, err := c.CallTool(ctx, name, callArgs)
	if err != nil {
		return f.fail(err)
	}
	printJSON(e.stdout, res)
	if res.IsError {
		fmt.Fprintf(e.stderr, "novaos tools call: the tool %s failed: %s\n", name, clipLine(tools.NewResponse(res).Error, 500))
		return exitFail
	}
	return exitOK
}

// toolArgs builds a call's arguments from --args or key=value and
// key:=JSON pairs.
func toolArgs(raw string, pairs []string) (json.RawMessage, error) {
	if raw != "" {
		if len(pairs) > 0 {
			return nil, errors.New("give --args or key=value pairs, not both")
		}
		if len(raw) > maxToolArgsBytes {
			return nil, fmt.Errorf("--args: over %d bytes", maxToolArgsBytes)
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal([]byte(raw), &obj); err != nil || obj == nil {
			return nil, errors.New("--args: want a JSON object")
		}
		return json.RawMessage(raw), nil
	}
	if len(pairs) == 0 {
		return nil, nil
	}
	obj := make(map[string]json.RawMessage, len(pairs))
	size := 0
	for _, p := range pairs {
		key, value, ok := strings.Cut(p, "=")
		if !ok || key == "" || key == ":" {
			return nil, fmt.Errorf("argument %q: want key=value or key:=JSON", clipLine(p, 60))
		}
		var v json.RawMessage
		if k, isJSON := strings.CutSuffix(key, ":"); isJSON {
			if !json.Valid([]byte(value)) {
				return nil, fmt.Errorf("argument %s: %q is not JSON", k, clipLine(value, 60))
			}
			key, v = k, json.RawMessage(value)
		} else {
			v, _ = json.Marshal(value) // a string always encodes
		}
		if _, dup := obj[key]; dup {
			return nil, fmt.Errorf("argument %s given twice", key)
		}
		if size += len(key) + len(v); size > maxToolArgsBytes {
			return nil, fmt.Errorf("arguments over %d bytes", maxToolArgsBytes)
		}
		obj[key] = v
	}
	return json.Marshal(obj)
}
