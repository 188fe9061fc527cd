// Package builtin provides the platform's own tool servers behind the tool
// gateway.
//
// They are notify, http, hitl, connectors and agents, each a
// toolgw.Provider built from its Options (nil means the defaults), which
// the gateway mounts next to the upstream servers:
//
//	notify, err := builtin.Notify(nil) // novaos.notify.webhook
//	web, err := builtin.HTTP(&builtin.HTTPOptions{
//		AllowedDomains: []string{"api.example.com", "*.example.org"},
//	}) // novaos.http.fetch
//	hitl := builtin.HITL() // novaos.hitl.request_input
//	conns, err := builtin.Connectors(&builtin.ConnectorOptions{
//		ConnectorHostURL: hostURL, ConnectorToken: token,
//	}) // novaos.connector[.licensed|.ext].<id>.<op>
//	agents, err := builtin.Agents(caller, nil) // novaos.agents.call
//
// The agents server calls other agents through an AgentCaller; the
// execution gateway's CallAgent is one, adapted with AgentCallerFunc.
//
// Every tool does its work for real or says why it cannot: a backend that
// is not configured (no allowed domains, no connector host, no agent
// caller) answers a *toolgw.Error with reason tools.ReasonServiceDisabled,
// and hitl.request_input always does, since a run asks a person by
// pausing itself instead. A tool that ran and failed (a webhook answering
// 500, a URL the SSRF guard refuses, arguments it cannot use) answers a
// result with IsError, whose text is {"code": …, "error": …}, so the
// model can correct itself; an *toolgw.Error means the call could not be
// made (the backend is off, unreachable or too slow, or the call is
// refused).
//
// Outbound URLs a caller gives (webhooks, fetched pages) pass the
// platform's SSRF guard, package netguard, twice: the URL's host when the
// call is read, and every address a name resolves to when it is dialled.
// Requests go out without a proxy, cookies or the caller's token.
package builtin
