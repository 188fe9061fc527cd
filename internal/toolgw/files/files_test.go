package files_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/toolgw"
	"novaos.dev/novaos/internal/toolgw/files"
	"novaos.dev/novaos/tools"
)

// agentScopes are what an agent's token usually grants: its own area.
var agentScopes = []string{"mcp:tools:*", files.ScopeReadAgent, files.ScopeWriteAgent}

// allScopes add the shared area.
var allScopes = []string{"mcp:tools:*", "files:*"}

func caller(agent string, scopes ...string) *toolgw.Caller {
	return &toolgw.Caller{Tenant: "acme", Agent: agent, Scopes: scopes}
}

func sum(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// outcome is a call's answer as a test compares it: the structured
// result, or the failed result's reason, or the error's.
type outcome struct {
	Result map[string]any
	// Code is a failed result's reason.
	Code string
	// Err is the reason of an *toolgw.Error.
	Err string
}

// call runs tool with args as c through p, checking the answer's shape
// on the way: a result's structured content against the tool's output
// schema, and a failed result's text.
func call(t *testing.T, p *files.Provider, c *toolgw.Caller, name, args string) outcome {
	t.Helper()
	tool, ok, err := p.Find(t.Context(), c, name)
	if err != nil || !ok {
		t.Fatalf("Find(%s) = %v, %v", name, ok, err)
	}
	res, err := p.Call(t.Context(), &toolgw.Request{Caller: c, Tool: tool, Arguments: json.RawMessage(args), CallID: "call-1"})
	if err != nil {
		var te *toolgw.Error
		if !errors.As(err, &te) {
			t.Fatalf("%s: an error that is no *toolgw.Error: %v", name, err)
		}
		return outcome{Err: te.Reason}
	}
	text := res.Content[0].(*mcp.TextContent).Text
	if res.IsError {
		var e struct{ Code, Error string }
		if err := json.Unmarshal([]byte(text), &e); err != nil || e.Code == "" || !strings.HasPrefix(e.Error, e.Code+": ") {
			t.Fatalf("%s: failed result %q", name, text)
		}
		return outcome{Code: e.Code}
	}
	structured, _ := res.StructuredContent.(json.RawMessage)
	if string(structured) != text {
		t.Errorf("%s: structured content %s, text %s", name, structured, text)
	}
	validate(t, tool.OutputSchema, structured)
	var m map[string]any
	if err := json.Unmarshal(structured, &m); err != nil {
		t.Fatal(err)
	}
	return outcome{Result: m}
}

func compile(t *testing.T, schema json.RawMessage) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("schema.json")
	if err != nil {
		t.Fatalf("compile %s: %v", schema, err)
	}
	return s
}

func validate(t *testing.T, schema, v json.RawMessage) {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(v))
	if err != nil {
		t.Fatal(err)
	}
	if err := compile(t, schema).Validate(doc); err != nil {
		t.Errorf("%s does not match its schema: %v", v, err)
	}
}

// fixture is a provider over a store holding three files: two in the
// agent bot's own area, one in the shared area.
func fixture(t *testing.T, o *files.Options) (*files.Provider, *tools.MemoryFileStore) {
	t.Helper()
	s := tools.NewMemoryFileStore()
	p, err := files.New(s, o)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []struct {
		c    *toolgw.Caller
		args string
	}{
		{caller("bot", agentScopes...), `{"path": "notes/a.txt", "content": "alpha"}`},
		{caller("bot", agentScopes...), `{"path": "data.bin", "content": "AP8Q", "encoding": "base64"}`},
		{caller("bot", allScopes...), `{"path": "shared/team.md", "content": "# Team", "content_type": "text/markdown", "scope": "tenant"}`},
	} {
		if got := call(t, p, w.c, files.ToolWrite, w.args); got.Result == nil {
			t.Fatalf("fixture write %s: %+v", w.args, got)
		}
	}
	return p, s
}

func TestCall(t *testing.T) {
	bot, botAll := caller("bot", agentScopes...), caller("bot", allScopes...)
	small := &files.Options{MaxFileBytes: 16}
	tight := &files.Options{TenantQuotaBytes: 24, TenantMaxFiles: 3}
	tests := []struct {
		name string
		opts *files.Options
		c    *toolgw.Caller
		tool string
		args string
		want outcome
	}{
		{name: "write text", c: bot, tool: files.ToolWrite, args: `{"path": "b.txt", "content": "héllo"}`,
			want: outcome{Result: map[string]any{"path": "b.txt", "version": 4.0, "size": 6.0, "sha256": sum("héllo")}}},
		{name: "write empty", c: bot, tool: files.ToolWrite, args: `{"path": "empty", "content": ""}`,
			want: outcome{Result: map[string]any{"path": "empty", "version": 4.0, "size": 0.0, "sha256": sum("")}}},
		{name: "write base64 unpadded", c: bot, tool: files.ToolWrite, args: `{"path": "b", "content": "aGk", "encoding": "base64"}`,
			want: outcome{Result: map[string]any{"path": "b", "version": 4.0, "size": 2.0, "sha256": sum("hi")}}},
		{name: "replace at its version", c: bot, tool: files.ToolWrite, args: `{"path": "notes/a.txt", "content": "beta", "if_version": 1}`,
			want: outcome{Result: map[string]any{"path": "notes/a.txt", "version": 4.0, "size": 4.0, "sha256": sum("beta")}}},
		{name: "create only, absent", c: bot, tool: files.ToolWrite, args: `{"path": "new", "content": "x", "if_version": 0}`,
			want: outcome{Result: map[string]any{"path": "new", "version": 4.0, "size": 1.0, "sha256": sum("x")}}},
		{name: "create only, present", c: bot, tool: files.ToolWrite, args: `{"path": "notes/a.txt", "content": "x", "if_version": 0}`,
			want: outcome{Code: files.ReasonVersionConflict}},
		{name: "replace at a stale version", c: bot, tool: files.ToolWrite, args: `{"path": "notes/a.txt", "content": "x", "if_version": 2}`,
			want: outcome{Code: files.ReasonVersionConflict}},
		{name: "write shared", c: botAll, tool: files.ToolWrite, args: `{"path": "shared/b", "content": "x", "scope": "tenant"}`,
			want: outcome{Result: map[string]any{"path": "shared/b", "version": 4.0, "size": 1.0, "sha256": sum("x")}}},
		{name: "write shared without the scope", c: caller("bot", append(agentScopes, files.ScopeReadTenant)...), tool: files.ToolWrite,
			args: `{"path": "shared/b", "content": "x", "scope": "tenant"}`, want: outcome{Err: tools.ReasonInsufficientScope}},
		{name: "write own without the scope", c: caller("bot", files.ScopeWriteTenant), tool: files.ToolWrite,
			args: `{"path": "b", "content": "x"}`, want: outcome{Err: tools.ReasonInsufficientScope}},
		{name: "write own without an agent", c: caller("", allScopes...), tool: files.ToolWrite, args: `{"path": "b", "content": "x"}`,
			want: outcome{Code: tools.ReasonInvalidArguments}},
		{name: "write shared without an agent", c: caller("", allScopes...), tool: files.ToolWrite, args: `{"path": "b", "content": "x", "scope": "tenant"}`,
			want: outcome{Result: map[string]any{"path": "b", "version": 4.0, "size": 1.0, "sha256": sum("x")}}},
		{name: "unknown scope", c: botAll, tool: files.ToolWrite, args: `{"path": "b", "content": "x", "scope": "world"}`,
			want: outcome{Code: tools.ReasonInvalidArguments}},
		{name: "path escapes", c: bot, tool: files.ToolWrite, args: `{"path": "../b", "content": "x"}`, want: outcome{Code: tools.ReasonInvalidArguments}},
		{name: "absolute path", c: bot, tool: files.ToolWrite, args: `{"path": "/b", "content": "x"}`, want: outcome{Code: tools.ReasonInvalidArguments}},
		{name: "control in path", c: bot, tool: files.ToolWrite, args: `{"path": "a\u0007b", "content": "x"}`, want: outcome{Code: tools.ReasonInvalidArguments}},
		{name: "no content", c: bot, tool: files.ToolWrite, args: `{"path": "b"}`, want: outcome{Code: tools.ReasonInvalidArguments}},
		{name: "null content", c: bot, tool: files.ToolWrite, args: `{"path": "b", "content": null}`, want: outcome{Code: tools.ReasonInvalidArguments}},
		{name: "unknown encoding", c: bot, tool: files.ToolWrite, args: `{"path": "b", "content": "x", "encoding": "hex"}`, want: outcome{Code: tools.ReasonInvalidArguments}},
		{name: "bad base64", c: bot, tool: files.ToolWrite, args: `{"path": "b", "content": "a*b", "encoding": "base64"}`, want: outcome{Code: tools.ReasonInvalidArguments}},
		{name: "bad content type", c: bot, tool: files.ToolWrite, args: `{"path": "b", "content": "x", "content_type": "not a type"}`, want: outcome{Code: tools.ReasonInvalidArguments}},
		{name: "unknown member", c: bot, tool: files.ToolWrite, args: `{"path": "b", "content": "x", "mode": 420}`, want: outcome{Code: tools.ReasonInvalidArguments}},
		{name: "member in another case", c: bot, tool: files.ToolWrite, args: `{"Path": "b", "content": "x"}`, want: outcome{Code: tools.ReasonInvalidArguments}},
		{name: "member twice", c: bot, tool: files.ToolWrite, args: `{"path": "b", "path": "c", "content": "x"}`, want: outcome{Code: tools.ReasonInvalidArguments}},
		{name: "not an object", c: bot, tool: files.ToolWrite, args: `["b"]`, want: outcome{Code: tools.ReasonInvalidArguments}},
		{name: "negative version", c: bot, tool: files.ToolWrite, args: `{"path": "b", "content": "x", "if_version": -1}`, want: outcome{Code: tools.ReasonInvalidArguments}},
		{name: "text too large", opts: small, c: bot, tool: files.ToolWrite, args: `{"path": "b", "content": "0123456789abcdefg"}`,
			want: outcome{Code: files.ReasonFileTooLarge}},
		{name: "text at the limit", opts: small, c: bot, tool: files.ToolWrite, args: `{"path": "b", "content": "0123456789abcdef"}`,
			want: outcome{Result: map[string]any{"path": "b", "version": 4.0, "size": 16.0, "sha256": sum("0123456789abcdef")}}},
		{name: "base64 too large", opts: small, c: bot, tool: files.ToolWrite,
			args: fmt.Sprintf(`{"path": "b", "content": %q, "encoding": "base64"}`, base64.StdEncoding.EncodeToString(make([]byte, 17))),
			want: outcome{Code: files.ReasonFileTooLarge}},
		{name: "arguments too large", opts: small, c: bot, tool: files.ToolWrite,
			args: `{"path": "b", "content": "x", "content_type": "text/plain; x=` + strings.Repeat("y", 6*16+64<<10) + `"}`,
			want: outcome{Code: files.ReasonFileTooLarge}},
		// The fixture holds 5 + 3 + 6 = 14 bytes in 3 files.
		{name: "past the byte quota", opts: tight, c: bot, tool: files.ToolWrite, args: `{"path": "notes/a.txt", "content": "0123456789abcdef"}`,
			want: outcome{Code: files.ReasonQuotaExceeded}},
		{name: "past the file quota", opts: tight, c: bot, tool: files.ToolWrite, args: `{"path": "b", "content": ""}`,
			want: outcome{Code: files.ReasonQuotaExceeded}},
		{name: "up to the byte quota", opts: tight, c: bot, tool: files.ToolWrite, args: `{"path": "notes/a.txt", "content": "0123456789abcde"}`,
			want: outcome{Result: map[string]any{"path": "notes/a.txt", "version": 4.0, "size": 15.0, "sha256": sum("0123456789abcde")}}},
		{name: "shrink is no growth", opts: tight, c: bot, tool: files.ToolWrite, args: `{"path": "notes/a.txt", "content": ""}`,
			want: outcome{Result: map[string]any{"path": "notes/a.txt", "version": 4.0, "size": 0.0, "sha256": sum("")}}},

		{name: "read text", c: bot, tool: files.ToolRead, args: `{"path": "notes/a.txt"}`,
			want: outcome{Result: map[string]any{"path": "notes/a.txt", "content": "alpha", "encoding": "text",
				"content_type": "text/plain; charset=utf-8", "version": 1.0, "size": 5.0, "sha256": sum("alpha")}}},
		{name: "read binary", c: bot, tool: files.ToolRead, args: `{"path": "data.bin"}`,
			want: outcome{Result: map[string]any{"path": "data.bin", "content": "AP8Q", "encoding": "base64",
				"content_type": "application/octet-stream", "version": 2.0, "size": 3.0, "sha256": sum("\x00\xff\x10")}}},
		{name: "read shared", c: botAll, tool: files.ToolRead, args: `{"path": "shared/team.md", "scope": "tenant"}`,
			want: outcome{Result: map[string]any{"path": "shared/team.md", "content": "# Team", "encoding": "text",
				"content_type": "text/markdown", "version": 3.0, "size": 6.0, "sha256": sum("# Team")}}},
		{name: "read shared without the scope", c: bot, tool: files.ToolRead, args: `{"path": "shared/team.md", "scope": "tenant"}`,
			want: outcome{Err: tools.ReasonInsufficientScope}},
		{name: "read another agent's", c: caller("other", agentScopes...), tool: files.ToolRead, args: `{"path": "notes/a.txt"}`,
			want: outcome{Code: files.ReasonFileNotFound}},
		{name: "read another tenant's", c: &toolgw.Caller{Tenant: "globex", Agent: "bot", Scopes: agentScopes}, tool: files.ToolRead,
			args: `{"path": "notes/a.txt"}`, want: outcome{Code: files.ReasonFileNotFound}},
		{name: "read missing", c: bot, tool: files.ToolRead, args: `{"path": "nope"}`, want: outcome{Code: files.ReasonFileNotFound}},
		{name: "read bad path", c: bot, tool: files.ToolRead, args: `{"path": "a//b"}`, want: outcome{Code: tools.ReasonInvalidArguments}},

		{name: "list", c: bot, tool: files.ToolList, args: `{}`,
			want: outcome{Result: map[string]any{"next_cursor": "", "files": []any{
				map[string]any{"path": "data.bin", "size": 3.0, "version": 2.0, "content_type": "application/octet-stream", "updated_at": "*"},
				map[string]any{"path": "notes/a.txt", "size": 5.0, "version": 1.0, "content_type": "text/plain; charset=utf-8", "updated_at": "*"},
			}}}},
		{name: "list a prefix", c: bot, tool: files.ToolList, args: `{"prefix": "notes/"}`,
			want: outcome{Result: map[string]any{"next_cursor": "", "files": []any{
				map[string]any{"path": "notes/a.txt", "size": 5.0, "version": 1.0, "content_type": "text/plain; charset=utf-8", "updated_at": "*"},
			}}}},
		{name: "list a page", c: bot, tool: files.ToolList, args: `{"limit": 1}`,
			want: outcome{Result: map[string]any{"next_cursor": base64.RawURLEncoding.EncodeToString([]byte("data.bin")), "files": []any{
				map[string]any{"path": "data.bin", "size": 3.0, "version": 2.0, "content_type": "application/octet-stream", "updated_at": "*"},
			}}}},
		{name: "list the next page", c: bot, tool: files.ToolList, args: `{"limit": 1, "cursor": "` + base64.RawURLEncoding.EncodeToString([]byte("data.bin")) + `"}`,
			want: outcome{Result: map[string]any{"next_cursor": "", "files": []any{
				map[string]any{"path": "notes/a.txt", "size": 5.0, "version": 1.0, "content_type": "text/plain; charset=utf-8", "updated_at": "*"},
			}}}},
		{name: "list shared", c: botAll, tool: files.ToolList, args: `{"scope": "tenant"}`,
			want: outcome{Result: map[string]any{"next_cursor": "", "files": []any{
				map[string]any{"path": "shared/team.md", "size": 6.0, "version": 3.0, "content_type": "text/markdown", "updated_at": "*"},
			}}}},
		{name: "list an empty area", c: caller("other", agentScopes...), tool: files.ToolList, args: `{}`,
			want: outcome{Result: map[string]any{"next_cursor": "", "files": []any{}}}},
		{name: "list a bad cursor", c: bot, tool: files.ToolList, args: `{"cursor": "!!"}`, want: outcome{Code: tools.ReasonInvalidArguments}},
		{name: "list a cursor of no path", c: bot, tool: files.ToolList, args: `{"cursor": "` + base64.RawURLEncoding.EncodeToString([]byte("/x")) + `"}`,
			want: outcome{Code: tools.ReasonInvalidArguments}},
		{name: "list limit 0", c: bot, tool: files.ToolList, args: `{"limit": 0}`, want: outcome{Code: tools.ReasonInvalidArguments}},
		{name: "list limit past the most", c: bot, tool: files.ToolList, args: `{"limit": 501}`, want: outcome{Code: tools.ReasonInvalidArguments}},
		{name: "list a bad prefix", c: bot, tool: files.ToolList, args: `{"prefix": "/etc"}`, want: outcome{Code: tools.ReasonInvalidArguments}},

		{name: "delete", c: bot, tool: files.ToolDelete, args: `{"path": "notes/a.txt"}`, want: outcome{Result: map[string]any{"deleted": true}}},
		{name: "delete at its version", c: bot, tool: files.ToolDelete, args: `{"path": "data.bin", "if_version": 2}`, want: outcome{Result: map[string]any{"deleted": true}}},
		{name: "delete at a stale version", c: bot, tool: files.ToolDelete, args: `{"path": "data.bin", "if_version": 1}`, want: outcome{Code: files.ReasonVersionConflict}},
		{name: "delete version 0", c: bot, tool: files.ToolDelete, args: `{"path": "data.bin", "if_version": 0}`, want: outcome{Code: tools.ReasonInvalidArguments}},
		{name: "delete missing", c: bot, tool: files.ToolDelete, args: `{"path": "nope"}`, want: outcome{Code: files.ReasonFileNotFound}},
		{name: "delete shared without the scope", c: caller("bot", append(agentScopes, files.ScopeReadTenant)...), tool: files.ToolDelete,
			args: `{"path": "shared/team.md", "scope": "tenant"}`, want: outcome{Err: tools.ReasonInsufficientScope}},
		{name: "delete shared", c: botAll, tool: files.ToolDelete, args: `{"path": "shared/team.md", "scope": "tenant"}`,
			want: outcome{Result: map[string]any{"deleted": true}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, _ := fixture(t, tc.opts)
			got := call(t, p, tc.c, tc.tool, tc.args)
			if fs, ok := got.Result["files"].([]any); ok {
				for _, f := range fs {
					if m := f.(map[string]any); m["updated_at"] != "" {
						m["updated_at"] = "*" // checked by the output schema's date-time
					}
				}
			}
			if d := gocmp.Diff(tc.want, got); d != "" {
				t.Errorf("%s %s (-want +got):\n%s", tc.tool, tc.args, d)
			}
		})
	}
}

// A read gives back what a write stored: text for text and JSON types
// when the bytes are UTF-8, base64 for the rest, and the content type
// given or chosen.
func TestRoundTrip(t *testing.T) {
	bot := caller("bot", agentScopes...)
	for _, tc := range []struct {
		name              string
		write             string
		content, encoding string
		contentType       string
	}{
		{"text", `{"path": "f", "content": "a\u0000b"}`, "a\x00b", "text", "text/plain; charset=utf-8"},
		{"json", `{"path": "f", "content": "{\"a\": 1}", "content_type": "application/json"}`, `{"a": 1}`, "text", "application/json"},
		{"json suffix", `{"path": "f", "content": "{}", "content_type": "application/ld+json"}`, `{}`, "text", "application/ld+json"},
		{"text sent as base64", `{"path": "f", "content": "aGVsbG8=", "encoding": "base64"}`, "hello", "text", "text/plain; charset=utf-8"},
		{"PNG sniffed", `{"path": "f", "content": "iVBORw0KGgo=", "encoding": "base64"}`, "iVBORw0KGgo=", "base64", "image/png"},
		{"text typed as an image", `{"path": "f", "content": "abc", "content_type": "image/png"}`, "YWJj", "base64", "image/png"},
		{"text type, not UTF-8", `{"path": "f", "content": "/w==", "encoding": "base64", "content_type": "text/plain"}`, "/w==", "base64", "text/plain"},
		{"base64 with line breaks", `{"path": "f", "content": "aGVs\nbG8=", "encoding": "base64", "content_type": "text/plain"}`, "hello", "text", "text/plain"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, _ := fixture(t, nil)
			if got := call(t, p, bot, files.ToolWrite, tc.write); got.Result == nil {
				t.Fatalf("write: %+v", got)
			}
			got := call(t, p, bot, files.ToolRead, `{"path": "f"}`).Result
			if got["content"] != tc.content || got["encoding"] != tc.encoding || got["content_type"] != tc.contentType {
				t.Errorf("read = %v; want content %q, encoding %s, type %s", got, tc.content, tc.encoding, tc.contentType)
			}
		})
	}
}

// The tenant's usage follows writes, replaces and deletes in every area.
func TestUsage(t *testing.T) {
	p, s := fixture(t, nil)
	bot, botAll := caller("bot", agentScopes...), caller("bot", allScopes...)
	steps := []struct {
		c    *toolgw.Caller
		tool string
		args string
		want tools.FileUsage
	}{
		{bot, files.ToolWrite, `{"path": "x", "content": "0123456789"}`, tools.FileUsage{Bytes: 14 + 10, Files: 4}},
		{bot, files.ToolWrite, `{"path": "x", "content": "01234"}`, tools.FileUsage{Bytes: 14 + 5, Files: 4}},
		{botAll, files.ToolWrite, `{"path": "x", "content": "012", "scope": "tenant"}`, tools.FileUsage{Bytes: 14 + 5 + 3, Files: 5}},
		{bot, files.ToolDelete, `{"path": "x"}`, tools.FileUsage{Bytes: 14 + 3, Files: 4}},
		{bot, files.ToolDelete, `{"path": "x"}`, tools.FileUsage{Bytes: 14 + 3, Files: 4}}, // not found: nothing moves
		{botAll, files.ToolDelete, `{"path": "shared/team.md", "scope": "tenant"}`, tools.FileUsage{Bytes: 14 + 3 - 6, Files: 3}},
	}
	for i, st := range steps {
		call(t, p, st.c, st.tool, st.args)
		if u, err := s.Usage(t.Context(), "acme"); err != nil || u != st.want {
			t.Errorf("step %d (%s %s): usage %+v, %v; want %+v", i, st.tool, st.args, u, err, st.want)
		}
	}
}

// failingStore fails every call as a database that is down would.
type failingStore struct{ tools.FileStore }

var errDown = errors.New("connection refused to db.internal:5432")

func (failingStore) Put(context.Context, tools.FilePut) (tools.FileInfo, error) {
	return tools.FileInfo{}, errDown
}
func (failingStore) Get(context.Context, tools.FileKey) (tools.File, error) {
	return tools.File{}, errDown
}
func (failingStore) List(context.Context, tools.FileFilter) ([]tools.FileInfo, error) {
	return nil, errDown
}
func (failingStore) Delete(context.Context, tools.FileKey, int64) error { return errDown }

var everyTool = map[string]string{
	files.ToolWrite:  `{"path": "a", "content": "x"}`,
	files.ToolRead:   `{"path": "a"}`,
	files.ToolList:   `{}`,
	files.ToolDelete: `{"path": "a"}`,
}

// Without a store every tool answers SERVICE_DISABLED; with a store that
// fails, UPSTREAM_UNAVAILABLE, its detail in the log and not in the
// answer; with the call's context ended, the context's error.
func TestBackendFailures(t *testing.T) {
	off, err := files.New(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	down, err := files.New(failingStore{}, &files.Options{Logger: slog.New(slog.NewJSONHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	bot := caller("bot", agentScopes...)
	for name, args := range everyTool {
		if got := call(t, off, bot, name, args); got.Err != tools.ReasonServiceDisabled {
			t.Errorf("%s without a store = %+v, want SERVICE_DISABLED", name, got)
		}
		tool, _, _ := down.Find(t.Context(), bot, name)
		_, err := down.Call(t.Context(), &toolgw.Request{Caller: bot, Tool: tool, Arguments: json.RawMessage(args)})
		var te *toolgw.Error
		if !errors.As(err, &te) || te.Reason != tools.ReasonUnavailable || strings.Contains(err.Error(), "db.internal") {
			t.Errorf("%s with a failing store: %v, want UPSTREAM_UNAVAILABLE without the store's detail", name, err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		p, _ := fixture(t, nil)
		tool, _, _ = p.Find(ctx, bot, name)
		if _, err := p.Call(ctx, &toolgw.Request{Caller: bot, Tool: tool, Arguments: json.RawMessage(args)}); !errors.Is(err, context.Canceled) {
			t.Errorf("%s with an ended context: %v, want context.Canceled", name, err)
		}
	}
	if !strings.Contains(log.String(), "db.internal") {
		t.Errorf("the store's failures were not logged: %s", log.String())
	}
}

func TestBadRequests(t *testing.T) {
	p, _ := fixture(t, nil)
	write, _, _ := p.Find(t.Context(), nil, files.ToolWrite)
	other := *write
	other.Name = "novaos.files.chmod"
	for _, tc := range []struct {
		name string
		r    *toolgw.Request
	}{
		{"no request", nil},
		{"no caller", &toolgw.Request{Tool: write}},
		{"no tool", &toolgw.Request{Caller: caller("bot", agentScopes...)}},
		{"no tenant", &toolgw.Request{Tool: write, Caller: &toolgw.Caller{Agent: "bot", Scopes: agentScopes}}},
		{"another tool", &toolgw.Request{Tool: &other, Caller: caller("bot", agentScopes...)}},
	} {
		if res, err := p.Call(t.Context(), tc.r); err == nil {
			t.Errorf("%s: %+v, want an error", tc.name, res)
		}
	}
}

func TestNew(t *testing.T) {
	for _, o := range []files.Options{
		{TenantQuotaBytes: -1},
		{TenantMaxFiles: -1},
		{MaxFileBytes: -1},
		{MaxFileBytes: tools.MaxFileSize + 1},
	} {
		if _, err := files.New(nil, &o); err == nil {
			t.Errorf("New(%+v) succeeded", o)
		}
	}
}

// The catalog: four tools with valid schemas and scopes, classified
// by their annotations as the platform's rules classify them without,
// found by name and by nothing else.
func TestTools(t *testing.T) {
	p, err := files.New(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	list, err := p.Tools(t.Context(), caller("bot"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		class tools.Class
		scope string
	}{
		files.ToolWrite:  {tools.ClassRead, files.ScopeWriteAgent},
		files.ToolRead:   {tools.ClassRead, files.ScopeReadAgent},
		files.ToolList:   {tools.ClassRead, files.ScopeReadAgent},
		files.ToolDelete: {tools.ClassWrite, files.ScopeWriteAgent},
	}
	if len(list) != len(want) {
		t.Fatalf("%d tools, want %d", len(list), len(want))
	}
	for _, tool := range list {
		w, ok := want[tool.Name]
		if !ok || !tools.ValidName(tool.Name) || tools.Server(tool.Name) != tools.ServerFiles {
			t.Errorf("tool %s", tool.Name)
			continue
		}
		if got := tools.ActionClass(tool.Name, tool.Annotations); got != w.class || tools.ActionClass(tool.Name, nil) != w.class {
			t.Errorf("%s is %s-class by its annotations, %s-class by name; want %s", tool.Name, got, tools.ActionClass(tool.Name, nil), w.class)
		}
		if len(tool.Scopes) != 1 || tool.Scopes[0] != w.scope {
			t.Errorf("%s needs %v, want %s", tool.Name, tool.Scopes, w.scope)
		}
		compile(t, tool.InputSchema)
		compile(t, tool.OutputSchema)
		if found, ok, err := p.Find(t.Context(), nil, tool.Name); !ok || err != nil || found.Name != tool.Name {
			t.Errorf("Find(%s) = %v, %v, %v", tool.Name, found, ok, err)
		}
	}
	for _, s := range []string{files.ScopeReadAgent, files.ScopeWriteAgent, files.ScopeReadTenant, files.ScopeWriteTenant} {
		if !identity.ValidScope(s) || !identity.ScopeMatches("files:*", s) {
			t.Errorf("scope %s is not valid, or files:* does not grant it", s)
		}
	}
	if _, ok, err := p.Find(t.Context(), nil, "novaos.files.chmod"); ok || err != nil {
		t.Errorf("Find of an unknown tool = %v, %v", ok, err)
	}
}

// What the input schemas admit and refuse, as the gateway checks it
// before the provider runs.
func TestInputSchemas(t *testing.T) {
	p, _ := files.New(nil, nil)
	for _, tc := range []struct {
		tool, args string
		ok         bool
	}{
		{files.ToolWrite, `{"path": "a", "content": "x"}`, true},
		{files.ToolWrite, `{"path": "a", "content": "x", "encoding": "base64", "content_type": "image/png", "scope": "tenant", "if_version": 0}`, true},
		{files.ToolWrite, `{"path": "a"}`, false},
		{files.ToolWrite, `{"path": "", "content": "x"}`, false},
		{files.ToolWrite, `{"path": "a", "content": "x", "encoding": "hex"}`, false},
		{files.ToolWrite, `{"path": "a", "content": "x", "scope": "world"}`, false},
		{files.ToolWrite, `{"path": "a", "content": "x", "if_version": -1}`, false},
		{files.ToolWrite, `{"path": "a", "content": "x", "extra": 1}`, false},
		{files.ToolRead, `{"path": "a", "scope": "agent"}`, true},
		{files.ToolRead, `{}`, false},
		{files.ToolList, `{}`, true},
		{files.ToolList, `{"prefix": "a/", "cursor": "YQ", "limit": 500, "scope": "tenant"}`, true},
		{files.ToolList, `{"limit": 501}`, false},
		{files.ToolDelete, `{"path": "a", "if_version": 1}`, true},
		{files.ToolDelete, `{"path": "a", "if_version": 0}`, false},
	} {
		tool, _, _ := p.Find(t.Context(), nil, tc.tool)
		doc, err := jsonschema.UnmarshalJSON(strings.NewReader(tc.args))
		if err != nil {
			t.Fatal(err)
		}
		if err := compile(t, tool.InputSchema).Validate(doc); (err == nil) != tc.ok {
			t.Errorf("%s %s: %v, want admitted %v", tc.tool, tc.args, err, tc.ok)
		}
	}
}

// Any arguments, however malformed, get an answer: a result, a failed
// result or a *toolgw.Error, never a panic or another error.
func FuzzCall(f *testing.F) {
	for _, args := range everyTool {
		f.Add(0, args)
	}
	f.Add(0, `{"path": "a", "content": "AAEC", "encoding": "base64", "if_version": 0}`)
	f.Add(2, `{"prefix": "a", "cursor": "YQ", "limit": 3}`)
	f.Add(1, `{"path": "a", "scope": "tenant"}`)
	f.Add(3, `{"path": "a", "if_version": 9}`)
	names := []string{files.ToolWrite, files.ToolRead, files.ToolList, files.ToolDelete}
	p, err := files.New(tools.NewMemoryFileStore(), &files.Options{MaxFileBytes: 1 << 10, TenantQuotaBytes: 4 << 10, TenantMaxFiles: 8})
	if err != nil {
		f.Fatal(err)
	}
	c := caller("bot", allScopes...)
	f.Fuzz(func(t *testing.T, tool int, args string) {
		name := names[uint(tool)%uint(len(names))]
		found, _, _ := p.Find(t.Context(), c, name)
		res, err := p.Call(t.Context(), &toolgw.Request{Caller: c, Tool: found, Arguments: json.RawMessage(args)})
		var te *toolgw.Error
		switch {
		case err != nil && !errors.As(err, &te):
			t.Fatalf("%s %q: %v", name, args, err)
		case err == nil && (res == nil || len(res.Content) != 1):
			t.Fatalf("%s %q: result %+v", name, args, res)
		}
	})
}

// What one caller does to the tools it was given reaches no other.
func TestToolsAreCopies(t *testing.T) {
	p, _ := files.New(nil, nil)
	list, _ := p.Tools(t.Context(), nil)
	list[0].Scopes[0] = "changed"
	list[0].InputSchema[0] = 'X'
	found, _, _ := p.Find(t.Context(), nil, list[0].Name)
	found.Scopes[0] = "changed too"
	again, _ := p.Tools(t.Context(), nil)
	if again[0].Scopes[0] == "changed" || again[0].Scopes[0] == "changed too" || again[0].InputSchema[0] == 'X' {
		t.Errorf("a caller's change reached the provider: %v %s", again[0].Scopes, again[0].InputSchema[:1])
	}
}
