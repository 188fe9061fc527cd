// Package triagetest drives the gate's operator page in headless Chromium,
// as an operator would.
//
// It signs in with a token, finds a held action on the list, opens it,
// approves or denies it and reads the message. The page's own browser test
// (package triage) uses it with a fake service; end-to-end tests use it with
// the real one while an SDK write waits. It is package uitest's browser
// with the page's own steps.
//
//	b := triagetest.NewBrowser(t, srv.URL+"/ui/gate")
//	b.Login(operatorToken)
//	b.WaitForAction(sessionID, actionID)
//	b.Open(sessionID, actionID)
//	msg := b.Decide(gate.DecisionApprove, "checked the invoice")
//
// The browser is Debian's chromium (or the binary NOVAOS_TEST_CHROMIUM
// names). Without one, NewBrowser fails the test; it skips only when
// NOVAOS_TEST_ALLOW_NO_CHROMIUM=1, for a developer's machine. scripts/test
// installs chromium when run as root.
package triagetest
