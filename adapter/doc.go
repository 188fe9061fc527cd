// Package adapter connects an agent to the platform by pulling its invocations.
//
// An adapter runs beside an agent that the platform cannot call (on a
// laptop, behind NAT, in another cloud). It connects out, receives the
// agent's events over the WebSocket gateway or by polling, checks every
// invocation token itself, stores each event with its token in a durable
// inbox before acknowledging it, starts each run at most once with the
// newest token, reports progress as throttled JSON patches that rebase
// on conflict, binds every request of a run to its token, sends replies
// through an outbox that never sends one twice, and renders the run's
// context for a model with trust marks.
//
// The wire types are package delivery's; package adapter/platformtest
// runs a fake platform for an adapter's own tests.
package adapter
