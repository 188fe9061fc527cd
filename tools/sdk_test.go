package tools

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"novaos.dev/novaos/secret"
)

type echoIn struct {
	Text string `json:"text"`
}

type echoOut struct {
	Echo string `json:"echo"`
}

// sdkServer serves an MCP server of the official Go SDK at both gateway
// paths: stateful (sessions from initialize), answering with event
// streams, as the SDK does by default.
func sdkServer(t *testing.T, o *mcp.StreamableHTTPOptions) (*httptest.Server, *mcp.Server) {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "sdk", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "novaos.test.echo", Description: "Echo a text"},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, echoOut, error) {
			return nil, echoOut{Echo: in.Text}, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "novaos.test.fail", Description: "Always fails"},
		func(context.Context, *mcp.CallToolRequest, echoIn) (*mcp.CallToolResult, echoOut, error) {
			return nil, echoOut{}, errors.New("it failed")
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, o)
	mux := http.NewServeMux()
	mux.Handle(Path, h)
	mux.Handle(CallPath, h)
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	return hs, srv
}

// The client speaks to the official MCP Go SDK's server: initialize and
// its session, listing with the NovaOS query, calls on both paths read
// from event streams, a tool's failure as a result, and a session the
// server closed opened again.
func TestAgainstGoSDKServer(t *testing.T) {
	hs, srv := sdkServer(t, nil)
	c, err := NewClient(hs.URL, secret.New(testToken), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := c.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	first := c.SessionID()
	if first == "" {
		t.Fatal("no session after initialize")
	}
	list, err := c.ListTools(ctx, "ECHO")
	if err != nil || len(list) != 1 || list[0].Name != "novaos.test.echo" || len(list[0].InputSchema) == 0 {
		t.Fatalf("%+v, %v", list, err)
	}
	res, err := c.CallTool(ctx, "novaos.test.echo", map[string]string{"text": "hi"})
	if err != nil || res.IsError || string(res.Structured) != `{"echo":"hi"}` {
		t.Fatalf("%+v, %v", res, err)
	}
	b, err := NewBindings(c, &BindingsOptions{Timeout: DefaultToolTimeout})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := b.Memory.k.call(ctx, "novaos.test.fail", echoIn{Text: "x"}, spec{}, nil)
	if err != nil || resp.Success || resp.Error != "it failed" {
		t.Fatalf("%+v, %v", resp, err)
	}
	_, err = c.CallTool(ctx, "novaos.test.missing", nil)
	var e *Error
	if !errors.As(err, &e) || e.Code == 0 {
		t.Fatalf("an unknown tool: %v", err)
	}

	// The server ends the session; the next call opens a new one.
	for ss := range srv.Sessions() {
		ss.Close()
	}
	res, err = c.CallTool(ctx, "novaos.test.echo", map[string]string{"text": "again"})
	if err != nil || string(res.Structured) != `{"echo":"again"}` {
		t.Fatalf("after the session closed: %+v, %v", res, err)
	}
	if c.SessionID() == "" || c.SessionID() == first {
		t.Fatalf("session %q, first %q", c.SessionID(), first)
	}
}

// A stateless SDK server, answering with JSON, takes calls without
// initialize, as the gateway does.
func TestAgainstStatelessGoSDKServer(t *testing.T) {
	hs, _ := sdkServer(t, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	c, err := NewClient(hs.URL+CallPath, secret.New(testToken), nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.CallTool(t.Context(), "novaos.test.echo", map[string]string{"text": "hi"})
	if err != nil || string(res.Structured) != `{"echo":"hi"}` || c.SessionID() != "" {
		t.Fatalf("%+v, %v, session %q", res, err, c.SessionID())
	}
	list, err := c.ListTools(t.Context(), "")
	if err != nil || len(list) != 2 {
		t.Fatalf("%+v, %v", list, err)
	}
}
