package httpgolden

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Do sends the request raw writes to srv and returns the answer's head
// (status, the named headers, a blank line) and its body.
func Do(t testing.TB, srv *httptest.Server, raw []byte, headers []string) (head, body []byte) {
	t.Helper()
	top, reqBody, _ := bytes.Cut(raw, []byte("\n\n"))
	lines := strings.Split(string(top), "\n")
	method, path, _ := strings.Cut(lines[0], " ")
	req, err := http.NewRequest(method, srv.URL+path, bytes.NewReader(bytes.TrimSuffix(reqBody, []byte("\n"))))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lines[1:] {
		if k, v, ok := strings.Cut(l, ":"); ok {
			req.Header.Add(strings.TrimSpace(k), strings.TrimSpace(v))
		}
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var h bytes.Buffer
	fmt.Fprintf(&h, "%d\n", resp.StatusCode)
	for _, k := range headers {
		if v := resp.Header.Values(k); len(v) > 0 {
			fmt.Fprintf(&h, "%s: %s\n", k, strings.Join(v, ", "))
		}
	}
	h.WriteByte('\n')
	if body, err = io.ReadAll(resp.Body); err != nil {
		t.Fatal(err)
	}
	return h.Bytes(), body
}
