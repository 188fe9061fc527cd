// Package cli is the novaos command line.
//
// It is the only package that reads flags and the environment, prints, or
// decides an exit code.
//
//	novaos serve [--addr 127.0.0.1:8080] [--data ./novaos-data] [--db postgres://…]
//	novaos bench a2a [--c 32] [--d 20s] [--warmup 2s] [--scenario send|stream|baseline] [--json]
//	novaos instances install --name N --hosted echo
//	novaos run N "text" [--json] [--detach]
//	novaos runs list|show|cancel|reply|events
//	novaos adapter run --agent ID --token-file F --dpop-key K -- PROGRAM ARGS…
//	novaos version
//	novaos help
//
// cmd/novaos calls [Main]; tests call it too, with their own writers.
// Exit codes: 0 success, 1 failure, 2 bad usage; 130 when Ctrl-C stops
// following a run (the run goes on).
package cli
