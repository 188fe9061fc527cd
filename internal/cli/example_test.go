package cli_test

import (
	"fmt"
	"os"

	"novaos.dev/novaos/internal/cli"
)

func ExampleMain() {
	code := cli.Main([]string{"help"}, os.Stdout, os.Stderr)
	fmt.Println("exit", code)
	// Output:
	// Usage: novaos <command> [flags]
	//
	// Commands:
	//   serve    run the platform: hosted agents over A2A, memory, gate, registry, tokens
	//   card     get, verify and sign agent cards (card get|verify|sign|keygen)
	//   send     send a message to an agent and print the frames it answers with
	//   bench    measure end-to-end throughput and latency on loopback (bench a2a|memory|gate)
	//   agents   list, search, find and register agents in a server's registry
	//   keys     make agents' recipient keys for sealed secrets (keys generate|public)
	//   memory   write, query, update, forget, hint and assemble memories on a server (memory <subcommand>)
	//   tools    list and call the tools of the MCP tool gateway (tools list|call)
	//   llm      configure the LLM gateway's providers, models and budgets, and read its usage (llm providers|models|budgets|usage)
	//   gate     operate the governance gate: list, show, approve, deny and confirm actions; rules; audit (gate <subcommand>)
	//   instances install, list, show, update and remove agent instances of a tenant (instances <subcommand>)
	//   schedules create, list, pause, resume and delete heartbeat schedules of instances (schedules <subcommand>)
	//   run      run an instance on a text and follow its events to the end: run INSTANCE "text"
	//   runs     list, show, cancel, answer and follow runs (runs list|show|cancel|reply|events)
	//   token    mint, verify and rotate execution tokens (token mint|verify|rotate)
	//   adapter  connect an agent behind NAT to the platform: it pulls its runs (adapter run|token|key)
	//   proxy    verify execution tokens and inject X-NovaOS-* headers in front of an agent in any language
	//   version  print the version
	//   help     show this help
	//
	// Run "novaos <command> -h" for a command's flags.
	// exit 0
}
