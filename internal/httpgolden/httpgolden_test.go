package httpgolden

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestDo(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("X-Varies", "each run")
		w.Header().Add("X-Seen", r.Method+" "+r.URL.Path)
		w.Header().Add("X-Seen", r.Header.Get("Authorization"))
		w.WriteHeader(http.StatusTeapot)
		_, _ = w.Write(b)
	}))
	defer srv.Close()
	raw := []byte("POST /a/b\nAuthorization: Bearer x\nContent-Type: text/plain\n\nthe body\n")
	head, body := Do(t, srv, raw, []string{"Content-Type", "X-Seen", "X-Absent"})
	if want := "418\nContent-Type: text/plain\nX-Seen: POST /a/b, Bearer x\n\n"; string(head) != want {
		t.Errorf("head %q, want %q", head, want)
	}
	// The body is sent without the file's final newline.
	if string(body) != "the body" {
		t.Errorf("body %q, want %q", body, "the body")
	}
}
