// Command novaos is the NovaOS server and tools; see internal/cli.
package main

import (
	"os"

	"novaos.dev/novaos/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr))
}
