package upstream_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"novaos.dev/novaos/internal/toolgw"
	"novaos.dev/novaos/internal/toolgw/upstream"
	"novaos.dev/novaos/tools"
)

func Example() {
	// An upstream MCP server with one tool, on loopback.
	srv := mcp.NewServer(&mcp.Implementation{Name: "weather", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "get_forecast", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *mcp.CallToolRequest, in struct{ City string }) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "sunny in " + in.City}}}, nil, nil
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	defer hs.Close()

	// A tenant's registration (the admin API at tools.ServersPath writes
	// these), and the provider serving its tools.
	ctx := context.Background()
	store := tools.NewMemoryServerStore()
	if _, err := store.PutServer(ctx, tools.UpstreamServer{TenantID: "acme", Name: "weather",
		Transport: tools.TransportHTTP, URL: hs.URL}, 0); err != nil {
		panic(err)
	}
	p, err := upstream.New(store, upstream.Deps{}, &upstream.Options{AllowPrivate: true})
	if err != nil {
		panic(err)
	}
	defer p.Close()

	caller := &toolgw.Caller{Tenant: "acme", Agent: "agent-1"}
	list, err := p.Tools(ctx, caller)
	if err != nil {
		panic(err)
	}
	for _, t := range list {
		fmt.Println(t.Name, tools.ActionClass(t.Name, t.Annotations))
	}
	res, err := p.Call(ctx, &toolgw.Request{Caller: caller, Tool: &list[0], Arguments: []byte(`{"City":"Oslo"}`)})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	// Output:
	// novaos.weather.get_forecast read
	// sunny in Oslo
}
