// Package uitest drives the platform's server-rendered pages in headless Chromium.
//
// It acts as a person would: sign in with a pasted token, click, type,
// wait for what the page shows, read it. The page packages' own drivers
// (triagetest for the gate's page) and browser tests are built on it.
//
//	b := uitest.NewBrowser(t, srv.URL+"/ui/runs")
//	b.Login(token, "#runs, #empty")
//	b.Navigate(b.Base+"/"+runID, "#status")
//	b.Click("#cancel", "#flash")
//
// The browser is Debian's chromium (or the binary NOVAOS_TEST_CHROMIUM
// names). Without one, NewBrowser fails the test; it skips only when
// NOVAOS_TEST_ALLOW_NO_CHROMIUM=1, for a developer's machine.
// scripts/test installs chromium when run as root.
package uitest
