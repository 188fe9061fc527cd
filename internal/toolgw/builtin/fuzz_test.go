package builtin

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"unicode/utf8"

	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/tools"
)

func FuzzConnectorName(f *testing.F) {
	for _, s := range []string{
		"novaos.connector.slack.send_message", "novaos.connector.licensed.bloomberg.quote",
		"novaos.connector.ext.x.y", "novaos.connector.licensed.op", "novaos.connector.a.b.c",
		"novaos.connector..x", "novaos.http.fetch", "novaos.connector." + strings.Repeat("a", 65) + ".b",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		tier, id, op, ok := parseConnectorName(name)
		if !ok {
			return
		}
		if !tools.ValidName(name) || !validConnectorID(id) || !validConnectorID(op) {
			t.Fatalf("%q parsed to %q %q %q, not valid parts", name, tier, id, op)
		}
		if back := connectorName(tier, id, op); back != name {
			t.Fatalf("%q parsed to %q %q %q, which names %q", name, tier, id, op, back)
		}
		if !identity.ValidScope("connector:" + id + ":" + op) {
			t.Fatalf("%q gives an invalid scope", name)
		}
	})
}

func FuzzDecodeCatalog(f *testing.F) {
	f.Add([]byte(`[{"id":"slack","tier":"standard","operations":[{"name":"send","input_schema":{"type":"object"},"read_only":false}]}]`))
	f.Add([]byte(`[{"id":"a","tier":"licensed","operations":[{"name":"b","input_schema":{"properties":{}}}]},{"id":"a","tier":"ext","operations":[{"name":"b"}]}]`))
	f.Add([]byte(`[{"id":"a","operations":[{"name":"b","input_schema":{"type":"array"}},{"name":"b"},{"name":"b"}]}]`))
	f.Add([]byte(`{"id":"a"}`))
	f.Add([]byte(`[[[[[[[[[[`))
	c := &connectors{o: ConnectorOptions{Logger: slog.New(slog.DiscardHandler)}}
	f.Fuzz(func(t *testing.T, b []byte) {
		cat, err := c.decodeCatalog(b)
		if err != nil {
			return
		}
		if len(cat.list) != len(cat.index) {
			t.Fatalf("%d tools, %d indexed", len(cat.list), len(cat.index))
		}
		for i, tl := range cat.list {
			if cat.index[tl.Name] != i {
				t.Fatalf("%s indexed at %d, listed at %d", tl.Name, cat.index[tl.Name], i)
			}
			if _, _, _, ok := parseConnectorName(tl.Name); !ok {
				t.Fatalf("tool %q is not a connector name", tl.Name)
			}
			var schema map[string]any
			if err := json.Unmarshal(tl.InputSchema, &schema); err != nil || schema["type"] != "object" {
				t.Fatalf("tool %s: input schema %s", tl.Name, tl.InputSchema)
			}
			for _, sc := range tl.Scopes {
				if !identity.ValidScope(sc) {
					t.Fatalf("tool %s: scope %q", tl.Name, sc)
				}
			}
			if !utf8.ValidString(tl.Description) {
				t.Fatalf("tool %s: description is not UTF-8", tl.Name)
			}
		}
	})
}

func FuzzHostError(f *testing.F) {
	f.Add([]byte(`{"error":{"code":"BAD_PARAMS","message":"no"}}`))
	f.Add([]byte(`{"error":"plain"}`))
	f.Add([]byte(`{"code":"SERVICE_DISABLED","message":"off"}`))
	f.Add([]byte(`{"title":"Bad","detail":"worse","code":"lower"}`))
	f.Add([]byte("\xff\xfe"))
	f.Fuzz(func(t *testing.T, b []byte) {
		he := parseHostError(b)
		if he.code != "" && !isCode(he.code) {
			t.Fatalf("code %q", he.code)
		}
		if len(he.message) > 512*3 || !utf8.ValidString(he.message) || strings.ContainsAny(he.message, "\r\n\x00") {
			t.Fatalf("message %q", he.message)
		}
	})
}

func FuzzCheckHeaders(f *testing.F) {
	f.Add("X-Signature", "abc")
	f.Add("Host", "x")
	f.Add("X-A", "a\r\nb")
	f.Add("x-novaos-run-id", "r")
	f.Fuzz(func(t *testing.T, name, value string) {
		if res := checkHeaders(map[string]string{name: value}); res != nil {
			return
		}
		if !isToken(name) || len(name) > maxHeaderName || len(value) > maxHeaderValue {
			t.Fatalf("header %q: %q taken", name, value)
		}
		if strings.ContainsAny(value, "\r\n\x00") {
			t.Fatalf("header %q: value with a line break taken", name)
		}
		lower := strings.ToLower(name)
		if forbiddenHeaders[lower] || strings.HasPrefix(lower, "x-novaos-") || strings.HasPrefix(lower, "proxy-") {
			t.Fatalf("header %q taken", name)
		}
	})
}

func FuzzReadCapped(f *testing.F) {
	f.Add([]byte("hello"), int64(3))
	f.Add([]byte("aaaaaaaaé"), int64(9))
	f.Add([]byte("\xff\xfe\xfd"), int64(2))
	f.Add([]byte("日本語"), int64(4))
	f.Fuzz(func(t *testing.T, b []byte, limit int64) {
		if limit < 0 || limit > 1<<16 {
			return
		}
		text, truncated, err := readCapped(bytes.NewReader(b), limit)
		if err != nil {
			t.Fatal(err)
		}
		if truncated != (int64(len(b)) > limit) {
			t.Fatalf("truncated %v for %d bytes at limit %d", truncated, len(b), limit)
		}
		if !utf8.ValidString(text) {
			t.Fatalf("text %q is not UTF-8", text)
		}
		if utf8.ValidString(string(b)) && !strings.HasPrefix(string(b), text) {
			t.Fatalf("text %q is not a prefix of %q", text, b)
		}
	})
}
