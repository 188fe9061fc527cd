package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log/slog"
	neturl "net/url"
	"os"
	"path/filepath"
	"regexp"
	"runtime"

	"novaos.dev/novaos/adapter"
	"novaos.dev/novaos/adapter/bridge"
	"novaos.dev/novaos/delivery"
	"novaos.dev/novaos/dpop"
	"novaos.dev/novaos/secret"
)

// EnvAgentToken holds the agent's API token when adapter run gets no
// --token-file.
const EnvAgentToken = "NOVAOS_AGENT_TOKEN"

var adapterCommands = []command{
	{"run", "work a pull agent's runs with a program over stdio JSON lines or a local HTTP agent: adapter run --agent ID … (--http URL | -- PROGRAM)", runAdapterRun},
	{"token", "create an agent's API token bound to its DPoP key, as a tenant admin: adapter token --agent ID|NAME --dpop-key K [--out FILE]", runAdapterToken},
	{"key", "make or read an agent's DPoP key and print its thumbprint: adapter key --dpop-key K", runAdapterKey},
}

func runAdapter(ctx context.Context, args []string, e *env) int {
	return runSubcommand(ctx, "adapter", adapterCommands, args, e)
}

// agentIDForm is what an agent id (a pull instance's id) may hold: it
// names the default state directory, so nothing that walks a path.
var agentIDForm = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// consumerForm is adapter.Config's rule for consumer names, checked here
// to report it as a usage error.
var consumerForm = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)

// adapterRunFlags are adapter run's flags.
type adapterRunFlags struct {
	fs                               *flag.FlagSet
	platform, agent, tokenFile       *string
	dpopKey, consumer, stateDir      *string
	poll                             *bool
	httpURL, billing, toolClass, lvl *string
}

func newAdapterRunFlags(e *env) *adapterRunFlags {
	fs := newFlags("adapter run", "adapter run --agent ID [flags] (--http URL | [--] PROGRAM [ARGS…])", e)
	f := &adapterRunFlags{fs: fs}
	f.platform = fs.String("platform", defaultServer(e), "the platform's base `URL` (https, or http on this machine; $"+EnvServer+" sets the default)")
	f.agent = fs.String("agent", "", "the pull instance's `id`: the agent whose runs this adapter works")
	f.tokenFile = fs.String("token-file", "", "`file` holding the agent's API token, owner-only (default $"+EnvAgentToken+")")
	f.dpopKey = fs.String("dpop-key", "", "the agent's DPoP proof key, an ES256 PEM `file`: created owner-only when missing; its thumbprint is logged for createToken's dpop_jkt (without one the token goes as a Bearer token)")
	f.consumer = fs.String("consumer", "default", "the consumer `name` (the agent's cursor of events): a second adapter with the same name takes over from the first")
	f.stateDir = fs.String("state-dir", "", "`directory` of the durable inbox and outbox (default: novaos/adapter/<agent>/<consumer> under the user's state directory, $XDG_STATE_HOME or ~/.local/state)")
	f.poll = fs.Bool("poll", false, "receive events by REST long polling instead of the WebSocket gateway")
	f.httpURL = fs.String("http", "", "the agent is a local HTTP endpoint: each run is POSTed to this `URL` (http on this machine, or https); no PROGRAM then")
	f.billing = fs.String("billing-mode", string(delivery.BillingPlatform), "what the agent's model calls use: `platform` (the platform's models) or agent (its own); a token that grants another is refused")
	f.toolClass = fs.String("tool-class", string(delivery.ToolChat), "the most the agent's tools reach: `chat`, scoped or host; a token that grants less is refused")
	f.lvl = fs.String("log-level", "info", "log `level`: debug, info, warn or error")
	describeFlags(fs, e, "adapter run --agent ID [flags] (--http URL | [--] PROGRAM [ARGS…])",
		"Connects the agent out to the platform as a pull consumer and works its runs: each run goes to",
		"PROGRAM as one JSON line on its standard input, and the program answers with JSON lines on its",
		"standard output (docs/adapter.md has the protocol); or, with --http, each run is POSTed to a local",
		"URL. Runs are stored in a durable inbox before they are acknowledged, started at most once, and",
		"replies are sent once. SIGINT or SIGTERM stops it; a close for good by the platform (the consumer",
		"taken over, the token revoked, …) exits 1 with the reason. Logs are JSON lines on stderr.")
	return f
}

func runAdapterRun(ctx context.Context, args []string, e *env) int {
	f := newAdapterRunFlags(e)
	fs := f.fs
	// Flags end at the first argument that is not one (or at "--"):
	// the rest is the program and its own arguments.
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	argv := fs.Args()
	var lvl slog.Level
	switch {
	case *f.agent == "":
		return usageError(fs, "--agent is required: the pull instance's id (novaos instances install --pull prints it)")
	case !agentIDForm.MatchString(*f.agent):
		return usageError(fs, "--agent: want an instance id (letters, digits, '.', '_', '-')")
	case !consumerForm.MatchString(*f.consumer):
		return usageError(fs, "--consumer: 1 to 64 of a-z, 0-9, '.', '_' and '-', starting with a letter or digit")
	case *f.httpURL != "" && len(argv) > 0:
		return usageError(fs, "give --http or a program, not both")
	case *f.httpURL == "" && len(argv) == 0:
		return usageError(fs, "give the agent: --http URL, or a program to run after the flags (-- PROGRAM ARGS…)")
	case !validBilling(*f.billing):
		return usageError(fs, "--billing-mode: want platform or agent")
	case !validToolClass(*f.toolClass):
		return usageError(fs, "--tool-class: want chat, scoped or host")
	case lvl.UnmarshalText([]byte(*f.lvl)) != nil:
		return usageError(fs, "--log-level: want debug, info, warn or error")
	}
	if msg := checkPlatformURL(*f.platform); msg != "" {
		return usageError(fs, "--platform: %s", msg)
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(e.stderr, "novaos adapter run: "+format+"\n", a...)
		return exitFail
	}
	tok, err := agentToken(*f.tokenFile, e)
	if err != nil {
		if errors.Is(err, errNoAgentToken) {
			return usageError(fs, "%v", err)
		}
		return fail("%v", err)
	}
	log := slog.New(slog.NewJSONHandler(e.stderr, &slog.HandlerOptions{Level: lvl}))
	creds := adapter.Credentials{APIToken: tok}
	if *f.dpopKey != "" {
		key, created, err := loadOrCreateKey(*f.dpopKey)
		if err != nil {
			return fail("%v", err)
		}
		creds.DPoP = key
		log.Info("adapter: proof key", "path", *f.dpopKey, "created", created, "thumbprint", key.Thumbprint())
	} else {
		log.Warn("adapter: no --dpop-key: the API token goes as a Bearer token, usable by whoever copies it")
	}
	dir := *f.stateDir
	if dir == "" {
		base, err := userStateDir(e)
		if err != nil {
			return usageError(fs, "--state-dir: %v", err)
		}
		dir = filepath.Join(base, "novaos", "adapter", *f.agent, *f.consumer)
	}

	var h adapter.Handler
	runtimeName := "process"
	var proc *bridge.Process
	if *f.httpURL != "" {
		hb, err := bridge.NewHTTP(*f.httpURL, nil)
		if err != nil {
			return usageError(fs, "--http: %v", err)
		}
		h, runtimeName = hb, "http"
	} else {
		if proc, err = bridge.NewProcess(argv, &bridge.ProcessOptions{Stderr: e.stderr, Logger: log}); err != nil {
			return usageError(fs, "%v", err)
		}
		h = proc
	}
	cfg := adapter.Config{BaseURL: *f.platform, AgentID: *f.agent, Consumer: *f.consumer, Credentials: creds,
		StateDir: dir, Polling: *f.poll, Adapter: delivery.NameVersion{Name: "novaos-adapter-run"},
		Runtime: delivery.NameVersion{Name: runtimeName}}
	a, err := adapter.New(cfg, &reported{Handler: h, mode: delivery.BillingMode(*f.billing),
		class: delivery.ToolClass(*f.toolClass)}, &adapter.Options{Logger: log})
	if err != nil {
		return fail("%v", err)
	}
	log.Info("adapter: running", "platform", *f.platform, "state_dir", dir, "polling", *f.poll, "runtime", runtimeName)
	reason, runErr := a.Run(ctx)
	if proc != nil {
		if err := proc.Close(); err != nil {
			log.Warn("adapter: stopping the agent program failed", "err", err)
		}
	}
	if err := a.Close(); err != nil {
		log.Warn("adapter: closing the stores failed", "err", err)
	}
	switch {
	case errors.Is(runErr, adapter.ErrStopped):
		return fail("the platform closed the connection for good: %d %s", reason.Code, reason.Reason)
	case runErr != nil && ctx.Err() == nil:
		return fail("%v", runErr)
	}
	log.Info("adapter: stopped")
	return exitOK
}

// reported is the bridge's handler telling the adapter what the agent
// really uses, as the flags say.
type reported struct {
	adapter.Handler
	mode  delivery.BillingMode
	class delivery.ToolClass
}

func (r *reported) Actual(context.Context, *adapter.Invocation) (delivery.BillingMode, delivery.ToolClass) {
	return r.mode, r.class
}

var _ adapter.BillingReporter = (*reported)(nil)

func validBilling(s string) bool {
	return s == string(delivery.BillingPlatform) || s == string(delivery.BillingAgent)
}

func validToolClass(s string) bool {
	switch delivery.ToolClass(s) {
	case delivery.ToolChat, delivery.ToolScoped, delivery.ToolHost:
		return true
	}
	return false
}

// checkPlatformURL says what is wrong with a platform URL ("" when
// nothing), without repeating it: it may carry credentials.
func checkPlatformURL(s string) string {
	u, err := neturl.Parse(s)
	switch {
	case err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") || u.User != nil:
		return "want an absolute http(s) URL without user information"
	case u.Scheme == "http" && !isLoopbackHost(u.Hostname()):
		return "clear-text http is for a platform on this machine only; use https"
	}
	return ""
}

var errNoAgentToken = errors.New("the agent's API token: give --token-file or set $" + EnvAgentToken + " (novaos adapter token creates one)")

// agentToken reads the agent's API token from file (which only its owner
// may read), or from $NOVAOS_AGENT_TOKEN without one.
func agentToken(file string, e *env) (secret.Value, error) {
	if file != "" {
		return adapter.SecretFromFile(file)
	}
	if v := bearerless(e.getenv(EnvAgentToken)); v != "" {
		return secret.New(v), nil
	}
	return secret.Value{}, errNoAgentToken
}

// loadOrCreateKey is adapter.LoadOrCreateDPoPKey, also telling whether
// the key was made now.
func loadOrCreateKey(path string) (*dpop.Key, bool, error) {
	_, err := os.Stat(path)
	created := errors.Is(err, fs.ErrNotExist)
	k, err := adapter.LoadOrCreateDPoPKey(path)
	return k, created && err == nil, err
}

// userStateDir is where a user's programs keep state that outlives a
// run: $XDG_STATE_HOME, else ~/.local/state (%LocalAppData% on Windows,
// ~/Library/Application Support on macOS).
func userStateDir(e *env) (string, error) {
	if d := e.getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return d, nil
	}
	switch runtime.GOOS {
	case "windows":
		if d := e.getenv("LocalAppData"); d != "" {
			return d, nil
		}
		return "", errors.New("%LocalAppData% is not set; give --state-dir")
	case "darwin", "ios":
		if h := e.getenv("HOME"); h != "" {
			return filepath.Join(h, "Library", "Application Support"), nil
		}
	default:
		if h := e.getenv("HOME"); h != "" {
			return filepath.Join(h, ".local", "state"), nil
		}
	}
	return "", errors.New("$HOME is not set; give --state-dir")
}
