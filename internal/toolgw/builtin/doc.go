// Package builtin provides the platform's own tool servers behind the tool
// gateway.
//
// They are notify, http, hitl, connectors and agents, each a
// toolgw.Provider.
//
// Each constructor takes an Options struct (nil means the defaults) and
// returns a Provider the gateway mounts next to the upstream servers:
//
//	notify, err := builtin.Notify(nil)                                    // novaos.notify.webhook
//	web, err := builtin.HTTP(&builtin.HTTPOptions{AllowedDomains: []string{"*.example.com"}}) // novaos.http.fetch
//	hitl := builtin.HITL()                                                 // novaos.hitl.request_input
//	conns, err := builtin.Connectors(&builtin.ConnectorOptions{ConnectorHostURL: hostURL})
//	agents, err := builtin.Agents(caller, nil)                            // novaos.agents.call
//
// Every tool does its own work for real or says why it cannot: a backend
// that is not configured (no allowed domains, no connector host, no agent
// caller) answers a *toolgw.Error with reason tools.ReasonServiceDisabled,
// and hitl.request_input always does, since a run pauses for a person
// through its own HITL request instead. A tool that ran and failed (a
// webhook answering 500, a URL the SSRF guard refuses) answers a result
// with IsError, whose text is {"code": …, "error": …}, so the model can
// correct itself; an *toolgw.Error means the call could not be made.
//
// Outbound URLs given by a caller (webhooks, fetched pages) pass the
// platform's SSRF guard, package netguard, twice: the URL's host when the
// call is read, and every address a name resolves to when it is dialled.
// Requests go out without a proxy, cookies or the caller's token.
package builtin
