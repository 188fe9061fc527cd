// Package delivery is the wire contract of pull delivery: events, tokens, frames and runs.
//
// An agent that cannot be reached by URL (on a laptop, behind NAT, in
// another cloud) connects out to the platform and pulls its invocations:
// over the WebSocket gateway (GatewayPath) or by polling
// (ConsumerEventsPath). Each delivery of an event that may start or
// resume a run carries a fresh invocation token, an EdDSA JWT of type
// TokenType whose claims (Claims) name the agent, the run, the thread,
// the triggering object, the billing mode and the tool class the
// platform granted. The agent checks the token itself, stores the event
// durably, acknowledges it (cumulatively, per named consumer), and only
// then starts the run with StartRunPath, sending the newest token in the
// InvocationTokenHeader of every run-scoped request.
//
// The package holds the types both sides share: the platform's delivery
// service (internal/delivery) serves them, package adapter (the agent
// side) speaks them, and the stores keep Store's records. Decoders of
// every type tolerate unknown members and unknown enumeration values, so
// that an older agent keeps working against a newer platform.
//
// A value that holds a token never prints it: Event's String and
// LogValue leave the token out.
package delivery
