package builtin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"novaos.dev/novaos/internal/toolgw"
	"novaos.dev/novaos/strictjson"
	"novaos.dev/novaos/tools"
)

// handler runs one tool of a static provider.
type handler func(ctx context.Context, r *toolgw.Request) (*mcp.CallToolResult, error)

type entry struct {
	tool toolgw.Tool
	call handler
}

// static is a provider whose tools are fixed when it is built, the same
// for every tenant.
type static struct {
	entries []entry // sorted by name
}

var _ toolgw.Provider = (*static)(nil)

func newStatic(entries ...entry) *static {
	slices.SortFunc(entries, func(a, b entry) int { return strings.Compare(a.tool.Name, b.tool.Name) })
	return &static{entries: entries}
}

func (s *static) Tools(context.Context, *toolgw.Caller) ([]toolgw.Tool, error) {
	out := make([]toolgw.Tool, len(s.entries))
	for i := range s.entries {
		out[i] = cloneTool(&s.entries[i].tool)
	}
	return out, nil
}

func (s *static) Find(_ context.Context, _ *toolgw.Caller, name string) (*toolgw.Tool, bool, error) {
	e := s.entry(name)
	if e == nil {
		return nil, false, nil
	}
	t := cloneTool(&e.tool)
	return &t, true, nil
}

func (s *static) Call(ctx context.Context, r *toolgw.Request) (*mcp.CallToolResult, error) {
	if r == nil || r.Tool == nil || r.Caller == nil {
		return nil, errors.New("builtin: a call needs a caller and a tool")
	}
	e := s.entry(r.Tool.Name)
	if e == nil {
		return nil, toolgw.Failf(tools.ReasonToolNotFound, "no tool %.128q here", r.Tool.Name)
	}
	return e.call(ctx, r)
}

func (s *static) entry(name string) *entry {
	i, ok := slices.BinarySearchFunc(s.entries, name, func(e entry, n string) int { return strings.Compare(e.tool.Name, n) })
	if !ok {
		return nil
	}
	return &s.entries[i]
}

// cloneTool copies t deeply enough that a caller changing its copy cannot
// change what the provider hands out next.
func cloneTool(t *toolgw.Tool) toolgw.Tool {
	c := *t
	c.Scopes = slices.Clone(t.Scopes)
	c.InputSchema = bytes.Clone(t.InputSchema)
	c.OutputSchema = bytes.Clone(t.OutputSchema)
	if t.Annotations != nil {
		a := *t.Annotations
		c.Annotations = &a
	}
	return c
}

// maxArgDepth bounds the nesting of a call's arguments, a webhook's
// payload included.
const maxArgDepth = 64

// decodeArgs reads a call's arguments into v strictly: a JSON object, no
// member twice, no member v does not have. A failure is a result the
// caller reads (INVALID_ARGUMENTS), never an error: the gateway checked
// the arguments against the schema already, so this only guards the
// provider used on its own.
func decodeArgs(raw json.RawMessage, v any) *mcp.CallToolResult {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage("{}")
	}
	if err := strictjson.Decode(raw, v, &strictjson.Options{Object: true, MaxDepth: maxArgDepth}, false); err != nil {
		return toolgw.ErrorResult(tools.ReasonInvalidArguments, "the arguments do not fit the tool's schema: "+err.Error())
	}
	return nil
}

// errorResult is toolgw.ErrorResult with more members beside code and
// error (an HTTP status, say).
func errorResult(reason, msg string, extra map[string]any) *mcp.CallToolResult {
	m := map[string]any{"code": reason, "error": reason + ": " + msg}
	for k, v := range extra {
		m[k] = v
	}
	b, err := json.Marshal(m)
	if err != nil {
		return toolgw.ErrorResult(reason, msg)
	}
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}
}

func invalidf(format string, args ...any) *mcp.CallToolResult {
	return toolgw.ErrorResult(tools.ReasonInvalidArguments, fmt.Sprintf(format, args...))
}

func ptr[T any](v T) *T { return &v }

// clip returns s cut to at most n bytes at a rune boundary, with invalid
// UTF-8 and control characters replaced: text from a remote party, fit
// for an error message.
func clip(s string, n int) string {
	if len(s) > n {
		i := n
		for i > 0 && i > n-utf8.UTFMax && !utf8.RuneStart(s[i]) {
			i--
		}
		s = s[:i]
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}
