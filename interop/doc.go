// Package interop holds the cross-implementation tests of NovaOS's A2A
// server and wire model against the reference SDKs: a2a-go v2.3.1 (Go) and
// @a2a-js/sdk 1.3.0 (Node). It is a separate module so the main module never
// depends on the peers; it has no API of its own, only tests.
//
// Run the suite with the script next to this file, which installs the Node
// peer and runs the Go tests with the race detector:
//
//	interop/run
//
// or, once interop/js/node_modules exists:
//
//	cd interop && GOFLAGS=-mod=mod go test -race ./...
//
// README.md holds the interop matrix and the peer deviations the tests
// record.
package interop
