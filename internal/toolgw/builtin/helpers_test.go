package builtin_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"novaos.dev/novaos/internal/toolgw"
	"novaos.dev/novaos/netguard"
	"novaos.dev/novaos/secret"
)

// callerToken is the caller's own token in every test: it must never
// reach a server a tool calls.
const callerToken = "caller-execution-token-7f3a"

func testCaller() *toolgw.Caller {
	return &toolgw.Caller{Tenant: "acme", Agent: "agent-1", User: "alice", Run: "run-1", Instance: "inst-1",
		Scopes: []string{"mcp:tools:*"}, Token: secret.New(callerToken)}
}

// loopback is a policy that lets the tests' own servers be reached.
var loopback = &netguard.Policy{AllowLoopback: true}

// resolver answers fixed addresses for names; any other name does not
// resolve.
type resolver map[string]string

func (r resolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	a, ok := r[host]
	if !ok {
		return nil, fmt.Errorf("no such host %s", host)
	}
	return []netip.Addr{netip.MustParseAddr(a)}, nil
}

// call finds the tool name on p and calls it with args (a value to
// marshal, or a json.RawMessage).
func call(t *testing.T, p toolgw.Provider, c *toolgw.Caller, name string, args any) (*mcp.CallToolResult, error) {
	t.Helper()
	return callCtx(t, context.Background(), p, c, name, args)
}

// callCtx is call in ctx.
func callCtx(t *testing.T, ctx context.Context, p toolgw.Provider, c *toolgw.Caller, name string, args any) (*mcp.CallToolResult, error) {
	t.Helper()
	tool, ok, err := p.Find(ctx, c, name)
	if err != nil || !ok {
		t.Fatalf("Find(%s) = %v, %v", name, ok, err)
	}
	raw, isRaw := args.(json.RawMessage)
	if !isRaw {
		b, err := json.Marshal(args)
		if err != nil {
			t.Fatal(err)
		}
		raw = b
	}
	return p.Call(ctx, &toolgw.Request{Caller: c, Tool: tool, Arguments: raw, CallID: "call-1"})
}

// text is the result's one text content.
func text(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if res == nil || len(res.Content) != 1 {
		t.Fatalf("result %+v: want one content", res)
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("content %T, want text", res.Content[0])
	}
	return tc.Text
}

// answer decodes a successful result's JSON.
func answer(t *testing.T, res *mcp.CallToolResult, err error) map[string]any {
	t.Helper()
	if err != nil {
		t.Fatalf("call failed: %v", err)
	}
	if res.IsError {
		t.Fatalf("call answered an error: %s", text(t, res))
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(text(t, res)), &m); err != nil {
		t.Fatal(err)
	}
	sc, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var m2 map[string]any
	if err := json.Unmarshal(sc, &m2); err != nil || fmt.Sprint(m) != fmt.Sprint(m2) {
		t.Fatalf("structured content %s differs from the text %s", sc, text(t, res))
	}
	return m
}

// failedWith checks that a call answered an error result of code, whose
// text holds each of want, and returns the result's members.
func failedWith(t *testing.T, res *mcp.CallToolResult, err error, code string, want ...string) map[string]any {
	t.Helper()
	if err != nil {
		t.Fatalf("call: error %v, want an error result %s", err, code)
	}
	if !res.IsError {
		t.Fatalf("call succeeded with %s, want an error result %s", text(t, res), code)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(text(t, res)), &m); err != nil {
		t.Fatal(err)
	}
	if m["code"] != code {
		t.Errorf("code %v, want %s (%v)", m["code"], code, m["error"])
	}
	for _, w := range want {
		if !strings.Contains(fmt.Sprint(m["error"]), w) {
			t.Errorf("error %q does not say %q", m["error"], w)
		}
	}
	return m
}

// errorOf checks that a call could not be made, with reason.
func errorOf(t *testing.T, res *mcp.CallToolResult, err error, reason string, want ...string) {
	t.Helper()
	var te *toolgw.Error
	if !errors.As(err, &te) {
		t.Fatalf("call: (%v, %v), want a *toolgw.Error %s", res, err, reason)
	}
	if te.Reason != reason {
		t.Errorf("reason %s (%s), want %s", te.Reason, te.Message, reason)
	}
	for _, w := range want {
		if !strings.Contains(te.Message, w) {
			t.Errorf("message %q does not say %q", te.Message, w)
		}
	}
	if strings.Contains(te.Error(), callerToken) {
		t.Error("the error repeats the caller's token")
	}
}

func ptr[T any](v T) *T { return &v }
