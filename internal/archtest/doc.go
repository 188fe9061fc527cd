// Package archtest holds tests that guard the module's architecture: every
// package documents itself, the a2a wire model depends on the standard
// library only, and the agent SDK stays free of database drivers and of the
// platform's internal packages.
//
// It has no API; run it with the rest of the tests:
//
//	go test ./internal/archtest/
//
// The tests read the package graph with `go list -deps -json ./...` from the
// module root, so they see exactly what the build sees (non-test files,
// current build tags).
package archtest
