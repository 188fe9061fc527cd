package toolgw_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/app"
	"novaos.dev/novaos/internal/bench"
	"novaos.dev/novaos/internal/pgtest"
	"novaos.dev/novaos/secret"
	"novaos.dev/novaos/tools"
)

// benchPlatform is a whole server (SQLite in a temporary directory, or
// PostgreSQL) with the benchmark's upstream MCP server registered for a
// tenant, and one client session on each side.
type benchPlatform struct {
	direct, gateway *mcp.ClientSession
	read, write     string // the gateway's names of the upstream's tools
	// directURL and gatewayURL are the two MCP endpoints, token an
	// agent's token for the gateway.
	directURL, gatewayURL string
	token                 secret.Value
}

// startBenchPlatform serves novaos on loopback with db as its database
// ("" for SQLite), an upstream go-sdk server beside it registered as
// server "echo" of tenant bench, and connects a client to each.
func startBenchPlatform(b *testing.B, db string) *benchPlatform {
	b.Helper()
	ctx := context.Background()
	up := &http.Server{Handler: bench.ToolsUpstreamHandler(), ReadHeaderTimeout: 10 * time.Second}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go up.Serve(ln) // ends with Close below
	b.Cleanup(func() { up.Close() })
	upstreamURL := "http://" + ln.Addr().String() + "/mcp"

	opts := &app.Options{Addr: "127.0.0.1:0", DataDir: b.TempDir(), Logger: slog.New(slog.DiscardHandler),
		Database: app.DatabaseOptions{URL: db}}
	opts.BuiltinTools.Upstream.AllowPrivate = true
	srv, err := app.New(ctx, opts)
	if err != nil {
		b.Fatal(err)
	}
	if err := srv.Start(ctx); err != nil {
		srv.Shutdown(ctx)
		b.Fatal(err)
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	mint := func(c identity.Claims) secret.Value {
		tok, err := srv.Issuer().Mint(ctx, c, time.Hour)
		if err != nil {
			b.Fatal(err)
		}
		return secret.New(tok)
	}
	hc := bench.NewClient(4)
	b.Cleanup(hc.CloseIdleConnections)
	admin := mint(identity.Claims{TenantID: "bench", Subject: "bench-admin", Scopes: []string{tools.ScopeAdmin}})
	if err := bench.SetUpTools(ctx, hc, srv.URL(), admin, "echo", upstreamURL); err != nil {
		b.Fatal(err)
	}
	p := &benchPlatform{read: "novaos.echo." + bench.ToolsEcho, write: "novaos.echo." + bench.ToolsWrite,
		directURL: upstreamURL, gatewayURL: srv.URL() + tools.Path}
	if p.direct, err = bench.ConnectMCP(ctx, upstreamURL, hc, secret.Value{}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.direct.Close() })
	p.token = mint(identity.Claims{TenantID: "bench", AgentID: "bench-agent", Scopes: []string{"mcp:tools:echo"}})
	if p.gateway, err = bench.ConnectMCP(ctx, p.gatewayURL, hc, p.token); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.gateway.Close() })
	return p
}

// BenchmarkToolCall times one tools/call of the upstream's echo tool made
// directly, the same call through the tool gateway (read-class), and its
// write-class twin through the gateway with the gate passing it (claim,
// call, acknowledge), one at a time, each with new arguments, on SQLite
// and, with NOVAOS_TEST_POSTGRES_URL set, on PostgreSQL. Client, gateway
// and upstream share the process, so ns/op and allocs/op are the whole
// round trip's; the gateway's own cost is the difference.
func BenchmarkToolCall(b *testing.B) {
	stores := []string{"sqlite"}
	if os.Getenv(pgtest.EnvURL) != "" {
		stores = append(stores, "postgres")
	}
	for _, store := range stores {
		b.Run(store, func(b *testing.B) {
			db := ""
			if store == "postgres" {
				db = pgtest.URL(b)
			}
			p := startBenchPlatform(b, db)
			for _, side := range []struct {
				name string
				cs   *mcp.ClientSession
				tool string
			}{
				{bench.ScenarioToolsDirect, p.direct, bench.ToolsEcho},
				{bench.ScenarioToolsRead, p.gateway, p.read},
				{bench.ScenarioToolsWrite, p.gateway, p.write},
			} {
				b.Run(side.name, func(b *testing.B) {
					ctx := context.Background()
					b.ReportAllocs()
					n := 0
					for b.Loop() {
						n++
						if err := bench.CallEcho(ctx, side.cs, side.tool, "call "+strconv.Itoa(n)); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		})
	}
}

// BenchmarkToolCallParallel is BenchmarkToolCall's read-class sides on
// SQLite from eight clients at once, each with a session of its own.
func BenchmarkToolCallParallel(b *testing.B) {
	p := startBenchPlatform(b, "")
	b.Run(bench.ScenarioToolsDirect, func(b *testing.B) { parallelCalls(b, p.directURL, secret.Value{}, bench.ToolsEcho) })
	b.Run(bench.ScenarioToolsRead, func(b *testing.B) { parallelCalls(b, p.gatewayURL, p.token, p.read) })
}

func parallelCalls(b *testing.B, endpoint string, tok secret.Value, tool string) {
	hc := bench.NewClient(8)
	defer hc.CloseIdleConnections()
	b.ReportAllocs()
	b.SetParallelism(4) // 8 clients on 2 cores
	var id atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		cs, err := bench.ConnectMCP(context.Background(), endpoint, hc, tok)
		if err != nil {
			b.Error(err)
			return
		}
		defer cs.Close()
		client, n := id.Add(1), 0
		for pb.Next() {
			n++
			if err := bench.CallEcho(context.Background(), cs, tool, fmt.Sprintf("client %d call %d", client, n)); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
