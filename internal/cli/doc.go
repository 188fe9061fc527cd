// Package cli is the novaos command line.
//
// It is the only package that reads flags and the environment, prints, or
// decides an exit code.
//
//	novaos serve [--addr 127.0.0.1:8080] [--data ./novaos-data] [--db postgres://…]
//	novaos bench a2a [--c 32] [--d 20s] [--warmup 2s] [--scenario send|stream|baseline] [--json]
//	novaos version
//	novaos help
//
// cmd/novaos calls [Main]; tests call it too, with their own writers.
// Exit codes: 0 success, 1 failure, 2 bad usage.
package cli
