package webui_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzCookies: whatever the session and flash cookies hold, a request is
// answered without a panic, a session exists only for a token the
// checker accepts, and only the site's own flash is shown.
func FuzzCookies(f *testing.F) {
	f.Add("abc."+b64(goodTok), "b2hp.AAAA")
	f.Add("", "")
	f.Add(".", ".")
	f.Add("abc.!!!", "!!!.x")
	f.Add("a."+b64(brokenTok), "."+b64("ohi"))
	s := newSite(&bytes.Buffer{}, []byte("0123456789abcdef0123456789abcdef"))
	h := page(s)
	f.Fuzz(func(t *testing.T, session, flash string) {
		r := httptest.NewRequest("GET", "http://a.test/ui/x", nil)
		r.Header.Set("Cookie", "x_session="+session+"; x_flash="+flash)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code == http.StatusOK {
			if !strings.Contains(w.Body.String(), "who=alice") {
				t.Fatalf("a session for %q: %s", session, w.Body)
			}
			if !strings.HasSuffix(strings.TrimSpace(w.Body.String()), "flash=") {
				t.Fatalf("an unsigned flash %q is shown: %s", flash, w.Body)
			}
		}
	})
}
