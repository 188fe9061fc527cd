// Package archtest holds tests that guard the module's architecture.
//
// Every package documents itself in a short first sentence and cites no seed
// document or issue number, the a2a wire model depends on the standard
// library only, the agent SDK stays free of database drivers and of the
// platform's internal packages, the SDKs import no sibling sideways (memory
// and gate no agent, identity no card signer, an extension no client), the
// durable stores link no agent SDK, and no file of the repository refers to
// the directory beside it (a fresh clone has nothing there).
//
// It has no API; run it with the rest of the tests:
//
//	go test ./internal/archtest/
//
// The package rules read the package graph with `go list -deps -json ./...`
// from the module root, so they see exactly what the build sees (non-test
// files, current build tags); the godoc rule parses those packages' Go
// files and reads every comment in them; the store rule runs `go list
// -deps` on each store. The self-containment rule reads every text file
// under the module root, Go or not, the interop module included.
package archtest
