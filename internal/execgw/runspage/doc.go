// Package runspage is the execution gateway's runs page at /ui/runs.
//
// It is served beside the gate's operator page and rendered on the server: a list of the runs the signed-in caller may see
// (newest first, a page at a time, filtered by status; the operator also
// by tenant) with status, instance, start and reason, and a run's page
// with its fields, input and output, its artifacts (text parts as text,
// data as JSON, files by name, the skill's metadata as a table; control
// data for the platform never), its events so far, a cancel button while
// it has not ended, and, while it waits for a person, the reply box the
// pause asks for: a HITL request's question with its actions as buttons
// and an input, a write confirmation's tool and call id with approve and
// reject, an OAuth pause's authorization link. A refused cancel or reply
// (the run moved on: 409) comes back as a message, never as a 500.
//
// A run's new events appear as they are committed: the page's one
// script, served from the embedded static directory under a
// Content-Security-Policy of script-src 'self' (no inline script), opens
// an EventSource on {run}/events and appends rows; the stream's frames
// are the API's (id: the sequence, event: message, data {type, payload,
// run_id, sequence, timestamp}) and a reconnection resumes after the
// Last-Event-ID. When the run pauses or ends the script reloads the page
// so the server renders the reply box or the outcome. Without script the
// page shows what it has, a reload link and, while the run works, a meta
// refresh.
//
// Who may see what is the gateway's rule, applied behind Runs: a user
// token sees the runs its user started, a service account every run of
// its tenant, the admin token every run of every tenant. Sign-in, the
// session cookie, the CSRF token of every form and the Origin and
// Sec-Fetch-Site checks are package webui's, shared with the gate's
// page.
//
//	page := runspage.New(adapter, adapter.Authenticate, &runspage.Options{Logger: log, Secure: https})
//	mux.Handle("/ui/runs", page)
//	mux.Handle("/ui/runs/", page)
package runspage
