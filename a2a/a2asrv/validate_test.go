package a2asrv

import (
	"mime"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"novaos.dev/novaos/a2a"
)

func FuzzCheckID(f *testing.F) {
	for _, s := range []string{"", "task-1", "t\x00", "\u0085", "é", "\x7f", strings.Repeat("x", 300), "\xff"} {
		f.Add(s, 256)
	}
	f.Fuzz(func(t *testing.T, id string, max int) {
		max = 1 + abs(max)%512
		e := checkID("id", id, max)
		bad := len(id) > max
		for _, r := range id {
			if r < 0x20 || r == 0x7f || (0x80 <= r && r <= 0x9f) {
				bad = true
			}
		}
		switch {
		case bad && e == nil:
			t.Fatalf("accepted %q (max %d)", id, max)
		case !bad && e != nil:
			t.Fatalf("refused %q (max %d): %v", id, max, e)
		case e != nil && (e.Code != a2a.CodeInvalidParams || !strings.HasPrefix(e.Message, "id ") || !utf8.ValidString(e.Message)):
			t.Fatalf("error %v", e)
		}
	})
}

func abs(n int) int {
	if n < 0 {
		return -(n + 1)
	}
	return n
}

func FuzzCheckContentType(f *testing.F) {
	for _, s := range []string{"application/json", "application/json; charset=UTF-8", "text/plain", "", "application/a2a+json", "application/+json", "application/json; charset=latin1", "multipart/form-data; boundary=x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, ct string) {
		h := http.Header{}
		h.Set("Content-Type", ct)
		e := checkContentType(h)
		if e == nil {
			mt, params, err := mime.ParseMediaType(ct)
			if err != nil || !strings.HasPrefix(mt, "application/") || !(mt == "application/json" || strings.HasSuffix(mt, "+json")) {
				t.Fatalf("accepted %q", ct)
			}
			if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
				t.Fatalf("accepted charset %q", cs)
			}
			return
		}
		if e.Code != a2a.CodeInvalidRequest || !utf8.ValidString(e.Message) {
			t.Fatalf("error %v", e)
		}
	})
}
