package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Exit codes.
const (
	exitOK    = 0
	exitFail  = 1
	exitUsage = 2
)

// EnvDatabaseURL is read when serve gets no --db flag.
const EnvDatabaseURL = "NOVAOS_DATABASE_URL"

// Main runs the novaos command with args (without the program name) and
// returns the process exit code. SIGINT and SIGTERM cancel what runs (serve
// then shuts down gracefully); a second signal kills the process.
func Main(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// Restore default signal handling once the first signal arrived, so
	// a second one ends a shutdown that hangs.
	context.AfterFunc(ctx, stop)
	return run(ctx, args, &env{stdout: stdout, stderr: stderr, getenv: os.Getenv})
}

// env is what a command may touch of the outside world.
type env struct {
	stdout, stderr io.Writer
	getenv         func(string) string
}

// lookup reads a variable as package envconfig's functions take it (a
// variable set to "" is unset there too), so the CLI reads the SDK's
// settings through that one package.
func (e *env) lookup(name string) (string, bool) {
	v := e.getenv(name)
	return v, v != ""
}

type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, e *env) int
}

func commands() []command {
	return []command{
		{"serve", "run the platform: hosted agents over A2A, memory, gate, registry, tokens", runServe},
		{"card", "get, verify and sign agent cards (card get|verify|sign|keygen)", runCard},
		{"send", "send a message to an agent and print the frames it answers with", runSend},
		{"bench", "measure end-to-end throughput and latency on loopback (bench a2a|memory|gate)", runBench},
		{"agents", "list, search, find and register agents in a server's registry", runAgents},
		{"keys", "make agents' recipient keys for sealed secrets (keys generate|public)", runKeys},
		{"memory", "write, query, update, forget, hint and assemble memories on a server (memory <subcommand>)", runMemory},
		{"tools", "list and call the tools of the MCP tool gateway (tools list|call)", runTools},
		{"llm", "configure the LLM gateway's providers, models and budgets, and read its usage (llm providers|models|budgets|usage)", runLLM},
		{"gate", "operate the governance gate: list, show, approve, deny and confirm actions; rules; audit (gate <subcommand>)", runGate},
		{"instances", "install, list, show, update and remove agent instances of a tenant (instances <subcommand>)", runInstances},
		{"schedules", "create, list, pause, resume and delete heartbeat schedules of instances (schedules <subcommand>)", runSchedules},
		{"run", "run an instance on a text and follow its events to the end: run INSTANCE \"text\"", runRun},
		{"runs", "list, show, cancel, answer and follow runs (runs list|show|cancel|reply|events)", runRuns},
		{"token", "mint, verify and rotate execution tokens (token mint|verify|rotate)", runToken},
		{"adapter", "connect an agent behind NAT to the platform: it pulls its runs (adapter run|token|key)", runAdapter},
		{"proxy", "verify execution tokens and inject X-NovaOS-* headers in front of an agent in any language", runProxy},
		{"version", "print the version", runVersion},
		{"help", "show this help", runHelp},
	}
}

func run(ctx context.Context, args []string, e *env) int {
	if len(args) == 0 {
		usage(e.stderr)
		return exitUsage
	}
	name := args[0]
	switch name {
	case "-h", "-help", "--help":
		name = "help"
	}
	for _, c := range commands() {
		if c.name == name {
			return c.run(ctx, args[1:], e)
		}
	}
	fmt.Fprintf(e.stderr, "novaos: unknown command %q\n\n", args[0])
	usage(e.stderr)
	return exitUsage
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "Usage: novaos <command> [flags]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Commands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, `Run "novaos <command> -h" for a command's flags.`)
}

func runHelp(_ context.Context, args []string, e *env) int {
	if len(args) > 0 {
		// "help serve" is "serve -h".
		for _, c := range commands() {
			if c.name == args[0] && c.name != "help" {
				return c.run(context.Background(), []string{"-h"}, e)
			}
		}
		fmt.Fprintf(e.stderr, "novaos: unknown command %q\n\n", args[0])
		usage(e.stderr)
		return exitUsage
	}
	usage(e.stdout)
	return exitOK
}

// newFlags returns a flag set that reports to stderr and does not exit.
func newFlags(name, synopsis string, e *env) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fmt.Fprintf(e.stderr, "Usage: novaos %s\n\nFlags:\n", synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parse parses args; ok is false when the command should end with code.
func parse(fs *flag.FlagSet, args []string) (code int, ok bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK, false
		}
		return exitUsage, false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(fs.Output(), "novaos %s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		fs.Usage()
		return exitUsage, false
	}
	return 0, true
}

// usageError reports a bad flag value the flag package cannot check, with
// the command's usage, and returns exitUsage.
func usageError(fs *flag.FlagSet, format string, args ...any) int {
	fmt.Fprintf(fs.Output(), "novaos %s: %s\n", fs.Name(), fmt.Sprintf(format, args...))
	fs.Usage()
	return exitUsage
}

// runSubcommand runs the subcommand of group named by args[0], or prints
// the group's usage (to stdout for -h, else to stderr with exitUsage).
func runSubcommand(ctx context.Context, group string, cmds []command, args []string, e *env) int {
	if len(args) > 0 {
		for _, c := range cmds {
			if c.name == args[0] {
				return c.run(ctx, args[1:], e)
			}
		}
	}
	w, code := e.stderr, exitUsage
	if len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
		w, code = e.stdout, exitOK
	} else if len(args) > 0 {
		fmt.Fprintf(w, "novaos %s: unknown subcommand %q\n\n", group, args[0])
	}
	fmt.Fprintf(w, "Usage: novaos %s <subcommand> [flags]\n\n", group)
	fmt.Fprintln(w, "Subcommands:")
	for _, c := range cmds {
		fmt.Fprintf(w, "  %-9s %s\n", c.name, c.summary)
	}
	return code
}
