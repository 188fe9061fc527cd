package interop

import (
	"testing"

	"novaos.dev/novaos/a2a"
)

// TestJSClient03OurServer runs the @a2a-js/sdk 0.3.14 client against our
// server: the card it reads without A2A-Version carries 0.3's members,
// and the JSON-RPC URL answers 0.3's methods in 0.3's shapes.
func TestJSClient03OurServer(t *testing.T) {
	js03Peer(t)
	srv := startOurServer(t)
	rep := runNodeClient(t, "client03.mjs", srv.URL)
	// Our server answers as v1 does: -32004 for a message to a completed
	// task and for a resubscribe to one.
	checkClient03Report(t, rep, client03Expect{
		sendToTerminal:      a2a.CodeUnsupportedOperation,
		resubscribeTerminal: a2a.CodeUnsupportedOperation,
	})
}
