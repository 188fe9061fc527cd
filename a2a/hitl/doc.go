// Package hitl carries NovaOS's message conventions inside A2A messages:
// human-in-the-loop requests (input, batch input, plan confirmation,
// information, success, error notification, execution progress) and the
// user's responses to them, progress reports, structured errors, and the
// two pauses an agent run can stop on, connector OAuth required and
// write confirmation required.
//
// A2A has no event vocabulary for these, so each travels as one data part
// of an ordinary a2a.Message, beside a text part a generic client can show:
// the part's data is a one-key object whose key names the convention
// (KeyHITL "novaos.dev/hitl", KeyHITLResponse, KeyProgress, KeyError,
// KeyOAuthRequired "novaos.dev/pause/oauth", KeyWriteConfirmation
// "novaos.dev/pause/write-confirmation") and whose value is the payload in
// lowerCamelCase JSON. An agent usually sends such a message as the status
// message of an INPUT_REQUIRED (HITL, pauses), WORKING (progress) or FAILED
// (error) status update.
//
//	msg := hitl.NewMessage("Deploy to production?", hitl.PlanConfirmation("Deploy to production?", plan,
//		[]hitl.Action{{ID: "approve", Label: "Approve"}, {ID: "reject", Label: "Reject"}}))
//	…
//	found := hitl.Extract(task.Status.Message)
//	if found.HITL != nil { … show found.HITL.Actions … }
//	reply := hitl.NewResponseMessage("Approved", hitl.Response{ActionID: "approve", SessionID: found.HITL.SessionID})
//
// Builders (NewMessage, Embed and the HITL constructors) write the
// conventions, Extract and ExtractTask read them back (tolerantly: a
// malformed payload is reported by Validate, not by Extract), and Validate
// checks a message's A2A envelope and every payload it carries. The package
// imports only the standard library and package a2a.
package hitl
