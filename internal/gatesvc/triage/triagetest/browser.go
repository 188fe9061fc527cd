package triagetest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"novaos.dev/novaos/gate"
)

// Environment variables the browser tests read.
const (
	// EnvAllowNoChromium set to 1 lets a test skip when no Chromium is
	// installed. Without it a missing browser fails the test: CI must not
	// pass by skipping. scripts/test installs Debian's chromium instead.
	EnvAllowNoChromium = "NOVAOS_TEST_ALLOW_NO_CHROMIUM"
	// EnvChromium names the browser binary to use instead of the first of
	// chromium, chromium-browser, google-chrome and headless-shell on PATH.
	EnvChromium = "NOVAOS_TEST_CHROMIUM"
)

// DefaultTimeout bounds each step of a Browser.
const DefaultTimeout = 30 * time.Second

// FindChromium returns the path of a Chromium to drive.
func FindChromium() (string, error) {
	if p := os.Getenv(EnvChromium); p != "" {
		path, err := exec.LookPath(p)
		if err != nil {
			return "", fmt.Errorf("triagetest: %s=%s: %w", EnvChromium, p, err)
		}
		return path, nil
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if path, err := exec.LookPath(name); err == nil {
			return path, nil
		}
	}
	return "", errors.New("triagetest: no chromium, chromium-browser, google-chrome or headless-shell on PATH")
}

// Browser is a headless Chromium tab on the triage page. Its methods act
// as an operator would (type, click, read) and fail the test when a step
// does not happen within Timeout. It is not safe for concurrent use: it
// is one tab.
type Browser struct {
	t   testing.TB
	ctx context.Context
	// Base is the page's URL, such as http://127.0.0.1:8080/ui/gate.
	Base string
	// Timeout bounds each step (DefaultTimeout unless changed).
	Timeout time.Duration
}

// NewBrowser starts a headless Chromium for the page at base and stops it
// when the test ends. Without a Chromium it fails the test, or skips it
// when NOVAOS_TEST_ALLOW_NO_CHROMIUM=1.
func NewBrowser(t testing.TB, base string) *Browser {
	t.Helper()
	path, err := FindChromium()
	if err != nil {
		if os.Getenv(EnvAllowNoChromium) == "1" {
			t.Skipf("%v (skipped: %s=1)", err, EnvAllowNoChromium)
		}
		t.Fatalf("%v: the triage page's browser test needs Debian's chromium (apt-get install chromium); "+
			"scripts/test installs it when run as root, or set %s=1 to skip locally", err, EnvAllowNoChromium)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		// Tests run as root in CI containers, where Chromium refuses to
		// start sandboxed; the browser only ever visits the test's own
		// loopback server.
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.WindowSize(1280, 900),
		chromedp.UserDataDir(t.TempDir()),
	)
	// chromedp may log from its goroutines after the test has ended,
	// when t.Logf would panic; the log is cut off at cleanup.
	var mu sync.Mutex
	open := true
	logf := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if open {
			t.Logf("chromium: "+format, args...)
		}
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(allocCtx, chromedp.WithLogf(logf), chromedp.WithErrorf(logf))
	t.Cleanup(func() {
		cancelCtx()
		cancelAlloc()
		mu.Lock()
		open = false
		mu.Unlock()
	})
	// The first Run starts the browser and ties it to ctx, so it runs
	// without a timeout; each later step gets its own.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("triagetest: start %s: %v", path, err)
	}
	return &Browser{t: t, ctx: ctx, Base: strings.TrimRight(base, "/"), Timeout: DefaultTimeout}
}

// do runs steps within the timeout, failing the test with what says
// which step.
func (b *Browser) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, b.Timeout)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.t.Fatalf("browser: %s: %v (page: %s)", what, err, b.location())
	}
}

func (b *Browser) text(what string, sel chromedp.CSS) string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, b.Timeout)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Text(sel))
	if err != nil {
		b.t.Fatalf("browser: %s: %v (page: %s)", what, err, b.location())
	}
	return strings.TrimSpace(s)
}

func (b *Browser) location() string {
	ctx, cancel := context.WithTimeout(b.ctx, 2*time.Second)
	defer cancel()
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		return "unknown"
	}
	return loc
}

// Login signs in with token on the login form and waits for the list.
func (b *Browser) Login(token string) {
	b.t.Helper()
	b.do("sign in",
		chromedp.Navigate(b.Base+"/login"),
		chromedp.SendKeys(chromedp.CSS("#token"), token),
		chromedp.Click(chromedp.CSS("#login")),
		chromedp.WaitVisible(chromedp.CSS("#actions, #empty")),
	)
}

// LoginRefused signs in with a token the page should refuse and returns
// the page's message.
func (b *Browser) LoginRefused(token string) string {
	b.t.Helper()
	b.do("sign in with a refused token",
		chromedp.Navigate(b.Base+"/login"),
		chromedp.SendKeys(chromedp.CSS("#token"), token),
		chromedp.Click(chromedp.CSS("#login")),
		chromedp.WaitVisible(chromedp.CSS("#login-error")),
	)
	return b.text("read the login error", "#login-error")
}

// Logout signs out with the header's button and waits for the login form.
func (b *Browser) Logout() {
	b.t.Helper()
	b.do("sign out",
		chromedp.Click(chromedp.CSS("#logout")),
		chromedp.WaitVisible(chromedp.CSS("#token")),
	)
}

// ExpectSignedOut opens the list and requires the login form instead.
func (b *Browser) ExpectSignedOut() {
	b.t.Helper()
	b.do("open the list signed out", chromedp.Navigate(b.Base), chromedp.WaitVisible(chromedp.CSS("#token")))
}

// Title returns the title of the page open now.
func (b *Browser) Title() string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, b.Timeout)
	defer cancel()
	title, err := chromedp.Run(ctx, chromedp.Title())
	if err != nil {
		b.t.Fatalf("browser: read the title: %v", err)
	}
	return title
}

// List opens the list's first page.
func (b *Browser) List() {
	b.t.Helper()
	b.do("open the list", chromedp.Navigate(b.Base), chromedp.WaitVisible(chromedp.CSS("#actions, #empty")))
}

// Row is one action on the list as the page shows it.
type Row struct {
	SessionID, ActionID string
	Text                string // the row's visible text, cells separated by tabs
}

// Rows returns the actions on the list page open now.
func (b *Browser) Rows() []Row {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, b.Timeout)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Nodes(chromedp.CSS("#actions, #empty"))); err != nil {
		b.t.Fatalf("browser: read the list: %v (page: %s)", err, b.location())
	}
	nodes, err := chromedp.Run(ctx, chromedp.Nodes(chromedp.CSSAll("#actions tbody tr"), chromedp.AtLeast(0)))
	if err != nil {
		b.t.Fatalf("browser: read the list's rows: %v", err)
	}
	var rows []Row
	for _, n := range nodes {
		text, err := chromedp.Run(ctx, chromedp.Text(chromedp.NodeIDs{n.NodeID}))
		if err != nil {
			b.t.Fatalf("browser: read a row: %v", err)
		}
		rows = append(rows, Row{SessionID: n.AttributeValue("data-session-id"), ActionID: n.AttributeValue("data-action-id"),
			Text: strings.TrimSpace(text)})
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
	ctx, cancel := context.WithTimeout(b.ctx, b.Timeout)
	defer cancel()
	nodes, err := chromedp.Run(ctx, chromedp.Nodes(chromedp.CSSAll("#actions tbody tr"), chromedp.AtLeast(0)))
	if err != nil {
		b.t.Fatalf("browser: read the list's rows: %v (page: %s)", err, b.location())
	}
	for _, n := range nodes {
		if n.AttributeValue("data-session-id") != sessionID || n.AttributeValue("data-action-id") != actionID {
			continue
		}
		b.do("open action "+actionID,
			chromedp.Click(chromedp.CSS("a.open"), chromedp.FromNode(n)),
			chromedp.WaitVisible(chromedp.CSS("#action-id")),
		)
		if got := b.text("read the action id", "#action-id"); got != actionID {
			b.t.Fatalf("browser: opened action %q, want %q", got, actionID)
		}
		return
	}
	b.t.Fatalf("browser: action %s/%s is not on the list page open now (%s)", sessionID, actionID, b.location())
}

// State returns the state label of the detail page open now (PAUSED,
// UNCONFIRMED…).
func (b *Browser) State() string {
	b.t.Helper()
	return b.text("read the state", "#state")
}

// Text returns the visible text of the first element matching the CSS
// selector on the page open now.
func (b *Browser) Text(css string) string {
	b.t.Helper()
	return b.text("read "+css, chromedp.CSS(css))
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
	b.do("decide "+string(kind), steps...)
	return b.text("read the flash message", "#flash")
}

// Screenshot writes a PNG of the whole page open now to path.
func (b *Browser) Screenshot(path string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, b.Timeout)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatalf("browser: screenshot: %v", err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatalf("browser: screenshot: %v", err)
	}
}
