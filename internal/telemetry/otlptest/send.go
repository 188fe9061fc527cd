package otlptest

import (
	"bytes"
	"net/http"
	"testing"
)

// Send sends body to url with method, as an exporter would or would not,
// with contentType and, unless it is "", encoding as its Content-Encoding,
// and returns the answer's status: for tests of what an OTLP/HTTP
// receiver takes and refuses. It fails t when no answer comes.
func Send(t testing.TB, method, url, contentType, encoding string, body []byte) int {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	if encoding != "" {
		req.Header.Set("Content-Encoding", encoding)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
