package uitest

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
			return "", fmt.Errorf("uitest: %s=%s: %w", EnvChromium, p, err)
		}
		return path, nil
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if path, err := exec.LookPath(name); err == nil {
			return path, nil
		}
	}
	return "", errors.New("uitest: no chromium, chromium-browser, google-chrome or headless-shell on PATH")
}

// Browser is a headless Chromium tab on one page. Its methods fail the
// test when a step does not happen within Timeout. It is not safe for
// concurrent use: it is one tab.
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
		t.Fatalf("%v: the page's browser test needs Debian's chromium (apt-get install chromium); "+
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
		t.Fatalf("uitest: start %s: %v", path, err)
	}
	return &Browser{t: t, ctx: ctx, Base: strings.TrimRight(base, "/"), Timeout: DefaultTimeout}
}

// Do runs steps within the timeout, failing the test with what says
// which step.
func (b *Browser) Do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, b.Timeout)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.t.Fatalf("browser: %s: %v (page: %s)", what, err, b.Location())
	}
}

// Nodes returns the nodes css matches on the page open now (none is no
// failure).
func (b *Browser) Nodes(css string) []*chromedp.Node {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, b.Timeout)
	defer cancel()
	nodes, err := chromedp.Run(ctx, chromedp.Nodes(chromedp.CSSAll(css), chromedp.AtLeast(0)))
	if err != nil {
		b.t.Fatalf("browser: find %s: %v (page: %s)", css, err, b.Location())
	}
	return nodes
}

// NodeText returns a node's visible text.
func (b *Browser) NodeText(n *chromedp.Node) string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, b.Timeout)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.NodeIDs{n.NodeID}))
	if err != nil {
		b.t.Fatalf("browser: read a node: %v", err)
	}
	return strings.TrimSpace(s)
}

// Text returns the visible text of the first element matching css on
// the page open now, waiting for it to be there.
func (b *Browser) Text(css string) string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, b.Timeout)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(css)))
	if err != nil {
		b.t.Fatalf("browser: read %s: %v (page: %s)", css, err, b.Location())
	}
	return strings.TrimSpace(s)
}

// Location returns the URL of the page open now ("unknown" when it
// cannot be read).
func (b *Browser) Location() string {
	ctx, cancel := context.WithTimeout(b.ctx, 2*time.Second)
	defer cancel()
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		return "unknown"
	}
	return loc
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

// Navigate opens url and waits until waitFor (a CSS selector) is
// visible.
func (b *Browser) Navigate(url, waitFor string) {
	b.t.Helper()
	b.Do("open "+url, chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS(waitFor)))
}

// Click clicks the element css names and waits until waitFor is
// visible.
func (b *Browser) Click(css, waitFor string) {
	b.t.Helper()
	b.Do("click "+css, chromedp.Click(chromedp.CSS(css)), chromedp.WaitVisible(chromedp.CSS(waitFor)))
}

// Type types text into the element css names.
func (b *Browser) Type(css, text string) {
	b.t.Helper()
	b.Do("type into "+css, chromedp.SendKeys(chromedp.CSS(css), text))
}

// WaitVisible waits until css matches a visible element.
func (b *Browser) WaitVisible(css string) {
	b.t.Helper()
	b.Do("wait for "+css, chromedp.WaitVisible(chromedp.CSS(css)))
}

// Mark sets attribute name on the element css names: a page that
// reloads loses it, so a test can tell a live update from a reload.
func (b *Browser) Mark(css, name string) {
	b.t.Helper()
	b.Do("mark "+css, chromedp.SetAttributeValue(chromedp.CSS(css), name, "1"))
}

// Login signs in with token on the page's login form ({Base}/login:
// #token, #login) and waits until waitFor is visible.
func (b *Browser) Login(token, waitFor string) {
	b.t.Helper()
	b.Do("sign in",
		chromedp.Navigate(b.Base+"/login"),
		chromedp.SendKeys(chromedp.CSS("#token"), token),
		chromedp.Click(chromedp.CSS("#login")),
		chromedp.WaitVisible(chromedp.CSS(waitFor)),
	)
}

// LoginRefused signs in with a token the page should refuse and returns
// the page's message (#login-error).
func (b *Browser) LoginRefused(token string) string {
	b.t.Helper()
	b.Do("sign in with a refused token",
		chromedp.Navigate(b.Base+"/login"),
		chromedp.SendKeys(chromedp.CSS("#token"), token),
		chromedp.Click(chromedp.CSS("#login")),
		chromedp.WaitVisible(chromedp.CSS("#login-error")),
	)
	return b.Text("#login-error")
}

// Logout signs out with the header's button (#logout) and waits for the
// login form.
func (b *Browser) Logout() {
	b.t.Helper()
	b.Click("#logout", "#token")
}

// ExpectSignedOut opens the page and requires the login form instead.
func (b *Browser) ExpectSignedOut() {
	b.t.Helper()
	b.Navigate(b.Base, "#token")
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
