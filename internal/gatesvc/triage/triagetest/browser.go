package triagetest

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"novaos.dev/novaos/gate"
	"novaos.dev/novaos/internal/webui/uitest"
)

// Environment variables the browser tests read (package uitest's).
const (
	EnvAllowNoChromium = uitest.EnvAllowNoChromium
	EnvChromium        = uitest.EnvChromium
)

// DefaultTimeout bounds each step of a Browser.
const DefaultTimeout = uitest.DefaultTimeout

// FindChromium returns the path of a Chromium to drive.
func FindChromium() (string, error) { return uitest.FindChromium() }

// Browser is a headless Chromium tab on the triage page. Its methods act
// as an operator would (type, click, read) and fail the test when a step
// does not happen within Timeout. It is not safe for concurrent use: it
// is one tab.
type Browser struct {
	*uitest.Browser
	t testing.TB
}

// NewBrowser starts a headless Chromium for the page at base and stops it
// when the test ends. Without a Chromium it fails the test, or skips it
// when NOVAOS_TEST_ALLOW_NO_CHROMIUM=1.
func NewBrowser(t testing.TB, base string) *Browser {
	t.Helper()
	return &Browser{Browser: uitest.NewBrowser(t, base), t: t}
}

// listed is what the list shows: its table, or the empty message.
const listed = "#actions, #empty"

// Login signs in with token on the login form and waits for the list.
func (b *Browser) Login(token string) {
	b.t.Helper()
	b.Browser.Login(token, listed)
}

// List opens the list's first page.
func (b *Browser) List() {
	b.t.Helper()
	b.Navigate(b.Base, listed)
}

// Row is one action on the list as the page shows it.
type Row struct {
	SessionID, ActionID string
	Text                string // the row's visible text, cells separated by tabs
}

// Rows returns the actions on the list page open now.
func (b *Browser) Rows() []Row {
	b.t.Helper()
	b.WaitVisible(listed)
	var rows []Row
	for _, n := range b.Nodes("#actions tbody tr") {
		rows = append(rows, Row{SessionID: n.AttributeValue("data-session-id"), ActionID: n.AttributeValue("data-action-id"),
			Text: b.NodeText(n)})
	}
	return rows
}

// WaitForAction reloads the list until it shows the action, and returns
// its row. A write that has just been held may take a moment to appear.
func (b *Browser) WaitForAction(sessionID, actionID string) Row {
	b.t.Helper()
	deadline := time.Now().Add(b.Timeout)
	for {
		b.List()
		for _, r := range b.Rows() {
			if r.SessionID == sessionID && r.ActionID == actionID {
				return r
			}
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("browser: action %s/%s did not appear on the list within %v", sessionID, actionID, b.Timeout)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Open clicks the action's link on the list page open now and waits for
// its detail page.
func (b *Browser) Open(sessionID, actionID string) {
	b.t.Helper()
	for _, n := range b.Nodes("#actions tbody tr") {
		if n.AttributeValue("data-session-id") != sessionID || n.AttributeValue("data-action-id") != actionID {
			continue
		}
		b.Do("open action "+actionID,
			chromedp.Click(chromedp.CSS("a.open"), chromedp.FromNode(n)),
			chromedp.WaitVisible(chromedp.CSS("#action-id")),
		)
		if got := b.Text("#action-id"); got != actionID {
			b.t.Fatalf("browser: opened action %q, want %q", got, actionID)
		}
		return
	}
	b.t.Fatalf("browser: action %s/%s is not on the list page open now (%s)", sessionID, actionID, b.Location())
}

// State returns the state label of the detail page open now (PAUSED,
// UNCONFIRMED…).
func (b *Browser) State() string {
	b.t.Helper()
	return b.Text("#state")
}

// Decide types note into the detail page's form, presses the decision's
// button and returns the message the list shows after the redirect.
func (b *Browser) Decide(kind gate.OperatorDecisionKind, note string) string {
	b.t.Helper()
	steps := []chromedp.Action[chromedp.Void]{chromedp.WaitVisible(chromedp.CSS("#decide"))}
	if note != "" {
		steps = append(steps, chromedp.SendKeys(chromedp.CSS("#note"), note))
	}
	steps = append(steps,
		chromedp.Click(chromedp.ID(string(kind))),
		chromedp.WaitVisible(chromedp.CSS("#flash")),
	)
	b.Do("decide "+string(kind), steps...)
	return strings.TrimSpace(b.Text("#flash"))
}
