//go:build v03server

package interop

import (
	"testing"

	"novaos.dev/novaos/a2a"
)

// TestJSClient03OurServer runs the @a2a-js/sdk 0.3.14 client against our
// server. It needs the server to answer 0.3 calls on its JSON-RPC URL
// (a2a/a2av03 wired into a2asrv) and to serve a card a 0.3 client reads
// (a hybrid or 0.3 card); until then it fails, so it is kept out of the
// default run by the v03server build tag:
//
//	interop/run -tags v03server -run TestJSClient03OurServer -v
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
