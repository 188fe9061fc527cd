package execgw

import (
	"strings"
	"testing"

	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/problem"
)

// fieldsOf lists the fields an execute request breaks rules of.
func fieldsOf(err error) []string {
	p, ok := err.(*problem.Problem)
	if !ok {
		return nil
	}
	var out []string
	for _, e := range p.Errors {
		out = append(out, e.Field)
	}
	return out
}

func TestCheckExecute(t *testing.T) {
	ok := func() gateway.ExecuteRequest { return gateway.ExecuteRequest{InstanceID: "i-1", Input: "hi"} }
	atts := func(n int) []gateway.Attachment {
		out := make([]gateway.Attachment, n)
		for i := range out {
			out[i] = gateway.Attachment{Type: "text/plain", Data: []byte("x")}
		}
		return out
	}
	headers := func(n int) map[string]string {
		out := map[string]string{}
		for i := range n {
			out["x-h"+strings.Repeat("a", i)] = "v"
		}
		return out
	}
	cases := []struct {
		name   string
		change func(*gateway.ExecuteRequest)
		fields []string // nil: accepted
	}{
		{"fine", func(*gateway.ExecuteRequest) {}, nil},
		{"input at the limit", func(r *gateway.ExecuteRequest) { r.Input = strings.Repeat("é", gateway.MaxInputChars) }, nil},
		{"input past the limit", func(r *gateway.ExecuteRequest) { r.Input = strings.Repeat("é", gateway.MaxInputChars+1) }, []string{"input"}},
		{"blank input", func(r *gateway.ExecuteRequest) { r.Input = " \n" }, []string{"input"}},
		{"no instance", func(r *gateway.ExecuteRequest) { r.InstanceID = "" }, []string{"instance_id"}},
		{"instance id of 128", func(r *gateway.ExecuteRequest) { r.InstanceID = strings.Repeat("i", 128) }, nil},
		{"instance id of 129", func(r *gateway.ExecuteRequest) { r.InstanceID = strings.Repeat("i", 129) }, []string{"instance_id"}},
		{"thread id with a space", func(r *gateway.ExecuteRequest) { r.ThreadID = "a b" }, []string{"thread_id"}},
		{"conversation id with a control character", func(r *gateway.ExecuteRequest) { r.ConversationID = "a\x01" }, []string{"conversation_id"}},
		{"16 attachments", func(r *gateway.ExecuteRequest) { r.Attachments = atts(gateway.MaxAttachments) }, nil},
		{"17 attachments", func(r *gateway.ExecuteRequest) { r.Attachments = atts(gateway.MaxAttachments + 1) }, []string{"attachments"}},
		{"attachment without a type", func(r *gateway.ExecuteRequest) { r.Attachments = []gateway.Attachment{{Data: []byte("x")}} }, []string{"attachments[0]"}},
		{"attachment type of 255", func(r *gateway.ExecuteRequest) {
			r.Attachments = []gateway.Attachment{{Type: strings.Repeat("t", 255), Data: []byte("x")}}
		}, nil},
		{"attachment type of 256", func(r *gateway.ExecuteRequest) {
			r.Attachments = []gateway.Attachment{{Type: strings.Repeat("t", 256), Data: []byte("x")}}
		}, []string{"attachments[0]"}},
		{"attachment URL of 2048", func(r *gateway.ExecuteRequest) {
			r.Attachments = []gateway.Attachment{{Type: "t", URL: "https://example.com/" + strings.Repeat("p", 2048-20)}}
		}, nil},
		{"attachment URL of 2049", func(r *gateway.ExecuteRequest) {
			r.Attachments = []gateway.Attachment{{Type: "t", URL: "https://example.com/" + strings.Repeat("p", 2049-20)}}
		}, []string{"attachments[0]"}},
		{"attachment URL with credentials", func(r *gateway.ExecuteRequest) {
			r.Attachments = []gateway.Attachment{{Type: "t", URL: "https://u:p@example.com/x"}}
		}, []string{"attachments[0]"}},
		{"attachment URL of http", func(r *gateway.ExecuteRequest) {
			r.Attachments = []gateway.Attachment{{Type: "t", URL: "http://example.com/x"}}
		}, nil},
		{"attachment URL of ftp", func(r *gateway.ExecuteRequest) {
			r.Attachments = []gateway.Attachment{{Type: "t", URL: "ftp://example.com/x"}}
		}, []string{"attachments[0]"}},
		{"attachment URL without a host", func(r *gateway.ExecuteRequest) { r.Attachments = []gateway.Attachment{{Type: "t", URL: "https:///x"}} }, []string{"attachments[0]"}},
		{"32 custom headers", func(r *gateway.ExecuteRequest) { r.CustomHeaders = headers(maxCustomHeaders) }, nil},
		{"33 custom headers", func(r *gateway.ExecuteRequest) { r.CustomHeaders = headers(maxCustomHeaders + 1) }, []string{"custom_headers"}},
		{"a header value of 8 KiB", func(r *gateway.ExecuteRequest) {
			r.CustomHeaders = map[string]string{"x-a": strings.Repeat("v", maxCustomHeaderValue)}
		}, nil},
		{"a header value past 8 KiB", func(r *gateway.ExecuteRequest) {
			r.CustomHeaders = map[string]string{"x-a": strings.Repeat("v", maxCustomHeaderValue+1)}
		}, []string{"custom_headers"}},
		{"a header value with NUL", func(r *gateway.ExecuteRequest) { r.CustomHeaders = map[string]string{"x-a": "a\x00b"} }, []string{"custom_headers"}},
		{"a header name with a space", func(r *gateway.ExecuteRequest) { r.CustomHeaders = map[string]string{"x a": "v"} }, []string{"custom_headers"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := ok()
			c.change(&r)
			err := checkExecute(&r)
			got := fieldsOf(err)
			if (err == nil) != (c.fields == nil) || strings.Join(got, ",") != strings.Join(c.fields, ",") {
				t.Fatalf("fields %v (%v), want %v", got, err, c.fields)
			}
		})
	}
}

func TestSafeFileName(t *testing.T) {
	for name, want := range map[string]bool{
		"notes.txt": true, "résumé.pdf": true, strings.Repeat("n", 255): true,
		"": false, ".": false, "..": false, "a..b": false, "../x": false, "a/b": false, `a\b`: false, "c:x": false,
		"a\x00b": false, "a\nb": false, "\xff": false, strings.Repeat("n", 256): false, "a\u0085b": false,
	} {
		if got := SafeFileName(name); got != want {
			t.Errorf("SafeFileName(%q) = %v", name, got)
		}
	}
}

func TestHeaderNames(t *testing.T) {
	for name, want := range map[string]bool{
		"x-user-jwt": true, "X_Trace.ID": true, "a!#$%&'*+-.^_`|~z": true, strings.Repeat("h", 128): true,
		"Z": true, "A": true, "a": true, "0": true, "9": true, "[": false, "@": false, "/": false, ":": false,
		"": false, strings.Repeat("h", 129): false, "a b": false, "a:b": false, "é": false, "a(b)": false,
	} {
		if got := validHeaderName(name); got != want {
			t.Errorf("validHeaderName(%q) = %v", name, got)
		}
	}
	got := allowedHeaders(map[string]string{"X-User-JWT": "1", "Authorization": "2", "X-NovaOS-Run-Id": "3", "x-other": "4"},
		[]string{"x-user-jwt", "authorization", "x-novaos-run-id"})
	if len(got) != 1 || got["x-user-jwt"] != "1" {
		t.Errorf("allowed %v: only the safe, allowed header", got)
	}
	if got := allowedHeaders(map[string]string{"x-a": "1", "x-b": "2", "traceparent": "3"}, []string{"*"}); len(got) != 2 {
		t.Errorf("allowed with *: %v", got)
	}
	if got := allowedHeaders(map[string]string{"x-a": "1"}, nil); got != nil {
		t.Errorf("allowed with no list: %v", got)
	}
}

func TestParseCursor(t *testing.T) {
	run := &gateway.Run{LastSequence: 7}
	for v, want := range map[string]int64{"": 0, "0": 0, "1": 1, "7": 7} {
		if got, err := parseCursor(v, run); err != nil || got != want {
			t.Errorf("parseCursor(%q) = %d, %v", v, got, err)
		}
	}
	for _, v := range []string{"8", "-1", "+1", "01", "1.0", " 1", "x", "99999999999999999999"} {
		if _, err := parseCursor(v, run); err == nil {
			t.Errorf("parseCursor(%q) accepted", v)
		}
	}
}
