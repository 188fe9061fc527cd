// Package builtin holds the agents `novaos serve` hosts out of the box.
//
// They are echo, which answers with the caller's text (word by word as
// artifact chunks when streamed), and tck, the system under test of the A2A
// conformance kit (a2aproject/a2a-tck), which reacts to the messageId
// prefixes the kit's scenarios define.
//
//	srv := a2asrv.NewHandler(card, builtin.Echo(), nil)
//	tck := builtin.NewTCK(&builtin.TCKOptions{StreamingTimeout: 5 * time.Second})
package builtin
